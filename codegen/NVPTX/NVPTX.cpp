//===- NVPTX.cpp - PTX and cubin from the NVVM-lowered module -------------===//

#include "codegen/Common/GPUBinary.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <cstdlib>

using namespace kiln;

static llvm::Error makeError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

std::string nvptx::findToolkit() {
  for (const char *env : {"CUDA_HOME", "CUDA_PATH"})
    if (const char *dir = std::getenv(env); dir && llvm::sys::fs::is_directory(dir))
      return dir;
  if (llvm::sys::fs::exists("/usr/local/cuda/bin/ptxas"))
    return "/usr/local/cuda";
  return "";
}

/// The object that gpu-module-to-binary left in the gpu.binary op.
llvm::Expected<GPUBinary> kiln::extractGPUBinary(mlir::ModuleOp module, bool isText) {
  GPUBinary out;
  out.isText = isText;
  unsigned count = 0;
  module.walk([&](mlir::gpu::BinaryOp binary) {
    for (mlir::Attribute object : binary.getObjects()) {
      out.bytes += mlir::cast<mlir::gpu::ObjectAttr>(object).getObject().getValue().str();
      ++count;
    }
  });
  if (count != 1)
    return makeError("expected one device object, found " + llvm::Twine(count));
  return out;
}

llvm::Expected<GPUBinary> nvptx::serialize(mlir::ModuleOp module, const Target &target,
                                           llvm::StringRef format) {
  std::string toolkit = findToolkit();
  if (format == "cubin" && toolkit.empty())
    return makeError("--emit=cubin needs ptxas from the CUDA toolkit; none found in "
                     "CUDA_HOME, CUDA_PATH or /usr/local/cuda (use --emit=ptx instead)");
  std::string pipeline = "builtin.module(gpu-module-to-binary{format=" +
                         std::string(format == "cubin" ? "bin" : "isa") +
                         (toolkit.empty() ? "" : " toolkit=" + toolkit) + "})";
  if (mlir::failed(runPipeline(module, pipeline)))
    return makeError("PTX generation failed for " + target.str());
  auto binary = extractGPUBinary(module, format == "ptx");
  // The PTX text comes with the C string's terminator.
  if (binary && binary->isText)
    while (!binary->bytes.empty() && binary->bytes.back() == '\0')
      binary->bytes.pop_back();
  return binary;
}
