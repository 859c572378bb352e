//===- SimplifyMasks.cpp - drop statically true masks ---------------------===//

#include "passes/Passes.h"

#include "dialects/Kiln/IR/KilnOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"

namespace kiln {
#define GEN_PASS_DEF_KILNSIMPLIFYMASKS
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

/// The value of `mask` when it is a constant with every element equal.
static std::optional<bool> uniformMask(Value mask) {
  Attribute attr;
  if (!mask || !matchPattern(mask, m_Constant(&attr)))
    return std::nullopt;
  if (auto splat = dyn_cast<SplatElementsAttr>(attr))
    return splat.getSplatValue<bool>();
  if (auto b = dyn_cast<IntegerAttr>(attr))
    return b.getValue().getBoolValue();
  return std::nullopt;
}

namespace {
struct SimplifyMasks : kiln::impl::KilnSimplifyMasksBase<SimplifyMasks> {
  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    getOperation().walk([&](Operation *op) {
      if (auto load = dyn_cast<LoadOp>(op)) {
        std::optional<bool> mask = uniformMask(load.getMask());
        if (mask && *mask) {
          load.getMaskMutable().clear();
        } else if (mask) {
          // Nothing is read: the result is `other`, or zero.
          rewriter.setInsertionPoint(load);
          Value other = load.getOther();
          if (!other)
            other = rewriter.create<arith::ConstantOp>(
                load.getLoc(), load.getType(), rewriter.getZeroAttr(load.getType()));
          rewriter.replaceOp(load, other);
        }
      } else if (auto store = dyn_cast<StoreOp>(op)) {
        std::optional<bool> mask = uniformMask(store.getMask());
        if (mask && *mask)
          store.getMaskMutable().clear();
        else if (mask)
          rewriter.eraseOp(store);
      }
    });
  }
};
} // namespace
