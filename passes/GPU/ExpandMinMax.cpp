//===- ExpandMinMax.cpp - bf16 and f32 max and min as compares and selects -===//
//
// NVIDIA has no bf16 arithmetic before sm_80, so there it runs in f32
// (arith-emulate-unsupported-floats, and Kiln's own reductions of bf16 tiles).
// LLVM's InstCombine narrows a maximum of two widened bf16 values back to a
// bf16 maximum, which the NVPTX backend cannot select before sm_80: it
// aborted. Compares and selects survive; this pass writes bf16 and f32
// arith.maximumf/minimumf as them, keeping their semantics (a NaN operand gives
// NaN, +0 is above -0). Before sm_80 PTX has no NaN-propagating max either, so
// LLVM would expand an f32 maximum much the same way.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/TypeUtilities.h"

namespace kiln {
#define GEN_PASS_DEF_KILNEXPANDMINMAX
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {
struct ExpandMinMax : kiln::impl::KilnExpandMinMaxBase<ExpandMinMax> {
  void runOnOperation() override {
    SmallVector<Operation *> ops;
    getOperation()->walk([&](Operation *op) {
      if (!isa<arith::MaximumFOp, arith::MinimumFOp>(op))
        return;
      Type type = getElementTypeOrSelf(op->getResult(0).getType());
      if (type.isBF16() || type.isF32())
        ops.push_back(op);
    });
    for (Operation *op : ops) {
      OpBuilder b(op);
      Location loc = op->getLoc();
      Value x = op->getOperand(0), y = op->getOperand(1);
      bool isMax = isa<arith::MaximumFOp>(op);
      using P = arith::CmpFPredicate;
      // x where it is the larger (smaller) or NaN, else y; y where it is NaN;
      // of two equal values (+0 and -0) the one with the sign max (min) wants.
      Value r = b.create<arith::SelectOp>(
          loc, b.create<arith::CmpFOp>(loc, isMax ? P::UGT : P::ULT, x, y), x, y);
      Type type = x.getType();
      Type bits = b.getIntegerType(getElementTypeOrSelf(type).getIntOrFloatBitWidth());
      if (auto vec = dyn_cast<VectorType>(type))
        bits = VectorType::get(vec.getShape(), bits);
      Value xNegative = b.create<arith::CmpIOp>(
          loc, arith::CmpIPredicate::slt, b.create<arith::BitcastOp>(loc, bits, x),
          b.create<arith::ConstantOp>(loc, b.getZeroAttr(bits)));
      Value signed0 = isMax ? b.create<arith::SelectOp>(loc, xNegative, y, x)
                            : b.create<arith::SelectOp>(loc, xNegative, x, y);
      r = b.create<arith::SelectOp>(loc, b.create<arith::CmpFOp>(loc, P::OEQ, x, y), signed0,
                                    r);
      r = b.create<arith::SelectOp>(loc, b.create<arith::CmpFOp>(loc, P::UNO, y, y), y, r);
      op->getResult(0).replaceAllUsesWith(r);
      op->erase();
    }
  }
};
} // namespace
