//===- SPIRVRemainders.cpp - x % y on SPIR-V: INT_MIN's sign, exact floats ===//

#include "passes/GPU/LoopLimit.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln {
#define GEN_PASS_DEF_KILNSPIRVREMAINDERS
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;

/// The bits ExactFloatRemainder's long division takes a step: for f32 and f64,
/// as many as the exponent has (a remainder below 2^(fraction + 1), shifted by
/// them, stays below 2^bits).
static unsigned divisionStep(FloatType type) {
  return type.getWidth() - type.getFPMantissaWidth();
}

std::optional<int64_t> kiln::gpu::exactRemainderTrips(Type type) {
  auto floatType = dyn_cast<FloatType>(type);
  if (!floatType || !(floatType.isF32() || floatType.isF64()))
    return std::nullopt;
  // The exponents of finite values, subnormals counted as 1, differ by at most
  // 2^step - 3 (a NaN or infinite x, whose result is NaN, one more: the same
  // number of steps).
  int64_t step = divisionStep(floatType), shift = (int64_t(1) << step) - 3;
  return (shift + step - 1) / step;
}

namespace {
/// remsi(x, y) = x < 0 ? -(|x| urem |y|) : |x| urem |y|, where |INT_MIN| read
/// unsigned is 2^(bits-1), so every dividend keeps its sign.
struct SignedRemainder : OpRewritePattern<arith::RemSIOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(arith::RemSIOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value zero = rewriter.create<arith::ConstantOp>(loc, rewriter.getZeroAttr(op.getType()));
    auto isNegative = [&](Value v) {
      return rewriter.create<arith::CmpIOp>(loc, arith::CmpIPredicate::slt, v, zero);
    };
    auto negate = [&](Value v) { return rewriter.create<arith::SubIOp>(loc, zero, v); };
    Value x = op.getLhs(), y = op.getRhs();
    Value xNegative = isNegative(x);
    Value xMagnitude = rewriter.create<arith::SelectOp>(loc, xNegative, negate(x), x);
    Value yNegative = isNegative(y);
    Value yMagnitude = rewriter.create<arith::SelectOp>(loc, yNegative, negate(y), y);
    Value r = rewriter.create<arith::RemUIOp>(loc, xMagnitude, yMagnitude);
    rewriter.replaceOpWithNewOp<arith::SelectOp>(op, xNegative, negate(r), r);
    return success();
  }
};

/// remf(x, y) of scalar f32 or f64 as C's fmodf or fmod, exactly; see the pass
/// description. In a kernel that checks lavapipe's loop limit, the division's
/// loop records its end like the kernel's own (LoopLimit.h).
struct ExactFloatRemainder : OpRewritePattern<arith::RemFOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(arith::RemFOp op, PatternRewriter &rewriter) const override {
    auto type = dyn_cast<FloatType>(op.getType());
    if (!kiln::gpu::exactRemainderTrips(op.getType()))
      return failure();
    // The format: `bits` wide, a `fraction`-bit stored significand.
    const unsigned bits = type.getWidth(), fraction = type.getFPMantissaWidth() - 1;
    const unsigned step = divisionStep(type);
    const uint64_t absMask = ~uint64_t(0) >> (65 - bits);
    const uint64_t implicitBit = uint64_t(1) << fraction, fractionMask = implicitBit - 1;
    const uint64_t infinity = absMask & ~fractionMask, maxExponent = infinity >> fraction;
    Location loc = op.getLoc();
    ImplicitLocOpBuilder b(loc, rewriter);
    Type intType = b.getIntegerType(bits);
    auto c = [&](uint64_t v) {
      return b.create<arith::ConstantIntOp>(int64_t(v & (~uint64_t(0) >> (64 - bits))), bits);
    };
    auto cmp = [&](arith::CmpIPredicate p, Value l, Value r) {
      return b.create<arith::CmpIOp>(p, l, r);
    };
    auto select = [&](Value cond, Value t, Value f) {
      return b.create<arith::SelectOp>(cond, t, f);
    };
    Value x = op.getLhs(), y = op.getRhs();
    Value xBits = b.create<arith::BitcastOp>(intType, x);
    Value ix = b.create<arith::AndIOp>(xBits, c(absMask));
    Value iy = b.create<arith::AndIOp>(b.create<arith::BitcastOp>(intType, y), c(absMask));
    Value ex = b.create<arith::ShRUIOp>(ix, c(fraction));
    Value ey = b.create<arith::ShRUIOp>(iy, c(fraction));
    // |v| = significand * 2^(exponent - bias - fraction); subnormals have
    // exponent 1, no implicit bit. A zero y's significand is made 1 so that no
    // lane divides by 0 (its result is replaced by NaN below).
    auto significand = [&](Value v, Value exponent) {
      Value implicit = select(cmp(arith::CmpIPredicate::ne, exponent, c(0)), c(implicitBit), c(0));
      return b.create<arith::OrIOp>(b.create<arith::AndIOp>(v, c(fractionMask)), implicit);
    };
    Value mx = significand(ix, ex);
    Value my = select(cmp(arith::CmpIPredicate::eq, iy, c(0)), c(1), significand(iy, ey));
    Value ex1 = b.create<arith::MaxUIOp>(ex, c(1));
    Value ey1 = b.create<arith::MaxUIOp>(ey, c(1));

