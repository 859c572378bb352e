//===- SPIRV.cpp - SPIR-V words, and Metal source through SPIRV-Cross -----===//

#include "codegen/Common/GPUBinary.h"

#include "mlir/Dialect/SPIRV/IR/SPIRVOps.h"
#include "mlir/Target/SPIRV/Serialization.h"

#include <spirv_cross/spirv_cross_c.h>

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

llvm::Expected<std::string> kiln::spirv::toMSL(const std::vector<uint32_t> &words) {
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
  std::string msl = source;
  spvc_context_destroy(context);
  return msl;
}
