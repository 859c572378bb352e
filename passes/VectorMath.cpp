//===- VectorMath.cpp - polynomial exp and friends for CPU vectors --------===//
//
// math-to-libm turns a vector `math.exp` into one libm call per lane, which
// dominates softmax and attention on the CPU. MLIR's polynomial approximations
// stay in vector registers; this pass applies them to vector ops of the
// functions whose approximations are accurate to a few ulp (exp, log, tanh),
// and leaves scalars to libm.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

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
struct VectorMath : kiln::impl::KilnCPUVectorMathBase<VectorMath> {
  void runOnOperation() override {
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
    RewritePatternSet patterns(&getContext());
    populateMathPolynomialApproximationPatterns(patterns);
    GreedyRewriteConfig config;
    config.strictMode = GreedyRewriteStrictness::ExistingAndNewOps;
    if (failed(applyOpPatternsAndFold(ops, std::move(patterns), config)))
      signalPassFailure();
  }
};
} // namespace
