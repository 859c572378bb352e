//===- Npy.cpp - NumPy .npy files for kiln-run's tensors -----------------===//
//
// The format (numpy.lib.format): the magic "\x93NUMPY", a major and a minor
// version byte, the header's length (u16 in version 1, u32 in 2 and 3), then
// the header, a Python dict literal such as
//   {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
// padded with spaces and a newline so the data starts 64-byte aligned.
//
//===----------------------------------------------------------------------===//

#include "tools/kiln-run/Npy.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FileSystem.h"

#include <cctype>
#include <fstream>
#include <iterator>
#include <map>

using namespace kiln;

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicBytes = 6;

/// The descr np.save writes for `dt` first, then the others read as `dt`.
std::vector<std::string> descrs(DType dt) {
  switch (dt) {
  case DType::I1: return {"|b1"};
  case DType::I8: return {"|i1"};
  case DType::I16: return {"<i2"};
  case DType::I32: return {"<i4"};
  case DType::I64: return {"<i8"};
  case DType::U8: return {"|u1"};
  case DType::U16: return {"<u2"};
  case DType::U32: return {"<u4"};
  case DType::U64: return {"<u8"};
  case DType::F16: return {"<f2"};
  case DType::F32: return {"<f4"};
  case DType::F64: return {"<f8"};
  // No NumPy type: the bits, as unsigned integers or ml_dtypes' void types.
  case DType::BF16: return {"<u2", "|V2", "<V2"};
  case DType::F8E4M3:
  case DType::F8E5M2: return {"|u1", "|V1", "<V1"};
  }
  return {};
}

/// The header dict, read as NumPy reads it (a Python literal): keys and
/// strings in single or double quotes, True/False, and tuples of sizes;
/// spaces anywhere; a trailing comma allowed; nothing but spaces and the
/// newline after the closing brace.
struct Header {
  std::map<std::string, std::string> strings, words; // 'descr', 'fortran_order'
  std::map<std::string, std::vector<int64_t>> tuples; // 'shape'
  std::map<std::string, std::string> lists;           // a structured array's 'descr'
};

class HeaderParser {
public:
  explicit HeaderParser(llvm::StringRef text) : rest(text) {}

  /// Parses the whole header; the error says what was found where.
  bool parse(Header &out, std::string &error) {
    if (!consume('{'))
      return fail("it does not start with '{'", error);
    while (!consume('}')) {
      std::string key;
      if (!string(key))
        return fail("expected a quoted key", error);
      if (out.strings.count(key) || out.words.count(key) || out.tuples.count(key) ||
          out.lists.count(key)) {
        error = "its header gives '" + key + "' twice";
        return false;
      }
      if (!consume(':'))
        return fail("expected ':' after '" + key + "'", error);
      std::string text;
      std::vector<int64_t> sizes;
      if (list(text))
        out.lists[key] = text;
      else if (string(text))
        out.strings[key] = text;
      else if (tuple(sizes, error))
        out.tuples[key] = sizes;
      else if (!error.empty())
        return false;
      else if (word(text))
        out.words[key] = text;
      else
        return fail("cannot read the value of '" + key + "'", error);
      if (!consume(',') && !peek('}'))
        return fail("expected ',' or '}' after the value of '" + key + "'", error);
    }
    if (!rest.trim(" \n").empty())
      return fail("text follows the closing '}'", error);
    return true;
  }

private:
  llvm::StringRef rest;

