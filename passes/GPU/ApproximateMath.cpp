//===- ApproximateMath.cpp - expansions of math functions a target lacks --===//

#include "passes/Passes.h"
#include "passes/AccurateMath.h"
#include "passes/FloatBuilder.h"
#include "passes/GPU/ExactMath.h"

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
using kiln::FloatBuilder;

namespace {
template <typename Op, Value (*expand)(FloatBuilder &, Op)>
using Expand = kiln::FloatExpansion<Op, expand>;

/// Marks an erf whose zero's sign expandErfZeroSign has put back around it.
constexpr llvm::StringLiteral kSignedZeroAttr = "kiln.signed_zero";

/// erf(+-0) = +-0: MLIR's polynomial approximation of f32 erf, which expands
/// the marked erf this leaves, gives +0 for both (f64 erf is ExactMath's).
Value expandErfZeroSign(FloatBuilder &f, math::ErfOp op) {
  if (op->hasAttr(kSignedZeroAttr) || f.isF64())
    return {};
  Value x = op.getOperand();
  auto erf = f.b.create<math::ErfOp>(x);
  erf->setAttr(kSignedZeroAttr, f.b.getUnitAttr());
  return f.select(f.eq(x, 0), x, erf);
}

/// sinh(x) = (expm1(x) - expm1(-x)) / 2, whose terms add (GLSL's
/// (e^x - e^-x) / 2 cancels near 0: sinh(1e-10) came out 3e-8); past |x| =
/// 80, h (h / 2) with h = e^(|x|/2), which is finite up to sinh's own overflow.
Value expandSinh(FloatBuilder &f, math::SinhOp op) {
  if (f.isF64())
    return {};
  Value x = op.getOperand();
  Value moderate =
      f.mul(f.sub(f.call<math::ExpM1Op>(x), f.call<math::ExpM1Op>(f.neg(x))), f.c(0.5));
  Value h = f.call<math::ExpOp>(f.mul(f.abs(x), f.c(0.5)));
  Value huge = f.withSignOf(f.mul(h, f.mul(h, f.c(0.5))), x);
  return f.select(f.gt(f.abs(x), 80), huge, moderate);
}

/// tanh(x) = e / (e + 2) with e = expm1(2x), accurate near 0 (GLSL's tanh
/// cancelled there: tanh(1e-10) came out 3e-8); +-1 past |x| = 10.
Value expandTanh(FloatBuilder &f, math::TanhOp op) {
  if (f.isF64())
    return {};
  Value x = op.getOperand();
  Value e = f.call<math::ExpM1Op>(f.mul(x, f.c(2)));
  Value r = f.div(e, f.add(e, f.c(2)));
  return f.select(f.gt(f.abs(x), 10), f.withSignOf(f.c(1), x), r);
}

/// trunc(x) = x < 0 ? ceil(x) : floor(x) (-0.0 and NaN come through).
Value expandTrunc(FloatBuilder &f, math::TruncOp op) {
  Value x = op.getOperand();
  return f.select(f.lt(x, 0), f.call<math::CeilOp>(x), f.floor(x));
}

/// rint(x), halves to even, from trunc: lavapipe's f64 RoundEven (Mesa 22.3 on
/// 256-bit llvmpipe) rounded 3.5 to 3 and left 26452196.1 as it was, which
/// broke sin and cos past 2^24 (their reduction rounds x 2/pi). x - trunc(x) is
/// exact; t is odd when t / 2 is not an integer. NaN and infinities come through.
/// f32's RoundEven (bf16 conversions round with it) was right and stays.
Value expandRoundEven(FloatBuilder &f, math::RoundEvenOp op) {
  if (!f.isF64())
    return {};
  Value x = op.getOperand();
  Value t = f.call<math::TruncOp>(x);
  Value fraction = f.abs(f.sub(x, t));
  Value half = f.mul(t, f.c(0.5));
  Value odd = f.cmp(arith::CmpFPredicate::ONE, f.call<math::TruncOp>(half), half);
  Value away = f.either(f.gt(fraction, 0.5), f.both(f.eq(fraction, 0.5), odd));
  return f.select(away, f.add(t, f.copysign(f.c(1), x)), t);
}

/// `value` where `x` is NaN or outside [-1, 1]: asin and acos are NaN there,
/// whatever a target's sqrt and atan make of it.
Value nanOutsideUnit(FloatBuilder &f, Value x, Value value) {
  return f.select(f.le(f.abs(x), 1), value, f.c(NAN));
}

/// sqrt((1 - x)(1 + x)): cos(asin(x)), without the cancellation of 1 - x * x.
Value cosOfAsin(FloatBuilder &f, Value x) {
  return f.sqrt(f.mul(f.sub(f.c(1), x), f.add(f.c(1), x)));
}

Value expandAsin(FloatBuilder &f, math::AsinOp op) {
  Value x = op.getOperand();
  return nanOutsideUnit(f, x, f.b.create<math::Atan2Op>(x, cosOfAsin(f, x)));
}

Value expandAcos(FloatBuilder &f, math::AcosOp op) {
  Value x = op.getOperand();
  return nanOutsideUnit(f, x, f.b.create<math::Atan2Op>(cosOfAsin(f, x), x));
}

/// pow(x, y) with C's powf special cases from pow(|x|, y) on a positive finite
/// base (all GLSL's Pow defines): zero and infinite bases and exponents, the
/// sign of a negative base raised to an odd integer, NaN for a finite negative
/// base and a non-integer exponent, pow(x, 0) = pow(1, y) = 1 even for NaN.
Value expandPow(FloatBuilder &f, math::PowFOp op) {
  if (op->hasAttr(kiln::kPositiveBaseAttr))
    return {};
  Value x = op.getLhs(), y = op.getRhs();
  Value ax = f.abs(x), ay = f.abs(y);
  Value yPositive = f.gt(y, 0);
  // |x|^y for a positive finite base, then zero and infinite bases and exponents.
  Value finite = f.both(f.gt(ax, 0), f.lt(ax, INFINITY));
  auto positive = f.b.create<math::PowFOp>(f.select(finite, ax, f.c(1)), y);
  positive->setAttr(kiln::kPositiveBaseAttr, f.b.getUnitAttr());
  Value mag = positive;
  mag = f.select(f.eq(ax, 0), f.select(yPositive, f.c(0), f.c(INFINITY)), mag);
  mag = f.select(f.eq(ax, INFINITY), f.select(yPositive, f.c(INFINITY), f.c(0)), mag);
  Value growing = f.differ(f.gt(ax, 1), yPositive);
  Value infinitePower = f.select(f.eq(ax, 1), f.c(1), f.select(growing, f.c(0), f.c(INFINITY)));
  mag = f.select(f.eq(ay, INFINITY), infinitePower, mag);
  // Negative bases (and -0.0): the sign of odd integer exponents.
  Value floorY = f.floor(y);
  Value half = f.mul(y, f.c(0.5));
  Value yOdd = f.both(f.both(f.cmp(FloatBuilder::P::OEQ, floorY, y),
                             f.cmp(FloatBuilder::P::ONE, f.floor(half), half)),
                      f.lt(ay, INFINITY));
  Value r = f.select(f.both(f.signBit(x), yOdd), f.neg(mag), mag);
  Value finiteNegative = f.both(f.lt(x, 0), f.gt(x, -INFINITY));
  r = f.select(f.both(finiteNegative, f.cmp(FloatBuilder::P::UNE, floorY, y)), f.c(NAN), r);
  r = f.select(f.cmp(FloatBuilder::P::UNO, x, y), f.c(NAN), r);
  return f.select(f.either(f.eq(y, 0), f.eq(x, 1)), f.c(1), r);
}

/// `moderate` up to |v| = 2^28; past it log(2 v), where asinh and acosh lose
/// the 1 they add to v^2 (or v^2 overflows).
Value orLogOfTwiceIfHuge(FloatBuilder &f, Value v, Value moderate) {
  return f.select(f.gt(v, 268435456.0), f.add(f.call<math::LogOp>(v), f.c(M_LN2)), moderate);
}

/// asinh(x) = sign(x) log1p(|x| + x^2 / (1 + sqrt(1 + x^2))), which keeps small
/// arguments accurate (log(|x| + sqrt(x^2 + 1)) loses them to the 1).
Value expandAsinh(FloatBuilder &f, math::AsinhOp op) {
  Value x = op.getOperand(), a = f.abs(x);
  Value a2 = f.mul(a, a);
  Value small =
      f.call<math::Log1pOp>(f.add(a, f.div(a2, f.add(f.c(1), f.sqrt(f.add(f.c(1), a2))))));
  Value r = orLogOfTwiceIfHuge(f, a, small);
  return f.select(f.isNaN(x), x, f.withSignOf(r, x));
}

/// acosh(x) = log1p(t + sqrt(t (t + 2))) for t = x - 1 (accurate near 1); NaN
/// below 1.
Value expandAcosh(FloatBuilder &f, math::AcoshOp op) {
  Value x = op.getOperand(), t = f.sub(x, f.c(1));
  Value near = f.call<math::Log1pOp>(f.add(t, f.sqrt(f.mul(t, f.add(t, f.c(2))))));
  return f.select(f.ge(x, 1), orLogOfTwiceIfHuge(f, x, near), f.c(NAN));
}

/// atanh(x) = sign(x) log1p(2|x| / (1 - |x|)) / 2: +-inf at +-1, NaN beyond.
Value expandAtanh(FloatBuilder &f, math::AtanhOp op) {
  Value x = op.getOperand(), a = f.abs(x);
  Value r = f.mul(f.c(0.5), f.call<math::Log1pOp>(f.div(f.mul(f.c(2), a), f.sub(f.c(1), a))));
  r = f.select(f.eq(a, 1), f.c(INFINITY), r);
  return f.select(f.le(a, 1), f.withSignOf(r, x), f.c(NAN));
}

/// cbrt(x): exp2(log2|x| / 3), then one Newton step (r = (2r + |x| / r^2) / 3),
/// with x's sign; zeros and infinities are returned as they are.
Value expandCbrt(FloatBuilder &f, math::CbrtOp op) {
  Value x = op.getOperand(), a = f.abs(x);
  Value guess = f.call<math::Exp2Op>(f.mul(f.call<math::Log2Op>(a), f.c(1.0 / 3.0)));
  Value r = f.mul(f.add(f.mul(f.c(2), guess), f.div(a, f.mul(guess, guess))), f.c(1.0 / 3.0));
  Value same = f.either(f.eq(a, 0), f.eq(a, INFINITY));
  return f.select(f.either(same, f.isNaN(x)), x, f.withSignOf(r, x));
}

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
      patterns.add<Expand<math::ErfOp, expandErfZeroSign>>(&getContext(), /*benefit=*/2);
      // exp2, atan2, asin and acos are ExactMath's (GLSL's Asin and Acos were
      // off by 2e-4 on lavapipe).
      patterns.add<Expand<math::TruncOp, expandTrunc>, Expand<math::RoundEvenOp, expandRoundEven>,
                   Expand<math::PowFOp, expandPow>,
                   Expand<math::AsinhOp, expandAsinh>, Expand<math::AcoshOp, expandAcosh>,
                   Expand<math::AtanhOp, expandAtanh>,
                   Expand<math::CbrtOp, expandCbrt>, Expand<math::SinhOp, expandSinh>,
                   Expand<math::TanhOp, expandTanh>>(&getContext());
      // Bit counts of any width (Vulkan's OpBitCount and FindUMsb are 32-bit).
      populateExpandCtlzPattern(patterns);
      patterns.add<ExpandCtPop>(&getContext());
      // MLIR's math-to-spirv takes log1p as log(1 + x) (and expm1 as exp(x) - 1,
      // but ExactMath's expm1 outranks AccurateMath's for f32 and f64).
      kiln::populateAccurateExpm1Log1pPatterns(patterns);
      // GLSL.std.450's exp, log, sin, ... take no f64.
      kiln::populateExactMathPatterns(patterns);
    } else if (target == "nvvm") {
      populateExpandSinhPattern(patterns);
      populateExpandCoshPattern(patterns);
      // MLIR 19's NVVM lowering calls libdevice for none of these.
      patterns.add<Expand<math::AsinOp, expandAsin>, Expand<math::AcosOp, expandAcos>,
                   Expand<math::AsinhOp, expandAsinh>, Expand<math::AcoshOp, expandAcosh>,
                   Expand<math::AtanhOp, expandAtanh>, Expand<math::CbrtOp, expandCbrt>>(
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
