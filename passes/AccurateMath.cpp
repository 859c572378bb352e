//===- AccurateMath.cpp - expm1 and log1p that keep small arguments -------===//

#include "passes/AccurateMath.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/TypeUtilities.h"

#include <cmath>

using namespace mlir;

namespace {
/// Float arithmetic on values of one type (a scalar or a vector).
struct Floats {
  ImplicitLocOpBuilder &b;
  Type type;
  /// f64 series need about twice the terms of narrower ones.
  bool isF64() { return getElementTypeOrSelf(type).isF64(); }
  Value c(double v) {
    TypedAttr attr = b.getFloatAttr(getElementTypeOrSelf(type), v);
    if (auto shaped = dyn_cast<ShapedType>(type))
      attr = SplatElementsAttr::get(shaped, attr);
    return b.create<arith::ConstantOp>(attr);
  }
  Value cmp(arith::CmpFPredicate p, Value x, Value y) { return b.create<arith::CmpFOp>(p, x, y); }
  Value eq(Value x, double y) { return cmp(arith::CmpFPredicate::OEQ, x, c(y)); }
  Value smallerThan(Value x, double y) {
    return cmp(arith::CmpFPredicate::OLT, b.create<math::AbsFOp>(x), c(y));
  }
  Value select(Value cond, Value x, Value y) { return b.create<arith::SelectOp>(cond, x, y); }
  Value add(Value x, Value y) { return b.create<arith::AddFOp>(x, y); }
  Value sub(Value x, Value y) { return b.create<arith::SubFOp>(x, y); }
  Value mul(Value x, Value y) { return b.create<arith::MulFOp>(x, y); }
  Value div(Value x, Value y) { return b.create<arith::DivFOp>(x, y); }
  /// sum of coefficient(k) x^k for k < count, by Horner.
  template <typename Coefficient> Value series(Value x, int count, Coefficient coefficient) {
    Value p = c(coefficient(count - 1));
    for (int k = count - 2; k >= 0; --k)
      p = add(mul(p, x), c(coefficient(k)));
    return p;
  }
};

/// log1p(x): near 0, 2 atanh(s) = 2 (s + s^3/3 + s^5/5 + ...) for
/// s = x / (2 + x), which needs no log; elsewhere log(u) * (x / (u - 1)) for
/// u = 1 + x, which cancels u's rounding (x where u is infinite). f64 takes the
/// series below |x| = 1/4 (|s| < 1/7, ten terms). Narrower types take it over
/// (-1/2, 1) (|s| <= 1/3, nine terms): Vulkan lets a driver's f32 log be off by
/// 2^-21 anywhere in [1/2, 2], which is some 30 ulps of log1p there.
Value expandLog1p(Floats &f, Value x) {
  bool f64 = f.isF64();
  Value s = f.div(x, f.add(f.c(2), x));
  Value z = f.mul(s, s);
  Value odd = f.series(z, f64 ? 10 : 9, [](int k) { return 2.0 / (2 * k + 1); });
  Value small = f.mul(s, odd);
  Value u = f.add(f.c(1), x);
  Value log = f.b.create<math::LogOp>(u);
  Value large = f.select(f.eq(u, INFINITY), x, f.mul(log, f.div(x, f.sub(u, f.c(1)))));
  Value near = f64 ? f.smallerThan(x, 0.25)
                   : f.b.create<arith::AndIOp>(f.cmp(arith::CmpFPredicate::OGT, x, f.c(-0.5)),
                                               f.cmp(arith::CmpFPredicate::OLT, x, f.c(1)));
  return f.select(near, small, large);
}

/// expm1(x): below |x| = 1/2, x + x^2 (1/2! + x/3! + ...), which needs no
/// exp; beyond, e^x - 1 (the subtraction loses at most a factor
/// e^0.5 / (e^0.5 - 1) = 2.5 of e^x's error).
Value expandExpm1(Floats &f, Value x) {
  Value tail = f.series(x, f.isF64() ? 16 : 9, [](int k) {
    double factorial = 1;
    for (int i = 2; i <= k + 2; ++i)
      factorial *= i;
    return 1 / factorial;
  });
  Value small = f.add(x, f.mul(f.mul(x, x), tail));
  Value large = f.sub(f.b.create<math::ExpOp>(x), f.c(1));
  return f.select(f.smallerThan(x, 0.5), small, large);
}

/// Replaces `Op` of x by `expand(x)`, and by x itself at +-0 (whose sign the
/// series would lose).
template <typename Op, Value (*expand)(Floats &, Value)>
struct Accurate : OpRewritePattern<Op> {
  using OpRewritePattern<Op>::OpRewritePattern;
  LogicalResult matchAndRewrite(Op op, PatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    Floats f{b, op.getType()};
    Value x = op.getOperand();
    rewriter.replaceOp(op, f.select(f.eq(x, 0), x, expand(f, x)));
    return success();
  }
};
} // namespace

void kiln::populateAccurateExpm1Log1pPatterns(RewritePatternSet &patterns) {
  patterns.add<Accurate<math::Log1pOp, expandLog1p>, Accurate<math::ExpM1Op, expandExpm1>>(
      patterns.getContext());
}
