//===- ElementwiseToGPU.cpp - tile math, one register at a time -----------===//

#include "passes/GPU/Lowering.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace kiln;
using namespace kiln::gpu;

void ThreadEmitter::emitArange(ArangeOp op) {
  Registers out;
  for (int64_t r = 0, n = registers(op.getType()); r < n; ++r)
    out.push_back(op.getFirst() ? b.create<arith::AddIOp>(loc, elementIndex(r),
                                                          i32(op.getFirst()))
                                : elementIndex(r));
  tiles[op.getResult()] = out;
}

void ThreadEmitter::emitSplat(SplatOp op) {
  tiles[op.getResult()] = Registers(registers(op.getType()), scalar(op.getValue()));
}

LogicalResult ThreadEmitter::emitElementwise(Operation *op) {
  auto isTile = [](Value v) { return isa<RankedTensorType>(v.getType()); };
  bool anyTile = llvm::any_of(op->getOperands(), isTile) || llvm::any_of(op->getResults(), isTile);
  if (!anyTile) {
    if (op->getNumRegions() != 0)
      return op->emitError("'") << op->getName() << "' is not supported in GPU kernels";
    b.clone(*op, scalars);
    return success();
  }
  if (op->getNumResults() == 0 || !llvm::all_of(op->getResults(), isTile) ||
      op->getNumRegions() != 0 ||
      (!op->hasTrait<OpTrait::Elementwise>() && !isa<arith::ConstantOp>(op)))
    return op->emitError("'") << op->getName() << "' on tiles is not supported in GPU kernels";

  auto type = cast<RankedTensorType>(op->getResult(0).getType());
  int64_t n = registers(type);
  if (auto constant = dyn_cast<arith::ConstantOp>(op)) {
    auto splat = dyn_cast<SplatElementsAttr>(constant.getValue());
    if (!splat)
      return op->emitError("only splat constant tiles are supported in GPU kernels");
    Value v = b.create<arith::ConstantOp>(loc, cast<TypedAttr>(splat.getSplatValue<Attribute>()));
    tiles[op->getResult(0)] = Registers(n, v);
    return success();
  }
  // One scalar op per register; ops with several results (arith.mului_extended,
  // which canonicalization makes of a widened multiply's high half) give one
  // register of each.
  SmallVector<Registers> out(op->getNumResults());
  for (int64_t r = 0; r < n; ++r) {
    OperationState state(loc, op->getName());
    for (Value operand : op->getOperands())
      state.addOperands(element(operand, r));
    for (Value result : op->getResults())
      state.addTypes(getElementTypeOrSelf(result.getType()));
    state.addAttributes(op->getAttrs());
    Operation *scalarOp = b.create(state);
    for (auto [i, result] : llvm::enumerate(scalarOp->getResults()))
      out[i].push_back(result);
  }
  for (auto [result, registers] : llvm::zip(op->getResults(), out))
    tiles[result] = std::move(registers);
  return success();
}
