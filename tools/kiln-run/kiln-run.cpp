//===- kiln-run.cpp - run one Kiln kernel on a device, checked and timed ---===//
//
//   kiln-run FILE.kiln|FILE.kbin --kernel NAME [-D N=V]... --shape M=4096,N=1024
//            [--arg eps=1e-5] [--load x=x.npy] [--save DIR]
//            [--device cuda|hip|vulkan|cpu] [--check] [--bench]
//
// Fills every tensor argument with random data (or reads it from a .npy file),
// launches on the device (a .kbin bundle's entry for it, or the source compiled),
// and with --check runs the same launch through the CPU backend and compares
// every tensor (tolerances per dtype). --bench times
// repeated launches; --save writes every tensor after the launch as .npy.
//
//===----------------------------------------------------------------------===//

#include "kiln/kiln.h"
#include "lib/Frontend/Lexer.h"
#include "lib/Frontend/Sema.h"
#include "lib/Support/CommandLine.h"
#include "lib/Support/Half.h"
#include "lib/Support/ReadFile.h"
#include "lib/Support/Tolerance.h"
#include "tools/kiln-run/Npy.h"

#include "llvm/ADT/APInt.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <set>
#include <tuple>

#include <unistd.h>

using namespace kiln;
namespace cl = llvm::cl;

static cl::OptionCategory category("kiln-run options");
static cl::opt<std::string> inputFile(cl::Positional, cl::desc("<file.kiln | file.kbin>"),
                                      cl::cat(category));
static cl::opt<bool> listDevices(
    "devices", cl::desc("List the devices present, the default (KILN_DEVICE, else the best) "
                        "first, and exit"),
    cl::cat(category));
static cl::opt<std::string> kernelName("kernel", cl::desc("Kernel to run (default: the first)"),
                                       cl::cat(category));
static cl::list<std::string> defines("D", cl::desc("Override a param: -D NAME=VALUE"),
                                     cl::Prefix, cl::cat(category));
static cl::list<std::string> shapeSpecs("shape",
                                        cl::desc("Sizes: M=4096,N=1024 (repeatable)"),
                                        cl::CommaSeparated, cl::cat(category));
static cl::list<std::string> scalarArgs("arg",
                                        cl::desc("Scalar arguments: NAME=VALUE,... (repeatable)"),
                                        cl::CommaSeparated, cl::cat(category));
static cl::list<std::string> zeroTensors(
    "zero", cl::desc("Start tensor NAME at zero instead of random data (locks, accumulators); "
                     "repeatable, or NAME,NAME"),
    cl::CommaSeparated, cl::cat(category));
static cl::list<std::string> fillSpecs(
    "fill", cl::desc("Fill tensor NAME instead of random data: NAME=VALUE (every element) or "
                     "NAME=START:STEP (START, START + STEP, ...: sorted values, offsets); "
                     "repeatable"),
    cl::cat(category));
static cl::list<std::string> loadSpecs(
    "load",
    cl::desc("Read tensor NAME from a NumPy .npy file: NAME=FILE.npy (its shape gives the "
             "tensor's sizes); repeatable"),
    cl::cat(category));
static cl::list<std::string> strideSpecs(
    "strides",
    cl::desc("Pass tensor NAME as a strided view of a larger buffer: NAME=S0,S1,...[+OFFSET] "
             "(element strides, one per dimension: 1,M transposes an [M, N] tensor, 0 "
             "broadcasts an input; OFFSET elements in); repeatable"),
    cl::cat(category));
static cl::opt<std::string> saveDir(
    "save",
    cl::desc("Write every tensor after the launch to DIR/NAME.npy (with --check, the CPU's "
             "as DIR/NAME.cpu.npy too)"),
    cl::value_desc("DIR"), cl::cat(category));
static cl::opt<std::string> deviceSpec("device", cl::desc("cuda, hip, vulkan or cpu[:index]"),
                                       cl::cat(category));
static cl::list<std::string> tuneSpecs(
    "tune", cl::desc("Autotune a param over values: --tune BM=32,64 (repeatable; every "
                     "combination is timed, the choice is cached)"),
    cl::cat(category));
static cl::opt<bool> autotuneDeclared(
    "autotune", cl::desc("Autotune over the values the kernel declares with `tune [...]`"),
    cl::cat(category));
static cl::opt<bool> check("check", cl::desc("Compare with the CPU backend"), cl::cat(category));
static cl::list<std::string> rtolSpecs(
    "rtol",
    cl::desc("With --check: relative tolerance for the float tensors, VALUE or NAME=VALUE for "
             "one tensor (repeatable; by default per dtype: f32 1e-4, f16 1e-2, bf16 5e-2)"),
    cl::cat(category));
static cl::list<std::string> atolSpecs(
    "atol",
    cl::desc("With --check: absolute tolerance for the float tensors, VALUE or NAME=VALUE "
             "(repeatable; by default per dtype: f32 1e-5, f16 1e-2, bf16 5e-2)"),
    cl::cat(category));
static cl::opt<bool> bench("bench", cl::desc("Time repeated launches"), cl::cat(category));
static cl::opt<unsigned> iterations("iterations", cl::desc("Timed launches for --bench"),
                                    cl::init(20), cl::cat(category));
static cl::opt<std::string> flopsSpec("flops", cl::desc("FLOPs per launch, e.g. 2*M*N*K"),
                                      cl::cat(category));
static cl::opt<unsigned> seed("seed", cl::desc("Random seed for the inputs"), cl::init(1),
                              cl::cat(category));

static int fail(const llvm::Twine &message) {
  llvm::errs() << "kiln-run: error: " << message << "\n";
  return 1;
}

/// Relative and absolute tolerances by element type.
static std::pair<double, double> tolerance(DType dt) {
  switch (dt) {
  case DType::F16: return {1e-2, 1e-2};
  case DType::BF16: return {5e-2, 5e-2};
  case DType::F32: return {1e-4, 1e-5};
  case DType::F64: return {1e-10, 1e-12};
  // One fp8 step (2^-3 and 2^-2 relative): a sum that lands near a rounding
  // boundary may round either way depending on the order it was added in.
  case DType::F8E4M3: return {0.125, 1.0 / 64};
  case DType::F8E5M2: return {0.25, 1.0 / 64};
  default: return {0, 0};
  }
}

