//===- GPUBinary.h - serializing lowered GPU modules ------------*- C++ -*-===//
#pragma once

#include "codegen/Common/Target.h"

#include "mlir/IR/BuiltinOps.h"

#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kiln {

/// Output of a GPU target: text (PTX, AMDGPU assembly, LLVM IR, MSL) or bytes
/// (cubin, hsaco, SPIR-V).
struct GPUBinary {
  std::string bytes;
  bool isText = false;
};

namespace nvptx {
/// `format` is "ptx" or "cubin"; cubin runs ptxas from the CUDA toolkit.
llvm::Expected<GPUBinary> serialize(mlir::ModuleOp module, const Target &target,
                                    llvm::StringRef format);
/// The CUDA toolkit folder (CUDA_HOME, CUDA_PATH, /usr/local/cuda), or empty.
std::string findToolkit();
/// Whether the toolkit's ptxas assembles for `chip`: its --help lists every
/// architecture it takes (CUDA 13 dropped sm_70 and sm_72). Asked once per chip.
bool ptxasTakes(const std::string &toolkit, const std::string &chip);
} // namespace nvptx

namespace amdgpu {
/// `format` is "asm" or "hsaco"; hsaco links with ld.lld and the ROCm device
/// libraries (ocml, ockl) from Debian's rocm-device-libs.
llvm::Expected<GPUBinary> serialize(mlir::ModuleOp module, const Target &target,
                                    llvm::StringRef format);
} // namespace amdgpu

namespace spirv {
/// The SPIR-V binary of the (single) spirv.module in `module`.
llvm::Expected<std::vector<uint32_t>> serialize(mlir::ModuleOp module);
/// Records `lines` in `words` as OpStrings (debug information that every
/// consumer may ignore, in SPIR-V 1.0 too): kilnc records each kernel's
/// abiSignature there (kiln/KernelInfo.h).
void addStrings(std::vector<uint32_t> &words, const std::vector<std::string> &lines);
/// Metal Shading Language for a SPIR-V binary of one kernel, through SPIRV-Cross.
struct MSLSource {
  std::string text;
  /// The kernel's function in `text`: its name, unless MSL reserves that
  /// (`device`, `float`, `main`, `abs`, ...), then a name derived from it.
  std::string entry;
};
llvm::Expected<MSLSource> toMSL(const std::vector<uint32_t> &words);
} // namespace spirv

/// The device module as LLVM IR text (NVVM and ROCDL targets).
llvm::Expected<std::string> gpuModuleToLLVMIR(mlir::ModuleOp module);

} // namespace kiln

namespace kiln {
/// The object gpu-module-to-binary attached to the module's gpu.binary op.
llvm::Expected<GPUBinary> extractGPUBinary(mlir::ModuleOp module, bool isText);
} // namespace kiln
