//===- LowerCompareAndSwap.cpp - per-element CAS after bufferization ------===//

#include "passes/Passes.h"

#include "dialects/Kiln/IR/KilnOps.h"
#include "passes/Common.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"

namespace kiln {
#define GEN_PASS_DEF_KILNLOWERCOMPAREANDSWAP
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {
/// The LLVM pointer to `memory[at]`.
Value elementPointer(OpBuilder &b, Location loc, Value memory, ValueRange at) {
  auto meta = b.create<memref::ExtractStridedMetadataOp>(loc, memory);
  Value element = meta.getOffset();
  for (auto [index, stride] : llvm::zip(at, meta.getStrides()))
    element = b.create<arith::AddIOp>(loc, element, b.create<arith::MulIOp>(loc, index, stride));
  unsigned width = cast<MemRefType>(memory.getType()).getElementTypeBitWidth();
  Value bytes =
      b.create<arith::MulIOp>(loc, element, b.create<arith::ConstantIndexOp>(loc, width / 8));
  Value base = b.create<memref::ExtractAlignedPointerAsIndexOp>(loc, memory);
  Value address =
      b.create<arith::IndexCastOp>(loc, b.getI64Type(), b.create<arith::AddIOp>(loc, base, bytes));
  return b.create<LLVM::IntToPtrOp>(loc, LLVM::LLVMPointerType::get(b.getContext()), address);
}

/// A float compare-and-swap of `memory[at]`: LLVM's cmpxchg takes integers, so
/// it swaps the bits at the element's address (compared bit for bit).
Value swapFloatBits(OpBuilder &b, Location loc, Value memory, ValueRange at, Value expected,
                    Value desired) {
  Type type = desired.getType();
  Type bits = b.getIntegerType(type.getIntOrFloatBitWidth());
  Value ptr = elementPointer(b, loc, memory, at);
  auto cas = b.create<LLVM::AtomicCmpXchgOp>(
      loc, ptr, b.create<arith::BitcastOp>(loc, bits, expected),
      b.create<arith::BitcastOp>(loc, bits, desired), LLVM::AtomicOrdering::acq_rel,
      LLVM::AtomicOrdering::monotonic);
  Value old = b.create<LLVM::ExtractValueOp>(loc, cas, ArrayRef<int64_t>{0});
  return b.create<arith::BitcastOp>(loc, type, old);
}

struct LowerCompareAndSwap : kiln::impl::KilnLowerCompareAndSwapBase<LowerCompareAndSwap> {
  void runOnOperation() override {
    // Scalar xor lanes: one generic_atomic_rmw each; float max/min lanes: a
    // compare-and-swap loop of the bits each.
    SmallVector<kiln::AtomicRMWOp> lanes;
    getOperation().walk([&](kiln::AtomicRMWOp op) { lanes.push_back(op); });
    for (kiln::AtomicRMWOp op : lanes) {
      bool floatMinMax = isa<FloatType>(op.getValue().getType()) &&
                         (op.getKind() == kiln::ReduceKind::Max ||
                          op.getKind() == kiln::ReduceKind::Min);
      if ((op.getKind() != kiln::ReduceKind::Xor && !floatMinMax) ||
          isa<RankedTensorType>(op.getValue().getType()) || op.getMask()) {
        op.emitOpError("expected a scalar xor, or float max or min, without a mask (one lane "
                       "of convert-kiln-to-linalg's lowering)");
        return signalPassFailure();
      }
      OpBuilder b(op);
      SmallVector<Value> at;
      for (Value index : op.getIndices())
        at.push_back(b.create<arith::IndexCastOp>(op.getLoc(), b.getIndexType(), index));
      Value old =
          floatMinMax
              ? kiln::floatAtomicMinMax(b, op.getLoc(), op.getKind(),
                                        elementPointer(b, op.getLoc(), op.getMemory(), at),
                                        op.getValue(), LLVM::AtomicOrdering::acq_rel)
              : kiln::atomicUpdate(b, op.getLoc(), op.getKind(), op.getValue(), op.getMemory(),
                                   at);
      op.replaceAllUsesWith(old);
      op.erase();
    }
    SmallVector<kiln::AtomicSwapOp> swaps;
    getOperation().walk([&](kiln::AtomicSwapOp op) { swaps.push_back(op); });
    for (kiln::AtomicSwapOp op : swaps) {
      if (!op.getCompare() || isa<RankedTensorType>(op.getValue().getType()) || op.getMask()) {
        op.emitOpError("expected a scalar compare-and-swap without a mask (one lane of "
                       "convert-kiln-to-linalg's lowering)");
        return signalPassFailure();
      }
      OpBuilder b(op);
      Location loc = op.getLoc();
      SmallVector<Value> at;
      for (Value index : op.getIndices())
        at.push_back(b.create<arith::IndexCastOp>(loc, b.getIndexType(), index));
      if (isa<FloatType>(op.getValue().getType())) {
        op.replaceAllUsesWith(swapFloatBits(b, loc, op.getMemory(), at, op.getCompare(),
                                            op.getValue()));
        op.erase();
        continue;
      }
      // Write the value only over an element equal to compare; the result is
      // the element as it was.
      auto cas = b.create<memref::GenericAtomicRMWOp>(loc, op.getMemory(), at);
      OpBuilder body = OpBuilder::atBlockEnd(cas.getBody());
      Value current = cas.getCurrentValue();
      Value equal =
          body.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, current, op.getCompare());
      body.create<memref::AtomicYieldOp>(
          loc, body.create<arith::SelectOp>(loc, equal, op.getValue(), current).getResult());
      op.replaceAllUsesWith(cas.getResult());
      op.erase();
    }
  }
};
} // namespace
