//===- KilnOps.cpp - the kiln tile dialect --------------------------------===//

#include "dialects/Kiln/IR/KilnOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Transforms/InliningUtils.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace kiln;

#include "dialects/Kiln/IR/KilnDialect.cpp.inc"
#include "dialects/Kiln/IR/KilnEnums.cpp.inc"

namespace {
/// Every kiln op may be inlined: helpers are always inlined into kernels.
struct KilnInlinerInterface : DialectInlinerInterface {
  using DialectInlinerInterface::DialectInlinerInterface;
  bool isLegalToInline(Operation *, Region *, bool, IRMapping &) const final { return true; }
  bool isLegalToInline(Region *, Region *, bool, IRMapping &) const final { return true; }
};
} // namespace

void KilnDialect::initialize() {
  addInterfaces<KilnInlinerInterface>();
  addOperations<
#define GET_OP_LIST
#include "dialects/Kiln/IR/KilnOps.cpp.inc"
      >();
}

Operation *KilnDialect::materializeConstant(OpBuilder &builder, Attribute value,
                                            Type type, Location loc) {
  if (auto typed = dyn_cast<TypedAttr>(value))
    return builder.create<arith::ConstantOp>(loc, type, typed);
  return nullptr;
}

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

static std::string shapeString(ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (auto [i, d] : llvm::enumerate(shape))
    s += (i ? ", " : "") + std::to_string(d);
  return s + "]";
}

/// Shape of a tile or of a scalar (rank 0).
static ArrayRef<int64_t> shapeOf(Type type) {
  if (auto tensor = dyn_cast<RankedTensorType>(type))
    return tensor.getShape();
  return {};
}

static Type elementOf(Type type) { return getElementTypeOrSelf(type); }

//===----------------------------------------------------------------------===//
// ArangeOp
//===----------------------------------------------------------------------===//

LogicalResult ArangeOp::verify() {
  int64_t start = getFirst(), end = getLimit();
  if (end <= start)
    return emitOpError("requires end > start, got ") << start << ", " << end;
  auto type = getResult().getType();
  if (type.getRank() != 1 || type.getDimSize(0) != end - start)
    return emitOpError("result must be a 1-D tile of ") << (end - start)
                                                         << " elements";
  return success();
}

//===----------------------------------------------------------------------===//
// SplatOp
//===----------------------------------------------------------------------===//

OpFoldResult SplatOp::fold(FoldAdaptor adaptor) {
  auto value = dyn_cast_if_present<TypedAttr>(adaptor.getValue());
  if (!value)
    return {};
  return SplatElementsAttr::get(getResult().getType(), value);
}

//===----------------------------------------------------------------------===//
// BroadcastOp
//===----------------------------------------------------------------------===//

LogicalResult BroadcastOp::verify() {
  auto src = getSource().getType().getShape();
  auto dst = getResult().getType().getShape();
  if (src.size() != dst.size())
    return emitOpError("source rank ") << src.size() << " differs from result rank "
                                       << dst.size();
  for (auto [i, pair] : llvm::enumerate(llvm::zip(src, dst)))
    if (std::get<0>(pair) != 1 && std::get<0>(pair) != std::get<1>(pair))
      return emitOpError("cannot broadcast dimension ")
             << i << " of size " << std::get<0>(pair) << " to " << std::get<1>(pair);
  return success();
}

OpFoldResult BroadcastOp::fold(FoldAdaptor adaptor) {
  if (getSource().getType() == getResult().getType())
    return getSource();
  if (auto splat = dyn_cast_if_present<SplatElementsAttr>(adaptor.getSource()))
    return SplatElementsAttr::get(getResult().getType(),
                                  splat.getSplatValue<Attribute>());
  return {};
}

namespace {
/// broadcast(broadcast(x)) -> broadcast(x), and broadcast(splat(s)) -> splat(s).
struct FoldBroadcastChains : OpRewritePattern<BroadcastOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(BroadcastOp op,
                                PatternRewriter &rewriter) const override {
    Operation *def = op.getSource().getDefiningOp();
    if (auto inner = dyn_cast_if_present<BroadcastOp>(def)) {
      rewriter.replaceOpWithNewOp<BroadcastOp>(op, op.getType(), inner.getSource());
      return success();
    }
    if (auto splat = dyn_cast_if_present<SplatOp>(def)) {
      rewriter.replaceOpWithNewOp<SplatOp>(op, op.getType(), splat.getValue());
      return success();
    }
    return failure();
  }
};
} // namespace

void BroadcastOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                              MLIRContext *context) {
  results.add<FoldBroadcastChains>(context);
}

