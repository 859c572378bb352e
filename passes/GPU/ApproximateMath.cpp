//===- ApproximateMath.cpp - expansions of math functions a target lacks --===//

#include "passes/Passes.h"
#include "passes/AccurateMath.h"
#include "passes/GPU/F64Math.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <cmath>

namespace kiln {
#define GEN_PASS_DEF_KILNAPPROXIMATEMATH
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {
/// The float constant `v` of `type` (a scalar or a splat of a shaped type).
Value constantLike(PatternRewriter &rewriter, Location loc, Type type, double v) {
  TypedAttr attr = rewriter.getFloatAttr(getElementTypeOrSelf(type), v);
  if (auto shaped = dyn_cast<ShapedType>(type))
    attr = SplatElementsAttr::get(shaped, attr);
  return rewriter.create<arith::ConstantOp>(loc, attr);
}

/// log2(x) = log(x) * (1 / ln 2) and log10(x) = log(x) * (1 / ln 10): MLIR 19's
/// math-to-spirv has neither.
template <typename LogOp>
struct ExpandScaledLog : OpRewritePattern<LogOp> {
  ExpandScaledLog(MLIRContext *ctx, double factor)
      : OpRewritePattern<LogOp>(ctx), factor(factor) {}
  LogicalResult matchAndRewrite(LogOp op, PatternRewriter &rewriter) const override {
    if (!isa<FloatType>(getElementTypeOrSelf(op.getType())))
      return failure();
    Value log = rewriter.create<math::LogOp>(op.getLoc(), op.getOperand());
    rewriter.replaceOpWithNewOp<arith::MulFOp>(
        op, log, constantLike(rewriter, op.getLoc(), op.getType(), factor));
    return success();
  }
  double factor;
};

/// trunc(x) = x < 0 ? ceil(x) : floor(x) (-0.0 and NaN come through).
struct ExpandTrunc : OpRewritePattern<math::TruncOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(math::TruncOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = op.getOperand();
    Value negative = rewriter.create<arith::CmpFOp>(loc, arith::CmpFPredicate::OLT, x,
                                                    constantLike(rewriter, loc, x.getType(), 0));
    rewriter.replaceOpWithNewOp<arith::SelectOp>(op, negative,
                                                 rewriter.create<math::CeilOp>(loc, x),
                                                 rewriter.create<math::FloorOp>(loc, x));
    return success();
  }
};

/// Comparisons, selects and constants of one float type, for the expansions
/// below.
struct FloatOps {
  PatternRewriter &rewriter;
  Location loc;
  Type type;
  using P = arith::CmpFPredicate;
  Value c(double v) { return constantLike(rewriter, loc, type, v); }
  Value cmp(P p, Value a, Value b) { return rewriter.create<arith::CmpFOp>(loc, p, a, b); }
  Value both(Value a, Value b) { return rewriter.create<arith::AndIOp>(loc, a, b); }
  Value either(Value a, Value b) { return rewriter.create<arith::OrIOp>(loc, a, b); }
  Value differ(Value a, Value b) { return rewriter.create<arith::XOrIOp>(loc, a, b); }
  Value select(Value cond, Value a, Value b) {
    return rewriter.create<arith::SelectOp>(loc, cond, a, b);
  }
  Value abs(Value v) { return rewriter.create<math::AbsFOp>(loc, v); }
  Value add(Value a, Value b) { return rewriter.create<arith::AddFOp>(loc, a, b); }
  Value sub(Value a, Value b) { return rewriter.create<arith::SubFOp>(loc, a, b); }
  Value mul(Value a, Value b) { return rewriter.create<arith::MulFOp>(loc, a, b); }
  Value div(Value a, Value b) { return rewriter.create<arith::DivFOp>(loc, a, b); }
  Value sqrt(Value v) { return rewriter.create<math::SqrtOp>(loc, v); }
  Value log(Value v) { return rewriter.create<math::LogOp>(loc, v); }
  Value log1p(Value v) { return rewriter.create<math::Log1pOp>(loc, v); }
  /// `moderate` up to |v| = 2^28; past it log(2 v), where asinh and acosh lose
  /// the 1 they add to v^2 (or v^2 overflows).
  Value orLogOfTwiceIfHuge(Value v, Value moderate) {
    return select(cmp(P::OGT, v, c(268435456.0)), add(log(v), c(M_LN2)), moderate);
  }
  /// |magnitude| with the sign of `sign` (-0.0 included).
  Value withSignOf(Value magnitude, Value sign) {
    Value mag = abs(magnitude);
    return select(signBit(sign), rewriter.create<arith::NegFOp>(loc, mag), mag);
  }
  /// v < 0, or v is -0.0 (1 / -0.0 is -inf).
  Value signBit(Value v) {
    Value inverse = rewriter.create<arith::DivFOp>(loc, c(1), v);
    return either(cmp(P::OLT, v, c(0)), both(cmp(P::OEQ, v, c(0)), cmp(P::OLT, inverse, c(0))));
  }
};

/// atan2(y, x) from atan(y / x), corrected by quadrant. y / x is replaced by y
/// where both are zero (atan(+-0) is +-0) and by +-1 where both are infinite
/// (atan2(+-inf, +-inf) is an odd multiple of pi / 4), so every case matches
/// C's atan2f.
struct ExpandAtan2 : OpRewritePattern<math::Atan2Op> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(math::Atan2Op op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value y = op.getLhs(), x = op.getRhs();
    FloatOps f{rewriter, loc, x.getType()};
    using P = FloatOps::P;
    Value negY = f.signBit(y), negX = f.signBit(x);
    Value ratio = rewriter.create<arith::DivFOp>(loc, y, x);
    ratio = f.select(f.both(f.cmp(P::OEQ, y, f.c(0)), f.cmp(P::OEQ, x, f.c(0))), y, ratio);
    Value bothInf = f.both(f.cmp(P::OEQ, f.abs(y), f.c(INFINITY)),
                           f.cmp(P::OEQ, f.abs(x), f.c(INFINITY)));
    ratio = f.select(bothInf, f.select(f.differ(negY, negX), f.c(-1), f.c(1)), ratio);
    Value angle = rewriter.create<math::AtanOp>(loc, ratio);
    angle = f.select(f.cmp(P::OEQ, ratio, f.c(0)), ratio, angle); // +-0
    Value turned = rewriter.create<arith::AddFOp>(loc, angle,
                                                  f.select(negY, f.c(-M_PI), f.c(M_PI)));
    Value result = f.select(negX, turned, angle);
    // GLSL leaves atan of NaN undefined.
    rewriter.replaceOp(op, f.select(f.cmp(P::UNO, y, x), f.c(NAN), result));
    return success();
  }
};

