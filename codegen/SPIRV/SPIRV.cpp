//===- SPIRV.cpp - SPIR-V words, and Metal source through SPIRV-Cross -----===//

#include "codegen/Common/GPUBinary.h"

#include "mlir/Dialect/SPIRV/IR/SPIRVOps.h"
#include "mlir/Target/SPIRV/Serialization.h"

#include "llvm/ADT/StringSet.h"
#include "llvm/Support/thread.h"

#include <spirv_cross/spirv_cross_c.h>

#include <optional>

using namespace kiln;

static llvm::Error makeError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

llvm::Expected<std::vector<uint32_t>> kiln::spirv::serialize(mlir::ModuleOp module) {
  llvm::SmallVector<mlir::spirv::ModuleOp> modules(module.getOps<mlir::spirv::ModuleOp>());
  if (modules.size() != 1)
    return makeError("expected one spirv.module after lowering, found " +
                     llvm::Twine(modules.size()));
  llvm::SmallVector<uint32_t> words;
  if (mlir::failed(mlir::spirv::serialize(modules.front(), words)))
    return makeError("SPIR-V serialization failed");
  return std::vector<uint32_t>(words.begin(), words.end());
}

/// Names an MSL kernel function cannot take that SPIRV-Cross passes through:
/// C++14 keywords, MSL's address spaces and function qualifiers, and the names
/// of MSL's types (a function named `uint` would hide the type in its own body).
void kiln::spirv::addStrings(std::vector<uint32_t> &words, const std::vector<std::string> &lines) {
  // Logical layout (SPIR-V 2.4): capabilities, extensions, imports, memory
  // model, entry points and execution modes come first; the debug section that
  // follows opens with the OpStrings. Each string takes a fresh id.
  auto leading = [](uint32_t op) {
    return op == 10 || op == 11 || op == 14 || // extensions, imports, memory model
           op == 15 || op == 16 || op == 17 || // entry points, modes, capabilities
           op == 331;                          // OpExecutionModeId
  };
  size_t at = 5; // after the header
  while (at < words.size() && leading(words[at] & 0xffff) && (words[at] >> 16) > 0)
    at += words[at] >> 16;
  std::vector<uint32_t> inserted;
  for (const std::string &line : lines) {
    size_t textWords = line.size() / 4 + 1; // with the terminating NUL
    inserted.push_back(uint32_t((2 + textWords) << 16) | 7u); // OpString
    inserted.push_back(words[3]++);                            // its id, from the bound
    for (size_t w = 0; w < textWords; ++w) {
      uint32_t word = 0;
      for (size_t b = 0; b < 4 && 4 * w + b < line.size(); ++b)
        word |= uint32_t(static_cast<unsigned char>(line[4 * w + b])) << (8 * b);
      inserted.push_back(word);
    }
  }
  words.insert(words.begin() + std::min(at, words.size()), inserted.begin(), inserted.end());
}

static bool reservedInMSL(llvm::StringRef name) {
  static const llvm::StringSet<> words = {
      // C++14 keywords.
      "alignas", "alignof", "and", "and_eq", "asm", "auto", "bitand", "bitor", "bool", "break",
      "case", "catch", "char", "char16_t", "char32_t", "class", "compl", "const", "constexpr",
      "const_cast", "continue", "decltype", "default", "delete", "do", "double",
      "dynamic_cast", "else", "enum", "explicit", "export", "extern", "false", "float", "for",
      "friend", "goto", "if", "inline", "int", "long", "mutable", "namespace", "new",
      "noexcept", "not", "not_eq", "nullptr", "operator", "or", "or_eq", "private",
      "protected", "public", "register", "reinterpret_cast", "return", "short", "signed",
      "sizeof", "static", "static_assert", "static_cast", "struct", "switch", "template",
      "this", "thread_local", "throw", "true", "try", "typedef", "typeid", "typename", "union",
      "unsigned", "using", "virtual", "void", "volatile", "wchar_t", "while", "xor", "xor_eq",
      // MSL: address spaces, function qualifiers, the namespace.
      "device", "constant", "thread", "threadgroup", "threadgroup_imageblock", "ray_data",
      "object_data", "kernel", "vertex", "fragment", "visible", "stitchable", "mesh", "object",
      "intersection", "metal", "main",
      // MSL types that are not scalars or vectors.
      "size_t", "ptrdiff_t", "half", "bfloat", "uchar", "ushort", "uint", "ulong", "sampler",
      "texture1d", "texture1d_array", "texture2d", "texture2d_array", "texture2d_ms",
      "texture2d_ms_array", "texture3d", "texturecube", "texturecube_array", "texture_buffer",
      "depth2d", "depth2d_array", "depth2d_ms", "depth2d_ms_array", "depthcube",
      "depthcube_array", "array", "vec", "matrix", "packed_vec", "atomic", "atomic_bool",
      "atomic_int", "atomic_uint", "atomic_ulong", "atomic_float", "simdgroup_matrix",
      "imageblock", "access"};
  if (words.contains(name))
    return true;
  // Vectors and matrices: float4, packed_uint3, half2x3, ...
  name.consume_front("packed_");
  for (llvm::StringRef scalar : {"bool", "char", "uchar", "short", "ushort", "int", "uint", "long",
                                 "ulong", "half", "bfloat", "float"}) {
    llvm::StringRef shape = name;
    if (!shape.consume_front(scalar))
      continue;
    auto isWidth = [](char c) { return c >= '2' && c <= '4'; };
    if ((shape.size() == 1 && isWidth(shape[0])) ||
        (shape.size() == 3 && isWidth(shape[0]) && shape[1] == 'x' && isWidth(shape[2])))
      return true;
  }
  return false;
}

