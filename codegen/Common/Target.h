//===- Target.h - code generation targets and their pipelines ---*- C++ -*-===//
#pragma once

#include "kiln/KernelInfo.h"

#include "mlir/IR/BuiltinOps.h"

#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace kiln {

/// A code generation target as written on the command line: `cpu`,
/// `cuda:sm_90`, `amdgpu:gfx942`, `vulkan` (or `vulkan:1.3`, `vulkan:1.3:cpu`,
/// `vulkan:1.3:shared=49152`, `vulkan:1.2:loose-specials`), `metal`.
struct Target {
  enum class Kind { CPU, CUDA, AMDGPU, Vulkan, Metal };
  Kind kind = Kind::CPU;
  std::string chip; // sm_90, gfx942, vulkan1.2, ...
  /// `vulkan:1.x:cpu`: a Vulkan implementation on the host CPU (lavapipe,
  /// SwiftShader). Same SPIR-V rules; only the thread counts differ.
  bool vulkanOnCPU = false;
  /// `vulkan:...:shared=BYTES`: the device's maxComputeSharedMemorySize; 0 for
  /// the 16 KiB every Vulkan device has.
  int64_t vulkanSharedBytes = 0;
  /// `vulkan:...:loose-specials`: a device without shaderSignedZeroInfNanPreserve,
  /// whose kernels cannot ask for IEEE infinities, NaNs and signed zeros
  /// (kiln-spirv-exact-floats' preserve-specials).
  bool vulkanLooseSpecials = false;
  /// `vulkan:...:float-atomic-add`: a device with VK_EXT_shader_atomic_float's
  /// shaderBufferFloat32AtomicAdd, where an f32 atomic_add is one instruction.
  bool vulkanFloatAtomicAdd = false;
  /// `matrix-units` chosen by the user (kilnc --matrix-units, KILN_MATRIX_UNITS
  /// for the JIT); empty picks the chip's best.
  std::string matrixUnitsOverride;

  static llvm::Expected<Target> parse(llvm::StringRef spec);
  std::string str() const;
  bool isGPU() const { return kind != Kind::CPU; }

  /// Threads per warp / wavefront / subgroup the layout assumes.
  unsigned warpSize() const;
  /// Shared (workgroup) memory one program may use without opting in.
  int64_t sharedMemoryBytes() const;
  /// The matrix units kilnc's --matrix-units names: wgmma on NVIDIA sm_90,
  /// mma-sync on the other sm_80 and newer, mfma on AMD CDNA (gfx90a, gfx94x),
  /// wmma on RDNA3 (gfx11), none elsewhere. The pipeline hands the passes
  /// mfma-cdna3 for mfma on gfx94x (pipelineUpTo).
  std::string matrixUnits() const;
  /// The matrix units this target can use: "none" and the chip's own.
  std::vector<std::string> availableMatrixUnits() const;
  /// Sets matrixUnitsOverride ("auto" clears it); an error names the units the
  /// target has.
  llvm::Error setMatrixUnits(llvm::StringRef units);
  /// The CUDA compute capability as a number (90 for sm_90), 0 for other kinds.
  unsigned smVersion() const;
  /// The architecture PTX is generated for: sm_90a for sm_90 (wgmma needs the
  /// architecture-specific target), sm_90 for newer chips (LLVM 19 knows none
  /// of them; ptxas compiles that PTX for them), else the chip.
  std::string ptxChip() const;
  /// A CUDA chip newer than LLVM 19 knows (Blackwell): its PTX is made for
  /// ptxChip() and its cubin by ptxas for the chip itself.
  bool isNewerThanLLVM() const { return smVersion() > 90; }
  /// The `--emit` kinds this target produces, for help and error messages.
  std::vector<std::string> emits() const;
};

/// Where a GPU pipeline may stop: after the layout passes (kiln_gpu level), after
/// the conversion to per-thread gpu.func code, or at the target's device dialect.
enum class Stage { Layouts, ThreadCode, Device };

/// The pipeline for `target` up to `stage` (the CPU pipeline has one stage).
std::string pipelineUpTo(const Target &target, Stage stage);

/// The passes from per-thread gpu.func code to the device dialect: what
/// pipelineUpTo(Device) adds to pipelineUpTo(ThreadCode).
std::string devicePipeline(const Target &target);

/// Copies each kernel's threads per block and shared memory bytes from the
/// gpu.func ops (after the ThreadCode stage) into `kernels`.
void collectLaunchInfo(mlir::ModuleOp module, std::vector<KernelInfo> &kernels);

/// The whole pass pipeline for `target`, up to its device dialect (LLVM+NVVM,
/// LLVM+ROCDL, SPIR-V) or, for the CPU, the LLVM dialect. Serialization (PTX,
/// cubin, hsaco, SPIR-V words, MSL) is the one step after it.
std::string targetPipeline(const Target &target);

/// Reports (at the .kiln location) the first element type or operation `target`
/// cannot handle: f64 and 64-bit atomics on Metal, f64 math Vulkan has no
/// expansion for, the kernel names PTX cannot declare on CUDA.
mlir::LogicalResult checkTargetSupport(mlir::ModuleOp module, const Target &target);

/// Runs a `builtin.module(...)` pipeline string on `module`.
mlir::LogicalResult runPipeline(mlir::ModuleOp module, llvm::StringRef pipeline,
                                bool timePasses = false);

/// What a runtime needs to launch the kernels of one binary, as JSON; with
/// `binary`, also its checksum, which the runtime checks before loading it.
std::string kernelMetadataJSON(const std::vector<KernelInfo> &kernels, const Target &target,
                               const std::string *binary = nullptr);

} // namespace kiln