/// `value` where `x` is NaN or outside [-1, 1]: asin and acos are NaN there,
/// whatever a target's sqrt and atan make of it.
Value nanOutsideUnit(PatternRewriter &rewriter, Location loc, Value x, Value value) {
  Value mag = rewriter.create<math::AbsFOp>(loc, x);
  Value inside = rewriter.create<arith::CmpFOp>(loc, arith::CmpFPredicate::OLE, mag,
                                                constantLike(rewriter, loc, x.getType(), 1));
  return rewriter.create<arith::SelectOp>(loc, inside, value,
                                          constantLike(rewriter, loc, x.getType(), NAN));
}

/// sqrt((1 - x)(1 + x)): cos(asin(x)), without the cancellation of 1 - x * x.
Value cosOfAsin(PatternRewriter &rewriter, Location loc, Value x) {
  Value one = constantLike(rewriter, loc, x.getType(), 1);
  Value product = rewriter.create<arith::MulFOp>(loc, rewriter.create<arith::SubFOp>(loc, one, x),
                                                 rewriter.create<arith::AddFOp>(loc, one, x));
  return rewriter.create<math::SqrtOp>(loc, product);
}

struct ExpandAsin : OpRewritePattern<math::AsinOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(math::AsinOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = op.getOperand();
    Value angle = rewriter.create<math::Atan2Op>(loc, x, cosOfAsin(rewriter, loc, x));
    rewriter.replaceOp(op, nanOutsideUnit(rewriter, loc, x, angle));
    return success();
  }
};

