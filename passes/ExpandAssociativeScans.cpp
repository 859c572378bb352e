//===- ExpandAssociativeScans.cpp - associative scans as trees of gathers -===//
//
// GPUs (and SPIR-V, Metal) evaluate a kiln.associative_scan as a Hillis-Steele
// tree: log2(n) steps, each gathering every operand's partner `s` lanes earlier
// (later when reversed), combining whole tiles with the combine function's body
// applied lane by lane, and keeping the combination where the partner exists.
// The earlier range is always the combine function's first operand, so it need
// not commute. The CPU lowers the op itself instead (convert-kiln-to-linalg:
// one row at a time along the axis, n - 1 combinations instead of n log2 n).
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialects/Kiln/IR/KilnOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"

namespace kiln {
#define GEN_PASS_DEF_KILNEXPANDASSOCIATIVESCANS
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

namespace {

/// The combine function's body applied to whole tiles of `shape`: every op is
/// elementwise (arith, math), so each is cloned with tile operands and results;
/// scalar constants become splats. Fails on an op that cannot be.
FailureOr<SmallVector<Value>> combineTiles(OpBuilder &b, func::FuncOp fn, ValueRange args,
                                           ArrayRef<int64_t> shape) {
  Block &body = fn.getBody().front();
  IRMapping map;
  map.map(body.getArguments(), args);
  for (Operation &op : body.without_terminator()) {
    auto constant = dyn_cast<arith::ConstantOp>(op);
    if (constant && !isa<ShapedType>(constant.getType())) {
      auto type = RankedTensorType::get(shape, constant.getType());
      Value splat = b.create<arith::ConstantOp>(
          op.getLoc(), DenseElementsAttr::get(type, cast<TypedAttr>(constant.getValue())));
      map.map(constant.getResult(), splat);
      continue;
    }
    if (!op.hasTrait<OpTrait::Elementwise>() || op.getNumRegions() != 0)
      return op.emitError("the combine function '")
             << fn.getSymName() << "' cannot be applied to whole tiles ('" << op.getName()
             << "' is not elementwise)";
    Operation *copy = b.clone(op, map);
    for (Value result : copy->getResults())
      result.setType(RankedTensorType::get(shape, result.getType()));
  }
  SmallVector<Value> results;
  for (Value v : body.getTerminator()->getOperands())
    results.push_back(map.lookup(v));
  return results;
}

LogicalResult expand(AssociativeScanOp op, SymbolTableCollection &symbols) {
  auto fn = symbols.lookupNearestSymbolFrom<func::FuncOp>(op, op.getCombineAttr());
  if (!fn || fn.getBody().getBlocks().size() != 1)
    return op.emitOpError("needs a single-block combine function");
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
    FailureOr<SmallVector<Value>> combined = combineTiles(b, fn, args, shape);
    if (failed(combined))
      return failure();
    for (auto [x, c] : llvm::zip(xs, *combined))
      x = b.create<arith::SelectOp>(loc, valid, c, x);
  }
  op.replaceAllUsesWith(xs);
  op.erase();
  return success();
}

struct ExpandAssociativeScans
    : kiln::impl::KilnExpandAssociativeScansBase<ExpandAssociativeScans> {
  void runOnOperation() override {
    SmallVector<AssociativeScanOp> scans;
    getOperation().walk([&](AssociativeScanOp op) { scans.push_back(op); });
    SymbolTableCollection symbols;
    for (AssociativeScanOp op : scans)
      if (failed(expand(op, symbols)))
        return signalPassFailure();
  }
};

} // namespace
