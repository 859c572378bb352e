//===- AMDGPU.cpp - AMDGPU assembly and hsaco from the ROCDL module -------===//

#include "codegen/Common/GPUBinary.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

using namespace kiln;

static llvm::Error makeError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// MLIR looks for `<toolkit>/amdgcn/bitcode` and `<toolkit>/llvm/bin/ld.lld`; Debian
/// puts the device libraries and lld elsewhere, so Kiln links them into a folder
/// laid out that way (once, under the system temp directory).
static llvm::Expected<std::string> rocmToolkit() {
  const char *bitcode = "/usr/lib/x86_64-linux-gnu/amdgcn/bitcode";
  const char *lld = "/usr/lib/llvm-19/bin/ld.lld";
  if (const char *rocm = std::getenv("ROCM_PATH"))
    if (llvm::sys::fs::exists(llvm::Twine(rocm) + "/amdgcn/bitcode/ocml.bc"))
      return std::string(rocm);
  if (!llvm::sys::fs::exists(llvm::Twine(bitcode) + "/ocml.bc"))
    return makeError("the ROCm device libraries are missing (install Debian's "
                     "rocm-device-libs, or set ROCM_PATH)");
  if (!llvm::sys::fs::exists(lld))
    return makeError("ld.lld is missing (install Debian's lld-19)");
  llvm::SmallString<128> root;
  llvm::sys::path::system_temp_directory(/*erasedOnReboot=*/true, root);
  llvm::sys::path::append(root, "kiln-rocm-toolkit");
  llvm::SmallString<128> amdgcn(root), bin(root);
  llvm::sys::path::append(amdgcn, "amdgcn");
  llvm::sys::path::append(bin, "llvm", "bin");
  if (llvm::sys::fs::create_directories(amdgcn) || llvm::sys::fs::create_directories(bin))
    return makeError("cannot create " + root);
  auto link = [](const llvm::Twine &target, const llvm::Twine &path) {
    if (!llvm::sys::fs::exists(path))
      (void)llvm::sys::fs::create_link(target, path); // a concurrent creator is fine
  };
  link(bitcode, amdgcn + "/bitcode");
  link(lld, bin + "/ld.lld");
  return std::string(root);
}

llvm::Expected<GPUBinary> amdgpu::serialize(mlir::ModuleOp module, const Target &target,
                                            llvm::StringRef format) {
  auto toolkit = rocmToolkit();
  if (!toolkit)
    return toolkit.takeError();
  std::string pipeline = "builtin.module(gpu-module-to-binary{format=" +
                         std::string(format == "hsaco" ? "bin" : "isa") +
                         " toolkit=" + *toolkit + "})";
  if (mlir::failed(runPipeline(module, pipeline)))
    return makeError("AMDGPU code generation failed for " + target.str());
  return extractGPUBinary(module, format == "asm");
}