/// Tolerances --rtol or --atol sets: one for every float tensor (key ""), or
/// one per tensor name. Returns what is wrong with a spec, or "" when none is.
static std::string parseTolerances(llvm::StringRef flag, const std::vector<std::string> &specs,
                                   const KernelInfo &info, std::map<std::string, double> &out) {
  for (llvm::StringRef spec : specs) {
    auto [name, text] = spec.contains('=') ? spec.split('=') : std::make_pair("", spec);
    if (spec.contains('=') && name.empty())
      return (flag + " " + spec + ": an empty tensor name (write VALUE for every float " +
              "tensor, NAME=VALUE for one)")
          .str();
    double value;
    if (text.getAsDouble(value) || !(value >= 0) || std::isinf(value))
      return (flag + " " + spec + ": expected VALUE or NAME=VALUE, VALUE a finite number >= 0")
          .str();
    if (!name.empty()) {
      auto arg =
          llvm::find_if(info.args, [&](const ArgInfo &a) { return a.isTensor && a.name == name; });
      if (arg == info.args.end())
        return (flag + " " + spec + ": kernel '" + info.name + "' has no tensor argument '" +
                name + "'")
            .str();
      if (!isFloat(arg->dtype))
        return (flag + " " + spec + ": '" + name +
                "' holds integers, which --check compares exactly")
            .str();
    }
    if (!out.emplace(name.str(), value).second)
      return (flag + " " + spec + ": the tolerance of " +
              (name.empty() ? std::string("every float tensor") : "'" + name.str() + "'") +
              " is given twice")
          .str();
  }
  return "";
}

static double elementAt(const std::vector<char> &bytes, DType dt, int64_t i) {
  const char *p = bytes.data() + i * dtypeBytes(dt);
  switch (dt) {
  case DType::I1: return *reinterpret_cast<const uint8_t *>(p) != 0;
  case DType::I8: return *reinterpret_cast<const int8_t *>(p);
  case DType::I16: return *reinterpret_cast<const int16_t *>(p);
  case DType::I32: return *reinterpret_cast<const int32_t *>(p);
  case DType::I64: return static_cast<double>(*reinterpret_cast<const int64_t *>(p));
  case DType::U8: return *reinterpret_cast<const uint8_t *>(p);
  case DType::U16: return *reinterpret_cast<const uint16_t *>(p);
  case DType::U32: return *reinterpret_cast<const uint32_t *>(p);
  case DType::U64: return static_cast<double>(*reinterpret_cast<const uint64_t *>(p));
  case DType::F16: return halfBitsToFloat(*reinterpret_cast<const uint16_t *>(p));
  case DType::BF16: return bf16BitsToFloat(*reinterpret_cast<const uint16_t *>(p));
  case DType::F32: return *reinterpret_cast<const float *>(p);
  case DType::F64: return *reinterpret_cast<const double *>(p);
  case DType::F8E4M3:
  case DType::F8E5M2: return f8BitsToFloat(*reinterpret_cast<const uint8_t *>(p), dt);
  }
  return 0;
}

/// Element `i` as text: integers exactly (a double loses 64-bit ones past 2^53),
/// floats with `shortest`'s digits.
static std::string elementText(const std::vector<char> &bytes, DType dt, int64_t i,
                               std::string (*shortest)(double)) {
  uint64_t bits = 0;
  if (dt == DType::I64 || dt == DType::U64)
    std::memcpy(&bits, bytes.data() + i * 8, 8);
  if (dt == DType::I64)
    return std::to_string(static_cast<int64_t>(bits));
  if (dt == DType::U64)
    return std::to_string(bits);
  if (!isFloat(dt))
    return std::to_string(static_cast<int64_t>(elementAt(bytes, dt, i)));
  return shortest(elementAt(bytes, dt, i));
}

/// Writes `v` to the float element at `p` of type `dt`, rounded to it.
static void storeFloat(char *p, DType dt, double v) {
  switch (dt) {
  case DType::F16: *reinterpret_cast<uint16_t *>(p) = floatToHalfBits(float(v)); break;
  case DType::BF16: *reinterpret_cast<uint16_t *>(p) = floatToBF16Bits(float(v)); break;
  case DType::F32: *reinterpret_cast<float *>(p) = float(v); break;
  case DType::F64: *reinterpret_cast<double *>(p) = v; break;
  default: *reinterpret_cast<uint8_t *>(p) = floatToF8Bits(v, dt); break; // f8 types
  }
}

/// Writes the low bits of `v` to the integer (or bool) element at `p` of type `dt`.
static void storeInteger(char *p, DType dt, uint64_t v) {
  if (dt == DType::I1)
    v &= 1;
  std::memcpy(p, &v, dtypeBytes(dt)); // little-endian
}

static void fillRandom(std::vector<char> &bytes, DType dt, int64_t n, std::mt19937 &gen) {
  std::uniform_real_distribution<float> real(-1, 1);
  std::uniform_int_distribution<int> small(-8, 8), natural(0, 16), coin(0, 1);
  // Unsigned values: small ones, or (half the time) ones with the top bit set,
  // where signed and unsigned operations differ.
  auto unsignedValue = [&](unsigned bits) {
    uint64_t v = uint64_t(natural(gen));
    return coin(gen) ? (bits == 64 ? ~uint64_t(0) : (uint64_t(1) << bits) - 1) - v : v;
  };
  for (int64_t i = 0; i < n; ++i) {
    char *p = bytes.data() + i * dtypeBytes(dt);
    if (isFloat(dt))
      storeFloat(p, dt, real(gen));
    else if (dt == DType::I1)
      storeInteger(p, dt, small(gen) > 0);
    else if (isUnsigned(dt))
      storeInteger(p, dt, unsignedValue(dtypeBits(dt)));
    else
      storeInteger(p, dt, uint64_t(int64_t(small(gen))));
  }
}

/// Why `v`, read from `text`, is not a value of the float type `dt`, or "":
/// text past a double's range (1e400 reads as inf, 1e-400 as 0), or a nonzero
/// number that rounds to 0 in `dt` (1e-50 in f32). What a user writes is not
/// silently changed into another number.
static std::string floatTextLoss(llvm::StringRef text, double v, DType dt) {
  llvm::StringRef mantissa = text.split('e').first.split('E').first;
  if (std::isinf(v) && !text.contains_insensitive("inf"))
    return "'" + text.str() + "' does not fit in " + dtypeName(dt);
  bool nonzero = mantissa.find_first_of("123456789") != llvm::StringRef::npos;
  // Half the smallest subnormal of each type rounds (to even) to 0.
  double smallest = dt == DType::F16      ? 0x1p-24
                    : dt == DType::BF16   ? 0x1p-133
                    : dt == DType::F8E4M3 ? 0x1p-9
                    : dt == DType::F8E5M2 ? 0x1p-16
                    : dt == DType::F64    ? std::numeric_limits<double>::denorm_min()
                                          : std::numeric_limits<float>::denorm_min();
  if (nonzero && (v == 0 || std::abs(v) <= smallest / 2))
    return "'" + text.str() + "' rounds to 0 in " + dtypeName(dt);
  return "";
}

