//===- ApproximateMath.cpp - expansions of math functions a target lacks --===//

#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
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

struct ExpandLog2 : OpRewritePattern<math::Log2Op> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(math::Log2Op op, PatternRewriter &rewriter) const override {
    if (!isa<FloatType>(getElementTypeOrSelf(op.getType())))
      return failure();
    Value log = rewriter.create<math::LogOp>(op.getLoc(), op.getOperand());
    rewriter.replaceOpWithNewOp<arith::MulFOp>(
        op, log, constantLike(rewriter, op.getLoc(), op.getType(), 1.4426950408889634));
    return success();
  }
};

/// log10(x) = log(x) * (1 / ln 10).
struct ExpandLog10 : OpRewritePattern<math::Log10Op> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(math::Log10Op op, PatternRewriter &rewriter) const override {
    Value log = rewriter.create<math::LogOp>(op.getLoc(), op.getOperand());
    rewriter.replaceOpWithNewOp<arith::MulFOp>(
        op, log, constantLike(rewriter, op.getLoc(), op.getType(), 0.4342944819032518));
    return success();
  }
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

/// atan2(y, x) from atan(y / x), corrected by quadrant. The sign bits of zeros
/// are read as 1 / z < 0; y / x is replaced by y where both are zero (atan(+-0)
/// is +-0) and by +-1 where both are infinite (atan2(+-inf, +-inf) is an odd
/// multiple of pi / 4), so every case matches C's atan2f.
struct ExpandAtan2 : OpRewritePattern<math::Atan2Op> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(math::Atan2Op op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value y = op.getLhs(), x = op.getRhs();
    Type type = x.getType();
    auto c = [&](double v) { return constantLike(rewriter, loc, type, v); };
    using P = arith::CmpFPredicate;
    auto cmp = [&](P p, Value a, Value b) { return rewriter.create<arith::CmpFOp>(loc, p, a, b); };
    auto both = [&](Value a, Value b) { return rewriter.create<arith::AndIOp>(loc, a, b); };
    auto signBit = [&](Value v) { // v < 0, or v is -0.0
      Value inverse = rewriter.create<arith::DivFOp>(loc, c(1), v);
      return rewriter.create<arith::OrIOp>(
          loc, cmp(P::OLT, v, c(0)), both(cmp(P::OEQ, v, c(0)), cmp(P::OLT, inverse, c(0))));
    };
    auto isInf = [&](Value v) {
      return cmp(P::OEQ, rewriter.create<math::AbsFOp>(loc, v), c(INFINITY));
    };
    Value negY = signBit(y), negX = signBit(x);
    Value ratio = rewriter.create<arith::DivFOp>(loc, y, x);
    Value zeros = both(cmp(P::OEQ, y, c(0)), cmp(P::OEQ, x, c(0)));
    ratio = rewriter.create<arith::SelectOp>(loc, zeros, y, ratio);
    Value unit = rewriter.create<arith::SelectOp>(
        loc, rewriter.create<arith::XOrIOp>(loc, negY, negX), c(-1), c(1));
    ratio = rewriter.create<arith::SelectOp>(loc, both(isInf(y), isInf(x)), unit, ratio);
    Value angle = rewriter.create<math::AtanOp>(loc, ratio);
    angle = rewriter.create<arith::SelectOp>(loc, cmp(P::OEQ, ratio, c(0)), ratio, angle); // +-0
    Value turn = rewriter.create<arith::SelectOp>(loc, negY, c(-M_PI), c(M_PI));
    Value turned = rewriter.create<arith::AddFOp>(loc, angle, turn);
    Value result = rewriter.create<arith::SelectOp>(loc, negX, turned, angle);
    Value nan = cmp(P::UNO, y, x); // GLSL leaves atan of NaN undefined
    rewriter.replaceOpWithNewOp<arith::SelectOp>(op, nan, c(NAN), result);
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
/// sign of a negative base raised to an odd integer, NaN for a negative base
/// and a non-integer exponent, pow(x, 0) = pow(1, y) = 1 even for NaN.
struct ExpandPow : OpRewritePattern<math::PowFOp> {
  static constexpr llvm::StringLiteral kPositiveBase = "kiln.positive_base";
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(math::PowFOp op, PatternRewriter &rewriter) const override {
    if (op->hasAttr(kPositiveBase))
      return failure();
    Location loc = op.getLoc();
    Value x = op.getLhs(), y = op.getRhs();
    Type type = x.getType();
    auto c = [&](double v) { return constantLike(rewriter, loc, type, v); };
    using P = arith::CmpFPredicate;
    auto cmp = [&](P p, Value a, Value b) { return rewriter.create<arith::CmpFOp>(loc, p, a, b); };
    auto select = [&](Value cond, Value a, Value b) -> Value {
      return rewriter.create<arith::SelectOp>(loc, cond, a, b);
    };
    auto both = [&](Value a, Value b) { return rewriter.create<arith::AndIOp>(loc, a, b); };
    auto either = [&](Value a, Value b) { return rewriter.create<arith::OrIOp>(loc, a, b); };
    Value ax = rewriter.create<math::AbsFOp>(loc, x), ay = rewriter.create<math::AbsFOp>(loc, y);
    Value yPositive = cmp(P::OGT, y, c(0));
    // |x|^y for a positive finite base, then zero and infinite bases and exponents.
    Value safeBase = select(both(cmp(P::OGT, ax, c(0)), cmp(P::OLT, ax, c(INFINITY))), ax, c(1));
    auto positive = rewriter.create<math::PowFOp>(loc, safeBase, y);
    positive->setAttr(kPositiveBase, rewriter.getUnitAttr());
    Value mag = positive;
    mag = select(cmp(P::OEQ, ax, c(0)), select(yPositive, c(0), c(INFINITY)), mag);
    mag = select(cmp(P::OEQ, ax, c(INFINITY)), select(yPositive, c(INFINITY), c(0)), mag);
    Value yInf = cmp(P::OEQ, ay, c(INFINITY));
    Value growing = rewriter.create<arith::XOrIOp>(loc, cmp(P::OGT, ax, c(1)), yPositive);
    mag = select(yInf, select(cmp(P::OEQ, ax, c(1)), c(1), select(growing, c(0), c(INFINITY))),
                 mag);
    // Negative bases (and -0.0): the sign of odd integer exponents.
    Value floorY = rewriter.create<math::FloorOp>(loc, y);
    Value yInteger = cmp(P::OEQ, floorY, y);
    Value half = rewriter.create<arith::MulFOp>(loc, y, c(0.5));
    Value yOdd = both(both(yInteger, cmp(P::ONE, rewriter.create<math::FloorOp>(loc, half), half)),
                      cmp(P::OLT, ay, c(INFINITY)));
    Value inverse = rewriter.create<arith::DivFOp>(loc, c(1), x);
    Value negX =
        either(cmp(P::OLT, x, c(0)), both(cmp(P::OEQ, x, c(0)), cmp(P::OLT, inverse, c(0))));
    Value r = select(both(negX, yOdd), rewriter.create<arith::NegFOp>(loc, mag), mag);
    r = select(both(cmp(P::OLT, x, c(0)), cmp(P::UNE, floorY, y)), c(NAN), r);
    r = select(cmp(P::UNO, x, y), c(NAN), r);
    rewriter.replaceOp(op, select(either(cmp(P::OEQ, y, c(0)), cmp(P::OEQ, x, c(1))), c(1), r));
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
      patterns.add<ExpandLog2, ExpandLog10, ExpandTrunc, ExpandAtan2, ExpandAsin, ExpandAcos,
                   ExpandPow>(&getContext());
    } else if (target == "nvvm") {
      populateExpandSinhPattern(patterns);
      populateExpandCoshPattern(patterns);
      patterns.add<ExpandAsin, ExpandAcos>(&getContext());
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
