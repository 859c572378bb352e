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

/// The element count of the largest tile in `func`, and an op that makes it:
/// one from the source rather than a constant the folder hoisted, where it can.
static std::pair<int64_t, Operation *> largestTile(func::FuncOp func) {
  int64_t largest = 1;
  Operation *maker = func;
  auto fromSource = [](Operation *op) {
    return !op->hasTrait<OpTrait::ConstantLike>() && !isa<UnknownLoc>(op->getLoc());
  };
  func.walk([&](Operation *op) {
    for (Value v : op->getResults()) {
      auto t = dyn_cast<RankedTensorType>(v.getType());
      if (!t)
        continue;
      if (t.getNumElements() > largest ||
          (t.getNumElements() == largest && !fromSource(maker) && fromSource(op))) {
        largest = t.getNumElements();
        maker = op;
      }
    }
  });
  return {largest, maker};
}

/// The most elements of one tile a thread may hold. Each thread keeps its share
/// of a tile in registers, and what does not fit in local memory; past this the
/// unrolled code takes minutes to compile (softmax's 1M-element tile over 128
/// threads: no PTX or gfx942 code after two minutes, no lavapipe pipeline after
/// five; 2048 per thread took 51 s for sm_90) and runs from spilled memory.
constexpr int64_t kMaxTileElementsPerThread = 2048;

namespace {
struct AssignLayouts : kiln::impl::ConvertKilnToKilnGPUBase<AssignLayouts> {
  using Base::Base;
  /// The warp count the elementwise-warps and exchange-registers options give
  /// `func`, whose largest tile has `largest` elements.
  unsigned warpsFor(func::FuncOp func, int64_t largest) {
    if (!exchangesElements(func))
      return elementwiseWarps ? elementwiseWarps : numWarps;
    if (!exchangeRegisters)
      return numWarps;
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
      auto [largest, maker] = largestTile(func);
      unsigned warps = numWarps;
      if (elementwiseWarps || exchangeRegisters)
        warps = warpsFor(func, largest);
      // A kernel's NUM_WARPS param overrides the pipeline's choice.
      if (auto attr = func->getAttrOfType<IntegerAttr>(kNumWarpsAttr))
        warps = attr.getInt();
      if (failed(kiln::gpu::BlockedEncodingAttr::verify([&] { return func.emitError(); }, 1,
                                                        warpSize, warps)))
        return signalPassFailure();
      auto layout = kiln::gpu::BlockedEncodingAttr::get(ctx, 1, warpSize, warps);
      int64_t threads = layout.getThreads();
      if (largest > kMaxTileElementsPerThread * threads) {
        InFlightDiagnostic diag = func.emitError()
                                  << "a tile of " << largest << " elements over " << threads
                                  << " threads is " << llvm::divideCeil(largest, threads)
                                  << " elements per thread; GPU targets hold at most "
                                  << kMaxTileElementsPerThread
                                  << " (split the work over more programs, loop over smaller "
                                     "blocks, or raise NUM_WARPS)";
        // A constant the folder hoisted has lost its place: name its first
        // use in the source instead.
        Location where = maker->getLoc();
        const char *what = "the tile is made here";
        for (Operation *user : maker->getUsers())
          if (isa<UnknownLoc>(where) && !isa<UnknownLoc>(user->getLoc())) {
            where = user->getLoc();
            what = "the tile is used here";
          }
        if (!isa<UnknownLoc>(where))
          diag.attachNote(where) << what;
        return signalPassFailure();
      }
      kiln::gpu::setLayout(func, layout);
      func->setAttr(kiln::gpu::kThreadsAttr,
                    IntegerAttr::get(IntegerType::get(ctx, 32), layout.getThreads()));
    }
  }
};
} // namespace
