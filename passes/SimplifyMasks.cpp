//===- SimplifyMasks.cpp - drop statically true masks ---------------------===//

#include "passes/Passes.h"

#include "dialects/Kiln/IR/KilnOps.h"

#include "mlir/IR/Matchers.h"

namespace kiln {
#define GEN_PASS_DEF_KILNSIMPLIFYMASKS
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

/// True when `mask` is a constant whose every element is true.
static bool isAllTrue(Value mask) {
  if (!mask)
    return false;
  Attribute attr;
  if (!matchPattern(mask, m_Constant(&attr)))
    return false;
  if (auto splat = dyn_cast<SplatElementsAttr>(attr))
    return splat.getSplatValue<bool>();
  if (auto b = dyn_cast<IntegerAttr>(attr))
    return b.getValue().getBoolValue();
  return false;
}

namespace {
struct SimplifyMasks : kiln::impl::KilnSimplifyMasksBase<SimplifyMasks> {
  void runOnOperation() override {
    getOperation().walk([](Operation *op) {
      if (auto load = dyn_cast<LoadOp>(op); load && isAllTrue(load.getMask()))
        load.getMaskMutable().clear();
      else if (auto store = dyn_cast<StoreOp>(op); store && isAllTrue(store.getMask()))
        store.getMaskMutable().clear();
    });
  }
};
} // namespace
