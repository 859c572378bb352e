//===- HoistLoopAllocas.cpp - static stack buffers out of loops ------------===//
//
// convert-vector-to-scf unrolls n-D vector transfers through `memref.alloca`
// scratch buffers that it places next to the transfer, so inside loops. An
// alloca in a loop reserves new stack on every trip (LLVM frees it only when the
// function returns): a CPU kernel whose loop runs a thousand chunks of a tile
// overflowed its thread's stack. Static allocas (no dynamic sizes) hold nothing
// from one trip to the next, so they move to the function's entry block, where
// each is reserved once.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/LoopLikeInterface.h"

namespace kiln {
#define GEN_PASS_DEF_KILNHOISTLOOPALLOCAS
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {
struct HoistLoopAllocas : kiln::impl::KilnHoistLoopAllocasBase<HoistLoopAllocas> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.getBody().empty())
      return;
    Block &entry = func.getBody().front();
    // Loops (scf.for is an allocation scope, which the lowering to LLVM does not
    // honour) are crossed; an alloca_scope or any other scope keeps its allocas.
    auto hoistable = [&](memref::AllocaOp alloca) {
      if (alloca->getBlock() == &entry || alloca->getNumOperands() != 0)
        return false;
      for (Operation *p = alloca->getParentOp(); p != func; p = p->getParentOp())
        if (isa<memref::AllocaScopeOp>(p) ||
            (p->hasTrait<OpTrait::AutomaticAllocationScope>() && !isa<LoopLikeOpInterface>(p)))
          return false;
      return true;
    };
    llvm::SmallVector<memref::AllocaOp> nested;
    func.walk([&](memref::AllocaOp alloca) {
      if (hoistable(alloca))
        nested.push_back(alloca);
    });
    for (memref::AllocaOp alloca : llvm::reverse(nested)) // keeping their order
      alloca->moveBefore(&entry, entry.begin());
  }
};
} // namespace