  bool peek(char c) {
    rest = rest.ltrim(' ');
    return rest.starts_with(llvm::StringRef(&c, 1));
  }
  bool consume(char c) {
    if (!peek(c))
      return false;
    rest = rest.drop_front();
    return true;
  }
  bool fail(const std::string &what, std::string &error) {
    error = "cannot parse its header: " + what;
    return false;
  }
  bool string(std::string &out) {
    rest = rest.ltrim(' ');
    if (rest.empty() || (rest[0] != '\'' && rest[0] != '"'))
      return false;
    size_t end = rest.find(rest[0], 1);
    if (end == llvm::StringRef::npos)
      return false;
    out = rest.slice(1, end).str();
    rest = rest.drop_front(end + 1);
    return true;
  }
  /// A bracketed list, kept as text (only its presence matters).
  bool list(std::string &out) {
    if (!peek('['))
      return false;
    int depth = 0;
    for (size_t i = 0; i < rest.size(); ++i) {
      depth += rest[i] == '[' ? 1 : rest[i] == ']' ? -1 : 0;
      if (depth == 0) {
        out = rest.take_front(i + 1).str();
        rest = rest.drop_front(i + 1);
        return true;
      }
    }
    return false;
  }
  bool word(std::string &out) {
    rest = rest.ltrim(' ');
    llvm::StringRef w = rest.take_while([](char c) { return std::isalnum((unsigned char)c); });
    if (w.empty())
      return false;
    out = w.str();
    rest = rest.drop_front(w.size());
    return true;
  }
  /// "(3, 4)", "(5,)" or "()"; "(5)" is a number in parentheses, not a tuple.
  /// False with `error` empty when no '(' starts the value.
  bool tuple(std::vector<int64_t> &out, std::string &error) {
    if (!consume('('))
      return false;
    bool comma = false;
    while (!consume(')')) {
      rest = rest.ltrim(' ');
      llvm::StringRef digits = rest.take_while([](char c) { return std::isdigit((unsigned char)c); });
      unsigned long long v;
      if (digits.empty() || digits.getAsInteger(10, v) || v > uint64_t(INT64_MAX))
        return fail("the shape holds something other than sizes", error);
      out.push_back(static_cast<int64_t>(v));
      rest = rest.drop_front(digits.size());
      comma = consume(',');
      if (!comma && !peek(')'))
        return fail("expected ',' or ')' in the shape", error);
    }
    if (out.size() == 1 && !comma)
      return fail("the shape (" + std::to_string(out[0]) + ") is not a tuple; write (" +
                      std::to_string(out[0]) + ",)",
                  error);
    return true;
  }
};

} // namespace

std::string npy::shapeText(const std::vector<int64_t> &shape) {
  std::string text = "(";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + (shape.size() == 1 ? ",)" : ")");
}

