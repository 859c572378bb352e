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
  MmaSync, // NVIDIA sm_80+: ldmatrix + mma.sync (f16/bf16 m16n8k16, tf32 m16n8k8 and
           // fp8 m16n8k32 into f32; s8 m16n8k32 into i32)
  Wgmma,   // NVIDIA sm_90a: wgmma.mma_async.m64nNk16 from shared-memory descriptors
           // (f16/bf16 in, f32 out), falling back to MmaSync for other shapes and types
  Mfma,    // AMD CDNA2 (gfx90a): v_mfma_f32_16x16x16{f16,bf16_1k} (f16/bf16 in, f32
           // out; fp8 widened to f16), v_mfma_i32_16x16x16i8 (i8 in, i32 out)
  MfmaCdna3, // AMD CDNA3 (gfx94x): Mfma's, but i8 with v_mfma_i32_16x16x32_i8 (CDNA3
             // dropped the K = 16 form); dots it takes report Mfma as their unit
  Wmma,    // AMD RDNA3 (gfx11): v_wmma_{f32_16x16x16_f16,f32_16x16x16_bf16,
           // i32_16x16x16_iu8}, 32-lane waves
};

/// Parses the `matrix-units` pass option: none, mma-sync, wgmma, mfma, mfma-cdna3
/// or wmma.
std::optional<MatrixUnits> parseMatrixUnits(llvm::StringRef name);

/// The instruction a dot is lowered with: its unit and its tile,
/// C[m x n] += A[m x k] * B[k x n] (for Wgmma, one warpgroup's tile).
struct MatrixShape {
  MatrixUnits units;
  int64_t m, n, k;
};

/// The instruction `op` is lowered with when the kernel runs `numWarps` warps
/// and may use `units`, or nullopt for the FMA loop.
std::optional<MatrixShape> matrixInstruction(DotOp op, MatrixUnits units, int64_t numWarps);

/// How a dot's m x n result is dealt to instruction tiles: tiles go round-robin to
/// the workers (warps, or warpgroups of four for wgmma); slot j of worker w is
/// tile w + j * workers (slots past the last tile hold nothing), and each thread
/// holds `perTile` accumulator registers of every slot (the fragment layout).
struct FragmentLayout {
  MatrixShape shape;
  int64_t m, n;
  int64_t group, workers;
  int64_t tilesN, numTiles, slots, perTile;
  bool partial() const { return numTiles % workers != 0; }
  int64_t registers() const { return slots * perTile; }
};

/// The fragment layout of a dot that has a matrix instruction.
FragmentLayout fragmentLayout(DotOp op, MatrixUnits units, int64_t numWarps);

} // namespace kiln::gpu
