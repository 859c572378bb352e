//===- ExactFloats.cpp - SPIR-V float arithmetic rounds as written ---------===//

#include "passes/Passes.h"

#include "mlir/Dialect/SPIRV/IR/SPIRVDialect.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVOps.h"
#include "mlir/Dialect/SPIRV/IR/TargetAndABI.h"
#include "mlir/IR/TypeUtilities.h"

#include "llvm/ADT/SetVector.h"

namespace kiln {
#define GEN_PASS_DEF_KILNSPIRVEXACTFLOATS
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {
/// Declares SignedZeroInfNanPreserve for each float width `module` computes
/// in, on each of its entry points. The mode comes with SPV_KHR_float_controls,
/// which Vulkan 1.2 (SPIR-V 1.5) has in its core; older targets go without.
/// (The module keeps its SPIR-V version: from 1.4 on an entry point would have
/// to list every global variable it uses.)
void preserveSpecialValues(spirv::ModuleOp module) {
  std::optional<spirv::VerCapExtAttr> vce = module.getVceTriple();
  spirv::TargetEnvAttr env = spirv::lookupTargetEnv(module);
  if (!vce || !env || env.getVersion() < spirv::Version::V_1_5)
    return;
  llvm::SetVector<unsigned> widths;
  module.walk([&](Operation *op) {
    for (Type type : op->getResultTypes())
      if (auto f = dyn_cast<FloatType>(getElementTypeOrSelf(type)))
        widths.insert(f.getWidth());
  });
  if (widths.empty())
    return;
  llvm::SmallVector<spirv::Capability> capabilities(vce->getCapabilities());
  capabilities.push_back(spirv::Capability::SignedZeroInfNanPreserve);
  llvm::SmallVector<spirv::Extension> extensions(vce->getExtensions());
  extensions.push_back(spirv::Extension::SPV_KHR_float_controls);
  module.setVceTripleAttr(spirv::VerCapExtAttr::get(vce->getVersion(), capabilities, extensions,
                                                    module.getContext()));
  OpBuilder b(module.getContext());
  for (auto entry : llvm::make_early_inc_range(module.getOps<spirv::EntryPointOp>())) {
    b.setInsertionPointAfter(entry);
    auto fn = module.lookupSymbol<spirv::FuncOp>(entry.getFn());
    for (unsigned width : widths)
      b.create<spirv::ExecutionModeOp>(entry.getLoc(), fn,
                                       spirv::ExecutionMode::SignedZeroInfNanPreserve,
                                       llvm::ArrayRef<int32_t>{int32_t(width)});
  }
}

struct ExactFloats : kiln::impl::KilnSPIRVExactFloatsBase<ExactFloats> {
  using Base::Base;
  void runOnOperation() override {
    StringAttr name = StringAttr::get(
        &getContext(), spirv::SPIRVDialect::getAttributeName(spirv::Decoration::NoContraction));
    UnitAttr unit = UnitAttr::get(&getContext());
    getOperation().walk([&](Operation *op) {
      if (isa<spirv::FAddOp, spirv::FSubOp, spirv::FMulOp, spirv::FDivOp, spirv::FRemOp,
              spirv::FModOp, spirv::FNegateOp, spirv::GLFmaOp>(op))
        op->setAttr(name, unit);
    });
    if (preserveSpecials)
      getOperation().walk([](spirv::ModuleOp module) { preserveSpecialValues(module); });
  }
};
} // namespace
