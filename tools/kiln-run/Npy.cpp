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

#include <fstream>
#include <iterator>

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

/// The value of `key` in the header dict: the text after "'key':" up to the
/// end of that value (a quoted string, a tuple or a word); empty if absent.
llvm::StringRef field(llvm::StringRef header, llvm::StringRef key) {
  size_t at = header.find(("'" + key + "'").str());
  if (at == llvm::StringRef::npos)
    return {};
  llvm::StringRef rest = header.drop_front(at + key.size() + 2).ltrim();
  if (!rest.consume_front(":"))
    return {};
  rest = rest.ltrim();
  if (rest.starts_with("'")) {
    size_t end = rest.find('\'', 1);
    return end == llvm::StringRef::npos ? llvm::StringRef() : rest.slice(1, end);
  }
  if (rest.starts_with("(")) {
    size_t end = rest.find(')');
    return end == llvm::StringRef::npos ? llvm::StringRef() : rest.slice(0, end + 1);
  }
  return rest.take_until([](char c) { return c == ',' || c == '}'; }).trim();
}

/// "(3, 4)", "(5,)" or "()" as sizes; false if it is not such a tuple.
bool parseShape(llvm::StringRef text, std::vector<int64_t> &shape) {
  if (!text.consume_front("(") || !text.consume_back(")"))
    return false;
  text = text.trim();
  if (text.empty())
    return true;
  llvm::SmallVector<llvm::StringRef> items;
  text.split(items, ',');
  for (size_t i = 0; i < items.size(); ++i) {
    llvm::StringRef item = items[i].trim();
    if (item.empty() && i + 1 == items.size() && i > 0) // "(5,)"
      break;
    long long v;
    if (item.getAsInteger(10, v) || v < 0)
      return false;
    shape.push_back(v);
  }
  return true;
}

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
  llvm::StringRef header = bytes.substr(headerAt, headerBytes);
  for (llvm::StringRef key : {"descr", "fortran_order", "shape"}) {
    std::string quoted = ("'" + key + "'").str();
    size_t at = header.find(quoted);
    if (at != llvm::StringRef::npos && header.find(quoted, at + 1) != llvm::StringRef::npos) {
      error = "its header gives " + quoted + " twice";
      return false;
    }
  }
  // NumPy's own reader takes these three keys and no others.
  for (size_t at = header.find('\''); at != llvm::StringRef::npos;) {
    size_t end = header.find('\'', at + 1);
    if (end == llvm::StringRef::npos)
      break;
    llvm::StringRef key = header.slice(at + 1, end);
    if (header.drop_front(end + 1).ltrim().starts_with(":") &&
        !llvm::is_contained({"descr", "fortran_order", "shape"}, key)) {
      error = "its header has the key '" + key.str() +
              "'; a .npy header holds 'descr', 'fortran_order' and 'shape' only";
      return false;
    }
    at = header.find('\'', end + 1);
  }
  llvm::StringRef descr = field(header, "descr"), order = field(header, "fortran_order");
  if (descr.starts_with("[")) {
    error = "the file holds a structured array (named fields); save one plain array per tensor";
    return false;
  }
  if (descr.empty() || descr.contains('\0')) {
    error = "its header has no readable 'descr' (the element type)";
    return false;
  }
  std::vector<std::string> accepted = descrs(dtype);
  if (!llvm::is_contained(accepted, descr.str())) {
    error = "the file holds '" + descr.str() + "' elements; " + dtypeName(dtype) +
            " tensors read '" + llvm::join(accepted, "' or '") + "'";
    if (dtype == DType::BF16 || isF8(dtype))
      error += std::string(" (NumPy has no ") + dtypeName(dtype) +
               ": save its bits, e.g. a.view(np.uint" + (isF8(dtype) ? "8" : "16") + "))";
    return false;
  }
  if (order.empty()) {
    error = "its header has no 'fortran_order'";
    return false;
  }
  if (order == "True") {
    error = "the array is in Fortran order; save a C-order one (np.ascontiguousarray)";
    return false;
  }
  if (order != "False") {
    error = "its header's 'fortran_order' is '" + order.str() + "', not True or False";
    return false;
  }
  if (!parseShape(field(header, "shape"), out.shape)) {
    error = "cannot read the shape in its header";
    return false;
  }
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
