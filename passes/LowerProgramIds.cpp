//===- LowerProgramIds.cpp - program coordinates as CPU kernel arguments --===//

#include "passes/Passes.h"

#include "dialects/Kiln/IR/KilnOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace kiln {
#define GEN_PASS_DEF_KILNLOWERPROGRAMIDS
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

namespace {
struct LowerProgramIds : kiln::impl::KilnLowerProgramIdsBase<LowerProgramIds> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto i32 = IntegerType::get(&getContext(), 32);
    for (auto func : module.getOps<func::FuncOp>()) {
      if (!func->hasAttr(kKernelAttr))
        continue;
      // Argument names served the front end; LLVM translation would warn about them.
      for (unsigned i = 0; i < func.getNumArguments(); ++i)
        func.removeArgAttr(i, kArgNameAttr);
      unsigned first = func.getNumArguments();
      for (unsigned i = 0; i < 6; ++i)
        func.insertArgument(first + i, i32, {}, func.getLoc());
      func.walk([&](Operation *op) {
        if (auto pid = dyn_cast<ProgramIdOp>(op)) {
          pid.replaceAllUsesWith(func.getArgument(first + pid.getAxis()));
          pid.erase();
        } else if (auto np = dyn_cast<NumProgramsOp>(op)) {
          np.replaceAllUsesWith(func.getArgument(first + 3 + np.getAxis()));
          np.erase();
        }
      });
    }
    // Anything left sits outside a kernel (helpers are inlined before this pass).
    WalkResult leftover = module.walk([](Operation *op) {
      if (isa<ProgramIdOp, NumProgramsOp>(op)) {
        op->emitError("program_id/num_programs outside a kernel after inlining");
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (leftover.wasInterrupted())
      signalPassFailure();
  }
};
} // namespace