bool npy::read(const std::string &path, DType dtype, Array &out, std::string &error) {
  if (!llvm::sys::fs::is_regular_file(path)) { // a directory, a device, nothing
    error = llvm::sys::fs::exists(path) ? "not a regular file" : "cannot read the file";
    return false;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = "cannot read the file";
    return false;
  }
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  llvm::StringRef bytes(data);
  if (!bytes.starts_with(llvm::StringRef(kMagic, kMagicBytes)) || bytes.size() < 10) {
    error = "not a .npy file (no \\x93NUMPY magic)";
    return false;
  }
  unsigned major = static_cast<unsigned char>(bytes[6]);
  size_t lengthBytes = major == 1 ? 2 : 4, headerAt = 8 + lengthBytes;
  if (major < 1 || major > 3) {
    error = ".npy version " + std::to_string(major) + " (this reads 1 to 3)";
    return false;
  }
  if (bytes.size() < headerAt) {
    error = "the file ends inside its header";
    return false;
  }
  size_t headerBytes = 0;
  for (size_t i = 0; i < lengthBytes; ++i)
    headerBytes |= size_t(static_cast<unsigned char>(bytes[8 + i])) << (8 * i);
  if (bytes.size() < headerAt + headerBytes) {
    error = "the file ends inside its header";
    return false;
  }
  Header header;
  if (!HeaderParser(bytes.substr(headerAt, headerBytes)).parse(header, error))
    return false;
  // NumPy's own reader takes these three keys and no others.
  for (const auto *keys : {&header.strings, &header.words, &header.lists})
    for (auto &[key, value] : *keys)
      if (!llvm::is_contained({"descr", "fortran_order", "shape"}, key)) {
        error = "its header has the key '" + key +
                "'; a .npy header holds 'descr', 'fortran_order' and 'shape' only";
        return false;
      }
  for (auto &[key, value] : header.tuples)
    if (key != "shape") {
      error = "its header has the key '" + key +
              "'; a .npy header holds 'descr', 'fortran_order' and 'shape' only";
      return false;
    }
  if (header.lists.count("descr")) {
    error = "the file holds a structured array (named fields); save one plain array per tensor";
    return false;
  }
  if (header.words.count("descr") || header.tuples.count("descr")) {
    error = "its header's 'descr' is not a string (the element type)";
    return false;
  }
  std::string descr = header.strings.count("descr") ? header.strings["descr"] : "";
  if (descr.empty() || descr.find('\0') != std::string::npos) {
    error = "its header has no readable 'descr' (the element type)";
    return false;
  }
  std::vector<std::string> accepted = descrs(dtype);
  if (!llvm::is_contained(accepted, descr)) {
    error = "the file holds '" + descr + "' elements; " + dtypeName(dtype) +
            " tensors read '" + llvm::join(accepted, "' or '") + "'";
    if (dtype == DType::BF16 || isF8(dtype))
      error += std::string(" (NumPy has no ") + dtypeName(dtype) +
               ": save its bits, e.g. a.view(np.uint" + (isF8(dtype) ? "8" : "16") + "))";
    return false;
  }
  if (!header.words.count("fortran_order")) {
    error = "its header has no 'fortran_order'";
    return false;
  }
  const std::string &order = header.words["fortran_order"];
  if (order == "True") {
    error = "the array is in Fortran order; save a C-order one (np.ascontiguousarray)";
    return false;
  }
  if (order != "False") {
    error = "its header's 'fortran_order' is '" + order + "', not True or False";
    return false;
  }
  if (!header.tuples.count("shape")) {
    error = "cannot read the shape in its header";
    return false;
  }
  out.shape = header.tuples["shape"];
  // The product of the sizes, checked before each step so that it cannot wrap.
  const uint64_t kMaxElements = uint64_t(1) << 40;
  uint64_t elements = 1;
  bool tooLarge = false;
  for (int64_t size : out.shape) {
    if (size != 0 && elements > kMaxElements / uint64_t(size))
      tooLarge = true;
    elements *= uint64_t(size);
  }
  if (tooLarge && !llvm::is_contained(out.shape, 0)) {
    error = "shape " + shapeText(out.shape) + " has more than 2^40 elements";
    return false;
  }
  uint64_t want = elements * dtypeBytes(dtype), have = bytes.size() - headerAt - headerBytes;
  if (have != want) {
    error = "shape " + shapeText(out.shape) + " needs " + std::to_string(want) +
            " bytes of data, the file has " + std::to_string(have);
    return false;
  }
  out.bytes.assign(bytes.begin() + headerAt + headerBytes, bytes.end());
  if (dtype == DType::I1) // a bool tensor holds bytes 0 and 1 only
    for (size_t i = 0; i < out.bytes.size(); ++i)
      if (out.bytes[i] != 0 && out.bytes[i] != 1) {
        error = "element " + std::to_string(i) + " is " +
                std::to_string(static_cast<unsigned char>(out.bytes[i])) +
                ", not a bool (0 or 1)";
        return false;
      }
  return true;
}

bool npy::write(const std::string &path, DType dtype, const std::vector<int64_t> &shape,
                const std::vector<char> &bytes, std::string &error) {
  std::string header = "{'descr': '" + descrs(dtype).front() +
                       "', 'fortran_order': False, 'shape': " + shapeText(shape) + ", }";
  // Version 1: magic, 1, 0, u16 length; data 64-byte aligned after a newline.
  size_t total = kMagicBytes + 4 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::ofstream file(path, std::ios::binary);
  char preamble[10] = {};
  std::copy(kMagic, kMagic + kMagicBytes, preamble);
  preamble[6] = 1;
  preamble[8] = static_cast<char>(header.size() & 0xff);
  preamble[9] = static_cast<char>(header.size() >> 8);
  file.write(preamble, sizeof(preamble));
  file.write(header.data(), static_cast<std::streamsize>(header.size()));
  file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  file.close();
  if (!file) {
    error = "cannot write '" + path + "'";
    return false;
  }
  return true;
}
