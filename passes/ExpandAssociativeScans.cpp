//===- ExpandAssociativeScans.cpp - associative scans as trees of gathers -===//
//
// GPUs (and SPIR-V, Metal) evaluate a kiln.associative_scan as a Hillis-Steele
// tree: log2(n) steps, each gathering every operand's partner `s` lanes earlier
// (later when reversed), combining whole tiles with a call of the combine
// function's tile specialization, and keeping the combination where the partner
// exists. The earlier range is always the combine function's first operand, so
// it need not commute. The pass runs first, before `inline`, which then inlines
// the calls, so the function's own effects (print, device_assert) stay as they
// were written.
//
// With `keep-foldable` (the CPU) scans whose scalar combine function is a pure
// computation are left for convert-kiln-to-linalg, which folds them along the
// axis one row at a time (n - 1 combinations instead of n log2 n).
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialects/Kiln/IR/KilnOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/SymbolTable.h"

namespace kiln {
#define GEN_PASS_DEF_KILNEXPANDASSOCIATIVESCANS
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

namespace {

/// Whether `fn` (and every function it calls) only computes: no kiln op (a
/// program id, a print, an assert, a tile op) and nothing that touches memory,
/// so the CPU may run its body lane by lane inside a linalg.generic.
bool computesOnly(func::FuncOp fn, SymbolTableCollection &symbols,
                  llvm::SmallPtrSetImpl<Operation *> &visiting) {
  if (fn.isExternal() || !visiting.insert(fn).second)
    return !fn.isExternal(); // a recursive call is checked where it started
  WalkResult walk = fn.getBody().walk([&](Operation *op) {
    if (auto call = dyn_cast<func::CallOp>(op)) {
      auto callee = symbols.lookupNearestSymbolFrom<func::FuncOp>(op, call.getCalleeAttr());
      return callee && computesOnly(callee, symbols, visiting) ? WalkResult::advance()
                                                                 : WalkResult::interrupt();
    }
    if (isa<KilnDialect>(op->getDialect()))
      return WalkResult::interrupt();
    if (op->hasTrait<OpTrait::IsTerminator>() || op->hasTrait<OpTrait::HasRecursiveMemoryEffects>())
      return WalkResult::advance(); // judged by the ops they hold
    return isMemoryEffectFree(op) ? WalkResult::advance() : WalkResult::interrupt();
  });
  return !walk.wasInterrupted();
}

void expand(AssociativeScanOp op) {
  OpBuilder b(op);
  Location loc = op.getLoc();
  auto type = cast<RankedTensorType>(op.getSources().front().getType());
  ArrayRef<int64_t> shape = type.getShape();
  int64_t axis = op.getAxis(), n = shape[axis];
  Type i32 = b.getI32Type();
  auto indexType = RankedTensorType::get(shape, i32);
  auto splat = [&](int64_t v) {
    return b.create<arith::ConstantOp>(loc,
                                       DenseElementsAttr::get(indexType, b.getI32IntegerAttr(v)));
  };
  // Each lane's position along the axis.
  Value pos = b.create<ArangeOp>(loc, RankedTensorType::get({n}, i32), 0, n);
  if (shape.size() > 1) {
    SmallVector<int64_t> line(shape.size(), 1);
    line[axis] = n;
    pos = b.create<ReshapeOp>(loc, RankedTensorType::get(line, i32), pos);
    pos = b.create<BroadcastOp>(loc, indexType, pos);
  }
  bool reverse = op.getReverse();
  SmallVector<Value> xs(op.getSources());
  for (int64_t s = 1; s < n; s *= 2) {
    Value at, valid;
    if (reverse) {
      at = b.create<arith::AddIOp>(loc, pos, splat(s));
      valid = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::slt, at, splat(n));
    } else {
      at = b.create<arith::SubIOp>(loc, pos, splat(s));
      valid = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::sge, at, splat(0));
    }
    // (earlier, this); reversed: (later, this).
    SmallVector<Value> args;
    for (Value x : xs)
      args.push_back(b.create<GatherOp>(loc, x.getType(), x, at, b.getI32IntegerAttr(axis)));
    args.append(xs);
    auto combined = b.create<func::CallOp>(loc, op.getTileCombineAttr(),
                                           op.getResultTypes(), args);
    for (auto [x, c] : llvm::zip(xs, combined.getResults()))
      x = b.create<arith::SelectOp>(loc, valid, c, x);
  }
  op.replaceAllUsesWith(xs);
  op.erase();
}

struct ExpandAssociativeScans
    : kiln::impl::KilnExpandAssociativeScansBase<ExpandAssociativeScans> {
  using Base::Base;
  void runOnOperation() override {
    SmallVector<AssociativeScanOp> scans;
    getOperation().walk([&](AssociativeScanOp op) { scans.push_back(op); });
    SymbolTableCollection symbols;
    for (AssociativeScanOp op : scans) {
      if (keepFoldable) {
        auto fn = symbols.lookupNearestSymbolFrom<func::FuncOp>(op, op.getCombineAttr());
        llvm::SmallPtrSet<Operation *, 4> visiting;
        if (fn && computesOnly(fn, symbols, visiting))
          continue;
      }
      expand(op);
    }
  }
};

} // namespace
