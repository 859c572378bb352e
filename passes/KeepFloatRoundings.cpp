//===- KeepFloatRoundings.cpp - emulated floats round where asked ---------===//
//
// arith-emulate-unsupported-floats computes bf16, f16 and fp8 arithmetic in
// f32, and math-legalize-to-f32 their math, rounding each result back with
// arith.truncf and widening it again with arith.extf for its users. Both mark
// the pair `contract`, and arith.extf folds extf(truncf(x)) to x when both
// are: every later greedy pass then dropped the rounding. So
// `cast<bf16>(i) == load(x)` compared the unrounded integer, and `(a + b) - a`
// on f16 gave b where f16 gives 0. Clearing the flag keeps each rounding the
// program asks for; the narrow type then computes as it would natively.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

namespace kiln {
#define GEN_PASS_DEF_KILNKEEPFLOATROUNDINGS
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {
struct KeepFloatRoundings : kiln::impl::KilnKeepFloatRoundingsBase<KeepFloatRoundings> {
  void runOnOperation() override {
    auto clearContract = [](Operation *op) {
      auto fmf = cast<arith::ArithFastMathInterface>(op);
      arith::FastMathFlagsAttr attr = fmf.getFastMathFlagsAttr();
      if (!attr)
        return;
      arith::FastMathFlags flags = attr.getValue() & ~arith::FastMathFlags::contract;
      if (flags == arith::FastMathFlags::none)
        op->removeAttr(fmf.getFastMathAttrName());
      else
        op->setAttr(fmf.getFastMathAttrName(),
                    arith::FastMathFlagsAttr::get(op->getContext(), flags));
    };
    getOperation()->walk([&](Operation *op) {
      if (isa<arith::ExtFOp, arith::TruncFOp>(op))
        clearContract(op);
    });
  }
};
} // namespace
