//===- RetypeUnsupportedFloats.cpp - fp8 and bf16 as their bits for SPIR-V -===//
//
// SPIR-V has no 8-bit float and no bfloat16 type. After kiln-expand-f8 and
// arith-expand every conversion to or from fp8 and bf16 is integer arithmetic on
// the bits (and all other arithmetic was widened to f32), so what is left of such
// a value is moved around (loaded, stored, selected, carried by loops, exchanged
// through workgroup memory) and reinterpreted by arith.bitcast. This pass gives
// all of those values, buffers and constants the integer type of the same width
// (i8, i16) and drops the bitcasts that became no-ops.
//
//===----------------------------------------------------------------------===//

#include "passes/Common.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/BuiltinOps.h"

namespace kiln {
#define GEN_PASS_DEF_KILNRETYPEUNSUPPORTEDFLOATS
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {
bool isUnsupported(Type t) { return isa<Float8E4M3FNType, Float8E5M2Type, BFloat16Type>(t); }

/// The integer type as wide as `t`.
Type bitsOf(Type t) { return IntegerType::get(t.getContext(), t.getIntOrFloatBitWidth()); }

/// `t` with every fp8 and bf16 element type replaced by the integer of its width.
Type asBits(Type t) {
  MLIRContext *ctx = t.getContext();
  if (isUnsupported(t))
    return bitsOf(t);
  if (auto m = dyn_cast<MemRefType>(t); m && isUnsupported(m.getElementType()))
    return MemRefType::get(m.getShape(), bitsOf(m.getElementType()), m.getLayout(),
                           m.getMemorySpace());
  if (auto v = dyn_cast<VectorType>(t); v && isUnsupported(v.getElementType()))
    return v.clone(bitsOf(v.getElementType()));
  if (auto f = dyn_cast<FunctionType>(t)) {
    auto all = [](TypeRange types) {
      return llvm::map_to_vector(types, [](Type x) { return asBits(x); });
    };
    return FunctionType::get(ctx, all(f.getInputs()), all(f.getResults()));
  }
  return t;
}

/// An fp8 or bf16 constant's bits as an integer attribute (scalar or splat).
Attribute bitsOf(Attribute attr) {
  if (auto f = dyn_cast<FloatAttr>(attr); f && isUnsupported(f.getType()))
    return IntegerAttr::get(bitsOf(f.getType()), f.getValue().bitcastToAPInt());
  if (auto dense = dyn_cast<DenseFPElementsAttr>(attr);
      dense && isUnsupported(dense.getElementType()))
    return dense.bitcast(bitsOf(dense.getElementType()));
  return attr;
}

struct RetypeUnsupportedFloats
    : kiln::impl::KilnRetypeUnsupportedFloatsBase<RetypeUnsupportedFloats> {
  void runOnOperation() override {
    getOperation().walk([](Operation *op) {
      kiln::retypeResultsAndArguments(op, asBits);
      if (auto constant = dyn_cast<arith::ConstantOp>(op))
        constant.setValueAttr(cast<TypedAttr>(bitsOf(constant.getValue())));
      if (auto func = dyn_cast<gpu::GPUFuncOp>(op))
        func.setFunctionType(cast<FunctionType>(asBits(func.getFunctionType())));
    });
    // Reinterpretations between fp8 and i8 (bf16 and i16) are now no-ops.
    getOperation().walk([](arith::BitcastOp cast) {
      if (cast.getIn().getType() == cast.getType()) {
        cast.replaceAllUsesWith(cast.getIn());
        cast.erase();
      }
    });
  }
};
} // namespace
