//===- MatrixUnits.h - which dots run on tensor cores / matrix cores -*- C++ -*-===//
//
// A dot whose operand types and tile shape fit one of the target's warp-level
// matrix instructions is lowered to it (MatrixToGPU.cpp); every other dot keeps
// the shared-memory FMA loop. Both kiln-gpu-allocate-shared-memory and
// convert-kiln-gpu-to-gpu ask `matrixInstruction` so that they agree.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "dialects/Kiln/IR/KilnOps.h"

#include "llvm/ADT/StringRef.h"

#include <optional>

namespace kiln::gpu {

enum class MatrixUnits {
  None,    // no matrix instructions: FMA loops
  MmaSync, // NVIDIA sm_80+: ldmatrix + mma.sync.m16n8k16 (f16/bf16 in, f32 out)
  Mfma,    // AMD CDNA (gfx90a, gfx94x): v_mfma_f32_16x16x16f16 (f16 in, f32 out)
};

/// Parses the `matrix-units` pass option: none, mma-sync or mfma.
std::optional<MatrixUnits> parseMatrixUnits(llvm::StringRef name);

/// One warp-level instruction's tile: C[m x n] += A[m x k] * B[k x n].
struct MatrixShape {
  int64_t m, n, k;
};

/// The instruction shape `op` is lowered with, or nullopt for the FMA loop.
std::optional<MatrixShape> matrixInstruction(DotOp op, MatrixUnits units);

} // namespace kiln::gpu
