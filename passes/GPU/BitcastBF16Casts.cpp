//===- BitcastBF16Casts.cpp - bf16 <-> i16 casts left by the ROCDL lowering ===//

#include "passes/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/BuiltinOps.h"

namespace kiln {
#define GEN_PASS_DEF_KILNBITCASTBF16CASTS
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {
// bf16 or a vector of bf16 on one side, i16 of the same shape on the other.
bool isBF16Reinterpretation(Type from, Type to) {
  auto elem = [](Type t) { return getElementTypeOrSelf(t); };
  auto shape = [](Type t) -> ArrayRef<int64_t> {
    if (auto v = dyn_cast<VectorType>(t))
      return v.getShape();
    return {};
  };
  if (isa<VectorType>(from) != isa<VectorType>(to) || shape(from) != shape(to))
    return false;
  return (elem(from).isBF16() && elem(to).isInteger(16)) ||
         (elem(from).isInteger(16) && elem(to).isBF16());
}

struct BitcastBF16Casts : kiln::impl::KilnBitcastBF16CastsBase<BitcastBF16Casts> {
  void runOnOperation() override {
    getOperation().walk([](UnrealizedConversionCastOp cast) {
      if (cast.getNumOperands() != 1 || cast.getNumResults() != 1 ||
          !isBF16Reinterpretation(cast.getOperand(0).getType(), cast.getType(0)))
        return;
      OpBuilder b(cast);
      Value bits = b.create<LLVM::BitcastOp>(cast.getLoc(), cast.getType(0), cast.getOperand(0));
      cast.getResult(0).replaceAllUsesWith(bits);
      cast.erase();
    });
  }
};
} // namespace
