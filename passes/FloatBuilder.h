//===- FloatBuilder.h - float arithmetic for the math expansions -*- C++ -*-===//
//
// The math expansions (AccurateMath, ApproximateMath, ExactMath) write formulas
// as chains of arith and math ops. FloatBuilder builds them at one location for
// one float type, a scalar or a shaped type whose constants are splats, so an
// expansion reads like the formula it implements:
//
//   FloatBuilder f(b, x.getType());
//   Value r = f.select(f.lt(f.abs(x), 0.5), f.mul(x, f.c(2)), x);
//
//===----------------------------------------------------------------------===//
#pragma once

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/TypeUtilities.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLExtras.h"

#include <cmath>

namespace kiln {

class FloatBuilder {
public:
  using P = mlir::arith::CmpFPredicate;

  FloatBuilder(mlir::ImplicitLocOpBuilder &b, mlir::Type type) : b(b), type(type) {}

  /// The constant v of the builder's type.
  mlir::Value c(double v) {
    mlir::TypedAttr attr = b.getFloatAttr(mlir::getElementTypeOrSelf(type), v);
    if (auto shaped = mlir::dyn_cast<mlir::ShapedType>(type))
      attr = mlir::SplatElementsAttr::get(shaped, attr);
    return b.create<mlir::arith::ConstantOp>(attr);
  }
  bool isF64() { return mlir::getElementTypeOrSelf(type).isF64(); }

  mlir::Value add(mlir::Value x, mlir::Value y) { return b.create<mlir::arith::AddFOp>(x, y); }
  mlir::Value sub(mlir::Value x, mlir::Value y) { return b.create<mlir::arith::SubFOp>(x, y); }
  mlir::Value mul(mlir::Value x, mlir::Value y) { return b.create<mlir::arith::MulFOp>(x, y); }
  mlir::Value div(mlir::Value x, mlir::Value y) { return b.create<mlir::arith::DivFOp>(x, y); }
  mlir::Value neg(mlir::Value x) { return b.create<mlir::arith::NegFOp>(x); }
  mlir::Value fma(mlir::Value x, mlir::Value y, mlir::Value z) {
    return b.create<mlir::math::FmaOp>(x, y, z);
  }
  mlir::Value abs(mlir::Value x) { return b.create<mlir::math::AbsFOp>(x); }
  mlir::Value floor(mlir::Value x) { return b.create<mlir::math::FloorOp>(x); }
  mlir::Value rint(mlir::Value x) { return b.create<mlir::math::RoundEvenOp>(x); }
  mlir::Value sqrt(mlir::Value x) { return b.create<mlir::math::SqrtOp>(x); }
  mlir::Value copysign(mlir::Value x, mlir::Value sign) {
    return b.create<mlir::math::CopySignOp>(x, sign);
  }
  /// Another math function (which the running patterns may expand in turn).
  template <typename Op> mlir::Value call(mlir::Value x) { return b.create<Op>(x); }

  mlir::Value cmp(P p, mlir::Value x, mlir::Value y) {
    return b.create<mlir::arith::CmpFOp>(p, x, y);
  }
  mlir::Value lt(mlir::Value x, double y) { return cmp(P::OLT, x, c(y)); }
  mlir::Value gt(mlir::Value x, double y) { return cmp(P::OGT, x, c(y)); }
  mlir::Value le(mlir::Value x, double y) { return cmp(P::OLE, x, c(y)); }
  mlir::Value ge(mlir::Value x, double y) { return cmp(P::OGE, x, c(y)); }
  mlir::Value eq(mlir::Value x, double y) { return cmp(P::OEQ, x, c(y)); }
  mlir::Value isNaN(mlir::Value x) { return cmp(P::UNO, x, x); }
  /// x < 0, or x is -0.0 (NaN's sign bit does not count).
  mlir::Value signBit(mlir::Value x) {
    return either(lt(x, 0), both(eq(x, 0), lt(div(c(1), x), 0))); // 1 / -0.0 is -inf
  }
  /// |magnitude| with the sign of `sign` (-0.0 included).
  mlir::Value withSignOf(mlir::Value magnitude, mlir::Value sign) {
    mlir::Value mag = abs(magnitude);
    return select(signBit(sign), neg(mag), mag);
  }
  /// x clamped to [lo, hi]; NaN stays NaN.
  mlir::Value clamp(mlir::Value x, double lo, double hi) {
    return select(gt(x, hi), c(hi), select(lt(x, lo), c(lo), x));
  }

