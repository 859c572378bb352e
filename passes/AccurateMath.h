//===- AccurateMath.h - expm1 and log1p that keep small arguments -*- C++ -*-===//
//
// MLIR 19 lowers math.expm1 to exp(x) - 1 and math.log1p to log(1 + x) (LLVM
// and SPIR-V alike), which lose every digit of small arguments: expm1(1e-10)
// and log1p(1e-10) came out 0 in f32. These patterns rewrite both, for any
// float type, scalar or vector: series near 0 (log1p through atanh of
// x / (2 + x), for f64 below |x| = 1/4, for f32 over (-1/2, 1); expm1 below
// |x| = 1/2), which need neither exp nor log (a Vulkan driver's f32 log may be
// off by 2^-21 in [1/2, 2]), and beyond
//   log1p(x) = log(u) * x / (u - 1),   u = 1 + x   (Goldberg's form)
//   expm1(x) = e^x - 1
//
//===----------------------------------------------------------------------===//
#pragma once

#include "mlir/IR/PatternMatch.h"

namespace kiln {

void populateAccurateExpm1Log1pPatterns(mlir::RewritePatternSet &patterns);

} // namespace kiln
