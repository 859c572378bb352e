//===- FuseElementwise.cpp - elementwise fusion that recomputes cheap tiles -===//
//
// Upstream's linalg-fuse-elementwise-ops fuses a producer only into its single
// consumer. Kiln's front end builds tiles that several consumers share and that
// are cheaper to recompute than to keep: index tiles (`pos - s`), the masks
// compared from them, broadcasts. Left unfused they are written to the stack and
// read back, and a shared `i1` mask keeps every consumer scalar (bool tiles are
// not vectorized, see kiln-vectorize-elementwise). This pass fuses as upstream
// does, and also fuses a producer with several uses when its body is a few
// arithmetic ops: each consumer recomputes it.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln {
#define GEN_PASS_DEF_KILNFUSEELEMENTWISE
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;

/// A generic cheap enough to compute once per consumer: at most `maxOps`
/// arithmetic ops (no memory reads, no math library calls, no regions).
static bool cheapToRecompute(linalg::GenericOp op, int64_t maxOps) {
  if (op.getNumDpsInits() != 1)
    return false;
  int64_t count = 0;
  for (Operation &inner : op.getRegion().front().without_terminator()) {
    if (!isa<arith::ArithDialect>(inner.getDialect()) && !isa<linalg::IndexOp>(inner))
      return false;
    if (isa<arith::DivFOp, arith::DivSIOp, arith::RemSIOp, arith::DivUIOp, arith::RemUIOp,
            arith::RemFOp>(inner))
      return false;
    if (++count > maxOps)
      return false;
  }
  return true;
}

/// A consumer that can become vector ops: recomputing a tile in a consumer that
/// stays a scalar loop (a masked load, a store) costs more than reading it.
static bool vectorizableBody(linalg::GenericOp op) {
  return llvm::all_of(op.getRegion().front(), [](Operation &inner) {
    return inner.getNumRegions() == 0 && isMemoryEffectFree(&inner);
  });
}

/// The ops in `op`'s body, or 0 for an op that is not a linalg.generic.
static int64_t bodySize(Operation *op) {
  auto generic = dyn_cast<linalg::GenericOp>(op);
  return generic ? static_cast<int64_t>(generic.getRegion().front().getOperations().size()) : 0;
}

namespace {
struct FuseElementwise : kiln::impl::KilnFuseElementwiseBase<FuseElementwise> {
  using Base::Base;
  void runOnOperation() override {
    MLIRContext *context = &getContext();
    int64_t limit = maxRecomputedOps, maxSize = maxFusedOps;
    linalg::ControlFusionFn control = [limit, maxSize](OpOperand *fused) {
      Operation *producer = fused->get().getDefiningOp();
      // Each fusion clones both bodies: fusing a chain of n steps into one op
      // would cost n^2 / 2 clones, and a body this large gains nothing more.
      if (!producer || bodySize(producer) + bodySize(fused->getOwner()) > maxSize)
        return false;
      if (producer->hasOneUse())
        return true;
      auto generic = dyn_cast<linalg::GenericOp>(producer);
      auto consumer = dyn_cast<linalg::GenericOp>(fused->getOwner());
      return generic && consumer && cheapToRecompute(generic, limit) &&
             vectorizableBody(consumer);
    };
    RewritePatternSet patterns(context);
    // As upstream's pass, with the control above.
    linalg::populateElementwiseOpsFusionPatterns(patterns, control);
    linalg::populateFoldReshapeOpsByExpansionPatterns(patterns, control);
    affine::AffineApplyOp::getCanonicalizationPatterns(patterns, context);
    linalg::GenericOp::getCanonicalizationPatterns(patterns, context);
    tensor::ExpandShapeOp::getCanonicalizationPatterns(patterns, context);
    tensor::CollapseShapeOp::getCanonicalizationPatterns(patterns, context);
    context->getLoadedDialect<linalg::LinalgDialect>()->getCanonicalizationPatterns(patterns);
    linalg::populateConstantFoldLinalgOperations(patterns, control);
    GreedyRewriteConfig config;
    config.useTopDownTraversal = true;
    (void)applyPatternsAndFoldGreedily(getOperation(), std::move(patterns), config);
  }
};
} // namespace
