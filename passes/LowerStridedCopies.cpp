//===- LowerStridedCopies.cpp - memref.copy between strided buffers -------===//

#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Utils/MemRefUtils.h"
#include "mlir/IR/Builders.h"

namespace kiln {
#define GEN_PASS_DEF_KILNLOWERSTRIDEDCOPIES
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {
struct LowerStridedCopies : kiln::impl::KilnLowerStridedCopiesBase<LowerStridedCopies> {
  void runOnOperation() override {
    SmallVector<memref::CopyOp> strided;
    getOperation().walk([&](memref::CopyOp op) {
      // Ranked buffers only; a copy of a buffer onto itself is canonicalization's.
      auto source = dyn_cast<MemRefType>(op.getSource().getType());
      auto target = dyn_cast<MemRefType>(op.getTarget().getType());
      if (source && target && op.getSource() != op.getTarget() &&
          !(memref::isStaticShapeAndContiguousRowMajor(source) &&
            memref::isStaticShapeAndContiguousRowMajor(target)))
        strided.push_back(op);
    });
    for (memref::CopyOp op : strided) {
      OpBuilder b(op);
      b.create<linalg::CopyOp>(op.getLoc(), op.getSource(), op.getTarget());
      op.erase();
    }
  }
};
} // namespace
