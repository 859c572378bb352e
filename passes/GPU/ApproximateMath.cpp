//===- ApproximateMath.cpp - polynomial stand-ins for missing functions ---===//

#include "passes/Passes.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln {
#define GEN_PASS_DEF_KILNAPPROXIMATEMATH
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {
struct ApproximateMath : kiln::impl::KilnApproximateMathBase<ApproximateMath> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populatePolynomialApproximateErfPattern(patterns);
    if (failed(applyPatternsAndFoldGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
