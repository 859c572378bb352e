//===- Metadata.cpp - kernel metadata in kiln-rt --------------------------===//

#include "runtime/Metadata.h"

#include "runtime/Json.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>

using namespace kiln;
using namespace kiln::rt;

/// A name as the language spells kernels and arguments: a letter or `_`, then
/// letters, digits and `_`.
static bool isIdentifier(const std::string &name) {
  auto letter = [](char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; };
  return !name.empty() && letter(name[0]) &&
         std::all_of(name.begin(), name.end(), [&](char c) {
           return letter(c) || std::isdigit(static_cast<unsigned char>(c));
         });
}

bool kiln::rt::parseMetadata(const std::string &json, ModuleMetadata &out, std::string &error) {
  JsonValue root;
  if (!parseJson(json, root, error))
    return false;
  auto bad = [&](const std::string &what) {
    error = "malformed kernel metadata: " + what;
    return false;
  };
  const JsonValue *target = root.get("target");
  const JsonValue *kernels = root.get("kernels");
  if (!target || target->kind != JsonValue::String || !kernels ||
      kernels->kind != JsonValue::Array)
    return bad("expected {\"target\": ..., \"kernels\": [...]}");
  out.target = target->string;
  out.checksum.clear();
  if (const JsonValue *checksum = root.get("checksum")) {
    if (checksum->kind != JsonValue::String)
      return bad("\"checksum\" must be a string");
    out.checksum = checksum->string;
  }
  out.kernels.clear();
  for (const JsonValue &k : kernels->array) {
    KernelInfo info;
    const JsonValue *name = k.get("name"), *args = k.get("args"), *grid = k.get("grid");
    if (!name || name->kind != JsonValue::String || !args || args->kind != JsonValue::Array ||
        !grid || grid->kind != JsonValue::Array || grid->array.size() != 3)
      return bad("a kernel needs name, args and a 3-entry grid");
    info.name = name->string;
    if (!isIdentifier(info.name))
      return bad("kernel name '" + info.name + "' is not an identifier");
    for (const KernelInfo &earlier : out.kernels)
      if (earlier.name == info.name)
        return bad("two kernels named '" + info.name + "'");
    for (const JsonValue &a : args->array) {
      ArgInfo arg;
      const JsonValue *an = a.get("name"), *kind = a.get("kind"), *dtype = a.get("dtype"),
                      *dims = a.get("dims");
      if (!an || !kind || !dtype || !dims || an->kind != JsonValue::String ||
          dims->kind != JsonValue::Array)
        return bad("argument of '" + info.name + "' needs name, kind, dtype and dims");
      auto dt = parseDType(dtype->string);
      if (!dt)
        return bad("unknown dtype '" + dtype->string + "'");
      arg.name = an->string;
      // Tools name files after arguments (kiln-run --save DIR writes DIR/NAME.npy).
      if (!isIdentifier(arg.name))
        return bad("argument name '" + arg.name + "' of '" + info.name +
                   "' is not an identifier");
      for (const ArgInfo &earlier : info.args)
        if (earlier.name == arg.name)
          return bad("two arguments of '" + info.name + "' named '" + arg.name + "'");
      arg.dtype = *dt;
      arg.isTensor = kind->string == "tensor";
      for (const JsonValue &d : dims->array) {
        if (d.kind != JsonValue::String)
          return bad("dims must be strings");
        arg.dims.push_back(d.string);
      }
      info.args.push_back(arg);
    }
    for (const JsonValue &g : grid->array) {
      if (g.kind != JsonValue::String)
        return bad("grid entries must be strings");
      info.grid.push_back(g.string);
    }
    if (const JsonValue *params = k.get("params"))
      for (auto &[pname, value] : params->object) {
        double v = value.number;
        if (value.kind == JsonValue::String) { // the values JSON has no numbers for
          if (value.string != "inf" && value.string != "-inf" && value.string != "nan")
            return bad("param '" + pname + "' is '" + value.string + "', not a number");
          v = value.string == "nan" ? NAN : value.string == "inf" ? INFINITY : -INFINITY;
        } else if (value.kind != JsonValue::Number) {
          return bad("param '" + pname + "' is not a number");
        }
        info.params.push_back({pname, DType::I32, v, {}});
      }
    if (const JsonValue *tune = k.get("tune"))
      for (auto &[pname, values] : tune->object) {
        auto param = std::find_if(info.params.begin(), info.params.end(),
                                  [&](const ParamValue &p) { return p.name == pname; });
        if (param == info.params.end() || values.kind != JsonValue::Array)
          return bad("tune entries must be lists for declared params");
        for (const JsonValue &v : values.array) {
          if (v.kind != JsonValue::String)
            return bad("tune values must be strings");
          param->tune.push_back(v.string);
        }
      }
    // Numbers from a file are checked before they become integers.
    auto count = [](const JsonValue *v, double limit, int64_t &out) {
      if (!v || v->kind != JsonValue::Number || !(v->number >= 0 && v->number <= limit) ||
          v->number != static_cast<double>(static_cast<int64_t>(v->number)))
        return false;
      out = static_cast<int64_t>(v->number);
      return true;
    };
    if (const JsonValue *threads = k.get("threads_per_block");
        threads && threads->kind == JsonValue::Array && !threads->array.empty() &&
        !count(&threads->array[0], 1024, info.threadsPerBlock))
      return bad("threads_per_block must be an integer in [0, 1024]");
    if (const JsonValue *shared = k.get("shared_memory_bytes");
        shared && !count(shared, 1 << 30, info.sharedMemoryBytes))
      return bad("shared_memory_bytes must be a non-negative integer");
    if (const JsonValue *dynamic = k.get("dynamic_shared_memory")) {
      if (dynamic->kind != JsonValue::Bool)
        return bad("dynamic_shared_memory must be true or false");
      info.dynamicSharedMemory = dynamic->boolean;
    }
    // Asserts and prints: a text and the shape of a tile (prints: and the
    // value's type, empty for none).
    auto entries = [&](const char *key, const char *text, const char *what,
                       auto &&add) -> bool {
      const JsonValue *list = k.get(key);
      if (!list)
        return true;
      if (list->kind != JsonValue::Array)
        return bad(std::string(key) + " must be a list");
      for (const JsonValue &e : list->array) {
        const JsonValue *message = e.get(text), *shape = e.get("shape");
        if (!message || message->kind != JsonValue::String || !shape ||
            shape->kind != JsonValue::Array)
          return bad(std::string("an ") + what + " needs a " + text + " and a shape");
        std::vector<int64_t> sizes;
        for (const JsonValue &d : shape->array) {
          int64_t size = 0;
          if (!count(&d, 1 << 30, size))
            return bad(std::string(what) + " shapes must be non-negative integers");
          sizes.push_back(size);
        }
        if (!add(e, message->string, std::move(sizes)))
          return false;
      }
      return true;
    };
    if (!entries("asserts", "message", "assert",
                 [&](const JsonValue &, const std::string &message, std::vector<int64_t> shape) {
                   info.asserts.push_back({message, std::move(shape)});
                   return true;
                 }) ||
        !entries("prints", "prefix", "print",
                 [&](const JsonValue &e, const std::string &prefix, std::vector<int64_t> shape) {
                   PrintInfo print{prefix, std::move(shape)};
                   const JsonValue *dtype = e.get("dtype");
                   if (!dtype || dtype->kind != JsonValue::String)
                     return bad("a print needs a dtype");
                   if (!dtype->string.empty()) {
                     auto dt = parseDType(dtype->string);
                     if (!dt || (*dt != DType::I32 && *dt != DType::I64 && *dt != DType::U32 &&
                                 *dt != DType::U64 && *dt != DType::F32 && *dt != DType::F64))
                       return bad("a print's dtype must be i32, i64, u32, u64, f32 or f64");
                     print.hasValue = true;
                     print.dtype = *dt;
                   }
                   int64_t digits = 0;
                   if (const JsonValue *hex = e.get("hex"); hex && !count(hex, 16, digits))
                     return bad("a print's hex must be a digit count from 0 to 16");
                   print.hexDigits = int(digits);
                   info.prints.push_back(std::move(print));
                   return true;
                 }))
      return false;
    out.kernels.push_back(std::move(info));
  }
  return true;
}

