//===- PromoteTilesToStack.cpp - small function-level tile buffers on the stack -===//
//
// After bufferization and loop hoisting, a CPU kernel's tiles are heap buffers
// allocated once per call of the kernel, which on the CPU is once per program:
// tens of thousands of malloc/free pairs per launch. Buffers with a static
// shape, allocated directly in the function body (not in a loop, where a stack
// allocation would grow every iteration), become stack allocations while the
// function's total stays under `max-bytes`.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/PatternMatch.h"

namespace kiln {
#define GEN_PASS_DEF_KILNPROMOTETILESTOSTACK
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {
struct PromoteTilesToStack : kiln::impl::KilnPromoteTilesToStackBase<PromoteTilesToStack> {
  using Base::Base;
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.getBody().empty())
      return;
    int64_t total = 0;
    IRRewriter rewriter(&getContext());
    for (Operation &op : llvm::make_early_inc_range(func.getBody().front())) {
      auto alloc = dyn_cast<memref::AllocOp>(op);
      if (!alloc || !alloc.getType().hasStaticShape() || !alloc.getType().getLayout().isIdentity())
        continue;
      MemRefType type = alloc.getType();
      int64_t bytes = type.getNumElements() * ((type.getElementTypeBitWidth() + 7) / 8);
      if (total + bytes > maxBytes)
        continue;
      // Buffers returned from the function must outlive it.
      if (llvm::any_of(alloc->getUsers(), [](Operation *u) { return isa<func::ReturnOp>(u); }))
        continue;
      total += bytes;
      rewriter.setInsertionPoint(alloc);
      rewriter.replaceOpWithNewOp<memref::AllocaOp>(alloc, type, alloc.getAlignmentAttr());
    }
  }
};
} // namespace
