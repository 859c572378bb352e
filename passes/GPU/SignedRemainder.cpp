//===- SignedRemainder.cpp - x % y on SPIR-V with the sign of x ------------===//

#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln {
#define GEN_PASS_DEF_KILNSPIRVSIGNEDREMAINDER
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;

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

struct SPIRVSignedRemainder : kiln::impl::KilnSPIRVSignedRemainderBase<SPIRVSignedRemainder> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<SignedRemainder>(&getContext());
    if (failed(applyPatternsAndFoldGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