//===----------------------------------------------------------------------===//
// ExpandDimsOp
//===----------------------------------------------------------------------===//

LogicalResult ExpandDimsOp::verify() {
  auto src = getSource().getType().getShape();
  int64_t axis = getAxis();
  if (axis < 0 || axis > static_cast<int64_t>(src.size()))
    return emitOpError("axis ") << axis << " out of range for rank " << src.size();
  SmallVector<int64_t> expected(src);
  expected.insert(expected.begin() + axis, 1);
  if (getResult().getType().getShape() != ArrayRef<int64_t>(expected))
    return emitOpError("result shape must be ") << shapeString(expected);
  return success();
}

//===----------------------------------------------------------------------===//
// ReshapeOp
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::verify() {
  if (getSource().getType().getNumElements() != getResult().getType().getNumElements())
    return emitOpError("cannot reshape ")
           << shapeString(getSource().getType().getShape()) << " to "
           << shapeString(getResult().getType().getShape())
           << ": element counts differ";
  return success();
}

OpFoldResult ReshapeOp::fold(FoldAdaptor adaptor) {
  if (getSource().getType() == getResult().getType())
    return getSource();
  if (auto inner = getSource().getDefiningOp<ReshapeOp>()) {
    getSourceMutable().assign(inner.getSource());
    return getResult();
  }
  if (auto splat = dyn_cast_if_present<SplatElementsAttr>(adaptor.getSource()))
    return SplatElementsAttr::get(getResult().getType(),
                                  splat.getSplatValue<Attribute>());
  return {};
}

//===----------------------------------------------------------------------===//
// TransOp
//===----------------------------------------------------------------------===//

LogicalResult TransOp::verify() {
  auto src = getSource().getType().getShape();
  auto dst = getResult().getType().getShape();
  ArrayRef<int32_t> perm = getPerm();
  if (perm.size() != src.size())
    return emitOpError("permutation has ") << perm.size() << " entries for rank "
                                           << src.size();
  if (dst.size() != src.size())
    return emitOpError("result rank ") << dst.size() << " differs from source rank "
                                       << src.size();
  SmallVector<bool> seen(src.size(), false);
  for (int32_t p : perm) {
    if (p < 0 || p >= static_cast<int32_t>(src.size()) || seen[p])
      return emitOpError("perm is not a permutation of 0..") << src.size() - 1;
    seen[p] = true;
  }
  for (auto [i, p] : llvm::enumerate(perm))
    if (dst[i] != src[p])
      return emitOpError("result dimension ") << i << " must be " << src[p];
  return success();
}

LogicalResult GatherOp::verify() {
  RankedTensorType src = getSource().getType(), index = getIndex().getType(),
                   result = getResult().getType();
  int64_t axis = getAxis();
  if (axis < 0 || axis >= src.getRank())
    return emitOpError("axis ") << axis << " is out of range for rank " << src.getRank();
  if (index.getRank() != src.getRank())
    return emitOpError("index rank ") << index.getRank() << " differs from source rank "
                                      << src.getRank();
  for (int64_t d = 0; d < src.getRank(); ++d)
    if (d != axis && index.getDimSize(d) != src.getDimSize(d))
      return emitOpError("index dimension ") << d << " must be " << src.getDimSize(d);
  if (result.getShape() != index.getShape() ||
      result.getElementType() != src.getElementType())
    return emitOpError("result must have the index's shape and the source's element type");
  return success();
}

OpFoldResult TransOp::fold(FoldAdaptor adaptor) {
  ArrayRef<int32_t> perm = getPerm();
  if (llvm::all_of(llvm::enumerate(perm),
                   [](auto p) { return p.value() == static_cast<int32_t>(p.index()); }))
    return getSource();
  // trans(trans(x, p), q) == x when q undoes p.
  if (auto inner = getSource().getDefiningOp<TransOp>()) {
    ArrayRef<int32_t> innerPerm = inner.getPerm();
    bool identity = true;
    for (auto [i, p] : llvm::enumerate(perm))
      identity &= innerPerm[p] == static_cast<int32_t>(i);
    if (identity)
      return inner.getSource();
  }
  if (auto splat = dyn_cast_if_present<SplatElementsAttr>(adaptor.getSource()))
    return SplatElementsAttr::get(getResult().getType(),
                                  splat.getSplatValue<Attribute>());
  return {};
}

//===----------------------------------------------------------------------===//
// ReduceOp
//===----------------------------------------------------------------------===//