struct ExpandAcos : OpRewritePattern<math::AcosOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(math::AcosOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = op.getOperand();
    Value angle = rewriter.create<math::Atan2Op>(loc, cosOfAsin(rewriter, loc, x), x);
    rewriter.replaceOp(op, nanOutsideUnit(rewriter, loc, x, angle));
    return success();
  }
};

/// pow(x, y) with C's powf special cases from pow(|x|, y) on a positive finite
/// base (all GLSL's Pow defines): zero and infinite bases and exponents, the
/// sign of a negative base raised to an odd integer, NaN for a finite negative
/// base and a non-integer exponent, pow(x, 0) = pow(1, y) = 1 even for NaN.
struct ExpandPow : OpRewritePattern<math::PowFOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(math::PowFOp op, PatternRewriter &rewriter) const override {
    if (op->hasAttr(kiln::kPositiveBaseAttr))
      return failure();
    Location loc = op.getLoc();
    Value x = op.getLhs(), y = op.getRhs();
    FloatOps f{rewriter, loc, x.getType()};
    using P = FloatOps::P;
    Value ax = f.abs(x), ay = f.abs(y);
    Value yPositive = f.cmp(P::OGT, y, f.c(0));
    // |x|^y for a positive finite base, then zero and infinite bases and exponents.
    Value finite = f.both(f.cmp(P::OGT, ax, f.c(0)), f.cmp(P::OLT, ax, f.c(INFINITY)));
    auto positive = rewriter.create<math::PowFOp>(loc, f.select(finite, ax, f.c(1)), y);
    positive->setAttr(kiln::kPositiveBaseAttr, rewriter.getUnitAttr());
    Value mag = positive;
    mag = f.select(f.cmp(P::OEQ, ax, f.c(0)), f.select(yPositive, f.c(0), f.c(INFINITY)), mag);
    mag = f.select(f.cmp(P::OEQ, ax, f.c(INFINITY)), f.select(yPositive, f.c(INFINITY), f.c(0)),
                   mag);
    Value growing = f.differ(f.cmp(P::OGT, ax, f.c(1)), yPositive);
    Value infinitePower =
        f.select(f.cmp(P::OEQ, ax, f.c(1)), f.c(1), f.select(growing, f.c(0), f.c(INFINITY)));
    mag = f.select(f.cmp(P::OEQ, ay, f.c(INFINITY)), infinitePower, mag);
    // Negative bases (and -0.0): the sign of odd integer exponents.
    Value floorY = rewriter.create<math::FloorOp>(loc, y);
    Value yInteger = f.cmp(P::OEQ, floorY, y);
    Value half = rewriter.create<arith::MulFOp>(loc, y, f.c(0.5));
    Value yOdd = f.both(f.both(yInteger, f.cmp(P::ONE, rewriter.create<math::FloorOp>(loc, half),
                                               half)),
                        f.cmp(P::OLT, ay, f.c(INFINITY)));
    Value r = f.select(f.both(f.signBit(x), yOdd), rewriter.create<arith::NegFOp>(loc, mag), mag);
    Value finiteNegative = f.both(f.cmp(P::OLT, x, f.c(0)), f.cmp(P::OGT, x, f.c(-INFINITY)));
    r = f.select(f.both(finiteNegative, f.cmp(P::UNE, floorY, y)), f.c(NAN), r);
    r = f.select(f.cmp(P::UNO, x, y), f.c(NAN), r);
    rewriter.replaceOp(
        op, f.select(f.either(f.cmp(P::OEQ, y, f.c(0)), f.cmp(P::OEQ, x, f.c(1))), f.c(1), r));
    return success();
  }
};

