//===- LoopLimit.h - loops that lavapipe would cut short --------*- C++ -*-===//
//
// What kiln-spirv-remainders shares with LoopLimit.cpp: the loops it adds after
// convert-kiln-gpu-to-gpu count towards lavapipe's limit and are checked like
// the kernel's own.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "mlir/IR/Builders.h"
#include "mlir/IR/Types.h"

#include <optional>

namespace mlir::scf {
class ForOp;
} // namespace mlir::scf

namespace kiln::gpu {

/// The two private words of a kernel whose loops check lavapipe's limit:
/// `ended` says whether the last loop reached its end, `cut` whether some loop
/// did not.
struct LoopEndWords {
  mlir::Value ended, cut;
};

/// The words `func` (a gpu.func) keeps, if convert-kiln-gpu-to-gpu guarded it.
std::optional<LoopEndWords> loopEndWords(mlir::Operation *func);

/// Makes `loop` record in `words` whether it ran to its end: `ended` is set
/// before a loop that runs no trip and in the final trip, and folded into `cut`
/// after the loop. A loop llvmpipe cuts at a back edge leaves it clear.
void recordLoopEnd(mlir::OpBuilder &b, mlir::scf::ForOp loop, LoopEndWords words);

/// The most trips of the long-division loop kiln-spirv-remainders gives an
/// `arith.remf` of `type` (f32 or f64), or nothing for types it leaves alone.
std::optional<int64_t> exactRemainderTrips(mlir::Type type);

} // namespace kiln::gpu
