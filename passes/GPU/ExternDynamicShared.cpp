//===- ExternDynamicShared.cpp - dynamic shared memory as extern arrays ---===//

#include "passes/GPU/OperandLayouts.h"
#include "passes/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

namespace kiln {
#define GEN_PASS_DEF_KILNEXTERNDYNAMICSHARED
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {
struct ExternDynamicShared : kiln::impl::KilnExternDynamicSharedBase<ExternDynamicShared> {
  void runOnOperation() override {
    getOperation().walk([](LLVM::GlobalOp global) {
      // The name MLIR's GPU-to-LLVM lowering gives dynamic shared memory.
      if (!global.getSymName().starts_with("__dynamic_shmem__"))
        return;
      global.setLinkage(LLVM::Linkage::External);
      // The block's buffers start at offsets aligned for wgmma's swizzled
      // operands (sharedAlignment); so does the block.
      global.setAlignment(kiln::gpu::WgmmaOperand::kAlignment);
      global.removeValueAttr();
      if (!global.getInitializerRegion().empty())
        global.getInitializerRegion().getBlocks().clear();
    });
  }
};
} // namespace