/// SPIRV-Cross's translation, on the calling thread.
static llvm::Expected<spirv::MSLSource> translateToMSL(const std::vector<uint32_t> &words) {
  spvc_context context = nullptr;
  if (spvc_context_create(&context) != SPVC_SUCCESS)
    return makeError("SPIRV-Cross: cannot create a context");
  auto fail = [&](const char *what) {
    std::string message = std::string("SPIRV-Cross ") + what + ": " +
                          spvc_context_get_last_error_string(context);
    spvc_context_destroy(context);
    return makeError(message);
  };
  spvc_parsed_ir ir = nullptr;
  if (spvc_context_parse_spirv(context, words.data(), words.size(), &ir) != SPVC_SUCCESS)
    return fail("could not parse the SPIR-V");
  spvc_compiler compiler = nullptr;
  if (spvc_context_create_compiler(context, SPVC_BACKEND_MSL, ir,
                                   SPVC_CAPTURE_MODE_TAKE_OWNERSHIP, &compiler) != SPVC_SUCCESS)
    return fail("could not create the MSL compiler");
  const spvc_entry_point *entries = nullptr;
  size_t numEntries = 0;
  if (spvc_compiler_get_entry_points(compiler, &entries, &numEntries) != SPVC_SUCCESS ||
      numEntries != 1)
    return fail("expected one entry point");
  // SPIRV-Cross renames some reserved entry names itself (float -> _float,
  // abs -> _abs, spvFoo -> _RESERVED_IDENTIFIER_FIXUP_spvFoo); the ones it
  // passes through get the same leading underscore here (main too, which it
  // would call main0).
  std::string entry = entries[0].name;
  if (reservedInMSL(entry)) {
    std::string renamed = "_" + entry;
    if (spvc_compiler_rename_entry_point(compiler, entry.c_str(), renamed.c_str(),
                                         SpvExecutionModelGLCompute) != SPVC_SUCCESS)
      return fail("could not rename the entry point");
    entry = renamed;
  }
  spvc_compiler_options options = nullptr;
  if (spvc_compiler_create_compiler_options(compiler, &options) != SPVC_SUCCESS)
    return fail("options");
  // Metal 2.3 (macOS 11+, iOS 14+): the SIMD-group functions the reductions
  // use came in 2.1, 64-bit integers (the products inside rand) in 2.2, and
  // 64-bit integers in buffers (i64 and u64 tensors) in 2.3.
  spvc_compiler_options_set_uint(options, SPVC_COMPILER_OPTION_MSL_VERSION,
                                 SPVC_MAKE_MSL_VERSION(2, 3, 0));
  spvc_compiler_install_compiler_options(compiler, options);
  const char *source = nullptr;
  if (spvc_compiler_compile(compiler, &source) != SPVC_SUCCESS)
    return fail("could not translate to MSL");
  spirv::MSLSource msl{source, spvc_compiler_get_cleansed_entry_point_name(
                                   compiler, entry.c_str(), SpvExecutionModelGLCompute)};
  spvc_context_destroy(context);
  return msl;
}

llvm::Expected<spirv::MSLSource> kiln::spirv::toMSL(const std::vector<uint32_t> &words) {
  // SPIRV-Cross recurses over the shader's blocks: about 900 scalar stores
  // overflowed a default 8 MiB stack (a segfault in kilnc --target=metal). The
  // translation runs on a thread with room for a few tens of thousands; the
  // stack is reserved address space, touched only as deep as it goes.
  constexpr unsigned kStackBytes = 512u << 20;
  std::optional<llvm::Expected<spirv::MSLSource>> result;
  llvm::thread worker(std::optional<unsigned>(kStackBytes),
                      [&] { result.emplace(translateToMSL(words)); });
  worker.join();
  return std::move(*result);
}
