//===- AccurateMath.cpp - expm1 and log1p that keep small arguments -------===//

#include "passes/AccurateMath.h"
#include "passes/FloatBuilder.h"

#include <cmath>

using namespace mlir;
using kiln::FloatBuilder;

namespace {
/// log1p(x): near 0, 2 atanh(s) = 2 (s + s^3/3 + s^5/5 + ...) for
/// s = x / (2 + x), which needs no log, taken as t = 2s = x / (1 + x / 2) so
/// that the smallest subnormals survive (x / 2 rounds them to 0); elsewhere
/// log(u) * (x / (u - 1)) for
/// u = 1 + x, which cancels u's rounding (x where u is infinite). f64 takes the
/// series below |x| = 1/4 (|s| < 1/7, ten terms). Narrower types take it over
/// (-1/2, 1) (|s| <= 1/3, nine terms): Vulkan lets a driver's f32 log be off by
/// 2^-21 anywhere in [1/2, 2], which is some 30 ulps of log1p there.
Value expandLog1p(FloatBuilder &f, Value x) {
  bool f64 = f.isF64();
  Value t = f.div(x, f.add(f.c(1), f.mul(f.c(0.5), x)));
  Value z = f.mul(f.mul(t, t), f.c(0.25)); // s^2
  Value odd = f.horner(z, f64 ? 10 : 9, [](int k) { return 1.0 / (2 * k + 1); });
  Value small = f.mul(t, odd);
  Value u = f.add(f.c(1), x);
  Value log = f.call<math::LogOp>(u);
  Value large = f.select(f.eq(u, INFINITY), x, f.mul(log, f.div(x, f.sub(u, f.c(1)))));
  Value near = f64 ? f.lt(f.abs(x), 0.25) : f.both(f.gt(x, -0.5), f.lt(x, 1));
  return f.select(near, small, large);
}

/// expm1(x): below |x| = 1/2, x + x^2 (1/2! + x/3! + ...), which needs no
/// exp; beyond, e^x - 1 (the subtraction loses at most a factor
/// e^0.5 / (e^0.5 - 1) = 2.5 of e^x's error).
Value expandExpm1(FloatBuilder &f, Value x) {
  Value tail = f.horner(x, f.isF64() ? 16 : 9, [](int k) {
    double factorial = 1;
    for (int i = 2; i <= k + 2; ++i)
      factorial *= i;
    return 1 / factorial;
  });
  Value small = f.add(x, f.mul(f.mul(x, x), tail));
  Value large = f.sub(f.call<math::ExpOp>(x), f.c(1));
  return f.select(f.lt(f.abs(x), 0.5), small, large);
}

/// `expand` of Op's operand x, and x itself at +-0 (whose sign the series
/// would lose).
template <typename Op, Value (*expand)(FloatBuilder &, Value)>
Value keepingZeros(FloatBuilder &f, Op op) {
  Value x = op.getOperand();
  return f.select(f.eq(x, 0), x, expand(f, x));
}
} // namespace

void kiln::populateAccurateExpm1Log1pPatterns(RewritePatternSet &patterns) {
  patterns.add<
      kiln::FloatExpansion<math::Log1pOp, keepingZeros<math::Log1pOp, expandLog1p>>,
      kiln::FloatExpansion<math::ExpM1Op, keepingZeros<math::ExpM1Op, expandExpm1>>>(
      patterns.getContext());
}