/// asinh(x) = sign(x) log1p(|x| + x^2 / (1 + sqrt(1 + x^2))), which keeps small
/// arguments accurate (log(|x| + sqrt(x^2 + 1)) loses them to the 1).
struct ExpandAsinh : OpRewritePattern<math::AsinhOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(math::AsinhOp op, PatternRewriter &rewriter) const override {
    FloatOps f{rewriter, op.getLoc(), op.getType()};
    Value x = op.getOperand(), a = f.abs(x);
    Value a2 = f.mul(a, a);
    Value small = f.log1p(f.add(a, f.div(a2, f.add(f.c(1), f.sqrt(f.add(f.c(1), a2))))));
    Value r = f.orLogOfTwiceIfHuge(a, small);
    rewriter.replaceOp(op, f.select(f.cmp(FloatOps::P::UNO, x, x), x, f.withSignOf(r, x)));
    return success();
  }
};

/// acosh(x) = log1p(t + sqrt(t (t + 2))) for t = x - 1 (accurate near 1); NaN
/// below 1.
struct ExpandAcosh : OpRewritePattern<math::AcoshOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(math::AcoshOp op, PatternRewriter &rewriter) const override {
    FloatOps f{rewriter, op.getLoc(), op.getType()};
    using P = FloatOps::P;
    Value x = op.getOperand(), t = f.sub(x, f.c(1));
    Value near = f.log1p(f.add(t, f.sqrt(f.mul(t, f.add(t, f.c(2))))));
    Value r = f.orLogOfTwiceIfHuge(x, near);
    rewriter.replaceOp(op, f.select(f.cmp(P::OGE, x, f.c(1)), r, f.c(NAN)));
    return success();
  }
};

/// atanh(x) = sign(x) log1p(2|x| / (1 - |x|)) / 2: +-inf at +-1, NaN beyond.
struct ExpandAtanh : OpRewritePattern<math::AtanhOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(math::AtanhOp op, PatternRewriter &rewriter) const override {
    FloatOps f{rewriter, op.getLoc(), op.getType()};
    using P = FloatOps::P;
    Value x = op.getOperand(), a = f.abs(x);
    Value r = f.mul(f.c(0.5), f.log1p(f.div(f.mul(f.c(2), a), f.sub(f.c(1), a))));
    r = f.select(f.cmp(P::OEQ, a, f.c(1)), f.c(INFINITY), r);
    rewriter.replaceOp(op, f.select(f.cmp(P::OLE, a, f.c(1)), f.withSignOf(r, x), f.c(NAN)));
    return success();
  }
};

/// cbrt(x): exp2(log2|x| / 3), then one Newton step (r = (2r + |x| / r^2) / 3),
/// with x's sign; zeros and infinities are returned as they are.
struct ExpandCbrt : OpRewritePattern<math::CbrtOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(math::CbrtOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    FloatOps f{rewriter, loc, op.getType()};
    using P = FloatOps::P;
    Value x = op.getOperand(), a = f.abs(x);
    Value guess = rewriter.create<math::Exp2Op>(
        loc, f.mul(rewriter.create<math::Log2Op>(loc, a), f.c(1.0 / 3.0)));
    Value r = f.mul(f.add(f.mul(f.c(2), guess), f.div(a, f.mul(guess, guess))), f.c(1.0 / 3.0));
    Value same = f.either(f.cmp(P::OEQ, a, f.c(0)), f.cmp(P::OEQ, a, f.c(INFINITY)));
    rewriter.replaceOp(op, f.select(f.either(same, f.cmp(P::UNO, x, x)), x, f.withSignOf(r, x)));
    return success();
  }
};

