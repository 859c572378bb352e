//===- VectorMath.cpp - polynomial exp and friends for CPU vectors --------===//
//
// math-to-libm turns a vector `math.exp` into one libm call per lane, which
// dominates softmax and attention on the CPU. MLIR's polynomial approximations
// stay in vector registers; this pass applies them to f32 vector exp, log and
// tanh (measured: exp within 1 ulp, 5 near its overflow; log within 1 ulp;
// tanh within 4 ulp, exactly +-1 from |x| = 7.9), extends exp and log to the
// subnormal range they would otherwise flush, and leaves scalars to libm. It
// also makes f16 fma one rounding (roundF16FmaOnce).
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/AccurateMath.h"
#include "passes/FloatBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln {
#define GEN_PASS_DEF_KILNCPUVECTORMATH
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {

/// MLIR's polynomial exp flushes results below the smallest normal f32 to zero
/// and its log treats subnormal inputs as the smallest normal. Lanes in those
/// ranges go through a scaled argument instead: exp(x) = exp(x + 64 ln 2) *
/// 2^-64 for x < -87.33 (the product rounds to the subnormal once), and
/// log(x) = log(x * 2^64) - 64 ln 2 for 0 < x < 2^-126. Returns the new math op,
/// which the approximation then rewrites.
Operation *widenSubnormalRange(OpBuilder &b, Operation *op) {
  Location loc = op->getLoc();
  Value x = op->getOperand(0);
  auto type = cast<VectorType>(x.getType());
  auto splat = [&](float v) {
    return b.create<arith::ConstantOp>(loc, DenseElementsAttr::get(type, v)).getResult();
  };
  using P = arith::CmpFPredicate;
  const float ln2x64 = 44.3614195558365f, twoTo64 = 18446744073709551616.0f;
  bool isExp = isa<math::ExpOp>(op);
  // exp: below log(2^-126); log: below 2^-126 (zero, negatives and NaN are
  // unaffected by the scaling).
  Value small = b.create<arith::CmpFOp>(loc, P::OLT, x,
                                        splat(isExp ? -87.3365447f : 1.17549435e-38f));
  Value scaled = isExp ? b.create<arith::AddFOp>(loc, x, splat(ln2x64)).getResult()
                       : b.create<arith::MulFOp>(loc, x, splat(twoTo64)).getResult();
  Value arg = b.create<arith::SelectOp>(loc, small, scaled, x);
  Operation *core = isExp ? b.create<math::ExpOp>(loc, arg).getOperation()
                          : b.create<math::LogOp>(loc, arg).getOperation();
  Value r = core->getResult(0);
  Value fixed = isExp ? b.create<arith::MulFOp>(loc, r, splat(1.0f / twoTo64)).getResult()
                      : b.create<arith::SubFOp>(loc, r, splat(ln2x64)).getResult();
  op->getResult(0).replaceAllUsesWith(b.create<arith::SelectOp>(loc, small, fixed, r));
  op->erase();
  return core;
}

/// An f16 fma rounded once: LLVM's x86 code widens it to f32's fma and rounds
/// that to f16 again (1 ulp off on midpoints). Rounded to odd in f32, where f16
/// products are exact, the rounding to f16 is the only one.
void roundF16FmaOnce(math::FmaOp op) {
  OpBuilder builder(op);
  ImplicitLocOpBuilder b(op.getLoc(), builder);
  Type wide = b.getF32Type();
  if (auto shaped = dyn_cast<ShapedType>(op.getType()))
    wide = shaped.clone(wide);
  auto widen = [&](Value v) { return b.create<arith::ExtFOp>(wide, v).getResult(); };
  Value odd = kiln::FloatBuilder(b, wide).fmaRoundedToOdd(widen(op.getA()), widen(op.getB()),
                                                          widen(op.getC()));
  op.replaceAllUsesWith(b.create<arith::TruncFOp>(op.getType(), odd).getResult());
  op.erase();
}

struct VectorMath : kiln::impl::KilnCPUVectorMathBase<VectorMath> {
  void runOnOperation() override {
    getOperation()->walk([](math::FmaOp op) {
      if (getElementTypeOrSelf(op.getType()).isF16())
        roundF16FmaOnce(op);
    });
    GreedyRewriteConfig config;
    config.strictMode = GreedyRewriteStrictness::ExistingAndNewOps;
    // convert-math-to-llvm takes expm1 and log1p as exp(x) - 1 and log(1 + x).
    SmallVector<Operation *> nearZero;
    getOperation()->walk([&](Operation *op) {
      if (isa<math::ExpM1Op, math::Log1pOp>(op))
        nearZero.push_back(op);
    });
    RewritePatternSet accurate(&getContext());
    kiln::populateAccurateExpm1Log1pPatterns(accurate);
    if (!nearZero.empty() && failed(applyOpPatternsAndFold(nearZero, std::move(accurate), config)))
      return signalPassFailure();
    SmallVector<Operation *> ops;
    getOperation()->walk([&](Operation *op) {
      if (!isa<math::ExpOp, math::LogOp, math::TanhOp>(op))
        return;
      auto type = dyn_cast<VectorType>(op->getResult(0).getType());
      if (type && type.getElementType().isF32())
        ops.push_back(op);
    });
    if (ops.empty())
      return;
    for (Operation *&op : ops) {
      if (isa<math::ExpOp, math::LogOp>(op)) {
        OpBuilder b(op);
        op = widenSubnormalRange(b, op);
      }
    }
    RewritePatternSet patterns(&getContext());
    populateMathPolynomialApproximationPatterns(patterns);
    if (failed(applyOpPatternsAndFold(ops, std::move(patterns), config)))
      signalPassFailure();
  }
};
} // namespace
