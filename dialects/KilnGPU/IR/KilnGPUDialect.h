//===- KilnGPUDialect.h - the kiln_gpu layout dialect -----------*- C++ -*-===//
#pragma once

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/DialectImplementation.h"

#include "dialects/KilnGPU/IR/KilnGPUDialect.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/KilnGPU/IR/KilnGPUAttrs.h.inc"

namespace kiln::gpu {
/// Function attributes set by the layout passes and read by the conversion.
inline constexpr llvm::StringLiteral kThreadsAttr = "kiln_gpu.threads";
inline constexpr llvm::StringLiteral kSharedBytesAttr = "kiln_gpu.shared_bytes";
inline constexpr llvm::StringLiteral kSharedElementsAttr = "kiln_gpu.shared_elements";
/// On a gpu.func: its shared buffers are views of dynamic shared memory, whose
/// size (kiln_gpu.shared_bytes) the launch requests.
inline constexpr llvm::StringLiteral kDynamicSharedAttr = "kiln_gpu.dynamic_shared";
/// On a SPIR-V gpu.func: its device_asserts and prints, in the order of the
/// index their records in the debug buffer carry (kiln/KernelInfo.h); each a
/// {message, shape} or {prefix, shape, dtype} dictionary.
inline constexpr llvm::StringLiteral kAssertsAttr = "kiln_gpu.asserts";
inline constexpr llvm::StringLiteral kPrintsAttr = "kiln_gpu.prints";
/// On a gpu.barrier: it also orders the threads' accesses to device memory
/// (tensors), which SPIR-V's workgroup barrier leaves out unless asked.
inline constexpr llvm::StringLiteral kDeviceMemoryBarrierAttr = "kiln_gpu.device_memory";
/// On a kernel (convert-kiln-gpu-to-gpu's float-atomic-add): SPIR-V adds f32
/// atomically, so f32 tensors that atomics only add to stay f32.
inline constexpr llvm::StringLiteral kFloatAtomicAddAttr = "kiln_gpu.float_atomic_add";

/// The layout of a tile type, or null for scalars and unencoded tensors.
inline BlockedEncodingAttr getLayout(mlir::Type type) {
  auto tensor = mlir::dyn_cast<mlir::RankedTensorType>(type);
  return tensor ? mlir::dyn_cast_if_present<BlockedEncodingAttr>(tensor.getEncoding())
                : BlockedEncodingAttr();
}
} // namespace kiln::gpu