/// popcount by SWAR steps on arith ops (Vulkan's OpBitCount takes 32-bit
/// integers only): pairs, nibbles, bytes, then a multiply that sums the bytes
/// into the top one.
struct ExpandCtPop : OpRewritePattern<math::CtPopOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(math::CtPopOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Type type = op.getType();
    unsigned width = getElementTypeOrSelf(type).getIntOrFloatBitWidth();
    if (width % 8 != 0)
      return failure();
    auto c = [&](uint64_t bytePattern) { // the byte repeated across the width
      APInt v(width, 0);
      for (unsigned i = 0; i < width; i += 8)
        v |= APInt(width, bytePattern) << i;
      Attribute attr = rewriter.getIntegerAttr(getElementTypeOrSelf(type), v);
      if (auto shaped = dyn_cast<ShapedType>(type))
        attr = SplatElementsAttr::get(shaped, attr);
      return rewriter.create<arith::ConstantOp>(loc, type, cast<TypedAttr>(attr)).getResult();
    };
    auto shift = [&](Value v, unsigned by) {
      Attribute attr = rewriter.getIntegerAttr(getElementTypeOrSelf(type), by);
      if (auto shaped = dyn_cast<ShapedType>(type))
        attr = SplatElementsAttr::get(shaped, attr);
      Value amount = rewriter.create<arith::ConstantOp>(loc, type, cast<TypedAttr>(attr));
      return rewriter.create<arith::ShRUIOp>(loc, v, amount).getResult();
    };
    auto andI = [&](Value a, Value b) { return rewriter.create<arith::AndIOp>(loc, a, b); };
    Value v = op.getOperand();
    v = rewriter.create<arith::SubIOp>(loc, v, andI(shift(v, 1), c(0x55)));
    v = rewriter.create<arith::AddIOp>(loc, andI(v, c(0x33)), andI(shift(v, 2), c(0x33)));
    v = andI(rewriter.create<arith::AddIOp>(loc, v, shift(v, 4)), c(0x0f));
    v = shift(rewriter.create<arith::MulIOp>(loc, v, c(0x01)), width - 8);
    rewriter.replaceOp(op, v);
    return success();
  }
};

struct ApproximateMath : kiln::impl::KilnApproximateMathBase<ApproximateMath> {
  using Base::Base;
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    if (target == "spirv") {
      populatePolynomialApproximateErfPattern(patterns);
      populateExpandExp2FPattern(patterns);
      // GLSL's Asin and Acos may be far less accurate than its Atan (lavapipe's
      // were off by 2e-4), so they go through atan2 as on NVIDIA.
      patterns.add<ExpandTrunc, ExpandAtan2, ExpandAsin, ExpandAcos, ExpandPow, ExpandAsinh,
                   ExpandAcosh, ExpandAtanh, ExpandCbrt>(&getContext());
      patterns.add<ExpandScaledLog<math::Log2Op>>(&getContext(), 1.4426950408889634);
      patterns.add<ExpandScaledLog<math::Log10Op>>(&getContext(), 0.4342944819032518);
      // Bit counts of any width (Vulkan's OpBitCount and FindUMsb are 32-bit).
      populateExpandCtlzPattern(patterns);
      patterns.add<ExpandCtPop>(&getContext());
      // MLIR's math-to-spirv takes expm1 and log1p as exp(x) - 1 and log(1 + x).
      kiln::populateAccurateExpm1Log1pPatterns(patterns);
      // GLSL.std.450's exp, log, sin, ... take no f64.
      kiln::populateF64MathPatterns(patterns);
    } else if (target == "nvvm") {
      populateExpandSinhPattern(patterns);
      populateExpandCoshPattern(patterns);
      // MLIR 19's NVVM lowering calls libdevice for none of these.
      patterns.add<ExpandAsin, ExpandAcos, ExpandAsinh, ExpandAcosh, ExpandAtanh, ExpandCbrt>(
          &getContext());
    } else {
      getOperation().emitError("kiln-approximate-math: target must be spirv or nvvm, not '")
          << target << "'";
      return signalPassFailure();
    }
    if (failed(applyPatternsAndFoldGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
