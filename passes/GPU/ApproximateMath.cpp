//===- ApproximateMath.cpp - polynomial stand-ins for missing functions ---===//

#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln {
#define GEN_PASS_DEF_KILNAPPROXIMATEMATH
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {
/// log2(x) = log(x) * (1 / ln 2): MLIR 19's math-to-spirv has no log2 pattern.
struct ExpandLog2 : OpRewritePattern<math::Log2Op> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(math::Log2Op op, PatternRewriter &rewriter) const override {
    Type type = op.getType();
    auto elem = dyn_cast<FloatType>(getElementTypeOrSelf(type));
    if (!elem)
      return failure();
    Location loc = op.getLoc();
    TypedAttr factor = rewriter.getFloatAttr(elem, 1.4426950408889634);
    if (auto shaped = dyn_cast<ShapedType>(type))
      factor = SplatElementsAttr::get(shaped, factor);
    Value log = rewriter.create<math::LogOp>(loc, op.getOperand());
    Value scale = rewriter.create<arith::ConstantOp>(loc, factor);
    rewriter.replaceOpWithNewOp<arith::MulFOp>(op, log, scale);
    return success();
  }
};

struct ApproximateMath : kiln::impl::KilnApproximateMathBase<ApproximateMath> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populatePolynomialApproximateErfPattern(patterns);
    populateExpandExp2FPattern(patterns);
    patterns.add<ExpandLog2>(&getContext());
    if (failed(applyPatternsAndFoldGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