  mlir::Value both(mlir::Value x, mlir::Value y) { return b.create<mlir::arith::AndIOp>(x, y); }
  mlir::Value either(mlir::Value x, mlir::Value y) { return b.create<mlir::arith::OrIOp>(x, y); }
  mlir::Value differ(mlir::Value x, mlir::Value y) { return b.create<mlir::arith::XOrIOp>(x, y); }
  mlir::Value select(mlir::Value cond, mlir::Value x, mlir::Value y) {
    return b.create<mlir::arith::SelectOp>(cond, x, y);
  }

  /// c[0] + x (c[1] + x (c[2] + ...)), by fma.
  mlir::Value poly(mlir::Value x, llvm::ArrayRef<double> coefficients) {
    mlir::Value p = c(coefficients.back());
    for (double k : llvm::reverse(coefficients.drop_back()))
      p = fma(p, x, c(k));
    return p;
  }
  /// The sum of coefficient(k) x^k for k < count, by Horner's rule with
  /// separate multiplies and adds (for types and targets without a fast fma).
  template <typename Coefficient>
  mlir::Value horner(mlir::Value x, int count, Coefficient coefficient) {
    mlir::Value p = c(coefficient(count - 1));
    for (int k = count - 2; k >= 0; --k)
      p = add(mul(p, x), c(coefficient(k)));
    return p;
  }

  /// x * y + z of f16 or bf16 operands widened to f32, rounded to odd: exact,
  /// or else the neighbour toward the exact sum whose last bit is set. Rounding
  /// that to the narrow type (at least two bits narrower) is the correctly
  /// rounded fma (Boldo and Melquiond); rounding f32's fma to nearest first
  /// would round twice. The product must be exact in f32: where it leaves f32's
  /// normal range (bf16 has f32's exponents) the result is f32's fma.
  mlir::Value fmaRoundedToOdd(mlir::Value x, mlir::Value y, mlir::Value z) {
    mlir::Value p = mul(x, y);
    mlir::Value s = add(p, z);
    mlir::Value bv = sub(s, p); // Knuth's two-sum: s + e is p + z exactly
    mlir::Value e = add(sub(p, sub(s, bv)), sub(z, bv));
    mlir::Type bitsType =
        b.getIntegerType(mlir::getElementTypeOrSelf(type).getIntOrFloatBitWidth());
    if (auto shaped = mlir::dyn_cast<mlir::ShapedType>(type))
      bitsType = shaped.clone(bitsType);
    auto intConstant = [&](int64_t v) -> mlir::Value {
      mlir::TypedAttr attr = b.getIntegerAttr(mlir::getElementTypeOrSelf(bitsType), v);
      if (auto shaped = mlir::dyn_cast<mlir::ShapedType>(bitsType))
        attr = mlir::SplatElementsAttr::get(shaped, attr);
      return b.create<mlir::arith::ConstantOp>(attr);
    };
    mlir::Value bits = b.create<mlir::arith::BitcastOp>(bitsType, s);
    mlir::Value lastBit = b.create<mlir::arith::AndIOp>(bits, intConstant(1));
    mlir::Value even = b.create<mlir::arith::CmpIOp>(mlir::arith::CmpIPredicate::eq, lastBit,
                                                     intConstant(0));
    // Inexact (an ordered e != 0: infinities make e NaN and leave s as it is)
    // with an even last bit: one step toward e, up in magnitude where e and s
    // share a sign (s is not zero when e is not).
    mlir::Value inexact = cmp(P::ONE, e, c(0));
    mlir::Value towardZero = differ(lt(e, 0), lt(s, 0));
    mlir::Value step = select(towardZero, intConstant(-1), intConstant(1));
    mlir::Value odd = b.create<mlir::arith::BitcastOp>(
        type, b.create<mlir::arith::AddIOp>(bits, step));
    mlir::Value absP = abs(p);
    mlir::Value exactProduct =
        both(cmp(P::OLT, absP, c(INFINITY)),
             either(cmp(P::OGE, absP, c(0x1p-126)), either(eq(x, 0), eq(y, 0))));
    return select(exactProduct, select(both(inexact, even), odd, s), fma(x, y, z));
  }

  mlir::ImplicitLocOpBuilder &b;
  mlir::Type type;
};

/// A pattern that replaces `Op` by the value `expand` builds for it with a
/// FloatBuilder of the op's type; no match where `expand` returns a null value
/// (having built nothing).
template <typename Op, mlir::Value (*expand)(FloatBuilder &, Op)>
struct FloatExpansion : mlir::OpRewritePattern<Op> {
  using mlir::OpRewritePattern<Op>::OpRewritePattern;
  mlir::LogicalResult matchAndRewrite(Op op, mlir::PatternRewriter &rewriter) const override {
    mlir::ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    FloatBuilder f(b, op.getType());
    mlir::Value result = expand(f, op);
    if (!result)
      return mlir::failure();
    rewriter.replaceOp(op, result);
    return mlir::success();
  }
};

} // namespace kiln
