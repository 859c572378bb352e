//===- SplitEmptyTensors.cpp - one tensor.empty per top-level user ---------===//
//
// CSE folds every `tensor.empty` of one shape into a single op, so the tiles of
// an unrolled loop (`static_range`) all start from one value. One-shot
// bufferization checks each in-place write to that value against every other
// use of it, and its analysis grew cubically: a kernel of 100 loads and stores
// spent 3.5 s there. The shared value then became a single stack buffer with
// thousands of addresses into it, which LLVM's CodeGenPrepare handles in
// quadratic time. Before bufferization, each operation at the level of the
// `tensor.empty` that uses it (directly or within its regions) gets a copy of
// its own, placed just before it: the uses inside one such operation (the
// branches of a guarded load) keep sharing a value, so they still fill one
// buffer.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include "llvm/ADT/MapVector.h"

namespace kiln {
#define GEN_PASS_DEF_KILNSPLITEMPTYTENSORS
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {
struct SplitEmptyTensors : kiln::impl::KilnSplitEmptyTensorsBase<SplitEmptyTensors> {
  void runOnOperation() override {
    SmallVector<tensor::EmptyOp> empties;
    getOperation().walk([&](tensor::EmptyOp op) { empties.push_back(op); });
    OpBuilder b(&getContext());
    for (tensor::EmptyOp empty : empties) {
      // The uses, grouped by the operation in the empty's block that holds them.
      llvm::MapVector<Operation *, SmallVector<OpOperand *>> groups;
      bool outside = false; // a use in another block of a multi-block region
      for (OpOperand &use : empty->getUses()) {
        Operation *holder = empty->getBlock()->findAncestorOpInBlock(*use.getOwner());
        outside |= !holder;
        if (holder)
          groups[holder].push_back(&use);
      }
      if (outside || groups.size() < 2)
        continue;
      for (auto &[holder, uses] : groups) {
        b.setInsertionPoint(holder);
        Operation *copy = b.clone(*empty);
        for (OpOperand *use : uses)
          use->set(copy->getResult(0));
      }
      empty->erase();
    }
  }
};
} // namespace
