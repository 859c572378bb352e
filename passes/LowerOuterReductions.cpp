//===- LowerOuterReductions.cpp - reductions over outer vector dims -------===//
//
// The CPU pipeline lowers `vector.multi_reduction` with the inner-reduction
// strategy, which suits a reduction along the innermost dimension (a row sum:
// one horizontal reduction per row). A reduction along outer dimensions only
// (a column sum: `sum(tile, axis = 0)`) would then be transposed so the reduced
// dimension comes last: a shuffle network, and one horizontal reduction per
// column. This pass lowers those with the inner-parallel strategy first: the
// rows are combined elementwise, one vector operation per row.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Vector/Transforms/LoweringPatterns.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln {
#define GEN_PASS_DEF_KILNLOWEROUTERREDUCTIONS
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {

struct LowerOuterReductions
    : kiln::impl::KilnLowerOuterReductionsBase<LowerOuterReductions> {
  void runOnOperation() override {
    SmallVector<Operation *> outer;
    getOperation().walk([&](vector::MultiDimReductionOp op) {
      int64_t innermost = op.getSourceVectorType().getRank() - 1;
      if (innermost > 0 && !op.isReducedDim(innermost))
        outer.push_back(op);
    });
    if (outer.empty())
      return;
    RewritePatternSet patterns(&getContext());
    vector::populateVectorMultiReductionLoweringPatterns(
        patterns, vector::VectorMultiReductionLowering::InnerParallel);
    // Only these reductions (and the ones the patterns make of them).
    if (failed(applyOpPatternsAndFold(outer, std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