LogicalResult ReduceOp::verify() {
  auto src = getSource().getType();
  int64_t axis = getAxis();
  if (axis < 0 || axis >= src.getRank())
    return emitOpError("axis ") << axis << " out of range for rank " << src.getRank();
  SmallVector<int64_t> expected(src.getShape());
  expected.erase(expected.begin() + axis);
  Type result = getResult().getType();
  if (elementOf(result) != src.getElementType())
    return emitOpError("result element type must match the source");
  if (expected.empty() ? isa<RankedTensorType>(result)
                       : shapeOf(result) != ArrayRef<int64_t>(expected) ||
                             !isa<RankedTensorType>(result))
    return emitOpError("result must have shape ") << shapeString(expected)
                                                  << " (a scalar for rank 1)";
  if (needsIntegers(getKind()) && !src.getElementType().isInteger())
    return emitOpError("'") << stringifyReduceKind(getKind()) << "' reductions need integers, got "
                            << src.getElementType();
  return success();
}

//===----------------------------------------------------------------------===//
// ScanOp
//===----------------------------------------------------------------------===//

LogicalResult ScanOp::verify() {
  int64_t rank = getSource().getType().getRank();
  if (getAxis() < 0 || getAxis() >= rank)
    return emitOpError("axis ") << getAxis() << " out of range for rank " << rank;
  if (needsIntegers(getKind()) && !getSource().getType().getElementType().isInteger())
    return emitOpError("'") << stringifyReduceKind(getKind()) << "' scans need integers, got "
                            << getSource().getType().getElementType();
  return success();
}

OpFoldResult ScanOp::fold(FoldAdaptor) {
  // Scanning a length-1 axis combines each element with nothing.
  if (getSource().getType().getDimSize(getAxis()) == 1)
    return getSource();
  return {};
}

//===----------------------------------------------------------------------===//
// AssociativeScanOp
//===----------------------------------------------------------------------===//

LogicalResult AssociativeScanOp::verify() {
  if (getSources().empty())
    return emitOpError("needs at least one tile");
  if (getSources().getTypes() != getResults().getTypes())
    return emitOpError("results must have the sources' types");
  auto shape = cast<RankedTensorType>(getSources().front().getType()).getShape();
  for (Type t : getSources().getTypes())
    if (cast<RankedTensorType>(t).getShape() != shape)
      return emitOpError("sources must have one shape");
  int64_t rank = shape.size();
  if (getAxis() < 0 || getAxis() >= rank)
    return emitOpError("axis ") << getAxis() << " out of range for rank " << rank;
  return success();
}

LogicalResult AssociativeScanOp::verifySymbolUses(SymbolTableCollection &symbols) {
  // `combine` takes and returns the sources' element types, `tile_combine` their
  // tile types: two of each, one of each back.
  auto check = [&](FlatSymbolRefAttr name, bool tiles) -> LogicalResult {
    auto fn = symbols.lookupNearestSymbolFrom<FunctionOpInterface>(*this, name);
    if (!fn)
      return emitOpError("combine function '") << name.getValue() << "' not found";
    SmallVector<Type> types;
    for (Type t : getSources().getTypes())
      types.push_back(tiles ? t : getElementTypeOrSelf(t));
    SmallVector<Type> params(types);
    params.append(types);
    if (fn.getArgumentTypes() != ArrayRef<Type>(params) ||
        fn.getResultTypes() != ArrayRef<Type>(types))
      return emitOpError("combine function '")
             << name.getValue() << "' must take two of each source's "
             << (tiles ? "tile" : "element") << " type and return one";
    return success();
  };
  return failure(failed(check(getCombineAttr(), false)) ||
                 failed(check(getTileCombineAttr(), true)));
}

//===----------------------------------------------------------------------===//
// DotOp
//===----------------------------------------------------------------------===//

LogicalResult DotOp::verify() {
  auto a = getA().getType(), b = getB().getType(), acc = getAcc().getType();
  if (a.getRank() != 2 || b.getRank() != 2 || acc.getRank() != 2)
    return emitOpError("operands must be 2-D tiles");
  if (a.getDimSize(1) != b.getDimSize(0))
    return emitOpError("inner dimensions differ: ")
           << a.getDimSize(1) << " vs " << b.getDimSize(0);
  if (acc.getDimSize(0) != a.getDimSize(0) || acc.getDimSize(1) != b.getDimSize(1))
    return emitOpError("accumulator must be ") << a.getDimSize(0) << "x"
                                               << b.getDimSize(1);
  if (a.getElementType() != b.getElementType())
    return emitOpError("a and b must have the same element type");
  if (getTf32() && !a.getElementType().isF32())
    return emitOpError("tf32 rounding applies to f32 operands, got ") << a.getElementType();
  if (getTf32() && !acc.getElementType().isF32())
    return emitOpError("a tf32 dot accumulates in f32, got ") << acc.getElementType();
  return success();
}

