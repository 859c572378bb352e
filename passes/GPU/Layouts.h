//===- Layouts.h - helpers shared by the kiln_gpu passes --------*- C++ -*-===//
#pragma once

#include "dialects/KilnGPU/IR/KilnGPUDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace kiln::gpu {

/// Rewrites every tensor type in `func` (results, block arguments, constant
/// attributes) to carry `layout`. Kiln uses one layout per kernel.
void setLayout(mlir::func::FuncOp func, BlockedEncodingAttr layout);

/// The layout the kernel's tiles carry, or null before convert-kiln-to-kiln-gpu
/// and for a kernel without tiles.
BlockedEncodingAttr getKernelLayout(mlir::func::FuncOp func);

/// The threads a kernel runs as: its tiles' layout, or for a kernel without
/// tiles (whose scalar atomics still exchange flags and old values between its
/// threads) its `kiln_gpu.threads` as warps of 32.
BlockedEncodingAttr getKernelThreads(mlir::func::FuncOp func);

} // namespace kiln::gpu
