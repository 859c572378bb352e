//===- VectorizeElementwise.cpp - elementwise tile math as vector ops -----===//

#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/TypeUtilities.h"

namespace kiln {
#define GEN_PASS_DEF_KILNVECTORIZEELEMENTWISE
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;

/// Straight-line scalar arithmetic on a static tile small enough for one vector,
/// elementwise or reducing it along some dimensions (Kiln leaves the order of a
/// reduction's terms unspecified, as GPUs add in trees).
static bool isVectorizable(linalg::GenericOp op, int64_t maxElements) {
  if (!op.hasPureTensorSemantics() || op.getNumLoops() == 0 || op.getNumDpsInits() != 1)
    return false;
  auto shape = op.getStaticLoopRanges();
  int64_t elements = 1;
  for (int64_t size : shape)
    elements = ShapedType::isDynamic(size) ? maxElements + 1 : elements * size;
  if (elements > maxElements)
    return false;
  // Bool tiles stay scalar: a vector<Nxi1> is stored bit-packed, while the
  // tensor<Nxi1> it would land in is read back one byte per element.
  auto isBool = [](Type t) { return getElementTypeOrSelf(t).isInteger(1); };
  if (llvm::any_of(op->getOperandTypes(), isBool) || llvm::any_of(op->getResultTypes(), isBool))
    return false;
  for (Operation &inner : op.getRegion().front()) {
    if (inner.getNumRegions() != 0 || !isMemoryEffectFree(&inner))
      return false;
  }
  return succeeded(linalg::vectorizeOpPrecondition(op));
}

namespace {
struct VectorizeElementwise
    : kiln::impl::KilnVectorizeElementwiseBase<VectorizeElementwise> {
  using Base::Base;
  void runOnOperation() override {
    SmallVector<linalg::GenericOp> candidates;
    getOperation().walk([&](linalg::GenericOp op) {
      if (isVectorizable(op, maxElements))
        candidates.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (linalg::GenericOp op : candidates) {
      rewriter.setInsertionPoint(op);
      // Failure leaves the op as it was, to be lowered to loops.
      (void)linalg::vectorize(rewriter, op);
    }
  }
};
} // namespace
