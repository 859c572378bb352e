//===- AssignLayouts.cpp - a blocked thread layout for every tile ---------===//

#include "passes/GPU/Layouts.h"
#include "passes/Passes.h"

#include "dialects/Kiln/IR/KilnOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace kiln {
#define GEN_PASS_DEF_CONVERTKILNTOKILNGPU
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

/// Whether some op of `func` moves elements between threads (through shared
/// memory or subgroup operations once laid out).
static bool exchangesElements(func::FuncOp func) {
  return func
      .walk([](Operation *op) {
        return isa<ReduceOp, ScanOp, DotOp, TransOp, BroadcastOp, GatherOp>(op)
                   ? WalkResult::interrupt()
                   : WalkResult::advance();
      })
      .wasInterrupted();
}

/// The element count of the largest tile in `func`.
static int64_t largestTile(func::FuncOp func) {
  int64_t largest = 1;
  func.walk([&](Operation *op) {
    for (Value v : op->getResults())
      if (auto t = dyn_cast<RankedTensorType>(v.getType()))
        largest = std::max(largest, t.getNumElements());
  });
  return largest;
}

namespace {
struct AssignLayouts : kiln::impl::ConvertKilnToKilnGPUBase<AssignLayouts> {
  using Base::Base;
  /// The warp count the elementwise-warps and exchange-registers options give
  /// `func`.
  unsigned warpsFor(func::FuncOp func) {
    if (!exchangesElements(func))
      return elementwiseWarps ? elementwiseWarps : numWarps;
    if (!exchangeRegisters)
      return numWarps;
    int64_t largest = largestTile(func);
    unsigned warps = 1;
    while (warps < numWarps && largest > int64_t(exchangeRegisters) * warpSize * warps)
      warps *= 2;
    return warps;
  }

  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      if (!func->hasAttr(kKernelAttr))
        continue;
      unsigned warps = numWarps;
      if (elementwiseWarps || exchangeRegisters)
        warps = warpsFor(func);
      // A kernel's NUM_WARPS param overrides the pipeline's choice.
      if (auto attr = func->getAttrOfType<IntegerAttr>(kNumWarpsAttr))
        warps = attr.getInt();
      if (failed(kiln::gpu::BlockedEncodingAttr::verify([&] { return func.emitError(); }, 1,
                                                        warpSize, warps)))
        return signalPassFailure();
      auto layout = kiln::gpu::BlockedEncodingAttr::get(ctx, 1, warpSize, warps);
      kiln::gpu::setLayout(func, layout);
      func->setAttr(kiln::gpu::kThreadsAttr,
                    IntegerAttr::get(IntegerType::get(ctx, 32), layout.getThreads()));
    }
  }
};
} // namespace
