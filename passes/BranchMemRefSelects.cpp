//===- BranchMemRefSelects.cpp - buffer choices as branches ---------------===//

#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace kiln {
#define GEN_PASS_DEF_KILNBRANCHMEMREFSELECTS
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {
struct BranchMemRefSelects : kiln::impl::KilnBranchMemRefSelectsBase<BranchMemRefSelects> {
  void runOnOperation() override {
    SmallVector<arith::SelectOp> selects;
    getOperation().walk([&](arith::SelectOp op) {
      if (isa<BaseMemRefType>(op.getType()))
        selects.push_back(op);
    });
    for (arith::SelectOp op : selects) {
      // ^before: ...; cf.cond_br %c, ^join(%a), ^join(%b)
      // ^join(%chosen): the rest of the block, using %chosen
      Block *before = op->getBlock();
      Block *join = before->splitBlock(op);
      Value chosen = join->addArgument(op.getType(), op.getLoc());
      OpBuilder b(op.getContext());
      b.setInsertionPointToEnd(before);
      b.create<cf::CondBranchOp>(op.getLoc(), op.getCondition(), join,
                                 ValueRange{op.getTrueValue()}, join,
                                 ValueRange{op.getFalseValue()});
      op.replaceAllUsesWith(chosen);
      op.erase();
    }
  }
};
} // namespace