/// `pid (x, y, z)`, then ` idx (i, j)` for an element of a tile of `shape`
/// at flat (row-major) index `flat`: how print and device_assert name it.
static std::string elementName(const int32_t *pid, const std::vector<int64_t> &shape,
                               int64_t flat) {
  std::string text = "pid (" + std::to_string(pid[0]) + ", " + std::to_string(pid[1]) + ", " +
                     std::to_string(pid[2]) + ")";
  if (shape.empty())
    return text;
  std::vector<int64_t> coords(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    int64_t size = std::max<int64_t>(shape[d], 1);
    coords[d] = flat % size;
    flat /= size;
  }
  text += " idx (";
  for (size_t d = 0; d < coords.size(); ++d)
    text += (d ? ", " : "") + std::to_string(coords[d]);
  return text + ")";
}

std::string kiln::rt::assertFailure(const KernelInfo &kernel, const int32_t *report) {
  auto failures = static_cast<uint32_t>(report[0]);
  if (failures == 0)
    return "";
  std::string text = "kernel '" + kernel.name + "' failed a device_assert: ";
  int32_t which = report[1];
  if (which < 0 || static_cast<size_t>(which) >= kernel.asserts.size())
    return text + "assert #" + std::to_string(which) + ", which its metadata does not list";
  const AssertInfo &failed = kernel.asserts[which];
  text += elementName(report + 2, failed.shape, report[5]) + " " + failed.message;
  if (failures > 1)
    text += " (" + std::to_string(failures) + " failures in this launch)";
  return text;
}

