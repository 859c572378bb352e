//===- UnbindPushConstants.cpp - no descriptors on push constants ---------===//

#include "passes/Passes.h"

#include "mlir/Dialect/SPIRV/IR/SPIRVDialect.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVOps.h"

namespace kiln {
#define GEN_PASS_DEF_KILNSPIRVUNBINDPUSHCONSTANTS
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {
struct UnbindPushConstants
    : kiln::impl::KilnSPIRVUnbindPushConstantsBase<UnbindPushConstants> {
  void runOnOperation() override {
    getOperation().walk([](spirv::GlobalVariableOp var) {
      auto ptr = cast<spirv::PointerType>(var.getType());
      if (ptr.getStorageClass() != spirv::StorageClass::PushConstant)
        return;
      var->removeAttr(spirv::SPIRVDialect::getAttributeName(spirv::Decoration::DescriptorSet));
      var->removeAttr(spirv::SPIRVDialect::getAttributeName(spirv::Decoration::Binding));
    });
  }
};
} // namespace