/// Fills `bytes` (n elements of `dt`) with start, start + step, ... as --fill
/// spells them ("V" or "START:STEP"); returns why it cannot, or "".
static std::string fillSequence(std::vector<char> &bytes, DType dt, int64_t n,
                                llvm::StringRef spec) {
  auto [startText, stepText] = spec.split(':');
  bool hasStep = spec.contains(':');
  if (isFloat(dt)) {
    double start = 0, step = 0;
    if (startText.getAsDouble(start) || (hasStep && stepText.getAsDouble(step)))
      return "'" + spec.str() + "' is not VALUE or START:STEP of numbers";
    if (std::string why = floatTextLoss(startText, start, dt); !why.empty())
      return why;
    // One value may be NaN or an infinity (masked softmax rows, NaN propagation).
    if (!hasStep && !std::isfinite(start)) {
      if (std::isinf(start) && dt == DType::F8E4M3)
        return "f8e4m3 has no infinity";
      for (int64_t i = 0; i < n; ++i)
        storeFloat(bytes.data() + i * dtypeBytes(dt), dt, start);
      return "";
    }
    if (!std::isfinite(start) || !std::isfinite(step))
      return "'" + spec.str() + "': a START:STEP sequence needs finite numbers";
    // The largest finite value of each type: the sequence's ends must stay within.
    double largest = dt == DType::F16      ? 65504.0
                     : dt == DType::F8E4M3 ? 448.0
                     : dt == DType::F8E5M2 ? 57344.0
                     : dt == DType::F64    ? std::numeric_limits<double>::max()
                                           : std::numeric_limits<float>::max(); // f32, bf16
    double last = start + double(std::max<int64_t>(n - 1, 0)) * step;
    if (!(std::abs(start) <= largest && std::abs(last) <= largest))
      return "'" + spec.str() + "' gives values outside " + dtypeName(dt);
    for (int64_t i = 0; i < n; ++i)
      storeFloat(bytes.data() + i * dtypeBytes(dt), dt, start + double(i) * step);
    // Rounding must keep the values apart (sorted keys, offsets): 257 is 256
    // in bf16, 16777217 is 16777216 in f32.
    for (int64_t i = 1; step != 0 && i < n; ++i)
      if (double v = elementAt(bytes, dt, i); v == elementAt(bytes, dt, i - 1)) {
        char text[32];
        std::snprintf(text, sizeof text, "%.9g", v);
        return llvm::formatv("'{0}' repeats values in {1}: elements {2} and {3} both round to "
                             "{4}",
                             spec, dtypeName(dt), i - 1, i, text)
            .str();
      }
    return "";
  }
  // Integers are computed in 128 bits, so that every i64 and u64 value (and any
  // step between them) can be written; a 64-bit product or sum cannot overflow.
  using Wide = __int128;
  auto parse = [](llvm::StringRef text, Wide &out) {
    int64_t s;
    uint64_t u;
    if (!text.getAsInteger(10, s))
      out = s;
    else if (!text.getAsInteger(10, u))
      out = u;
    else
      return false;
    return true;
  };
  Wide start = 0, step = 0;
  if (!parse(startText, start) || (hasStep && !parse(stepText, step)))
    return "'" + spec.str() + "' is not VALUE or START:STEP of integers";
  // The sequence is monotonic: its ends bound it.
  Wide last = start + Wide(std::max<int64_t>(n - 1, 0)) * step;
  unsigned bits = dtypeBits(dt);
  bool noSign = isUnsigned(dt) || dt == DType::I1;
  Wide lo = noSign ? 0 : -(Wide(1) << (bits - 1));
  Wide hi = noSign ? (Wide(1) << bits) - 1 : (Wide(1) << (bits - 1)) - 1;
  auto fits = [&](Wide v) { return v >= lo && v <= hi; };
  if (n > 0 && (!fits(start) || !fits(last)))
    return "'" + spec.str() + "' gives values outside " + dtypeName(dt);
  for (int64_t i = 0; i < n; ++i)
    storeInteger(bytes.data() + i * dtypeBytes(dt), dt, uint64_t(start + Wide(i) * step));
  return "";
}

/// The scalar argument `text` gives for type `dt`, or nothing, with `why`, when it
/// is not a number of that type: not a number at all (garbage, trailing
/// characters), an integer out of range, a nonzero float that rounds to 0. A
/// float the type would make infinite is the launch's error (validateArgs).
static std::optional<rt::Arg> parseScalar(const std::string &text, DType dt, std::string &why) {
  llvm::StringRef ref(text);
  if (isFloat(dt)) {
    double v;
    if (ref.getAsDouble(v)) {
      why = "not a number";
      return std::nullopt;
    }
    if (why = floatTextLoss(ref, v, dt); !why.empty())
      return std::nullopt;
    return rt::Arg::floating(v, dt);
  }
  if (dt == DType::I1 && (ref == "true" || ref == "false"))
    return rt::Arg::integer(ref == "true", dt);
  unsigned bits = dtypeBits(dt);
  // Decimal, or 0x hexadecimal / 0b binary (a leading 0 is not octal).
  unsigned radix = ref.starts_with_insensitive("0x") || ref.starts_with_insensitive("0b") ? 0
                                                                                          : 10;
  llvm::StringRef digits = ref;
  bool negative = digits.consume_front("-");
  llvm::APInt magnitude;
  if (digits.getAsInteger(radix, magnitude)) {
    why = "not an integer";
    return std::nullopt;
  }
  auto outOfRange = [&]() -> std::optional<rt::Arg> {
    why = "does not fit in " + std::string(dtypeName(dt));
    return std::nullopt;
  };
  if (isUnsigned(dt)) {
    if ((negative && !magnitude.isZero()) || magnitude.getActiveBits() > bits)
      return outOfRange();
    return rt::Arg::integer(int64_t(magnitude.getZExtValue()), dt);
  }
  int64_t v;
  int64_t lo = bits == 1 ? 0 : bits == 64 ? INT64_MIN : -(int64_t(1) << (bits - 1));
  int64_t hi = bits == 1 ? 1 : bits == 64 ? INT64_MAX : (int64_t(1) << (bits - 1)) - 1;
  if (ref.getAsInteger(radix, v) || v < lo || v > hi)
    return outOfRange();
  return rt::Arg::integer(v, dt);
}

/// A tensor passed as a strided view (--strides): its element strides, and the
/// offset of its first element in the buffer that holds it.
struct View {
  std::vector<int64_t> strides;
  int64_t offset = 0;
};

