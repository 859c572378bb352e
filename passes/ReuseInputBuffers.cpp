//===- ReuseInputBuffers.cpp - write elementwise results over dead inputs -===//
//
// `acc += load(...)` inside a loop becomes a linalg.generic that reads `acc` and
// writes a fresh tensor.empty; bufferized, that is one heap allocation per
// iteration. When an input has the result's type, is read at the same index
// (identity map) and has no other use, the generic may write over it instead:
// one-shot bufferization then updates the loop-carried buffer in place. A
// loop-carried input is preferred over a tile loaded in the loop body: writing
// over the loaded tile would make the loop yield a buffer allocated in every
// iteration (`state = load(a[t, cols]) * state + ...`).
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Utils/Utils.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace kiln {
#define GEN_PASS_DEF_KILNREUSEINPUTBUFFERS
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {

/// Whether `v` is an iteration argument of an scf.for (the loop-carried value).
bool isLoopCarried(Value v) {
  auto arg = dyn_cast<BlockArgument>(v);
  return arg && isa<scf::ForOp>(arg.getOwner()->getParentOp()) && arg.getArgNumber() > 0;
}

/// An input `op` may write its result over: same type, identity map, used only
/// here; a loop-carried one when there is one.
std::optional<unsigned> reusableInput(linalg::GenericOp op) {
  if (op.getNumDpsInits() != 1 || !op.hasPureTensorSemantics())
    return std::nullopt;
  if (!llvm::all_of(op.getIteratorTypesArray(), linalg::isParallelIterator))
    return std::nullopt;
  OpOperand *init = op.getDpsInitOperand(0);
  if (!init->get().getDefiningOp<tensor::EmptyOp>() ||
      !op.getIndexingMapMatchingResult(op->getResult(0)).isIdentity() ||
      op.payloadUsesValueFromOperand(init))
    return std::nullopt;
  std::optional<unsigned> chosen;
  for (OpOperand *input : op.getDpsInputOperands()) {
    Value v = input->get();
    if (v.getType() != init->get().getType() || !v.hasOneUse() ||
        !op.getMatchingIndexingMap(input).isIdentity())
      continue;
    if (isLoopCarried(v))
      return input->getOperandNumber();
    if (!chosen)
      chosen = input->getOperandNumber();
  }
  return chosen;
}

struct ReuseInputBuffers : kiln::impl::KilnReuseInputBuffersBase<ReuseInputBuffers> {
  void runOnOperation() override {
    getOperation().walk([&](linalg::GenericOp op) {
      if (std::optional<unsigned> input = reusableInput(op))
        op.getDpsInitOperand(0)->set(op->getOperand(*input));
    });
  }
};

} // namespace
