//===- ExactFloats.cpp - SPIR-V float arithmetic rounds as written ---------===//

#include "passes/Passes.h"

#include "mlir/Dialect/SPIRV/IR/SPIRVDialect.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVOps.h"

namespace kiln {
#define GEN_PASS_DEF_KILNSPIRVEXACTFLOATS
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {
struct ExactFloats : kiln::impl::KilnSPIRVExactFloatsBase<ExactFloats> {
  void runOnOperation() override {
    StringAttr name = StringAttr::get(
        &getContext(), spirv::SPIRVDialect::getAttributeName(spirv::Decoration::NoContraction));
    UnitAttr unit = UnitAttr::get(&getContext());
    getOperation().walk([&](Operation *op) {
      if (isa<spirv::FAddOp, spirv::FSubOp, spirv::FMulOp, spirv::FDivOp, spirv::FRemOp,
              spirv::FModOp, spirv::FNegateOp, spirv::GLFmaOp>(op))
        op->setAttr(name, unit);
    });
  }
};
} // namespace