/// Where each element of a `shape` tensor (row-major) lies in the buffer of `view`.
static std::vector<int64_t> viewPositions(const std::vector<int64_t> &shape, const View &view) {
  std::vector<int64_t> positions = {view.offset};
  for (size_t d = 0; d < shape.size(); ++d) {
    std::vector<int64_t> next;
    next.reserve(positions.size() * shape[d]);
    for (int64_t p : positions)
      for (int64_t i = 0; i < shape[d]; ++i)
        next.push_back(p + i * view.strides[d]);
    positions = std::move(next);
  }
  return positions;
}

/// The byte every buffer element outside a view holds: a launch that changes one
/// wrote outside its view.
constexpr char kOutsideView = char(0xA5);

/// One launch's host data: tensors (with shapes) and scalars, in argument order.
struct HostArgs {
  std::vector<std::vector<char>> tensors;
  std::vector<std::vector<int64_t>> shapes;
  std::vector<std::optional<View>> views; // --strides
  std::vector<rt::Arg> scalars; // isTensor = false entries; tensor slots unused
};

/// Uploads the tensors of `in` to `s`'s device; `args` gets every argument in order.
static rt::Status upload(Session &s, const KernelInfo &info, const HostArgs &in,
                         std::vector<Tensor> &tensors, std::vector<rt::Arg> &args) {
  for (size_t i = 0; i < info.args.size(); ++i) {
    if (!info.args[i].isTensor) {
      args.push_back(in.scalars[i]);
      continue;
    }
    DType dt = info.args[i].dtype;
    if (!in.views[i]) {
      Tensor t = s.upload(in.tensors[i].data(), dt, in.shapes[i]);
      if (!t.ok())
        return t.status();
      args.push_back(t.arg());
      tensors.push_back(t);
      continue;
    }
    // The view's elements in a buffer that reaches its last one; the rest of the
    // buffer holds kOutsideView. Where elements share a place (a stride of 0), the
    // first one's value is the one there (--save shows what the kernel read).
    size_t width = dtypeBytes(dt);
    std::vector<int64_t> positions = viewPositions(in.shapes[i], *in.views[i]);
    int64_t extent = 1;
    for (int64_t p : positions)
      extent = std::max(extent, p + 1);
    std::vector<char> buffer(extent * width, kOutsideView);
    for (size_t e = positions.size(); e-- > 0;)
      std::memcpy(buffer.data() + positions[e] * width, in.tensors[i].data() + e * width, width);
    Tensor t = s.upload(buffer.data(), dt, {static_cast<int64_t>(buffer.size() / width)});
    if (!t.ok())
      return t.status();
    args.push_back(t.view(in.shapes[i], in.views[i]->strides, in.views[i]->offset));
    tensors.push_back(t);
  }
  return rt::Status::success();
}

/// Reads tensor `i` of `in` back from `t` into `bytes`, row-major; a view's
/// elements come from their places, and a buffer element outside the view that
/// the launch changed is an error.
static rt::Status download(const Tensor &t, const KernelInfo &info, const HostArgs &in, size_t i,
                           std::vector<char> &bytes) {
  bytes.resize(in.tensors[i].size());
  if (!in.views[i])
    return t.download(bytes.data());
  size_t width = dtypeBytes(info.args[i].dtype);
  std::vector<char> buffer(t.numel() * width);
  if (rt::Status st = t.download(buffer.data()); !st)
    return st;
  std::vector<int64_t> positions = viewPositions(in.shapes[i], *in.views[i]);
  std::vector<bool> inside(t.numel(), false);
  for (size_t e = 0; e < positions.size(); ++e) {
    std::memcpy(bytes.data() + e * width, buffer.data() + positions[e] * width, width);
    inside[positions[e]] = true;
  }
  for (int64_t p = 0; p < t.numel(); ++p) {
    const char *element = buffer.data() + p * width;
    if (!inside[p] && std::any_of(element, element + width,
                                  [](char byte) { return byte != kOutsideView; }))
      return rt::Status::failure("kernel '" + info.name + "' wrote outside the view of '" +
                                 info.args[i].name + "' (--strides): buffer element " +
                                 std::to_string(p) + " changed");
  }
  return rt::Status::success();
}

/// Uploads, launches and downloads; returns the tensors after the launch.
static rt::Status runOn(Session &s, const Kernel &k, const KernelInfo &info, const HostArgs &in,
                        std::vector<std::vector<char>> &out, double *msPerLaunch) {
  std::vector<Tensor> tensors;
  std::vector<rt::Arg> args;
  if (rt::Status st = upload(s, info, in, tensors, args); !st)
    return st;
  if (rt::Status st = k.launch(args); !st)
    return st;
  // The outputs of the first launch: timed launches may accumulate into them
  // (atomics, partial sums) and must not change what --check compares.
  out.clear();
  size_t t = 0;
  for (size_t i = 0; i < info.args.size(); ++i) {
    if (!info.args[i].isTensor) {
      out.emplace_back();
      continue;
    }
    std::vector<char> bytes;
    if (rt::Status st = download(tensors[t++], info, in, i, bytes); !st)
      return st;
    out.push_back(std::move(bytes));
  }
  if (!msPerLaunch)
    return rt::Status::success();
  for (int w = 0; w < 2; ++w)
    (void)k.launch(args);
  std::vector<double> times;
  for (unsigned it = 0; it < iterations; ++it) {
    auto a = s.device().record();
    if (rt::Status st = k.launch(args); !st)
      return st;
    auto b = s.device().record();
    if (!a || !b)
      return rt::Status::failure("timing failed");
    times.push_back(b->since(*a));
  }
  std::sort(times.begin(), times.end());
  *msPerLaunch = times[times.size() / 2];
  return rt::Status::success();
}

/// `--devices`: one line per device kind present, `KIND  NAME (TARGET)`; the one
/// a run without --device takes comes first, marked `default`.
static int printDevices() {
  auto chosen = kiln::rt::Device::open();
  if (!chosen)
    return fail(chosen.status().message());
  std::string defaultKind = kiln::rt::backendName((*chosen)->backend());
  llvm::outs() << llvm::left_justify(defaultKind, 8) << (*chosen)->name() << " ("
               << (*chosen)->target() << ")  default\n";
  for (const std::string &kind : kiln::rt::Device::available()) {
    if (kind == defaultKind)
      continue;
    if (auto device = kiln::rt::Device::open(kind))
      llvm::outs() << llvm::left_justify(kind, 8) << (*device)->name() << " ("
                   << (*device)->target() << ")\n";
  }
  return 0;
}