    // r = mx * 2^(ex - ey) mod my, `step` bits a step: r < my < 2^(fraction + 1).
    Value shift = b.create<arith::MaxSIOp>(b.create<arith::SubIOp>(ex1, ey1), c(0));
    Value steps = b.create<arith::DivUIOp>(b.create<arith::AddIOp>(shift, c(step - 1)), c(step));
    Value lb = b.create<arith::ConstantIndexOp>(0), one = b.create<arith::ConstantIndexOp>(1);
    Value ub = b.create<arith::IndexCastUIOp>(b.getIndexType(), steps);
    Value r0 = b.create<arith::RemUIOp>(mx, my);
    auto loop = b.create<scf::ForOp>(
        lb, ub, one, ValueRange{r0, shift},
        [&](OpBuilder &nested, Location l, Value, ValueRange args) {
          ImplicitLocOpBuilder n(l, nested);
          Value s = n.create<arith::MinUIOp>(args[1], c(step));
          Value r = n.create<arith::RemUIOp>(n.create<arith::ShLIOp>(args[0], s), my);
          n.create<scf::YieldOp>(ValueRange{r, n.create<arith::SubIOp>(args[1], s)});
        });
    if (auto func = op->getParentOfType<gpu::GPUFuncOp>())
      if (std::optional<kiln::gpu::LoopEndWords> words = kiln::gpu::loopEndWords(func))
        kiln::gpu::recordLoopEnd(rewriter, loop, *words);
    Value r = loop.getResult(0);

    // The result r * 2^(ey - bias - fraction), normalized (the implicit bit set,
    // exponent ey - lz) or, where that exponent would be below 1, subnormal.
    Value lz = b.create<arith::SubIOp>(b.create<math::CountLeadingZerosOp>(r), c(step));
    Value e = b.create<arith::SubIOp>(ey1, lz);
    Value normal = b.create<arith::OrIOp>(
        b.create<arith::ShLIOp>(e, c(fraction)),
        b.create<arith::AndIOp>(b.create<arith::ShLIOp>(r, lz), c(fractionMask)));
    Value subnormal = b.create<arith::ShLIOp>(
        r, b.create<arith::MinUIOp>(b.create<arith::SubIOp>(ey1, c(1)), c(bits - 1)));
    Value magnitude = select(cmp(arith::CmpIPredicate::sge, e, c(1)), normal, subnormal);
    magnitude = select(cmp(arith::CmpIPredicate::eq, r, c(0)), c(0), magnitude);
    Value sign = b.create<arith::AndIOp>(xBits, c(~absMask));
    Value result = b.create<arith::BitcastOp>(type, b.create<arith::OrIOp>(magnitude, sign));

    // |x| < |y| (an infinite y included) leaves x; a NaN or infinite x, a NaN y
    // or a zero y give NaN.
    result = select(cmp(arith::CmpIPredicate::ult, ix, iy), x, result);
    Value invalid = b.create<arith::OrIOp>(
        b.create<arith::OrIOp>(cmp(arith::CmpIPredicate::eq, iy, c(0)),
                               cmp(arith::CmpIPredicate::eq, ex, c(maxExponent))),
        cmp(arith::CmpIPredicate::ugt, iy, c(infinity)));
    Value nan = b.create<arith::ConstantFloatOp>(APFloat::getQNaN(type.getFloatSemantics()), type);
    rewriter.replaceOp(op, select(invalid, nan, result));
    return success();
  }
};

struct SPIRVRemainders : kiln::impl::KilnSPIRVRemaindersBase<SPIRVRemainders> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<SignedRemainder, ExactFloatRemainder>(&getContext());
    if (failed(applyPatternsAndFoldGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
