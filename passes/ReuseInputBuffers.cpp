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

/// Whether result `r` of `op` is only inserted where `v` was extracted from
/// (same tensor, offsets, sizes, strides): writing over `v` then makes the
/// insert in place, as in a scan that combines one row into the next.
bool insertsWhereExtracted(OpResult r, Value v) {
  auto extract = v.getDefiningOp<tensor::ExtractSliceOp>();
  if (!extract || !r.hasOneUse())
    return false;
  auto insert = dyn_cast<tensor::InsertSliceOp>(*r.getUsers().begin());
  return insert && insert.getSource() == r && insert.getDest() == extract.getSource() &&
         insert.getMixedOffsets() == extract.getMixedOffsets() &&
         insert.getMixedSizes() == extract.getMixedSizes() &&
         insert.getMixedStrides() == extract.getMixedStrides();
}

/// For each result of `op` written to a fresh tensor.empty, an input it may
/// write over: same type, identity map, used only here, not taken by another
/// result; preferably a loop-carried one, then one its result is inserted back
/// into, else the first.
void reuseInputs(linalg::GenericOp op) {
  if (!op.hasPureTensorSemantics() ||
      !llvm::all_of(op.getIteratorTypesArray(), linalg::isParallelIterator))
    return;
  llvm::SmallDenseSet<unsigned> taken;
  for (OpOperand &init : op.getDpsInitsMutable()) {
    OpResult result = op.getTiedOpResult(&init);
    if (!init.get().getDefiningOp<tensor::EmptyOp>() ||
        !op.getIndexingMapMatchingResult(result).isIdentity() ||
        op.payloadUsesValueFromOperand(&init))
      continue;
    std::optional<unsigned> chosen;
    int chosenRank = 0; // 3 loop-carried, 2 inserted back into, 1 any
    for (OpOperand *input : op.getDpsInputOperands()) {
      Value v = input->get();
      if (v.getType() != init.get().getType() || !v.hasOneUse() ||
          taken.contains(input->getOperandNumber()) ||
          !op.getMatchingIndexingMap(input).isIdentity())
        continue;
      int rank = isLoopCarried(v) ? 3 : insertsWhereExtracted(result, v) ? 2 : 1;
      if (rank > chosenRank) {
        chosen = input->getOperandNumber();
        chosenRank = rank;
      }
    }
    if (!chosen)
      continue;
    taken.insert(*chosen);
    init.set(op->getOperand(*chosen));
  }
}

struct ReuseInputBuffers : kiln::impl::KilnReuseInputBuffersBase<ReuseInputBuffers> {
  void runOnOperation() override { getOperation().walk(reuseInputs); }
};

} // namespace