int main(int argc, char **argv) {
  cl::HideUnrelatedOptions(category);
  std::deque<std::string> storage;
  std::vector<const char *> args = kiln::literalAtArguments(argc, argv, storage);
  cl::ParseCommandLineOptions(argc, args.data(), "Run a Kiln kernel on a device\n");
  if (listDevices)
    return printDevices();
  if (inputFile.empty())
    return fail("no input file (kiln-run FILE.kiln | FILE.kbin; --help for options)");

  std::string source, error;
  if (!readInput(inputFile, source, error))
    return fail("cannot read '" + inputFile + "': " + error);
  // A .kbin bundle (kilnc -o F.kbin) holds compiled kernels: its entry for the
  // device runs, and --check runs its cpu entry. Nothing is compiled.
  bool isBundle = llvm::StringRef(source).starts_with("KILNKBIN");
  if (!isBundle && llvm::StringRef(inputFile).ends_with(".kbin"))
    return fail("'" + inputFile + "' is not a Kiln bundle: it does not start with KILNKBIN");
  if (isBundle && (!defines.empty() || !tuneSpecs.empty() || autotuneDeclared))
    return fail(std::string(defines.empty() ? "--tune and --autotune need" : "-D needs") +
                " the kernel's source; '" + inputFile +
                "' is a bundle, compiled with its params fixed");
  std::map<std::string, std::string> params;
  for (const std::string &d : defines) {
    auto [name, value] = llvm::StringRef(d).split('=');
    if (name.empty() || value.empty())
      return fail("-D expects NAME=VALUE, got '" + d + "'");
    if (!params.emplace(name.str(), value.str()).second)
      return fail("-D " + d + ": param '" + name + "' is given twice");
  }
  // Options that take one value: given twice, LLVM would keep the last one
  // silently; an empty name or count is a mistake, not a request for nothing.
  const std::pair<const char *, cl::Option *> single[] = {
      {"--kernel", &kernelName}, {"--save", &saveDir},   {"--device", &deviceSpec},
      {"--iterations", &iterations}, {"--flops", &flopsSpec}, {"--seed", &seed}};
  for (auto [name, option] : single)
    if (option->getNumOccurrences() > 1)
      return fail(llvm::Twine(name) + " is given more than once");
  const std::pair<const char *, cl::opt<std::string> *> named[] = {
      {"--kernel", &kernelName}, {"--save", &saveDir}, {"--device", &deviceSpec},
      {"--flops", &flopsSpec}};
  for (auto [name, option] : named)
    if (option->getNumOccurrences() && option->getValue().empty())
      return fail(llvm::Twine(name) + " needs a value");
  std::map<std::string, int64_t> sizes;
  for (llvm::StringRef item : shapeSpecs) {
    if (item.empty())
      return fail("--shape: an empty item (expected NAME=SIZE,...)");
    auto [name, value] = item.split('=');
    long long v;
    if (name.empty() || value.getAsInteger(10, v) || v < 0)
      return fail("--shape expects NAME=SIZE,..., got '" + item + "'");
    if (v >= (1LL << 31))
      return fail("--shape " + item + ": sizes must be below 2^31 (Kiln's indices are 32-bit)");
    if (!sizes.emplace(name.str(), v).second)
      return fail("--shape " + item + ": size '" + name + "' is given twice");
  }
  // Bench options are checked before anything runs: a typo costs no benchmark.
  if (!bench && (!flopsSpec.empty() || iterations.getNumOccurrences()))
    return fail(std::string(flopsSpec.empty() ? "--iterations" : "--flops") +
                " is used only with --bench");
  if (iterations == 0)
    return fail("--iterations 0: --bench times at least one launch");
  if (!check && (rtolSpecs.getNumOccurrences() || atolSpecs.getNumOccurrences()))
    return fail(std::string(rtolSpecs.getNumOccurrences() ? "--rtol" : "--atol") +
                " is used only with --check");

  std::string kernel = kernelName;
  // Without --kernel the first one runs; a file where none is found is
  // compiled whole, so the compiler says why (a syntax error, no kernel).
  if (kernel.empty() && !isBundle)
    kernel = firstKernelName(source);

  Session session(deviceSpec);
  if (!session.ok())
    return fail(session.status().message());
  Kernel k = isBundle ? session.load(source, kernel)
                      : session.compile(source, kernel, params, inputFile);
  if (!k.ok() && isBundle)
    return fail("'" + inputFile + "': " + k.status().message());
  if (!k.ok()) {
    // The compiler's diagnostics come whole (located lines, each ended); a
    // device's refusal (too many buffers for it) is one message.
    const std::string &message = k.status().message();
    if (!llvm::StringRef(message).ends_with("\n"))
      return fail(message);
    llvm::errs() << message;
    return 1;
  }
  if (!k.info())
    return fail("no kernel in '" + inputFile + "'");
  const KernelInfo &info = *k.info();
  kernel = info.name;

  // Inputs: random tensors shaped by --shape, scalars from --arg.
  std::map<std::string, std::string> scalarValues;
  for (const std::string &a : scalarArgs) {
    auto [name, value] = llvm::StringRef(a).split('=');
    if (name.empty() || value.empty())
      return fail("--arg expects NAME=VALUE,..., got '" + a + "'");
    if (!llvm::any_of(info.args, [&](const ArgInfo &x) { return !x.isTensor && x.name == name; }))
      return fail("--arg " + a + ": kernel '" + info.name + "' has no scalar argument '" + name +
                  "'");
    if (!scalarValues.emplace(name.str(), value.str()).second)
      return fail("--arg " + a + ": '" + name + "' is given twice");
  }
  auto isTensorArg = [&](llvm::StringRef name) {
    return llvm::any_of(info.args, [&](const ArgInfo &a) { return a.isTensor && a.name == name; });
  };
  std::map<std::string, double> rtols, atols;
  for (auto [flag, specs, out] : {std::tuple("--rtol", &rtolSpecs, &rtols),
                                  std::tuple("--atol", &atolSpecs, &atols)})
    if (std::string problem = parseTolerances(flag, *specs, info, *out); !problem.empty())
      return fail(problem);
  std::set<std::string> zeroed;
  for (const std::string &name : zeroTensors) {
    if (name.empty())
      return fail("--zero: an empty item (names are separated by commas)");
    if (!isTensorArg(name))
      return fail("--zero " + name + ": kernel '" + info.name + "' has no tensor argument '" +
                  name + "'");
    if (!zeroed.insert(name).second)
      return fail("--zero " + name + ": '" + name + "' is given twice");
  }
  std::map<std::string, std::string> fills;
  for (const std::string &f : fillSpecs) {
    auto [name, spec] = llvm::StringRef(f).split('=');
    if (!llvm::StringRef(f).contains('='))
      return fail("--fill expects NAME=VALUE or NAME=START:STEP, got '" + f + "'");
    if (!isTensorArg(name))
      return fail("--fill " + f + ": kernel '" + info.name + "' has no tensor argument '" +
                  name + "'");
    if (llvm::is_contained(zeroTensors, name) || fills.count(name.str()))
      return fail("--fill " + f + ": '" + name + "' is filled twice");
    fills[name.str()] = spec.str();
  }
  // Tensors read from .npy files: their shapes give the sizes --shape leaves out.
  std::map<std::string, npy::Array> loaded;
  std::map<std::string, std::string> sizeFrom; // who gave each size, for messages
  for (const auto &[name, size] : sizes)
    sizeFrom[name] = "--shape " + name + "=" + std::to_string(size);
  for (const std::string &l : loadSpecs) {
    auto [name, path] = llvm::StringRef(l).split('=');
    if (name.empty() || path.empty())
      return fail("--load expects NAME=FILE.npy, got '" + l + "'");
    auto arg = llvm::find_if(info.args,
                             [&](const ArgInfo &a) { return a.isTensor && a.name == name; });
    if (arg == info.args.end())
      return fail("--load " + l + ": kernel '" + info.name + "' has no tensor argument '" +
                  name + "'");
    if (loaded.count(name.str()) || fills.count(name.str()) ||
        llvm::is_contained(zeroTensors, name))
      return fail("--load " + l + ": '" + name + "' is filled twice");
    npy::Array array;
    std::string error;
    if (!npy::read(path.str(), arg->dtype, array, error))
      return fail("--load " + l + ": " + error);
    std::string dims = "[" + llvm::join(arg->dims, ", ") + "]";
    if (array.shape.size() != arg->dims.size())
      return fail("--load " + l + ": tensor '" + name + "' is " + dims + ", the file's shape is " +
                  npy::shapeText(array.shape));
    for (size_t d = 0; d < arg->dims.size(); ++d) {
      const std::string &dim = arg->dims[d];
      int64_t size = array.shape[d];
      bool fixed = isdigit(static_cast<unsigned char>(dim[0]));
      if (fixed && std::atoll(dim.c_str()) != size)
        return fail("--load " + l + ": tensor '" + name + "' is " + dims +
                    ", the file's shape is " + npy::shapeText(array.shape));
      if (fixed)
        continue;
      if (size >= (1LL << 31))
        return fail("--load " + l + ": size " + dim + " = " + std::to_string(size) +
                    " is not below 2^31 (Kiln's indices are 32-bit)");
      auto [it, fresh] = sizes.emplace(dim, size);
      if (fresh)
        sizeFrom[dim] = "--load " + l;
      else if (it->second != size)
        return fail("--load " + l + ": the file's shape " + npy::shapeText(array.shape) +
                    " gives " + dim + " = " + std::to_string(size) + ", but " + sizeFrom[dim] +
                    " gives " + dim + " = " + std::to_string(it->second));
    }
    loaded[name.str()] = std::move(array);
  }
  double flopsPerLaunch = 0; // 0: not given
  if (!flopsSpec.empty()) {
    flopsPerLaunch = 1;
    for (llvm::StringRef factor : llvm::split(flopsSpec, '*')) {
      if (factor.empty())
        return fail("--flops " + flopsSpec + ": an empty factor (write the product as " +
                    "2*M*N*K)");
      llvm::APInt number;
      if (!factor.getAsInteger(10, number)) {
        if (number.isZero() || number.getActiveBits() > 63)
          return fail("--flops " + flopsSpec + ": the factor " + factor +
                      (number.isZero() ? " is not positive" : " is past 2^63") +
                      " (FLOPs are a product of positive numbers and sizes)");
        flopsPerLaunch *= static_cast<double>(number.getZExtValue());
      } else if (factor.starts_with("-")) {
        return fail("--flops " + flopsSpec + ": the factor " + factor +
                    " is not positive (FLOPs are a product of positive numbers and sizes)");
      } else if (auto it = sizes.find(factor.str()); it != sizes.end()) {
        flopsPerLaunch *= it->second;
      } else {
        return fail("--flops " + flopsSpec + ": '" + factor +
                    "' is neither a number nor a size given with --shape or --load");
      }
    }
    if (!std::isfinite(flopsPerLaunch))
      return fail("--flops " + flopsSpec + ": the product is past the range of a double");
  }
  std::mt19937 gen(seed);
  HostArgs in;
  in.tensors.resize(info.args.size());
  in.shapes.resize(info.args.size());
  in.views.resize(info.args.size());
  in.scalars.resize(info.args.size());
  double bytesMoved = 0;
  std::vector<double> elements(info.args.size(), 0.0); // as doubles: no overflow
  // A size the kernel does not have is named first: a typo there is why
  // another size is missing.
  for (const auto &[name, size] : sizes) {
    bool used = llvm::any_of(info.args, [&](const ArgInfo &a) {
      return llvm::is_contained(a.dims, name);
    }) || llvm::is_contained(llvm::split(flopsSpec, '*'), name);
    if (!used) {
      std::set<std::string> known;
      for (const ArgInfo &a : info.args)
        for (const std::string &d : a.dims)
          if (!d.empty() && !isdigit(static_cast<unsigned char>(d[0])))
            known.insert(d);
      bool isParam = llvm::any_of(info.params, [&](const ParamValue &p) { return p.name == name; });
      return fail("--shape " + name + "=" + std::to_string(size) + ": kernel '" + info.name +
                  "' has no size '" + name + "' (its sizes: " +
                  (known.empty() ? std::string("none") : llvm::join(known, ", ")) + ")" +
                  (isParam ? "; " + name + " is a param, set with -D " + name + "=" +
                                 std::to_string(size)
                           : std::string()));
    }
  }
  for (size_t i = 0; i < info.args.size(); ++i) {
    const ArgInfo &a = info.args[i];
    if (!a.isTensor) {
      auto it = scalarValues.find(a.name);
      std::string text = it != scalarValues.end() ? it->second : isFloat(a.dtype) ? "1e-5" : "1";
      if (it == scalarValues.end()) // a convenience, said out loud
        llvm::errs() << "kiln-run: note: scalar '" << a.name << "' is not given; using " << text
                     << " (--arg " << a.name << "=VALUE)\n";
      std::string why;
      auto value = parseScalar(text, a.dtype, why);
      if (!value)
        return fail("--arg " + a.name + "=" + text + ": " + why);
      in.scalars[i] = *value;
      continue;
    }
    double n = 1;
    for (const std::string &d : a.dims) {
      int64_t size;
      if (!d.empty() && isdigit(static_cast<unsigned char>(d[0])))
        size = std::atoll(d.c_str());
      else if (auto it = sizes.find(d); it != sizes.end())
        size = it->second;
      else
        return fail("argument '" + a.name + "' needs size '" + d + "'; give it with --shape " +
                    d + "=...");
      in.shapes[i].push_back(size);
      n *= size;
    }
    elements[i] = n;
  }
  std::vector<double> bufferElements = elements; // a view's buffer may be larger
  for (const std::string &spec : strideSpecs) {
    auto [name, rest] = llvm::StringRef(spec).split('=');
    auto [stridesText, offsetText] = rest.split('+');
    auto arg = llvm::find_if(info.args,
                             [&](const ArgInfo &a) { return a.isTensor && a.name == name; });
    if (name.empty() || rest.empty())
      return fail("--strides expects NAME=S0,S1,...[+OFFSET], got '" + spec + "'");
    if (arg == info.args.end())
      return fail("--strides " + spec + ": kernel '" + info.name +
                  "' has no tensor argument '" + name + "'");
    size_t i = arg - info.args.begin();
    if (in.views[i])
      return fail("--strides " + spec + ": '" + name + "' is given twice");
    View view;
    for (llvm::StringRef s : llvm::split(stridesText, ',')) {
      int64_t stride;
      if (s.getAsInteger(10, stride) || stride < 0 || stride >= (int64_t(1) << 31))
        return fail("--strides " + spec + ": '" + s + "' is not a stride (an element count " +
                    "from 0 to 2^31 - 1)");
      view.strides.push_back(stride);
    }
    if (view.strides.size() != in.shapes[i].size())
      return fail("--strides " + spec + ": tensor '" + name + "' has " +
                  std::to_string(in.shapes[i].size()) + " dimensions, given " +
                  std::to_string(view.strides.size()) + " strides");
    if (rest.contains('+') &&
        (offsetText.getAsInteger(10, view.offset) || view.offset < 0 ||
         view.offset >= (int64_t(1) << 31)))
      return fail("--strides " + spec + ": '" + offsetText + "' is not an offset (an element " +
                  "count from 0 to 2^31 - 1)");
    // The buffer the view lies in: past 2^31 elements Kiln's indices do not reach.
    double extent = double(view.offset) + 1;
    for (size_t d = 0; d < view.strides.size(); ++d)
      extent += double(std::max<int64_t>(in.shapes[i][d] - 1, 0)) * double(view.strides[d]);
    if (extent > double(int64_t(1) << 31))
      return fail("--strides " + spec + ": the view reaches element " +
                  llvm::formatv("{0:F0}", extent - 1).str() +
                  " of its buffer, past Kiln's 32-bit indices");
    bufferElements[i] = std::max(elements[i], extent);
    // Elements that share a place are fine to read (a broadcast input); a kernel
    // that stores to them races, and --check may then differ.
    if (llvm::any_of(llvm::zip(view.strides, in.shapes[i]),
                     [](auto sd) { return std::get<0>(sd) == 0 && std::get<1>(sd) > 1; }))
      llvm::errs() << "kiln-run: note: --strides " << spec << ": the view repeats elements "
                   << "(a stride of 0); if the kernel stores to '" << name
                   << "', which store lands is up to the device\n";
    in.views[i] = std::move(view);
  }
  // Each tensor lives on the host and on the device (host memory too for the CPU
  // device, and for lavapipe), and once more as the CPU's result under --check.
  double needed = 0;
  for (size_t i = 0; i < info.args.size(); ++i)
    needed += (elements[i] + bufferElements[i]) * dtypeBytes(info.args[i].dtype) *
              (check ? 1.5 : 1);
  double physical = double(sysconf(_SC_PHYS_PAGES)) * double(sysconf(_SC_PAGE_SIZE));
  if (needed > physical)
    return fail(llvm::formatv("the tensors need about {0:F1} GiB of memory (host and device"
                              "{1}); this machine has {2:F1} GiB",
                              needed / (1 << 30), check ? ", and the CPU's result for --check" : "",
                              physical / (1 << 30))
                    .str());
  for (size_t i = 0; i < info.args.size(); ++i) {
    const ArgInfo &a = info.args[i];
    if (!a.isTensor)
      continue;
    size_t n = static_cast<size_t>(elements[i]);
    in.tensors[i].resize(n * dtypeBytes(a.dtype)); // zeros
    if (auto l = loaded.find(a.name); l != loaded.end()) {
      in.tensors[i] = std::move(l->second.bytes);
    } else if (auto f = fills.find(a.name); f != fills.end()) {
      std::string problem = fillSequence(in.tensors[i], a.dtype, n, f->second);
      if (!problem.empty())
        return fail("--fill " + a.name + "=" + f->second + ": " + problem);
    } else if (!llvm::is_contained(zeroTensors, a.name)) {
      fillRandom(in.tensors[i], a.dtype, n, gen);
    }
    bytesMoved += static_cast<double>(in.tensors[i].size());
  }

  if (!tuneSpecs.empty() && autotuneDeclared)
    return fail("give either --tune NAME=... or --autotune, not both");
  if (autotuneDeclared) {
    for (const ParamValue &p : info.params)
      if (!p.tune.empty() && !params.count(p.name)) {
        std::string values;
        for (const std::string &v : p.tune)
          values += (values.empty() ? "" : ",") + v;
        tuneSpecs.push_back(p.name + "=" + values);
      }
    if (tuneSpecs.empty())
      return fail("kernel '" + kernel + "' declares no tune values (or -D fixes them all)");
  }
  if (!tuneSpecs.empty()) {
    std::map<std::string, std::vector<std::string>> choices;
    for (llvm::StringRef spec : tuneSpecs) {
      auto [name, values] = spec.split('=');
      if (name.empty() || values.empty())
        return fail("--tune expects NAME=V1,V2,..., got '" + spec + "'");
      auto param = llvm::find_if(info.params, [&](const ParamValue &p) { return p.name == name; });
      if (param == info.params.end())
        return fail("--tune " + spec + ": kernel '" + kernel + "' has no param '" + name + "'");
      if (choices.count(name.str()))
        return fail("--tune " + spec + ": param '" + name + "' is tuned twice");
      if (params.count(name.str()))
        return fail("--tune " + spec + ": param '" + name + "' is also fixed by -D");
      for (llvm::StringRef v : llvm::split(values, ',')) {
        if (v.empty())
          return fail("--tune " + spec + ": an empty value (expected NAME=V1,V2,...)");
        // A value its param cannot take (-D's rules) is the user's typo, not a
        // candidate the target cannot hold (those are skipped while tuning).
        Const ignored;
        if (std::string why = parseParamText(v, param->dtype, ignored); !why.empty())
          return fail("--tune " + spec + ": " + name + "=" + v + ": " + why);
        if (llvm::is_contained(choices[name.str()], v.str()))
          return fail("--tune " + spec + ": value " + v + " is given twice");
        choices[name.str()].push_back(v.str());
      }
    }
    std::vector<ParamSet> candidates;
    for (ParamSet c : Session::combinations(choices)) {
      for (auto &[name, value] : params)
        c.emplace(name, value); // -D fixes what --tune does not vary
      candidates.push_back(std::move(c));
    }
    std::vector<Tensor> scratch;
    std::vector<rt::Arg> args;
    if (rt::Status st = upload(session, info, in, scratch, args); !st)
      return fail(st.message());
    TuneOptions options;
    options.progress = 1;
    TuneResult tuned = session.autotune(source, kernel, candidates, args, options, inputFile);
    if (!tuned.kernel.ok())
      return fail(tuned.kernel.status().message());
    k = tuned.kernel;
    params = tuned.params;
  }

  if (!saveDir.empty()) {
    // --save writes DIR/NAME.npy and DIR/NAME.cpu.npy: never over a file the
    // run reads.
    for (const std::string &l : loadSpecs) {
      llvm::StringRef file = llvm::StringRef(l).split('=').second;
      for (const ArgInfo &a : info.args)
        for (const char *suffix : {"", ".cpu"}) {
          std::string path = saveDir + "/" + a.name + suffix + ".npy";
          bool same = false;
          if (a.isTensor && !llvm::sys::fs::equivalent(path, file, same) && same)
            return fail("--save " + saveDir + " would overwrite '" + file.str() +
                        "', which --load reads; save elsewhere");
        }
    }
    if (std::error_code ec = llvm::sys::fs::create_directories(saveDir))
      return fail("--save " + saveDir + ": " + ec.message());
  }
  // Every tensor after a launch as DIR/NAME{suffix}.npy.
  auto save = [&](const std::vector<std::vector<char>> &tensors, const std::string &suffix) {
    for (size_t i = 0; i < info.args.size(); ++i) {
      if (!info.args[i].isTensor)
        continue;
      std::string path = saveDir + "/" + info.args[i].name + suffix + ".npy", error;
      if (!npy::write(path, info.args[i].dtype, in.shapes[i], tensors[i], error))
        return fail("--save: " + error);
    }
    return 0;
  };

  std::vector<std::vector<char>> out;
  double ms = 0;
  if (rt::Status st = runOn(session, k, info, in, out, bench ? &ms : nullptr); !st)
    return fail(st.message());
  if (!saveDir.empty())
    if (int failed = save(out, ""))
      return failed;
  // The CPU reference runs first: what either run prints (C stdio) comes before
  // kiln-run's lines.
  std::string checkLine, mismatches;
  auto shortest = [](double v) -> std::string { // enough digits for any type, none more
    char text[32];
    std::snprintf(text, sizeof(text), "%.17g", v);
    for (int digits = 1; digits < 17; ++digits) {
      char shorter[32];
      std::snprintf(shorter, sizeof(shorter), "%.*g", digits, v);
      if (std::strtod(shorter, nullptr) == v || std::isnan(v))
        return std::string(shorter);
    }
    return std::string(text);
  };
  int status = 0;
  if (check) {
    Session cpu("cpu");
    Kernel ref = isBundle ? cpu.load(source, kernel)
                          : cpu.compile(source, kernel, params, inputFile);
    std::vector<std::vector<char>> want;
    if (!ref.ok() && isBundle)
      return fail("--check runs the bundle's cpu code: " + ref.status().message());
    if (!ref.ok())
      return fail(ref.status().message());
    if (rt::Status st = runOn(cpu, ref, info, in, want, nullptr); !st)
      return fail("CPU reference: " + st.message());
    if (!saveDir.empty())
      if (int failed = save(want, ".cpu"))
        return failed;
    double worst = 0;
    int64_t bad = 0;
    for (size_t i = 0; i < info.args.size(); ++i) {
      if (!info.args[i].isTensor)
        continue;
      DType dt = info.args[i].dtype;
      auto [rtol, atol] = tolerance(dt);
      for (auto [given, value] : {std::pair(&rtols, &rtol), std::pair(&atols, &atol)}) {
        if (auto one = given->find(info.args[i].name); one != given->end())
          *value = one->second;
        else if (auto every = given->find(""); every != given->end() && isFloat(dt))
          *value = every->second;
      }
      int64_t n = static_cast<int64_t>(out[i].size() / dtypeBytes(dt));
      size_t width = dtypeBytes(dt);
      int64_t badHere = 0, first = -1;
      for (int64_t e = 0; e < n; ++e) {
        double g = elementAt(out[i], dt, e), w = elementAt(want[i], dt, e);
        bool same = withinTolerance(g, w, rtol, atol);
        double diff = std::abs(g - w);
        if (same && std::isnan(diff)) // equal infinities, or two NaNs
          diff = 0;
        // Integers must match exactly, bit for bit (a double cannot tell 64-bit
        // values apart past 2^53).
        if (!isFloat(dt))
          same = std::memcmp(out[i].data() + e * width, want[i].data() + e * width, width) == 0;
        worst = std::max(worst, std::isnan(diff) ? INFINITY : diff);
        if (!same && first < 0)
          first = e;
        badHere += !same;
      }
      if (badHere) // which tensor, how much of it, and where it starts
        mismatches += llvm::formatv("\n  {0}: {1} of {2} elements differ; first at flat index "
                                    "{3}: got {4}, want {5} (rtol {6:e}, atol {7:e})",
                                    info.args[i].name, badHere, n, first,
                                    elementText(out[i], dt, first, shortest),
                                    elementText(want[i], dt, first, shortest), rtol, atol)
                          .str();
      bad += badHere;
    }
    checkLine = llvm::formatv("  check vs cpu: {0} (max |diff| {1:e})", bad ? "FAILED" : "ok",
                              worst)
                    .str();
    status = bad ? 1 : 0;
  }
  std::fflush(stdout);
  llvm::outs() << llvm::formatv("{0} on {1} ({2})", kernel, session.device().name(),
                                session.device().target())
               << checkLine;
  if (bench) {
    llvm::outs() << llvm::formatv("  {0:f3} ms  {1:f1} GB/s", ms, bytesMoved / ms / 1e6);
    if (flopsPerLaunch > 0)
      llvm::outs() << llvm::formatv("  {0:f3} TFLOP/s", flopsPerLaunch / ms / 1e9);
  }
  llvm::outs() << mismatches << "\n";
  return status;
}