//===----------------------------------------------------------------------===//
// Memory ops
//===----------------------------------------------------------------------===//

/// Checks that every index, the mask and (optionally) a value have `shape`, and that
/// the number of indices matches the rank of `memory`.
static LogicalResult verifyAccess(Operation *op, MemRefType memory, ValueRange indices,
                                  Value mask, ArrayRef<int64_t> shape) {
  if (static_cast<int64_t>(indices.size()) != memory.getRank())
    return op->emitOpError("expects ") << memory.getRank() << " indices, got "
                                       << indices.size();
  for (Value index : indices)
    if (shapeOf(index.getType()) != shape || isa<RankedTensorType>(index.getType()) !=
                                                 !shape.empty())
      return op->emitOpError("index shape must match the accessed shape ")
             << shapeString(shape);
  if (mask && (shapeOf(mask.getType()) != shape ||
               isa<RankedTensorType>(mask.getType()) != !shape.empty()))
    return op->emitOpError("mask shape must match the accessed shape ")
           << shapeString(shape);
  return success();
}

LogicalResult LoadOp::verify() {
  Type result = getResult().getType();
  if (elementOf(result) != getMemory().getType().getElementType())
    return emitOpError("result element type must match the memory");
  if (getOther() && getOther().getType() != result)
    return emitOpError("'other' must have the result type");
  return verifyAccess(*this, getMemory().getType(), getIndices(), getMask(),
                      shapeOf(result));
}

LogicalResult StoreOp::verify() {
  Type value = getValue().getType();
  if (elementOf(value) != getMemory().getType().getElementType())
    return emitOpError("value element type must match the memory");
  return verifyAccess(*this, getMemory().getType(), getIndices(), getMask(),
                      shapeOf(value));
}

/// The element types atomics update: 32- and 64-bit integers, and floats of 16
/// bits and more (fp8 has no atomics).
static bool isAtomicElementType(Type elem) {
  return elem.isInteger(32) || elem.isInteger(64) || elem.isF16() || elem.isBF16() ||
         elem.isF32() || elem.isF64();
}

LogicalResult AtomicRMWOp::verify() {
  Type elem = elementOf(getValue().getType());
  if (elem != getMemory().getType().getElementType())
    return emitOpError("value element type must match the memory");
  if (getKind() == ReduceKind::Prod)
    return emitOpError("kind must be sum, max, min, umax, umin, and, or or xor");
  if (!isAtomicElementType(elem))
    return emitOpError("element type must be i32, i64, f16, bf16, f32 or f64, got ") << elem;
  if (needsIntegers(getKind()) && !elem.isInteger())
    return emitOpError("'") << stringifyReduceKind(getKind())
                            << "' atomics need an integer element type, got " << elem;
  return verifyAccess(*this, getMemory().getType(), getIndices(), getMask(),
                      shapeOf(getValue().getType()));
}

LogicalResult AtomicSwapOp::verify() {
  Type elem = elementOf(getValue().getType());
  if (elem != getMemory().getType().getElementType())
    return emitOpError("value element type must match the memory");
  if (!isAtomicElementType(elem))
    return emitOpError("element type must be i32, i64, f16, bf16, f32 or f64, got ") << elem;
  if (getCompare() && getCompare().getType() != getValue().getType())
    return emitOpError("compare must have the value's type");
  return verifyAccess(*this, getMemory().getType(), getIndices(), getMask(),
                      shapeOf(getValue().getType()));
}

static LogicalResult verifyBlock(Operation *op, MemRefType memory, ValueRange offsets,
                                 RankedTensorType tile) {
  if (static_cast<int64_t>(offsets.size()) != memory.getRank())
    return op->emitOpError("expects ") << memory.getRank() << " offsets, got "
                                       << offsets.size();
  if (tile.getRank() != memory.getRank())
    return op->emitOpError("block rank ") << tile.getRank()
                                          << " differs from memory rank "
                                          << memory.getRank();
  if (tile.getElementType() != memory.getElementType())
    return op->emitOpError("block element type must match the memory");
  return success();
}

LogicalResult LoadBlockOp::verify() {
  if (getOther() && getOther().getType() != getResult().getType().getElementType())
    return emitOpError("'other' must be a scalar of the element type");
  return verifyBlock(*this, getMemory().getType(), getOffsets(), getResult().getType());
}

LogicalResult StoreBlockOp::verify() {
  return verifyBlock(*this, getMemory().getType(), getOffsets(), getValue().getType());
}

#define GET_OP_CLASSES
#include "dialects/Kiln/IR/KilnOps.cpp.inc"
