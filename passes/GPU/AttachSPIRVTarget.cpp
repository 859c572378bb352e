//===- AttachSPIRVTarget.cpp - Vulkan profile and kernel ABI for SPIR-V ---===//

#include "passes/Passes.h"

#include "dialects/KilnGPU/IR/KilnGPUDialect.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVAttributes.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVDialect.h"
#include "mlir/Dialect/SPIRV/IR/TargetAndABI.h"

namespace kiln {
#define GEN_PASS_DEF_KILNATTACHSPIRVTARGET
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {
struct AttachSPIRVTarget : kiln::impl::KilnAttachSPIRVTargetBase<AttachSPIRVTarget> {
  using Base::Base;
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    spirv::Version version;
    SmallVector<spirv::Extension> extensions;
    if (client == "vulkan1.1") {
      version = spirv::Version::V_1_3;
      extensions = {spirv::Extension::SPV_KHR_storage_buffer_storage_class,
                    spirv::Extension::SPV_KHR_8bit_storage,
                    spirv::Extension::SPV_KHR_16bit_storage};
    } else if (client == "vulkan1.2") {
      version = spirv::Version::V_1_5;
    } else if (client == "vulkan1.3") {
      version = spirv::Version::V_1_6;
    } else {
      getOperation().emitError("unknown client '") << client << "'";
      return signalPassFailure();
    }
    using C = spirv::Capability;
    SmallVector<C> caps = {C::Shader,
                           C::GroupNonUniform,
                           C::GroupNonUniformArithmetic,
                           C::GroupNonUniformShuffle,
                           C::GroupNonUniformBallot,
                           C::Int8,
                           C::Int16,
                           C::Int64,
                           C::Float16,
                           C::Float64,
                           C::StorageBuffer8BitAccess,
                           C::StorageBuffer16BitAccess};
    if (floatAtomicAdd) {
      caps.push_back(C::AtomicFloat32AddEXT);
      extensions.push_back(spirv::Extension::SPV_EXT_shader_atomic_float_add);
    }
    auto vce = spirv::VerCapExtAttr::get(version, caps, extensions, ctx);
    auto env = spirv::TargetEnvAttr::get(vce, spirv::getDefaultResourceLimits(ctx),
                                         spirv::ClientAPI::Vulkan);
    getOperation().walk([&](gpu::GPUModuleOp module) {
      module->setAttr(spirv::getTargetEnvAttrName(), env);
      module.walk([&](gpu::GPUFuncOp func) {
        if (!func.isKernel())
          return;
        int32_t threads = 1;
        if (auto t = func->getAttrOfType<IntegerAttr>(kiln::gpu::kThreadsAttr))
          threads = t.getInt();
        func->setAttr(spirv::getEntryPointABIAttrName(),
                      spirv::getEntryPointABIAttr(ctx, {threads, 1, 1}));
        for (unsigned i = 0; i < func.getNumArguments(); ++i) {
          bool isBuffer = isa<MemRefType>(func.getArgument(i).getType());
          func.setArgAttr(i, spirv::getInterfaceVarABIAttrName(),
                          spirv::getInterfaceVarABIAttr(
                              0, i,
                              isBuffer ? std::optional<spirv::StorageClass>()
                                       : spirv::StorageClass::StorageBuffer,
                              ctx));
        }
      });
    });
  }
};
} // namespace
