//===- AOTHeader.cpp - kilnc --header: a typed C++ header for a bundle ----===//

#include "AOTHeader.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/raw_ostream.h"

namespace kiln {
namespace {

/// Names a generated header cannot declare: C++ keywords (C++20, with the alternative
/// operator spellings), macros the C and C++ libraries and GNU mode define, and the
/// names the header itself uses (its class, members and the types of its parameters).
const llvm::StringSet<> &namesCppTakes() {
  static const llvm::StringSet<> names = {
      // Keywords.
      "alignas", "alignof", "and", "and_eq", "asm", "auto", "bitand", "bitor", "bool", "break",
      "case", "catch", "char", "char8_t", "char16_t", "char32_t", "class", "compl", "concept",
      "const", "consteval", "constexpr", "constinit", "const_cast", "continue", "co_await",
      "co_return", "co_yield", "decltype", "default", "delete", "do", "double", "dynamic_cast",
      "else", "enum", "explicit", "export", "extern", "false", "float", "for", "friend", "goto",
      "if", "inline", "int", "long", "mutable", "namespace", "new", "noexcept", "not", "not_eq",
      "nullptr", "operator", "or", "or_eq", "private", "protected", "public", "register",
      "reinterpret_cast", "requires", "return", "short", "signed", "sizeof", "static",
      "static_assert", "static_cast", "struct", "switch", "template", "this", "thread_local",
      "throw", "true", "try", "typedef", "typeid", "typename", "union", "unsigned", "using",
      "virtual", "void", "volatile", "wchar_t", "while", "xor", "xor_eq",
      // GNU mode's (CMake's default) keywords.
      "typeof",
      // Macros: the libraries' (glibc's, through the standard headers the header
      // includes: `g++ -dM -E`), and GCC's and Clang's in GNU mode.
      "assert", "errno", "NULL", "EOF", "offsetof", "stdin", "stdout", "stderr", "linux",
      "unix", "i386", "alloca", "sched_priority", "be16toh", "be32toh", "be64toh", "htobe16",
      "htobe32", "htobe64", "htole16", "htole32", "htole64", "le16toh", "le32toh", "le64toh",
      "pthread_cleanup_pop", "pthread_cleanup_push", "pthread_cleanup_pop_restore_np",
      "pthread_cleanup_push_defer_np",
      // The header's own names.
      "kiln", "kiln_aot", "std", "Kernels", "bundle", "status", "device_", "module_", "status_",
      "int8_t", "int16_t", "int32_t", "int64_t", "uint8_t", "uint16_t", "uint32_t", "uint64_t"};
  return names;
}

/// Whether C++ reserves `name` to the implementation (`__int128`, `_Pragma`,
/// `__func__`): keywords and predefined names no list here can keep up with.
bool reservedName(llvm::StringRef name) {
  return name.starts_with("__") || (name.size() > 1 && name[0] == '_' && llvm::isUpper(name[1]));
}

/// `name`, with `_` appended until it is neither a name C++ takes nor one in `taken`;
/// the result is added to `taken`.
std::string cppName(llvm::StringRef name, llvm::StringSet<> &taken) {
  std::string result = name.str();
  if (reservedName(result)) // appending would keep it reserved: `__int128` is `k_int128`
    result = "k_" + name.ltrim('_').str();
  while (namesCppTakes().contains(result) || taken.contains(result))
    result += '_';
  taken.insert(result);
  return result;
}

/// Whether `name` may be a macro where the header is included: spelled as macros
/// are (no lowercase letter: INT32_MAX, EXIT_FAILURE) or reserved to the
/// implementation (a leading `_`: __LINE__, _Pragma). The lowercase macros of the
/// libraries are in namesCppTakes.
bool mayBeAMacro(llvm::StringRef name) {
  return name.starts_with("_") || llvm::none_of(name, llvm::isLower);
}

/// `text` for a `//` comment: a control character (a newline in a file name
/// would end the comment and start code) is shown as `?`.
std::string commentText(llvm::StringRef text) {
  std::string out;
  for (char c : text)
    out += static_cast<unsigned char>(c) < 0x20 || c == 0x7f ? '?' : c;
  return out;
}

/// The C++ type a scalar argument takes in a generated header: the widest of
/// its kind, so that the launch checks the value the caller gave (an `int8_t`
/// parameter turned 300 into 44 before anything could see it).
const char *cppScalarType(DType dt) {
  if (dt == DType::I1)
    return "bool";
  if (isFloat(dt))
    return "double";
  return isUnsigned(dt) ? "uint64_t" : "int64_t";
}

/// The namespace for a bundle named `stem`: its letters, digits and underscores, the
/// rest as `_`, and a leading `_` where it would start with a digit.
std::string namespaceName(llvm::StringRef stem) {
  std::string ns;
  for (char c : stem)
    ns += llvm::isAlnum(c) ? c : '_';
  if (ns.empty() || llvm::isDigit(ns[0]))
    ns = "_" + ns;
  llvm::StringSet<> none;
  return cppName(ns, none);
}

/// `/// name(x: tensor<f32>[M, N], s: f32), grid (...)`: the kernel as Kiln declares it.
void printSignatureComment(llvm::raw_ostream &os, const KernelInfo &k) {
  os << "  /// " << k.name << "(";
  for (size_t i = 0; i < k.args.size(); ++i) {
    const ArgInfo &a = k.args[i];
    os << (i ? ", " : "") << a.name << ": ";
    if (a.isTensor)
      os << "tensor<" << dtypeName(a.dtype) << ">[" << llvm::join(a.dims, ", ") << "]";
    else
      os << dtypeName(a.dtype);
  }
  os << "), grid (" << llvm::join(k.grid, ", ") << ")\n";
}

/// The C++ names of `k`'s parameters: its arguments' names, renamed where C++ or
/// the header takes them.
std::vector<std::string> parameterNames(const KernelInfo &k) {
  llvm::StringSet<> taken;
  for (const ArgInfo &a : k.args)
    taken.insert(a.name);
  std::vector<std::string> params;
  for (const ArgInfo &a : k.args) {
    taken.erase(a.name);
    params.push_back(cppName(a.name, taken));
  }
  return params;
}

/// One launch method: typed parameters, converted to `kiln::rt::Arg`s, launched by the
/// kernel's own name.
void printLaunchMethod(llvm::raw_ostream &os, const KernelInfo &k, llvm::StringRef method,
                       const std::vector<std::string> &params) {
  printSignatureComment(os, k);
  os << "  kiln::rt::Status " << method << "(";
  for (size_t i = 0; i < k.args.size(); ++i) {
    const ArgInfo &a = k.args[i];
    os << (i ? ", " : "");
    if (a.isTensor)
      os << "const kiln::rt::Arg &" << params[i];
    else
      os << cppScalarType(a.dtype) << " " << params[i];
  }
  os << ") {\n    if (!status_)\n      return status_;\n    return device_->launch(module_, \""
     << k.name << "\", {";
  for (size_t i = 0; i < k.args.size(); ++i) {
    const ArgInfo &a = k.args[i];
    os << (i ? ", " : "");
    if (a.isTensor)
      os << params[i];
    else
      os << "kiln::rt::Arg::"
         << (isFloat(a.dtype)      ? "floating("
             : isUnsigned(a.dtype) ? "unsignedInteger("
                                   : "integer(")
         << params[i] << ", kiln::DType::" << dtypeEnumName(a.dtype) << ")";
  }
  os << "});\n  }\n";
}

} // namespace

std::string generateAOTHeader(const std::string &bundle, const std::vector<KernelInfo> &kernels,
                              const std::string &stem, const std::string &source) {
  std::string ns = namespaceName(stem);
  llvm::StringSet<> methodsTaken;
  for (const KernelInfo &k : kernels)
    methodsTaken.insert(k.name);
  std::vector<std::string> methods;
  std::vector<std::vector<std::string>> params;
  for (const KernelInfo &k : kernels) {
    methodsTaken.erase(k.name);
    methods.push_back(cppName(k.name, methodsTaken));
    params.push_back(parameterNames(k));
  }
  std::string out;
  llvm::raw_string_ostream os(out);
  os << "// Generated by kilnc from " << commentText(source) << ". Do not edit.\n"
     << "#pragma once\n\n#include <kiln/Runtime.h>\n\n#include <cstdint>\n#include <memory>\n"
     << "#include <string>\n\n";
  // A name spelled like a macro that is one where the header is included would
  // turn into something else: say so, rather than fail somewhere inside.
  llvm::StringSet<> guarded;
  auto guard = [&](const std::string &name) {
    if (mayBeAMacro(name) && guarded.insert(name).second)
      os << "#ifdef " << name << "\n#error \"kilnc --header: '" << name
         << "', a name in this header, is a macro here; rename the kernel or argument, or "
            "the bundle file\"\n#endif\n";
  };
  guard(ns);
  for (size_t i = 0; i < kernels.size(); ++i) {
    guard(methods[i]);
    for (const std::string &p : params[i])
      guard(p);
  }
  os << (guarded.empty() ? "" : "\n") << "namespace kiln_aot::" << ns << " {\n\n"
     << "inline const std::string &bundle() {\n  static const unsigned char bytes[] = {";
  for (size_t i = 0; i < bundle.size(); ++i)
    os << (i % 16 ? "" : "\n    ") << static_cast<unsigned>(static_cast<unsigned char>(bundle[i]))
       << ",";
  os << "\n  };\n  static const std::string data(reinterpret_cast<const char *>(bytes), "
     << "sizeof bytes);\n"
     << "  return data;\n}\n\n"
     << "/// The kernels of " << commentText(stem) << ", loaded for one device.\n"
     << "class Kernels {\npublic:\n"
     << "  /// Keeps `device` (from Device::open) alive as long as this object.\n"
     << "  explicit Kernels(kiln::rt::Device &device) : device_(device.shared_from_this()) {\n"
     << "    auto m = device.loadBundle(bundle());\n"
     << "    if (m)\n      module_ = *m;\n    else\n      status_ = m.status();\n  }\n"
     << "  const kiln::rt::Status &status() const { return status_; }\n\n";
  for (size_t i = 0; i < kernels.size(); ++i)
    printLaunchMethod(os, kernels[i], methods[i], params[i]);
  os << "\nprivate:\n  std::shared_ptr<kiln::rt::Device> device_;\n  kiln::rt::Module module_;\n"
     << "  kiln::rt::Status status_;\n};\n\n} // namespace kiln_aot::" << ns << "\n";
  return out;
}

} // namespace kiln
