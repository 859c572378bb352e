//===- Int64Atomics.cpp - declare Int64Atomics where it is needed ---------===//

#include "passes/Passes.h"

#include "mlir/Dialect/SPIRV/IR/SPIRVOps.h"

namespace kiln {
#define GEN_PASS_DEF_KILNSPIRVINT64ATOMICS
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;

/// Whether `op` is a SPIR-V atomic on a 64-bit integer.
static bool isInt64Atomic(Operation *op) {
  if (!op->getName().getStringRef().starts_with("spirv.Atomic") || op->getNumOperands() == 0)
    return false;
  auto ptr = dyn_cast<spirv::PointerType>(op->getOperand(0).getType());
  return ptr && ptr.getPointeeType().isInteger(64);
}

namespace {
struct Int64Atomics : kiln::impl::KilnSPIRVInt64AtomicsBase<Int64Atomics> {
  void runOnOperation() override {
    getOperation().walk([](spirv::ModuleOp module) {
      std::optional<spirv::VerCapExtAttr> vce = module.getVceTriple();
      if (!vce || !module.walk([](Operation *op) {
                        return isInt64Atomic(op) ? WalkResult::interrupt() : WalkResult::advance();
                      }).wasInterrupted())
        return;
      SmallVector<spirv::Capability> caps(vce->getCapabilities());
      if (llvm::is_contained(caps, spirv::Capability::Int64Atomics))
        return;
      caps.push_back(spirv::Capability::Int64Atomics);
      SmallVector<spirv::Extension> exts(vce->getExtensions());
      module.setVceTripleAttr(
          spirv::VerCapExtAttr::get(vce->getVersion(), caps, exts, module.getContext()));
    });
  }
};
} // namespace
