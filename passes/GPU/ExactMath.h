//===- ExactMath.h - math functions for SPIR-V from arithmetic ---*- C++ -*-===//
//
// GLSL.std.450 computes exp, log, sin, pow and the other transcendental
// functions in 16- and 32-bit floats only, and lets a driver's f32 exp, sin,
// cos, tan, atan and pow be far from the exact result (lavapipe reduces sin's
// argument in f32: sin(1e9) came out 1.0; pow(0.99999988, 16777215) was 31%
// off, exp(25) 50 ulps, exp(-90) 0). These patterns compute them for scalar
// f64 and f32 from what SPIR-V has: + - * /, fma, sqrt, floor, round-to-even,
// copysign and the value's bits as integers. kiln-approximate-math adds them
// for target=spirv, where its own expansions (atan2, asin, acos, asinh, acosh,
// atanh, pow's special cases) and AccurateMath's log1p leave atan, log and
// positive-base pow for these to finish.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "mlir/IR/PatternMatch.h"

#include "llvm/ADT/StringRef.h"

namespace kiln {

/// Marks the `math.powf` that kiln-approximate-math's pow expansion leaves: its
/// base is positive and finite, and the special cases are handled around it.
inline constexpr llvm::StringLiteral kPositiveBaseAttr = "kiln.positive_base";

/// Expansions of f64 sinh, tanh, erf and cbrt (log1p is AccurateMath's), and of
/// f64 and f32 exp, exp2, expm1, log, log2, log10, cosh, sin, cos, tan, atan,
/// atan2, asin, acos and positive-base pow, each within a few ulp of the correctly rounded result.
/// They outrank (benefit 2) the f32 expansions that would also match.
void populateExactMathPatterns(mlir::RewritePatternSet &patterns);

} // namespace kiln
