//===- SharedMemory.h - what layout changes exchange ------------*- C++ -*-===//
#pragma once

#include "dialects/KilnGPU/IR/KilnGPUDialect.h"
#include "passes/GPU/MatrixUnits.h"

#include "mlir/IR/Operation.h"

#include <optional>

namespace kiln::gpu {

/// The element type shared memory holds for values of `type`. i32 and i1 (as
/// i32) travel as the bits of f32, so a kernel that exchanges both f32 and
/// index or integer tiles needs one 32-bit buffer, not two.
mlir::Type sharedStorageType(mlir::Type elementType);

/// The type a tensor argument's (`memory`'s) elements have in global memory.
/// Bools are bytes, and fp8 too: LLVM has no 8-bit float type for its loads and
/// stores. With `integerAtomicsOnly` (SPIR-V) a float tensor that atomics
/// update is held as integers of its width, 16-bit floats two to a 32-bit word,
/// unless `floatAtomicAdd` (the device adds f32 atomically) and the tensor is
/// f32 that atomics only add to.
mlir::Type storageOf(mlir::Value memory, bool integerAtomicsOnly, bool floatAtomicAdd);

/// Whether `op`, an atomic or a store on a tensor held as `storage`, updates it
/// by compare-and-swap loops that every thread of the program runs together
/// (MemoryToGPU.cpp, updateBySwaps): float read-modify-writes held as integers,
/// and every atomic and store on 16-bit floats held as words.
bool updatesBySwaps(mlir::Operation *op, mlir::Type storage);

/// The shared-memory elements (of sharedStorageType) an op needs to exchange its
/// operands between threads, per element type; empty for ops that move no data
/// between threads. `integerAtomicsOnly` and `floatAtomicAdd` as for storageOf:
/// updates by swaps take a flag per thread.
llvm::SmallVector<std::pair<mlir::Type, int64_t>, 2>
sharedRequirement(mlir::Operation *op, BlockedEncodingAttr layout, MatrixUnits units,
                  bool integerAtomicsOnly = false, bool floatAtomicAdd = false);

/// Shared buffers start at multiples of this many bytes: 16 (vector accesses,
/// ldmatrix rows), or with wgmma 1024, the period of its operands' swizzle
/// (OperandLayouts.h).
int64_t sharedAlignment(MatrixUnits units);

/// Where buffers of `bytes` each start when packed in order, each at a
/// multiple of `alignment`, followed by where the last one ends.
llvm::SmallVector<int64_t> packSharedBuffers(llvm::ArrayRef<int64_t> bytes, int64_t alignment);

/// How many operand buffers a matrix dot keeps: the `stages` of the loop it
/// sits in when that loop is pipelined (NVIDIA), else 1.
int64_t pipelineStages(DotOp dot, const MatrixShape &shape);

/// Where a matrix dot's f32 accumulator staging area starts in the f32 shared
/// buffer: after the operand buffers when the operands are f32 too (tf32),
/// else at 0.
int64_t matrixResultsOffset(DotOp dot, const MatrixShape &shape);

} // namespace kiln::gpu