/// ": VALUE" for a print record's value `bits` (one or two words, as the
/// kernel wrote them), in print's format for the print's type.
static std::string printedValue(const PrintInfo &print, uint64_t bits) {
  char value[64];
  if (print.hexDigits && !isFloat(print.dtype)) {
    if (dtypeBits(print.dtype) == 64)
      std::snprintf(value, sizeof value, ": 0x%0*llx", print.hexDigits, (unsigned long long)bits);
    else
      std::snprintf(value, sizeof value, ": 0x%0*x", print.hexDigits, uint32_t(bits));
    return value;
  }
  switch (print.dtype) {
  case DType::F64: {
    double d;
    std::memcpy(&d, &bits, 8);
    std::snprintf(value, sizeof value, ": %.17g", d);
    break;
  }
  case DType::F32: {
    float f;
    uint32_t low = uint32_t(bits);
    std::memcpy(&f, &low, 4);
    std::snprintf(value, sizeof value, ": %.9g", double(f));
    break;
  }
  case DType::I64: std::snprintf(value, sizeof value, ": %lld", (long long)bits); break;
  case DType::U64: std::snprintf(value, sizeof value, ": %llu", (unsigned long long)bits); break;
  case DType::U32: std::snprintf(value, sizeof value, ": %u", uint32_t(bits)); break;
  default: std::snprintf(value, sizeof value, ": %d", int32_t(bits)); break;
  }
  return value;
}

std::string kiln::rt::printedLines(const KernelInfo &kernel, const int32_t *buffer,
                                   std::string &dropped) {
  auto claimed = static_cast<uint32_t>(buffer[kPrintCountWord]);
  uint32_t records = std::min<uint32_t>(claimed, kPrintRecords);
  dropped.clear();
  if (claimed > records)
    dropped = "kernel '" + kernel.name + "' printed " + std::to_string(claimed) +
              " lines; " + std::to_string(claimed - records) +
              " of them were dropped (a Vulkan launch keeps " + std::to_string(kPrintRecords) +
              ")";
  std::string out;
  for (uint32_t r = 0; r < records; ++r) {
    const int32_t *record = buffer + kDebugHeaderWords + size_t(r) * kPrintRecordWords;
    int32_t which = record[0];
    if (which < 0 || static_cast<size_t>(which) >= kernel.prints.size()) {
      out += "(print #" + std::to_string(which) + ", which the kernel's metadata does not list)\n";
      continue;
    }
    const PrintInfo &print = kernel.prints[which];
    out += elementName(record + 1, print.shape, record[4]) + " " + print.prefix;
    if (print.hasValue) {
      uint64_t bits = uint64_t(uint32_t(record[5])) | uint64_t(uint32_t(record[6])) << 32;
      out += printedValue(print, bits);
    }
    out += "\n";
  }
  return out;
}

std::string kiln::rt::abiMismatch(const KernelInfo &kernel, const std::string *embedded) {
  std::string want = abiSignature(kernel);
  if (embedded && *embedded == want)
    return "";
  std::string said = "the metadata describes '" + want + "'";
  if (!embedded)
    return "kernel '" + kernel.name + "': the binary has no record of the kernel (" + said +
           "): the metadata belongs to another binary, a Kiln before ABI records built it, or "
           "its debug information was stripped";
  return "kernel '" + kernel.name + "': the binary was built as '" + *embedded + "', but " +
         said + ": the metadata belongs to another binary, or another Kiln version built it";
}
