//===- F8AsI8.cpp - fp8 values become their bytes for SPIR-V ---------------===//
//
// SPIR-V has no 8-bit float type. After kiln-expand-f8 every conversion to or
// from fp8 is integer arithmetic on the bits, so what is left of an fp8 value is
// moved around (loaded, stored, selected, carried by loops, exchanged through
// workgroup memory) and reinterpreted as i8 by arith.bitcast. This pass gives
// all of those values, buffers and constants the type i8 itself and drops the
// bitcasts that became no-ops, so the SPIR-V lowering sees only 8-bit integers.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/BuiltinOps.h"

namespace kiln {
#define GEN_PASS_DEF_KILNF8ASI8
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {
bool isF8(Type t) { return isa<Float8E4M3FNType, Float8E5M2Type>(t); }

/// `t` with every fp8 element type replaced by i8.
Type asBytes(Type t) {
  MLIRContext *ctx = t.getContext();
  if (isF8(t))
    return IntegerType::get(ctx, 8);
  if (auto m = dyn_cast<MemRefType>(t); m && isF8(m.getElementType()))
    return MemRefType::get(m.getShape(), IntegerType::get(ctx, 8), m.getLayout(),
                           m.getMemorySpace());
  if (auto v = dyn_cast<VectorType>(t); v && isF8(v.getElementType()))
    return v.clone(IntegerType::get(ctx, 8));
  if (auto f = dyn_cast<FunctionType>(t)) {
    auto all = [](TypeRange types) {
      return llvm::map_to_vector(types, [](Type x) { return asBytes(x); });
    };
    return FunctionType::get(ctx, all(f.getInputs()), all(f.getResults()));
  }
  return t;
}

/// An fp8 constant's bits as an i8 attribute (scalar or splat).
Attribute bytesOf(Attribute attr) {
  if (auto f = dyn_cast<FloatAttr>(attr); f && isF8(f.getType()))
    return IntegerAttr::get(IntegerType::get(attr.getContext(), 8),
                            f.getValue().bitcastToAPInt());
  if (auto dense = dyn_cast<DenseFPElementsAttr>(attr);
      dense && isF8(dense.getElementType()))
    return dense.bitcast(IntegerType::get(attr.getContext(), 8));
  return attr;
}

struct F8AsI8 : kiln::impl::KilnF8AsI8Base<F8AsI8> {
  void runOnOperation() override {
    getOperation().walk([](Operation *op) {
      for (Value v : op->getResults())
        v.setType(asBytes(v.getType()));
      for (Region &region : op->getRegions())
        for (Block &block : region)
          for (BlockArgument arg : block.getArguments())
            arg.setType(asBytes(arg.getType()));
      if (auto constant = dyn_cast<arith::ConstantOp>(op))
        constant.setValueAttr(cast<TypedAttr>(bytesOf(constant.getValue())));
      if (auto func = dyn_cast<gpu::GPUFuncOp>(op))
        func.setFunctionType(cast<FunctionType>(asBytes(func.getFunctionType())));
    });
    // Reinterpretations between fp8 and i8 are now i8 to i8.
    getOperation().walk([](arith::BitcastOp cast) {
      if (cast.getIn().getType() == cast.getType()) {
        cast.replaceAllUsesWith(cast.getIn());
        cast.erase();
      }
    });
  }
};
} // namespace
