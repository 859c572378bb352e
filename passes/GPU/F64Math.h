//===- F64Math.h - f64 math functions for SPIR-V from arithmetic -*- C++ -*-===//
//
// GLSL.std.450 computes exp, log, sin, pow and the other transcendental
// functions in 16- and 32-bit floats only. These patterns compute them for
// scalar f64 from what SPIR-V has for doubles: + - * /, fma, sqrt, floor,
// round-to-even, copysign and the value's bits as i64. kiln-approximate-math
// adds them for target=spirv, where its own expansions (atan2, asin, acos,
// asinh, acosh, atanh, pow's special cases) and AccurateMath's log1p leave
// f64 atan, log and positive-base pow for these to finish.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "mlir/IR/PatternMatch.h"

#include "llvm/ADT/StringRef.h"

namespace kiln {

/// Marks the `math.powf` that kiln-approximate-math's pow expansion leaves: its
/// base is positive and finite, and the special cases are handled around it.
inline constexpr llvm::StringLiteral kPositiveBaseAttr = "kiln.positive_base";

/// Expansions of f64 exp, exp2, expm1, log, log2, log10, sin, cos, tan, atan,
/// sinh, cosh, tanh, erf, cbrt and positive-base pow (log1p is AccurateMath's), each within a few
/// ulp of the correctly rounded result. They outrank (benefit 2) the f32
/// expansions that would also match.
void populateF64MathPatterns(mlir::RewritePatternSet &patterns);

} // namespace kiln
