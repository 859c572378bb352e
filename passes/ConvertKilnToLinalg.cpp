//===- ConvertKilnToLinalg.cpp - kiln tile ops to linalg on tensors -------===//
//
// The CPU path keeps tiles as tensors: every kiln op becomes a linalg op (or a
// guarded loop nest for stores), so that upstream elementwise fusion, one-shot
// bufferization and loop lowering do the rest.
//
//===----------------------------------------------------------------------===//

#include "passes/Common.h"
#include "passes/Passes.h"

#include "dialects/Kiln/IR/KilnOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/SymbolTable.h"

#include <limits>

namespace kiln {
#define GEN_PASS_DEF_CONVERTKILNTOLINALG
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

namespace {

using BodyBuilder = function_ref<void(OpBuilder &, Location, ValueRange)>;

Value emptyLike(OpBuilder &b, Location loc, RankedTensorType type) {
  return b.create<tensor::EmptyOp>(loc, type.getShape(), type.getElementType());
}

SmallVector<utils::IteratorType> parallel(int64_t rank) {
  return SmallVector<utils::IteratorType>(rank, utils::IteratorType::parallel);
}

/// A linalg.generic producing one tensor of `type` from `inputs` read with
/// `inputMaps`, written into `init` (a fresh tensor when null).
Value generic(OpBuilder &b, Location loc, RankedTensorType type, ValueRange inputs,
              ArrayRef<AffineMap> inputMaps, BodyBuilder body, Value init = {}) {
  SmallVector<AffineMap> maps(inputMaps);
  maps.push_back(b.getMultiDimIdentityMap(type.getRank()));
  if (!init)
    init = emptyLike(b, loc, type);
  auto op = b.create<linalg::GenericOp>(loc, TypeRange{type}, inputs, ValueRange{init}, maps,
                                        parallel(type.getRank()), body);
  return op.getResult(0);
}

Value constI32(OpBuilder &b, Location loc, int64_t v) {
  return b.create<arith::ConstantIntOp>(loc, v, 32);
}

/// Sizes of `memory` as i32 values, computed once before the tile op.
SmallVector<Value> memorySizes(OpBuilder &b, Location loc, Value memory) {
  SmallVector<Value> sizes;
  auto type = cast<MemRefType>(memory.getType());
  for (int64_t d = 0; d < type.getRank(); ++d) {
    Value dim = b.create<memref::DimOp>(loc, memory, d);
    sizes.push_back(b.create<arith::IndexCastOp>(loc, b.getI32Type(), dim));
  }
  return sizes;
}

/// `0 <= coords[d] < sizes[d]` for all d, and-ed with `mask` when present.
Value inBounds(OpBuilder &b, Location loc, ValueRange coords, ValueRange sizes, Value mask) {
  Value ok = mask;
  for (auto [c, s] : llvm::zip(coords, sizes)) {
    // One unsigned compare checks both bounds: negative coordinates wrap high.
    Value inside = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ult, c, s);
    ok = ok ? b.create<arith::AndIOp>(loc, ok, inside) : inside;
  }
  return ok;
}

SmallVector<Value> toIndex(OpBuilder &b, Location loc, ValueRange coords) {
  SmallVector<Value> out;
  for (Value c : coords)
    out.push_back(b.create<arith::IndexCastOp>(loc, b.getIndexType(), c));
  return out;
}

Value zeroOf(OpBuilder &b, Location loc, Type type) {
  return b.create<arith::ConstantOp>(loc, type, b.getZeroAttr(type));
}

/// Reads memory[coords] if in bounds (and unmasked), else `other`.
Value guardedLoad(OpBuilder &b, Location loc, Value memory, ValueRange coords,
                  ValueRange sizes, Value mask, Value other) {
  Value ok = inBounds(b, loc, coords, sizes, mask);
  Type elem = cast<MemRefType>(memory.getType()).getElementType();
  auto ifOp = b.create<scf::IfOp>(
      loc, ok,
      [&](OpBuilder &tb, Location l) {
        Value v = tb.create<memref::LoadOp>(l, memory, toIndex(tb, l, coords));
        tb.create<scf::YieldOp>(l, v);
      },
      [&](OpBuilder &eb, Location l) {
        eb.create<scf::YieldOp>(l, other ? other : zeroOf(eb, l, elem));
      });
  return ifOp.getResult(0);
}

void guardedStore(OpBuilder &b, Location loc, Value value, Value memory, ValueRange coords,
                  ValueRange sizes, Value mask) {
  Value ok = inBounds(b, loc, coords, sizes, mask);
  b.create<scf::IfOp>(loc, ok, [&](OpBuilder &tb, Location l) {
    tb.create<memref::StoreOp>(l, value, memory, toIndex(tb, l, coords));
    tb.create<scf::YieldOp>(l);
  });
}

/// Emits a loop nest over `shape`; `body` gets the induction variables.
void loopNest(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
              function_ref<void(OpBuilder &, Location, ValueRange)> body) {
  SmallVector<Value> lbs, ubs, steps;
  for (int64_t d : shape) {
    lbs.push_back(b.create<arith::ConstantIndexOp>(loc, 0));
    ubs.push_back(b.create<arith::ConstantIndexOp>(loc, d));
    steps.push_back(b.create<arith::ConstantIndexOp>(loc, 1));
  }
  scf::buildLoopNest(b, loc, lbs, ubs, steps, body);
}

/// Reshapes through a 1-D tensor; both steps are views after bufferization.
Value reshapeTensor(OpBuilder &b, Location loc, Value src, RankedTensorType dst) {
  auto srcType = cast<RankedTensorType>(src.getType());
  if (srcType.getRank() > 1) {
    ReassociationIndices all;
    for (int64_t i = 0; i < srcType.getRank(); ++i)
      all.push_back(i);
    src = b.create<tensor::CollapseShapeOp>(loc, src, ArrayRef<ReassociationIndices>{all});
  }
  if (dst.getRank() > 1) {
    ReassociationIndices all;
    for (int64_t i = 0; i < dst.getRank(); ++i)
      all.push_back(i);
    src = b.create<tensor::ExpandShapeOp>(loc, dst, src, ArrayRef<ReassociationIndices>{all});
  }
  return src;
}

//===----------------------------------------------------------------------===//
// One rewrite per op
//===----------------------------------------------------------------------===//

Value lowerArange(OpBuilder &b, ArangeOp op) {
  int64_t start = op.getFirst();
  return generic(b, op.getLoc(), op.getType(), {}, {},
                 [&](OpBuilder &nb, Location l, ValueRange) {
                   Value i = nb.create<linalg::IndexOp>(l, 0);
                   Value v = nb.create<arith::IndexCastOp>(l, nb.getI32Type(), i);
                   if (start)
                     v = nb.create<arith::AddIOp>(l, v, constI32(nb, l, start));
                   nb.create<linalg::YieldOp>(l, v);
                 });
}

Value lowerSplat(OpBuilder &b, SplatOp op) {
  Value scalar = op.getValue();
  return generic(b, op.getLoc(), op.getType(), {}, {},
                 [&](OpBuilder &nb, Location l, ValueRange) {
                   nb.create<linalg::YieldOp>(l, scalar);
                 });
}

Value lowerBroadcast(OpBuilder &b, BroadcastOp op) {
  auto src = op.getSource().getType();
  auto dst = op.getType();
  SmallVector<AffineExpr> exprs;
  for (int64_t d = 0; d < dst.getRank(); ++d)
    exprs.push_back(src.getDimSize(d) == 1 && dst.getDimSize(d) != 1
                        ? b.getAffineConstantExpr(0)
                        : b.getAffineDimExpr(d));
  AffineMap map = AffineMap::get(dst.getRank(), 0, exprs, b.getContext());
  return generic(b, op.getLoc(), dst, op.getSource(), map,
                 [](OpBuilder &nb, Location l, ValueRange args) {
                   nb.create<linalg::YieldOp>(l, args[0]);
                 });
}

Value lowerTrans(OpBuilder &b, TransOp op) {
  ArrayRef<int32_t> perm = op.getPerm();
  SmallVector<AffineExpr> exprs(perm.size());
  // Source dimension perm[i] is result dimension i.
  for (auto [i, p] : llvm::enumerate(perm))
    exprs[p] = b.getAffineDimExpr(i);
  AffineMap map = AffineMap::get(perm.size(), 0, exprs, b.getContext());
  return generic(b, op.getLoc(), op.getType(), op.getSource(), map,
                 [](OpBuilder &nb, Location l, ValueRange args) {
                   nb.create<linalg::YieldOp>(l, args[0]);
                 });
}

Value lowerReduce(OpBuilder &b, ReduceOp op) {
  Location loc = op.getLoc();
  auto src = op.getSource().getType();
  int64_t axis = op.getAxis();
  Type elem = src.getElementType();
  SmallVector<int64_t> outShape(src.getShape());
  outShape.erase(outShape.begin() + axis);
  auto outType = RankedTensorType::get(outShape, elem);
  Value identity = b.create<arith::ConstantOp>(loc, reductionIdentity(b, op.getKind(), elem));
  Value init = b.create<linalg::FillOp>(loc, identity, emptyLike(b, loc, outType)).getResult(0);

  SmallVector<AffineExpr> outExprs;
  SmallVector<utils::IteratorType> iters = parallel(src.getRank());
  iters[axis] = utils::IteratorType::reduction;
  for (int64_t d = 0; d < src.getRank(); ++d)
    if (d != axis)
      outExprs.push_back(b.getAffineDimExpr(d));
  SmallVector<AffineMap> maps = {
      b.getMultiDimIdentityMap(src.getRank()),
      AffineMap::get(src.getRank(), 0, outExprs, b.getContext())};
  ReduceKind kind = op.getKind();
  auto generic = b.create<linalg::GenericOp>(
      loc, TypeRange{outType}, ValueRange{op.getSource()}, ValueRange{init}, maps, iters,
      [&](OpBuilder &nb, Location l, ValueRange args) {
        nb.create<linalg::YieldOp>(l, combineReduction(nb, l, kind, args[0], args[1]));
      });
  Value result = generic.getResult(0);
  if (outShape.empty())
    return b.create<tensor::ExtractOp>(loc, result, ValueRange{});
  return result;
}

/// Builds the combination of one element of each operand of a scan: `earlier`
/// holds the range before it (after it when reversed), `own` the element's own.
using ScanCombine =
    function_ref<SmallVector<Value>(OpBuilder &, Location, ValueRange earlier, ValueRange own)>;

/// Offsets, sizes and strides of the leading `type`-shaped part of a tensor.
std::tuple<SmallVector<OpFoldResult>, SmallVector<OpFoldResult>, SmallVector<OpFoldResult>>
leadingPart(OpBuilder &b, RankedTensorType type) {
  SmallVector<OpFoldResult> zeros(type.getRank(), b.getIndexAttr(0)),
      ones(type.getRank(), b.getIndexAttr(1)), sizes;
  for (int64_t d : type.getShape())
    sizes.push_back(b.getIndexAttr(d));
  return {zeros, sizes, ones};
}

/// `source` copied into the leading part of a new tensor of `type`, a larger
/// one, or into a new tensor of its own when `type` is null. A linalg.copy: an
/// identity linalg.generic would be folded away, leaving bufferization a copy to
/// or from a strided buffer. (Two copies into tensor.empty are never merged by
/// CSE: their sources differ.)
Value copyInto(OpBuilder &b, Location loc, Value source, RankedTensorType type = {}) {
  auto sourceType = cast<RankedTensorType>(source.getType());
  if (!type)
    return b.create<linalg::CopyOp>(loc, source, emptyLike(b, loc, sourceType)).getResult(0);
  // An allocation, not tensor.empty: a slice of an empty tensor folds into an
  // empty tensor of its own (inserting the copy back would copy it again), and
  // CSE would make the copies of two scans one tensor.
  Value whole = b.create<bufferization::AllocTensorOp>(loc, type, ValueRange{});
  auto [zeros, sizes, ones] = leadingPart(b, sourceType);
  Value part = b.create<tensor::ExtractSliceOp>(loc, sourceType, whole, zeros, sizes, ones);
  Value copied = b.create<linalg::CopyOp>(loc, source, part).getResult(0);
  return b.create<tensor::InsertSliceOp>(loc, copied, whole, zeros, sizes, ones);
}

/// The leading `type`-shaped part of `padded`, copied into a tensor of its own.
Value copyOut(OpBuilder &b, Location loc, Value padded, RankedTensorType type) {
  auto [zeros, sizes, ones] = leadingPart(b, type);
  return copyInto(
      b, loc, b.create<tensor::ExtractSliceOp>(loc, type, padded, zeros, sizes, ones));
}

/// An inclusive scan on the CPU (kiln.scan, kiln.associative_scan): a loop along
/// the axis that combines row i - 1 of the results (row i + 1 when reversed) with
/// row i of the sources in a linalg.generic over one row: n - 1 combinations,
/// each vectorized across the row (or independent of each other along it),
/// where a tree would make n log2(n).
SmallVector<Value> scanChunks(OpBuilder &b, Location loc, ValueRange sources, bool reverse,
                              ScanCombine combine, int64_t chunks);

SmallVector<Value> scanRows(OpBuilder &b, Location loc, ValueRange sources, int64_t axis,
                            bool reverse, ScanCombine combine, bool regroup = true) {
  auto type = cast<RankedTensorType>(sources.front().getType());
  int64_t rank = type.getRank(), n = type.getDimSize(axis);
  // A long rank-1 scan would be one chain of n - 1 dependent combinations; in
  // chunks it combines in a different grouping, which `regroup` allows.
  constexpr int64_t chunks = 16;
  if (regroup && rank == 1 && n >= 4 * chunks && n % chunks == 0)
    return scanChunks(b, loc, sources, reverse, combine, chunks);
  // Along the innermost axis of a tile with several rows, a row is a column of
  // the buffer: each step touches one element of every row. When rows are a
  // multiple of 2 KiB apart (a 16 x 1024 f32 tile: 4 KiB), a step's accesses
  // fall into one or two cache sets (and alias 4 KiB apart): such a scan ran 5x
  // slower than in a copy whose rows are one cache line longer, which those
  // scans (any operand's rows so far apart) now use.
  // Bits per element as stored (bools in bytes), 0 for other element types.
  auto storedBits = [](Value v) -> unsigned {
    Type elem = getElementTypeOrSelf(v.getType());
    return elem.isIntOrFloat() ? std::max(8u, elem.getIntOrFloatBitWidth()) : 0;
  };
  bool pad = axis == rank - 1 && type.getNumElements() > n &&
             llvm::all_of(sources, [&](Value v) { return storedBits(v) != 0; }) &&
             llvm::any_of(sources, [&](Value v) { return n * storedBits(v) % (2048 * 8) == 0; });
  SmallVector<Value> work;
  for (Value source : sources) {
    if (!pad) {
      work.push_back(source);
      continue;
    }
    auto sourceType = cast<RankedTensorType>(source.getType());
    SmallVector<int64_t> shape(sourceType.getShape());
    shape[axis] += 512 / storedBits(source);
    work.push_back(copyInto(b, loc, source,
                            RankedTensorType::get(shape, sourceType.getElementType())));
  }
  SmallVector<int64_t> rowShape(type.getShape());
  rowShape[axis] = 1;
  auto index = [&](OpBuilder &ob, int64_t v) {
    return ob.create<arith::ConstantIndexOp>(loc, v).getResult();
  };
  auto loop = b.create<scf::ForOp>(
      loc, index(b, 1), index(b, n), index(b, 1), work,
      [&](OpBuilder &lb, Location l, Value j, ValueRange acc) {
        Value i = reverse ? lb.create<arith::SubIOp>(l, index(lb, n - 1), j).getResult() : j;
        Value prev = reverse ? lb.create<arith::AddIOp>(l, i, index(lb, 1)).getResult()
                             : lb.create<arith::SubIOp>(l, j, index(lb, 1)).getResult();
        SmallVector<OpFoldResult> offsets(rank, lb.getIndexAttr(0)), sizes,
            strides(rank, lb.getIndexAttr(1));
        for (int64_t d : rowShape)
          sizes.push_back(lb.getIndexAttr(d));
        auto rowType = [&](Value v) {
          return RankedTensorType::get(rowShape, getElementTypeOrSelf(v.getType()));
        };
        auto row = [&](Value v, Value at) -> Value {
          offsets[axis] = at;
          return lb.create<tensor::ExtractSliceOp>(l, rowType(v), v, offsets, sizes, strides);
        };
        // (earlier, this); reversed: (later, this). Row i of the results still
        // holds the sources' row i, and the combination is written over it: the
        // working buffers are updated in place, nothing is copied.
        SmallVector<Value> inputs, inits;
        SmallVector<Type> types;
        for (Value a : acc)
          inputs.push_back(row(a, prev));
        for (Value a : acc) {
          inputs.push_back(row(a, i));
          inits.push_back(row(a, i));
          types.push_back(rowType(a));
        }
        SmallVector<AffineMap> maps(inputs.size() + inits.size(),
                                    lb.getMultiDimIdentityMap(rank));
        size_t k = acc.size();
        auto combined = lb.create<linalg::GenericOp>(
            l, types, inputs, inits, maps, parallel(rank),
            [&](OpBuilder &nb, Location il, ValueRange args) {
              nb.create<linalg::YieldOp>(il, combine(nb, il, args.take_front(k),
                                                     args.slice(k, k)));
            });
        SmallVector<Value> next;
        offsets[axis] = i;
        for (auto [a, r] : llvm::zip(acc, combined.getResults()))
          next.push_back(lb.create<tensor::InsertSliceOp>(l, r, a, offsets, sizes, strides));
        lb.create<scf::YieldOp>(l, next);
      });
  SmallVector<Value> results(loop.getResults());
  if (pad)
    for (auto [r, source] : llvm::zip(results, sources))
      r = copyOut(b, loc, r, cast<RankedTensorType>(source.getType()));
  return results;
}

/// A rank-1 scan of n elements as `chunks` scans of n / chunks consecutive
/// elements each, side by side (the rows of an expanded [chunks, n / chunks]
/// tile, vectorized across rows), a scan of the chunks' totals, and each chunk
/// combined with the total of the chunks before it (after it when reversed).
/// Only associativity is used: every element still combines the elements
/// before it in order.
SmallVector<Value> scanChunks(OpBuilder &b, Location loc, ValueRange sources, bool reverse,
                              ScanCombine combine, int64_t chunks) {
  int64_t n = cast<RankedTensorType>(sources.front().getType()).getDimSize(0),
          width = n / chunks;
  SmallVector<ReassociationIndices> both = {{0, 1}};
  SmallVector<Value> rows;
  for (Value source : sources) {
    auto type = RankedTensorType::get({chunks, width}, getElementTypeOrSelf(source.getType()));
    rows.push_back(b.create<tensor::ExpandShapeOp>(loc, type, source, both));
  }
  rows = scanRows(b, loc, rows, /*axis=*/1, reverse, combine);
  // A static slice of `v` with unit strides, of type `shape` (which may drop
  // unit dimensions of `sizes`).
  auto slice = [&](Value v, ArrayRef<int64_t> offsets, ArrayRef<int64_t> sizes,
                   ArrayRef<int64_t> shape) {
    auto type = RankedTensorType::get(shape, getElementTypeOrSelf(v.getType()));
    SmallVector<OpFoldResult> ones(offsets.size(), b.getIndexAttr(1));
    return b.create<tensor::ExtractSliceOp>(loc, type, v, getAsIndexOpFoldResult(
                                                              b.getContext(), offsets),
                                            getAsIndexOpFoldResult(b.getContext(), sizes),
                                            ones);
  };
  // The chunks' totals: their last column (the first when reversed), scanned.
  SmallVector<Value> totals;
  for (Value r : rows)
    totals.push_back(slice(r, {0, reverse ? 0 : width - 1}, {chunks, 1}, {chunks}));
  totals = scanRows(b, loc, totals, /*axis=*/0, reverse, combine);
  // Chunks 1 .. chunks - 1 combine with the totals of 0 .. chunks - 2 (reversed:
  // chunks 0 .. chunks - 2 with the totals of 1 .. chunks - 1), in place.
  int64_t first = reverse ? 0 : 1, from = reverse ? 1 : 0;
  SmallVector<Value> inputs, inits;
  SmallVector<tensor::ExtractSliceOp> parts;
  SmallVector<Type> types;
  for (Value t : totals)
    inputs.push_back(slice(t, {from}, {chunks - 1}, {chunks - 1}));
  for (Value r : rows) {
    parts.push_back(slice(r, {first, 0}, {chunks - 1, width}, {chunks - 1, width}));
    inputs.push_back(parts.back());
    inits.push_back(parts.back());
    types.push_back(parts.back().getType());
  }
  AffineMap identity = b.getMultiDimIdentityMap(2);
  SmallVector<AffineMap> maps(totals.size(), AffineMap::get(2, 0, b.getAffineDimExpr(0)));
  maps.append(rows.size() * 2, identity);
  size_t k = rows.size();
  auto fixed = b.create<linalg::GenericOp>(
      loc, types, inputs, inits, maps, parallel(2),
      [&](OpBuilder &nb, Location l, ValueRange args) {
        nb.create<linalg::YieldOp>(l, combine(nb, l, args.take_front(k), args.slice(k, k)));
      });
  SmallVector<Value> results;
  for (auto [r, f, part, source] : llvm::zip(rows, fixed.getResults(), parts, sources)) {
    Value whole = b.create<tensor::InsertSliceOp>(loc, f, r, part.getMixedOffsets(),
                                                  part.getMixedSizes(), part.getMixedStrides());
    results.push_back(
        b.create<tensor::CollapseShapeOp>(loc, source.getType(), whole, both).getResult());
  }
  return results;
}

/// kiln.scan (cumsum, cummax, ...). A float sum or product keeps the sequential
/// grouping, so it rounds as a C++ loop does (and the GPUs' scans of axes under
/// 128; longer ones take doubling steps): a prefix sum that cancels to near zero
/// would otherwise differ by more than a relative tolerance can tell from an
/// error.
Value lowerScan(OpBuilder &b, ScanOp op) {
  ReduceKind kind = op.getKind();
  bool rounds = isa<FloatType>(op.getType().getElementType()) &&
                (kind == ReduceKind::Sum || kind == ReduceKind::Prod);
  return scanRows(
             b, op.getLoc(), op.getSource(), op.getAxis(), /*reverse=*/false,
             [&](OpBuilder &nb, Location l, ValueRange earlier, ValueRange own) {
               return SmallVector<Value>{combineReduction(nb, l, kind, own[0], earlier[0])};
             },
             /*regroup=*/!rounds)
      .front();
}

/// kiln.associative_scan on the CPU: the combination's body is the combine
/// function's.
SmallVector<Value> lowerAssociativeScan(OpBuilder &b, AssociativeScanOp op, func::FuncOp fn) {
  return scanRows(b, op.getLoc(), op.getSources(), op.getAxis(), op.getReverse(),
                  [&](OpBuilder &nb, Location, ValueRange earlier, ValueRange own) {
                    Block &body = fn.getBody().front();
                    IRMapping map;
                    map.map(body.getArguments().take_front(earlier.size()), earlier);
                    map.map(body.getArguments().drop_front(earlier.size()), own);
                    for (Operation &inner : body.without_terminator())
                      nb.clone(inner, map);
                    SmallVector<Value> results;
                    for (Value v : body.getTerminator()->getOperands())
                      results.push_back(map.lookupOrDefault(v));
                    return results;
                  });
}

/// The C library function `name` of `type`, declared in `module` once.
LLVM::LLVMFuncOp libcFunction(OpBuilder &b, ModuleOp module, Location loc, StringRef name,
                              LLVM::LLVMFunctionType type) {
  if (auto fn = module.lookupSymbol<LLVM::LLVMFuncOp>(name))
    return fn;
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(module.getBody());
  return b.create<LLVM::LLVMFuncOp>(loc, name, type);
}

/// `text`, NUL-terminated, as a new private constant global named after `base`;
/// returns its address.
Value stringConstant(OpBuilder &b, ModuleOp module, Location loc, StringRef base,
                     StringRef text) {
  std::string name;
  for (unsigned n = 0; name.empty() || module.lookupSymbol(name); ++n)
    name = (base + "_" + Twine(n)).str();
  std::string bytes = text.str() + std::string(1, '\0');
  auto arrayType = LLVM::LLVMArrayType::get(b.getI8Type(), bytes.size());
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(module.getBody());
    b.create<LLVM::GlobalOp>(loc, arrayType, /*isConstant=*/true, LLVM::Linkage::Private, name,
                             b.getStringAttr(bytes));
  }
  return b.create<LLVM::AddressOfOp>(loc, LLVM::LLVMPointerType::get(b.getContext()), name);
}

/// kiln.print as calls of the C library's printf, one per element (programs
/// run in parallel on the thread pool; printf writes each line whole).
void lowerPrint(OpBuilder &b, PrintOp op) {
  Location loc = op.getLoc();
  auto module = op->getParentOfType<ModuleOp>();
  auto ptr = LLVM::LLVMPointerType::get(b.getContext());
  auto printf = libcFunction(b, module, loc, "printf",
                             LLVM::LLVMFunctionType::get(b.getI32Type(), {ptr}, true));
  Value value = op.getValue();
  auto tile = value ? dyn_cast<RankedTensorType>(value.getType()) : RankedTensorType();
  bool zeroExtend = printsUnsigned(op);
  std::string format = printFormat(op.getPrefix(), tile ? tile.getRank() : 0,
                                   value ? getElementTypeOrSelf(value.getType()) : Type(),
                                   zeroExtend, printHexDigits(op));
  auto emit = [&](OpBuilder &nb, Location l, ValueRange coords, Value element) {
    SmallVector<Value> args{stringConstant(nb, module, l, "kiln_print", format), op.getPidX(),
                            op.getPidY(), op.getPidZ()};
    for (Value c : coords)
      args.push_back(nb.create<arith::IndexCastOp>(l, nb.getI32Type(), c));
    if (element)
      args.push_back(printArgument(nb, l, element, zeroExtend));
    nb.create<LLVM::CallOp>(l, printf, args);
  };
  if (!tile)
    return emit(b, loc, {}, value);
  loopNest(b, loc, tile.getShape(), [&](OpBuilder &nb, Location l, ValueRange ivs) {
    emit(nb, l, ivs, nb.create<tensor::ExtractOp>(l, value, ivs));
  });
}

/// Whether every element of the i1 `tile` is set: an `and` over the whole tile
/// (a vectorizable reduction), as an i1 scalar.
Value allTrue(OpBuilder &b, Location loc, Value tile) {
  auto type = cast<RankedTensorType>(tile.getType());
  auto allType = RankedTensorType::get({}, b.getI1Type());
  Value yes = b.create<arith::ConstantIntOp>(loc, 1, 1);
  Value init = b.create<linalg::FillOp>(loc, yes, emptyLike(b, loc, allType)).getResult(0);
  SmallVector<AffineMap> maps{b.getMultiDimIdentityMap(type.getRank()),
                              AffineMap::get(type.getRank(), 0, {}, b.getContext())};
  SmallVector<utils::IteratorType> iters(type.getRank(), utils::IteratorType::reduction);
  Value all = b.create<linalg::GenericOp>(
                   loc, TypeRange{allType}, ValueRange{tile}, ValueRange{init}, maps, iters,
                   [](OpBuilder &nb, Location l, ValueRange args) {
                     nb.create<linalg::YieldOp>(
                         l, nb.create<arith::AndIOp>(l, args[0], args[1]).getResult());
                   })
                  .getResult(0);
  return b.create<tensor::ExtractOp>(loc, all, ValueRange{});
}

/// kiln.assert on the CPU: one vectorizable check that every element holds;
/// when one does not, the first failing element is reported on stderr, in
/// print's format, every output stream is flushed and the process aborts (as
/// C's assert does).
void lowerAssert(OpBuilder &b, AssertOp op) {
  Location loc = op.getLoc();
  auto module = op->getParentOfType<ModuleOp>();
  MLIRContext *ctx = b.getContext();
  auto ptr = LLVM::LLVMPointerType::get(ctx);
  auto fprintf = libcFunction(b, module, loc, "fprintf",
                              LLVM::LLVMFunctionType::get(b.getI32Type(), {ptr, ptr}, true));
  auto abort = libcFunction(b, module, loc, "abort",
                            LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx), {}));
  auto fflush = libcFunction(b, module, loc, "fflush",
                             LLVM::LLVMFunctionType::get(b.getI32Type(), {ptr}));
  if (!module.lookupSymbol("stderr")) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(module.getBody());
    b.create<LLVM::GlobalOp>(loc, ptr, /*isConstant=*/false, LLVM::Linkage::External, "stderr",
                             Attribute());
  }
  Value cond = op.getCondition();
  auto tile = dyn_cast<RankedTensorType>(cond.getType());
  std::string format = printFormat(op.getMessage(), tile ? tile.getRank() : 0, Type());
  Value trueValue = b.create<arith::ConstantIntOp>(loc, 1, 1);
  auto failIf = [&](OpBuilder &nb, Location l, Value holds, ValueRange coords) {
    Value fails = nb.create<arith::XOrIOp>(l, holds, trueValue);
    nb.create<scf::IfOp>(l, fails, [&](OpBuilder &tb, Location tl) {
      Value stream = tb.create<LLVM::LoadOp>(
          tl, ptr, tb.create<LLVM::AddressOfOp>(tl, ptr, "stderr").getResult());
      SmallVector<Value> args{stream, stringConstant(tb, module, tl, "kiln_assert", format),
                              op.getPidX(), op.getPidY(), op.getPidZ()};
      for (Value c : coords)
        args.push_back(tb.create<arith::IndexCastOp>(tl, tb.getI32Type(), c));
      tb.create<LLVM::CallOp>(tl, fprintf, args);
      // What print wrote to a redirected stdout is still buffered: abort would
      // lose the lines that led up to the failure.
      tb.create<LLVM::CallOp>(tl, fflush, ValueRange{tb.create<LLVM::ZeroOp>(tl, ptr)});
      tb.create<LLVM::CallOp>(tl, abort, ValueRange{});
      tb.create<scf::YieldOp>(tl);
    });
  };
  if (!tile)
    return failIf(b, loc, cond, {});
  Value holds = allTrue(b, loc, cond);
  Value fails = b.create<arith::XOrIOp>(loc, holds, trueValue);
  b.create<scf::IfOp>(loc, fails, [&](OpBuilder &tb, Location l) {
    loopNest(tb, l, tile.getShape(), [&](OpBuilder &nb, Location il, ValueRange ivs) {
      failIf(nb, il, nb.create<tensor::ExtractOp>(il, cond, ivs), ivs);
    });
    tb.create<scf::YieldOp>(l);
  });
}

Value lowerDot(OpBuilder &b, DotOp op) {
  Value x = op.getA(), y = op.getB();
  if (op.getTf32()) { // the operands as tensor cores see them
    x = roundToTF32(b, op.getLoc(), x);
    y = roundToTF32(b, op.getLoc(), y);
  }
  return b.create<linalg::MatmulOp>(op.getLoc(), ValueRange{x, y}, ValueRange{op.getAcc()})
      .getResult(0);
}

/// A block access [offsets, offsets + shape) that lies wholly inside `memory`
/// whose rows are contiguous needs no per-element guard; such blocks take a
/// fast path (plain loads and stores on a unit-stride view, which LLVM
/// vectorizes). A block with contiguous rows that crosses the tensor's edge
/// checks each lane's bounds but still addresses the unit-stride view, so LLVM
/// makes masked vector loads and stores of it without versioning the loop on
/// the stride; only rows that are not contiguous take the guarded code.
struct DenseBlock {
  Value condition;  // i1: in bounds and contiguous rows
  Value unitStride; // i1: contiguous rows
  Value contiguous; // `memory` cast to a unit innermost stride (valid when unitStride holds)
  // The same as a view whose unit stride stays in its type (a cast folds away):
  // unmasked loads read through it, so that `kiln-cpu-vectorize-tile-copies`
  // can load its rows as vectors. Stores keep the cast; through the view they
  // were slower (examples/rope.kiln: 5.4 -> 5.9 ms).
  Value unitView;
  SmallVector<Value> offsets; // as index
  SmallVector<Value> sizes;   // the memory's sizes, as index
};

DenseBlock denseBlock(OpBuilder &b, Location loc, Value memory, ValueRange offsets,
                      ArrayRef<int64_t> shape, ValueRange sizes) {
  DenseBlock block;
  Value ok;
  auto both = [&](Value x) { ok = ok ? b.create<arith::AndIOp>(loc, ok, x).getResult() : x; };
  Value zero = constI32(b, loc, 0);
  for (auto [off, size, extent] : llvm::zip(offsets, sizes, shape)) {
    both(b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::sge, off, zero));
    Value room = b.create<arith::SubIOp>(loc, size, constI32(b, loc, extent));
    both(b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::sle, off, room));
    block.offsets.push_back(b.create<arith::IndexCastOp>(loc, b.getIndexType(), off));
    block.sizes.push_back(b.create<arith::IndexCastOp>(loc, b.getIndexType(), size));
  }
  auto type = cast<MemRefType>(memory.getType());
  auto metadata = b.create<memref::ExtractStridedMetadataOp>(loc, memory);
  Value innerStride = metadata.getStrides().back();
  block.unitStride = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, innerStride,
                                             b.create<arith::ConstantIndexOp>(loc, 1));
  both(block.unitStride);
  block.condition = ok;
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(getStridesAndOffset(type, strides, offset))) {
    strides.assign(type.getRank(), ShapedType::kDynamic);
    offset = ShapedType::kDynamic;
  }
  strides.back() = 1;
  auto unitType = MemRefType::get(type.getShape(), type.getElementType(),
                                  StridedLayoutAttr::get(b.getContext(), offset, strides),
                                  type.getMemorySpace());
  auto staticOr = [&](int64_t value, Value dynamic) -> OpFoldResult {
    if (ShapedType::isDynamic(value))
      return dynamic;
    return b.getIndexAttr(value);
  };
  SmallVector<OpFoldResult> viewSizes, viewStrides;
  for (int64_t d = 0; d < type.getRank(); ++d) {
    viewSizes.push_back(staticOr(type.getDimSize(d), metadata.getSizes()[d]));
    viewStrides.push_back(staticOr(strides[d], metadata.getStrides()[d]));
  }
  block.contiguous = b.create<memref::CastOp>(loc, unitType, memory);
  block.unitView = b.create<memref::ReinterpretCastOp>(
      loc, unitType, metadata.getBaseBuffer(), staticOr(offset, metadata.getOffset()), viewSizes,
      viewStrides);
  return block;
}

/// The memory coordinates of tile element `ivs` (index values) in a dense
/// block: the tile's dimensions run along the memory's innermost ones.
SmallVector<Value> denseCoords(OpBuilder &b, Location loc, const DenseBlock &dense,
                               ValueRange ivs) {
  SmallVector<Value> coords(dense.offsets);
  size_t first = coords.size() - ivs.size();
  for (auto [d, iv] : llvm::enumerate(ivs))
    coords[first + d] = b.create<arith::AddIOp>(loc, coords[first + d], iv);
  return coords;
}

/// `then` when `condition` holds, else `otherwise`: one value, of either's type.
Value ifElse(OpBuilder &b, Location loc, Value condition,
             function_ref<Value(OpBuilder &, Location)> then,
             function_ref<Value(OpBuilder &, Location)> otherwise) {
  return b
      .create<scf::IfOp>(
          loc, condition,
          [&](OpBuilder &tb, Location l) { tb.create<scf::YieldOp>(l, then(tb, l)); },
          [&](OpBuilder &eb, Location l) { eb.create<scf::YieldOp>(l, otherwise(eb, l)); })
      .getResult(0);
}

/// Marks the memory accesses `build` creates for a tile of `type` with `mark`,
/// the number of loops around each that belong to the access: one per
/// dimension longer than 1 (canonicalization removes the loops that run once,
/// and counting them would reach the kernel's own loops around the access).
/// kiln-annotate-access-loops keeps those loops rolled (kAccessLoopsRolled) or
/// also scalar (kAccessLoopsScalar). LLVM unrolled the edge paths lane by lane and row by
/// row, and vectorized the strided one with gathers or versioned it on a unit
/// stride that the dense paths already take: code that runs for a block or two
/// at the edges cost most of a kernel's compile time.
void markAccessLoops(OpBuilder &b, Location loc, StringRef mark, RankedTensorType type,
                     function_ref<void(OpBuilder &, Location)> build) {
  int64_t loops = llvm::count_if(type.getShape(), [](int64_t d) { return d != 1; });
  Block *block = b.getInsertionBlock();
  Block::iterator first = b.getInsertionPoint();
  bool atStart = first == block->begin();
  Block::iterator before = atStart ? block->end() : std::prev(first);
  build(b, loc);
  Block::iterator begin = atStart ? block->begin() : std::next(before);
  for (Operation &op : llvm::make_range(begin, b.getInsertionPoint()))
    op.walk([&](Operation *inner) {
      if (isa<memref::LoadOp, memref::StoreOp>(inner))
        inner->setAttr(mark, b.getI64IntegerAttr(loops));
    });
}

/// Which lanes of a block access through the unit-stride view touch memory:
/// all of them (the block lies inside and no lane is masked off), or those in
/// bounds that the mask sets. A lane's coordinates are index values there: its
/// i32 coordinate `offset + i` (i >= 0) can only wrap upwards, to a negative
/// value, out of bounds, where the index one exceeds every size instead.
enum class Lanes { All, InBounds };

/// A tile of `type` read from `dense` without guards when its condition holds,
/// through the unit-stride view with a check per lane when only its rows are
/// contiguous, else by `guarded`; all paths fill one destination, so the tile
/// stays one buffer. Lanes out of bounds or masked off take `other`: its
/// lanes (a tile), itself (a scalar), or zero. A mask that is all set (the
/// usual `offs < N` away from the edge) reads as if there were none, so the
/// loads stay plain vector loads.
Value loadDenseOr(OpBuilder &b, Location loc, const DenseBlock &dense, RankedTensorType type,
                  function_ref<Value(OpBuilder &, Location, Value init)> guarded,
                  Value mask = {}, Value other = {}) {
  Value init = emptyLike(b, loc, type);
  auto read = [&](OpBuilder &tb, Location l, Lanes lanes) {
    bool otherTile = other && isa<RankedTensorType>(other.getType());
    SmallVector<Value> inputs;
    for (Value tile : {mask, otherTile ? other : Value()})
      if (tile && lanes != Lanes::All)
        inputs.push_back(tile);
    SmallVector<AffineMap> maps(inputs.size(), tb.getMultiDimIdentityMap(type.getRank()));
    return generic(tb, l, type, inputs, maps, [&](OpBuilder &nb, Location il, ValueRange args) {
      SmallVector<Value> ivs;
      for (int64_t d = 0; d < type.getRank(); ++d)
        ivs.push_back(nb.create<linalg::IndexOp>(il, d));
      SmallVector<Value> coords = denseCoords(nb, il, dense, ivs);
      if (lanes == Lanes::All) {
        nb.create<linalg::YieldOp>(il, nb.create<memref::LoadOp>(il, dense.unitView, coords)
                                           .getResult());
        return;
      }
      Value on = inBounds(nb, il, coords, dense.sizes, mask ? args[0] : Value());
      Value otherLane = otherTile ? args[mask ? 1 : 0] : other;
      // A branch, not a select: a select on f8 would be emulated through f32
      // and back, which saturates infinities. LLVM makes it a masked load.
      auto lane = nb.create<scf::IfOp>(
          il, on,
          [&](OpBuilder &tb, Location tl) {
            tb.create<scf::YieldOp>(tl, tb.create<memref::LoadOp>(tl, dense.contiguous, coords)
                                            .getResult());
          },
          [&](OpBuilder &eb, Location el) {
            eb.create<scf::YieldOp>(el, otherLane ? otherLane
                                                  : zeroOf(eb, el, type.getElementType()));
          });
      nb.create<linalg::YieldOp>(il, lane.getResult(0));
    }, init);
  };
  Value full = dense.condition;
  if (mask)
    full = b.create<arith::AndIOp>(loc, full, allTrue(b, loc, mask));
  return ifElse(
      b, loc, full, [&](OpBuilder &tb, Location l) { return read(tb, l, Lanes::All); },
      [&](OpBuilder &eb, Location l) {
        return ifElse(
            eb, l, dense.unitStride,
            [&](OpBuilder &tb, Location tl) {
              Value tile;
              markAccessLoops(tb, tl, kAccessLoopsRolled, type,
                              [&](OpBuilder &kb, Location kl) {
                                tile = read(kb, kl, Lanes::InBounds);
                              });
              return tile;
            },
            [&](OpBuilder &gb, Location gl) {
              Value tile;
              markAccessLoops(gb, gl, kAccessLoopsScalar, type,
                              [&](OpBuilder &kb, Location kl) { tile = guarded(kb, kl, init); });
              return tile;
            });
      });
}

/// `value` written to `dense` without guards when its condition holds (only
/// the lanes `mask` sets, with one; all of them when every lane is set),
/// through the unit-stride view with a check per lane when only its rows are
/// contiguous, else by `guarded`.
void storeDenseOr(OpBuilder &b, Location loc, const DenseBlock &dense, Value value,
                  function_ref<void(OpBuilder &, Location)> guarded, Value mask = {}) {
  auto type = cast<RankedTensorType>(value.getType());
  auto write = [&](OpBuilder &tb, Location l, Lanes lanes) {
    loopNest(tb, l, type.getShape(), [&](OpBuilder &nb, Location il, ValueRange ivs) {
      Value x = nb.create<tensor::ExtractOp>(il, value, ivs);
      SmallVector<Value> coords = denseCoords(nb, il, dense, ivs);
      if (lanes == Lanes::All) {
        nb.create<memref::StoreOp>(il, x, dense.contiguous, coords);
        return;
      }
      Value maskLane = mask ? nb.create<tensor::ExtractOp>(il, mask, ivs).getResult() : Value();
      Value on = inBounds(nb, il, coords, dense.sizes, maskLane);
      nb.create<scf::IfOp>(il, on, [&](OpBuilder &mb, Location ml) {
        mb.create<memref::StoreOp>(ml, x, dense.contiguous, coords);
        mb.create<scf::YieldOp>(ml);
      });
    });
  };
  auto branch = [&](OpBuilder &ob, Location ol, Value condition,
                    function_ref<void(OpBuilder &, Location)> then,
                    function_ref<void(OpBuilder &, Location)> otherwise) {
    ob.create<scf::IfOp>(
        ol, condition,
        [&](OpBuilder &tb, Location l) {
          then(tb, l);
          tb.create<scf::YieldOp>(l);
        },
        [&](OpBuilder &eb, Location l) {
          otherwise(eb, l);
          eb.create<scf::YieldOp>(l);
        });
  };
  Value full = dense.condition;
  if (mask)
    full = b.create<arith::AndIOp>(loc, full, allTrue(b, loc, mask));
  branch(b, loc, full, [&](OpBuilder &tb, Location l) { write(tb, l, Lanes::All); },
         [&](OpBuilder &eb, Location l) {
           branch(eb, l, dense.unitStride,
                  [&](OpBuilder &tb, Location tl) {
                    markAccessLoops(tb, tl, kAccessLoopsRolled, type,
                                    [&](OpBuilder &kb, Location kl) {
                                      write(kb, kl, Lanes::InBounds);
                                    });
                  },
                  [&](OpBuilder &gb, Location gl) {
                    markAccessLoops(gb, gl, kAccessLoopsScalar, type, guarded);
                  });
         });
}

/// Calls `fn` for every lane of a scatter-style store with the lane's value,
/// coordinates (`coordsAt` the lane's indices) and mask (null without one).
void forEachLane(OpBuilder &b, Location loc, RankedTensorType type,
                 function_ref<SmallVector<Value>(OpBuilder &, Location, ValueRange)> coordsAt,
                 Value mask, Value value,
                 function_ref<void(OpBuilder &, Location, Value, ValueRange, Value)> fn) {
  loopNest(b, loc, type.getShape(), [&](OpBuilder &nb, Location l, ValueRange ivs) {
    SmallVector<Value> coords = coordsAt(nb, l, ivs);
    Value m = mask ? nb.create<tensor::ExtractOp>(l, mask, ivs) : Value();
    fn(nb, l, nb.create<tensor::ExtractOp>(l, value, ivs), coords, m);
  });
}

/// A gather access that reads or writes one dense block of memory: every index
/// tile is either a splatted scalar or `s + arange(a, a + B)` (a splatted `s`
/// is optional) laid along one tile dimension, reshaped and broadcast, as
/// `x[t, r, c]` with `r = expand_dims(t0 + arange(0, BM), 1)` and
/// `c = expand_dims(off + arange(0, BN), 0)`. The tile's dimensions must run, in
/// order, along the memory's innermost ones (`denseCoords`), so such accesses
/// can take the dense fast path. Recognized on the kiln ops, before they are
/// lowered.
struct BlockIndices {
  SmallVector<Value> offsets; // i32, per memory dimension
  SmallVector<int64_t> extents;
};

/// An index tile `base + start + i_dim`, i_dim running along tile dimension
/// `dim` (`base` may be null); see BlockIndices.
struct AxisRange {
  int64_t dim;
  Value base;
  int64_t start;
};

bool fitsI32(int64_t v) {
  return v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max();
}

/// The value of every element of an integer tile that is a splat constant.
std::optional<int64_t> constantSplat(Value tile) {
  SplatElementsAttr splat;
  if (!matchPattern(tile, m_Constant(&splat)) || !isa<IntegerType>(splat.getElementType()))
    return std::nullopt;
  return splat.getSplatValue<APInt>().getSExtValue();
}

std::optional<AxisRange> axisRange(Value index) {
  Operation *def = index.getDefiningOp();
  auto type = dyn_cast<RankedTensorType>(index.getType());
  if (!def || !type)
    return std::nullopt;
  if (auto arange = dyn_cast<ArangeOp>(def))
    return AxisRange{0, Value(), arange.getFirst()};
  // A constant added or subtracted moves the start (kept within i32, where the
  // index arithmetic happens).
  auto shifted = [](std::optional<AxisRange> range, int64_t by) -> std::optional<AxisRange> {
    if (!range || !fitsI32(range->start + by))
      return std::nullopt;
    range->start += by;
    return range;
  };
  if (auto sub = dyn_cast<arith::SubIOp>(def)) {
    std::optional<int64_t> c = constantSplat(sub.getRhs());
    return c ? shifted(axisRange(sub.getLhs()), -*c) : std::nullopt;
  }
  if (auto add = dyn_cast<arith::AddIOp>(def)) {
    for (auto [x, y] : {std::pair{add.getLhs(), add.getRhs()}, {add.getRhs(), add.getLhs()}})
      if (std::optional<int64_t> c = constantSplat(x))
        return shifted(axisRange(y), *c);
    for (auto [x, y] : {std::pair{add.getLhs(), add.getRhs()}, {add.getRhs(), add.getLhs()}}) {
      auto splat = x.getDefiningOp<SplatOp>();
      std::optional<AxisRange> range = splat ? axisRange(y) : std::nullopt;
      if (range && !range->base) {
        range->base = splat.getValue();
        return range;
      }
    }
    return std::nullopt;
  }
  // Broadcasts keep the dimension; a reshape moves it where only ones surround it.
  if (auto broadcast = dyn_cast<BroadcastOp>(def)) {
    std::optional<AxisRange> range = axisRange(broadcast.getSource());
    if (!range ||
        broadcast.getSource().getType().getDimSize(range->dim) != type.getDimSize(range->dim))
      return std::nullopt;
    return range;
  }
  if (isa<ReshapeOp, ExpandDimsOp>(def)) {
    Value source = def->getOperand(0);
    std::optional<AxisRange> range = axisRange(source);
    int64_t n = range ? cast<RankedTensorType>(source.getType()).getDimSize(range->dim) : 0;
    if (!range || cast<RankedTensorType>(source.getType()).getNumElements() != n)
      return std::nullopt;
    auto it = llvm::find(type.getShape(), n);
    if (it == type.getShape().end() || type.getNumElements() != n)
      return std::nullopt;
    range->dim = it - type.getShape().begin();
    return range;
  }
  return std::nullopt;
}

/// The i32 memory coordinates of tile element `ivs` (index values) of a block
/// access: each offset plus the element's position along its tile dimension,
/// the same values the index tiles hold (their wrap-around included), without
/// building those tiles.
SmallVector<Value> blockCoords(OpBuilder &b, Location loc, const BlockIndices &block,
                               ValueRange ivs) {
  SmallVector<Value> coords(block.offsets);
  size_t first = coords.size() - ivs.size();
  for (auto [d, iv] : llvm::enumerate(ivs)) {
    Value i = b.create<arith::IndexCastOp>(loc, b.getI32Type(), iv);
    coords[first + d] = b.create<arith::AddIOp>(loc, coords[first + d], i);
  }
  return coords;
}

/// The coordinates the index tiles `indices` hold at tile element `ivs`.
SmallVector<Value> tileCoords(OpBuilder &b, Location loc, ValueRange indices, ValueRange ivs) {
  SmallVector<Value> coords;
  for (Value index : indices)
    coords.push_back(b.create<tensor::ExtractOp>(loc, index, ivs));
  return coords;
}

std::optional<BlockIndices> blockIndices(OpBuilder &b, Location loc, ValueRange indices,
                                     Type tileType) {
  auto tile = dyn_cast<RankedTensorType>(tileType);
  if (!tile || indices.size() < static_cast<size_t>(tile.getRank()))
    return std::nullopt;
  // Memory dimension `first + d` runs along tile dimension d.
  size_t first = indices.size() - tile.getRank();
  BlockIndices seg;
  for (auto [d, index] : llvm::enumerate(indices)) {
    if (cast<RankedTensorType>(index.getType()).getShape() != tile.getShape())
      return std::nullopt;
    int64_t extent = d < first ? 1 : tile.getDimSize(d - first);
    if (auto splat = index.getDefiningOp<SplatOp>(); splat && extent == 1) {
      // A scalar that a kiln op computes (a load, a reduction, an atomic) is
      // held through an op of this access's own (+ 0): that op may be lowered
      // and replaced before this access is, and only a use follows that.
      Value row = splat.getValue();
      if (Operation *def = row.getDefiningOp(); def && isa<KilnDialect>(def->getDialect()))
        row = b.create<arith::AddIOp>(loc, row, constI32(b, loc, 0));
      seg.offsets.push_back(row);
      seg.extents.push_back(1);
      continue;
    }
    std::optional<AxisRange> range = axisRange(index);
    if (!range || d < first || range->dim != static_cast<int64_t>(d - first))
      return std::nullopt;
    Value start = constI32(b, loc, range->start); // an op of its own holds range->base
    seg.offsets.push_back(range->base ? b.create<arith::AddIOp>(loc, range->base, start).getResult()
                                      : start);
    seg.extents.push_back(extent);
  }
  return seg;
}

Value lowerLoad(OpBuilder &b, LoadOp op, const std::optional<BlockIndices> &block) {
  Location loc = op.getLoc();
  SmallVector<Value> sizes = memorySizes(b, loc, op.getMemory());
  Value memory = op.getMemory();
  auto type = dyn_cast<RankedTensorType>(op.getType());
  if (!type)
    return guardedLoad(b, loc, memory, op.getIndices(), sizes, op.getMask(), op.getOther());

  SmallVector<Value> inputs(op.getIndices());
  unsigned numIndices = inputs.size();
  bool hasMask = static_cast<bool>(op.getMask());
  bool hasOther = static_cast<bool>(op.getOther());
  if (hasMask)
    inputs.push_back(op.getMask());
  if (hasOther)
    inputs.push_back(op.getOther());
  SmallVector<AffineMap> maps(inputs.size(), b.getMultiDimIdentityMap(type.getRank()));
  auto guarded = [&](OpBuilder &gb, Location gl, Value init) {
    return generic(gb, gl, type, inputs, maps, [&](OpBuilder &nb, Location l, ValueRange args) {
      ValueRange coords = args.take_front(numIndices);
      Value mask = hasMask ? args[numIndices] : Value();
      Value other = hasOther ? args[numIndices + hasMask] : Value();
      nb.create<linalg::YieldOp>(l, guardedLoad(nb, l, memory, coords, sizes, mask, other));
    }, init);
  };
  if (!block)
    return guarded(b, loc, Value());
  // A block inside the tensor reads without guards (see denseBlock).
  DenseBlock dense = denseBlock(b, loc, memory, block->offsets, block->extents, sizes);
  return loadDenseOr(b, loc, dense, type, guarded, op.getMask(), op.getOther());
}

Value lowerLoadBlock(OpBuilder &b, LoadBlockOp op) {
  Location loc = op.getLoc();
  SmallVector<Value> sizes = memorySizes(b, loc, op.getMemory());
  Value memory = op.getMemory(), other = op.getOther();
  SmallVector<Value> offsets(op.getOffsets());
  RankedTensorType type = op.getType();
  DenseBlock dense = denseBlock(b, loc, memory, offsets, type.getShape(), sizes);
  return loadDenseOr(b, loc, dense, type, [&](OpBuilder &eb, Location l, Value init) {
    return generic(eb, l, type, {}, {}, [&](OpBuilder &nb, Location il, ValueRange) {
      SmallVector<Value> coords;
      for (auto [d, off] : llvm::enumerate(offsets)) {
        Value i = nb.create<linalg::IndexOp>(il, d);
        Value i32 = nb.create<arith::IndexCastOp>(il, nb.getI32Type(), i);
        coords.push_back(nb.create<arith::AddIOp>(il, off, i32));
      }
      nb.create<linalg::YieldOp>(il, guardedLoad(nb, il, memory, coords, sizes, Value(), other));
    }, init);
  }, /*mask=*/Value(), other);
}

void lowerStore(OpBuilder &b, StoreOp op, const std::optional<BlockIndices> &block) {
  Location loc = op.getLoc();
  SmallVector<Value> sizes = memorySizes(b, loc, op.getMemory());
  auto type = dyn_cast<RankedTensorType>(op.getValue().getType());
  if (!type)
    return guardedStore(b, loc, op.getValue(), op.getMemory(), op.getIndices(), sizes,
                        op.getMask());
  auto guarded = [&](OpBuilder &gb, Location gl) {
    // A block store's guarded path computes each lane's coordinates rather
    // than reading index tiles, which then need not be built at all (measured:
    // softmax 5.5 -> 3.3 ms on one thread). Loads keep reading them: there LLVM
    // turns the guarded path into vector gathers, and computed coordinates made
    // linear_recurrence_loop slower.
    auto coordsAt = [&](OpBuilder &nb, Location l, ValueRange ivs) {
      return block ? blockCoords(nb, l, *block, ivs) : tileCoords(nb, l, op.getIndices(), ivs);
    };
    forEachLane(gb, gl, type, coordsAt, op.getMask(), op.getValue(),
                [&](OpBuilder &nb, Location l, Value value, ValueRange coords, Value mask) {
                  guardedStore(nb, l, value, op.getMemory(), coords, sizes, mask);
                });
  };
  if (!block)
    return guarded(b, loc);
  DenseBlock dense = denseBlock(b, loc, op.getMemory(), block->offsets, block->extents, sizes);
  storeDenseOr(b, loc, dense, op.getValue(), guarded, op.getMask());
}

/// A gather whose index along its axis is each lane's own position plus a
/// constant (`pos - s`, as in the trees `reduce` and `associative_scan` build),
/// or one constant for every lane: lane i reads element
/// `(followsAxis ? i : 0) + offset` along the axis, an address affine in the
/// loop indices (contiguous rows that vectorize) rather than one read from an
/// index tile.
struct GatherShift {
  bool followsAxis;
  int64_t offset;
};

std::optional<GatherShift> gatherShift(GatherOp op) {
  if (std::optional<int64_t> c = constantSplat(op.getIndex()))
    return GatherShift{false, *c};
  std::optional<AxisRange> range = axisRange(op.getIndex());
  if (!range || range->base || range->dim != static_cast<int64_t>(op.getAxis()))
    return std::nullopt;
  return GatherShift{true, range->start};
}

Value lowerGather(OpBuilder &b, GatherOp op, std::optional<GatherShift> shift) {
  RankedTensorType src = op.getSource().getType();
  int64_t axis = op.getAxis();
  Type elem = src.getElementType();
  SmallVector<Value> inputs;
  SmallVector<AffineMap> maps;
  if (!shift) {
    inputs.push_back(op.getIndex());
    maps.push_back(b.getMultiDimIdentityMap(src.getRank()));
  }
  return generic(b, op.getLoc(), op.getType(), inputs, maps,
                 [&](OpBuilder &nb, Location l, ValueRange args) {
                   SmallVector<Value> coords;
                   for (int64_t d = 0; d < src.getRank(); ++d)
                     coords.push_back(nb.create<linalg::IndexOp>(l, d));
                   Value at;
                   if (shift) {
                     Value offset = nb.create<arith::ConstantIndexOp>(l, shift->offset);
                     if (!shift->followsAxis) { // known here: in range or not
                       coords[axis] = offset;
                       bool inRange = shift->offset >= 0 && shift->offset < src.getDimSize(axis);
                       nb.create<linalg::YieldOp>(
                           l, inRange ? nb.create<tensor::ExtractOp>(l, op.getSource(), coords)
                                            .getResult()
                                      : zeroOf(nb, l, elem));
                       return;
                     }
                     at = nb.create<arith::AddIOp>(l, coords[axis], offset);
                   } else {
                     at = nb.create<arith::IndexCastOp>(l, nb.getIndexType(), args[0]);
                   }
                   // One unsigned compare: negative indices wrap high.
                   Value ok = nb.create<arith::CmpIOp>(
                       l, arith::CmpIPredicate::ult, at,
                       nb.create<arith::ConstantIndexOp>(l, src.getDimSize(axis)));
                   if (shift) {
                     // A branch around an affine address: LLVM makes it a masked
                     // vector load, which a clamped address would prevent.
                     coords[axis] = at;
                     auto lane = nb.create<scf::IfOp>(
                         l, ok,
                         [&](OpBuilder &tb, Location tl) {
                           tb.create<scf::YieldOp>(
                               tl, tb.create<tensor::ExtractOp>(tl, op.getSource(), coords)
                                       .getResult());
                         },
                         [&](OpBuilder &eb, Location el) {
                           eb.create<scf::YieldOp>(el, zeroOf(eb, el, elem));
                         });
                     nb.create<linalg::YieldOp>(l, lane.getResult(0));
                     return;
                   }
                   coords[axis] = nb.create<arith::SelectOp>(
                       l, ok, at, nb.create<arith::ConstantIndexOp>(l, 0));
                   Value v = nb.create<tensor::ExtractOp>(l, op.getSource(), coords);
                   nb.create<linalg::YieldOp>(
                       l, nb.create<arith::SelectOp>(l, ok, v, zeroOf(nb, l, elem)).getResult());
                 });
}

/// One lane's update in an atomic's lowering: the memref atomic on element
/// `coords` of the lane's `operands` (value, and compare for a compare-and-swap);
/// returns the element's old value.
using LaneUpdate = function_ref<Value(OpBuilder &, Location, ValueRange operands,
                                      ValueRange coords)>;

/// Lowers a scatter-style atomic whose per-lane operands are `operands` (tiles,
/// or scalars for a scalar view): `update` runs for every in-bounds, unmasked
/// lane. Returns the old values, 0 in the other lanes, or null when `old` is
/// unused (then no tile of them is built).
Value lowerAtomicLanes(OpBuilder &b, Location loc, Value memory, ValueRange indices, Value mask,
                       ValueRange operands, Value old, LaneUpdate update) {
  SmallVector<Value> sizes = memorySizes(b, loc, memory);
  Type elem = getElementTypeOrSelf(old.getType());
  bool needOld = !old.use_empty();
  // Programs run in parallel on the thread pool, so each update is atomic.
  auto lane = [&](OpBuilder &nb, Location l, ValueRange laneOperands, ValueRange coords,
                  Value laneMask) -> Value {
    Value ok = inBounds(nb, l, coords, sizes, laneMask);
    SmallVector<Type> types;
    if (needOld)
      types.push_back(elem);
    auto ifOp = nb.create<scf::IfOp>(l, types, ok, /*withElseRegion=*/needOld);
    OpBuilder tb = ifOp.getThenBodyBuilder();
    Value o = update(tb, l, laneOperands, coords);
    if (!needOld)
      return Value();
    tb.create<scf::YieldOp>(l, SmallVector<Value>{o});
    OpBuilder eb = ifOp.getElseBodyBuilder();
    eb.create<scf::YieldOp>(l, SmallVector<Value>{zeroOf(eb, l, elem)});
    return ifOp.getResult(0);
  };
  auto type = dyn_cast<RankedTensorType>(old.getType());
  if (!type)
    return lane(b, loc, operands, indices, mask);

  // The lane at `ivs`: its operands, coordinates and mask, then its update.
  auto atLane = [&](OpBuilder &nb, Location l, ValueRange ivs) {
    auto extract = [&](Value tile) -> Value { return nb.create<tensor::ExtractOp>(l, tile, ivs); };
    SmallVector<Value> laneOperands = llvm::map_to_vector(operands, extract);
    SmallVector<Value> coords = llvm::map_to_vector(indices, extract);
    return lane(nb, l, laneOperands, coords, mask ? extract(mask) : Value());
  };
  if (!needOld) {
    loopNest(b, loc, type.getShape(), [&](OpBuilder &nb, Location l, ValueRange ivs) {
      atLane(nb, l, ivs);
    });
    return Value();
  }
  SmallVector<Value> lbs, ubs, steps;
  for (int64_t d : type.getShape()) {
    lbs.push_back(b.create<arith::ConstantIndexOp>(loc, 0));
    ubs.push_back(b.create<arith::ConstantIndexOp>(loc, d));
    steps.push_back(b.create<arith::ConstantIndexOp>(loc, 1));
  }
  Value zeros = b.create<arith::ConstantOp>(
      loc, DenseElementsAttr::get(type, cast<TypedAttr>(b.getZeroAttr(elem))));
  scf::LoopNest nest = scf::buildLoopNest(
      b, loc, lbs, ubs, steps, SmallVector<Value>{zeros},
      [&](OpBuilder &nb, Location l, ValueRange ivs, ValueRange carried) -> scf::ValueVector {
        return {nb.create<tensor::InsertOp>(l, atLane(nb, l, ivs), carried[0], ivs)};
      });
  return nest.results[0];
}

Value lowerAtomic(OpBuilder &b, AtomicRMWOp op) {
  return lowerAtomicLanes(
      b, op.getLoc(), op.getMemory(), op.getIndices(), op.getMask(), op.getValue(), op.getOld(),
      [&](OpBuilder &nb, Location l, ValueRange operands, ValueRange coords) -> Value {
        // An xor lane (a generic_atomic_rmw, whose region buffer deallocation
        // cannot see into) and a float max/min lane (a compare-and-swap loop
        // of the bits, which propagates NaN) stay scalar kiln ops until after
        // deallocation, as a compare-and-swap does (kiln-lower-compare-and-swap).
        bool floatMinMax = isa<FloatType>(operands[0].getType()) &&
                           (op.getKind() == ReduceKind::Max || op.getKind() == ReduceKind::Min);
        if (op.getKind() == ReduceKind::Xor || floatMinMax)
          return nb.create<AtomicRMWOp>(l, op.getKind(), op.getMemory(), operands[0], coords,
                                        Value());
        return atomicUpdate(nb, l, op.getKind(), operands[0], op.getMemory(),
                            toIndex(nb, l, coords));
      });
}

Value lowerAtomicSwap(OpBuilder &b, AtomicSwapOp op) {
  SmallVector<Value> operands{op.getValue()};
  if (op.getCompare())
    operands.push_back(op.getCompare());
  return lowerAtomicLanes(
      b, op.getLoc(), op.getMemory(), op.getIndices(), op.getMask(), operands, op.getOld(),
      [&](OpBuilder &nb, Location l, ValueRange lane, ValueRange coords) -> Value {
        if (lane.size() == 1)
          return nb.create<memref::AtomicRMWOp>(l, arith::AtomicRMWKind::assign, lane[0],
                                                op.getMemory(), toIndex(nb, l, coords));
        // A compare-and-swap lane stays a scalar kiln op until after buffer
        // deallocation (kiln-lower-compare-and-swap).
        return nb.create<AtomicSwapOp>(l, op.getMemory(), lane[0], coords, lane[1], Value());
      });
}

void lowerStoreBlock(OpBuilder &b, StoreBlockOp op) {
  Location loc = op.getLoc();
  SmallVector<Value> sizes = memorySizes(b, loc, op.getMemory());
  auto type = op.getValue().getType();
  DenseBlock dense = denseBlock(b, loc, op.getMemory(), op.getOffsets(), type.getShape(), sizes);
  storeDenseOr(b, loc, dense, op.getValue(), [&](OpBuilder &eb, Location l) {
    loopNest(eb, l, type.getShape(), [&](OpBuilder &nb, Location il, ValueRange ivs) {
      SmallVector<Value> coords;
      for (auto [off, iv] : llvm::zip(op.getOffsets(), ivs)) {
        Value i32 = nb.create<arith::IndexCastOp>(il, nb.getI32Type(), iv);
        coords.push_back(nb.create<arith::AddIOp>(il, off, i32));
      }
      Value value = nb.create<tensor::ExtractOp>(il, op.getValue(), ivs);
      guardedStore(nb, il, value, op.getMemory(), coords, sizes, Value());
    });
  });
}

struct ConvertKilnToLinalg : kiln::impl::ConvertKilnToLinalgBase<ConvertKilnToLinalg> {
  void runOnOperation() override {
    SmallVector<Operation *> worklist;
    getOperation().walk([&](Operation *op) {
      if (op->getDialect() && isa<KilnDialect>(op->getDialect()))
        worklist.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    SymbolTableCollection symbols;
    // Dense blocks and shifted gathers are recognized on the kiln ops that
    // compute the indices, before those are lowered.
    llvm::DenseMap<Operation *, BlockIndices> blocks;
    llvm::DenseMap<Operation *, GatherShift> shifts;
    for (Operation *op : worklist) {
      rewriter.setInsertionPoint(op);
      std::optional<BlockIndices> seg;
      if (auto load = dyn_cast<LoadOp>(op))
        seg = blockIndices(rewriter, op->getLoc(), load.getIndices(), load.getType());
      else if (auto store = dyn_cast<StoreOp>(op))
        seg = blockIndices(rewriter, op->getLoc(), store.getIndices(), store.getValue().getType());
      if (seg)
        blocks[op] = std::move(*seg);
      if (auto gather = dyn_cast<GatherOp>(op))
        if (std::optional<GatherShift> shift = gatherShift(gather))
          shifts[op] = *shift;
    }
    auto blockOf = [&](Operation *op) -> std::optional<BlockIndices> {
      auto it = blocks.find(op);
      if (it == blocks.end())
        return std::nullopt;
      return it->second;
    };
    for (Operation *op : worklist) {
      rewriter.setInsertionPoint(op);
      Value replacement;
      if (auto o = dyn_cast<ArangeOp>(op)) replacement = lowerArange(rewriter, o);
      else if (auto o = dyn_cast<SplatOp>(op)) replacement = lowerSplat(rewriter, o);
      else if (auto o = dyn_cast<BroadcastOp>(op)) replacement = lowerBroadcast(rewriter, o);
      else if (auto o = dyn_cast<ExpandDimsOp>(op))
        replacement = rewriter.create<tensor::ExpandShapeOp>(
            o.getLoc(), o.getType(), o.getSource(),
            getReassociationIndicesForReshape(o.getSource().getType(), o.getType()).value());
      else if (auto o = dyn_cast<ReshapeOp>(op))
        replacement = reshapeTensor(rewriter, o.getLoc(), o.getSource(), o.getType());
      else if (auto o = dyn_cast<TransOp>(op)) replacement = lowerTrans(rewriter, o);
      else if (auto o = dyn_cast<GatherOp>(op)) {
        auto it = shifts.find(op);
        replacement = lowerGather(rewriter, o,
                                  it == shifts.end() ? std::nullopt
                                                     : std::optional<GatherShift>(it->second));
      }
      else if (auto o = dyn_cast<ReduceOp>(op)) replacement = lowerReduce(rewriter, o);
      else if (auto o = dyn_cast<ScanOp>(op)) replacement = lowerScan(rewriter, o);
      else if (auto o = dyn_cast<AssociativeScanOp>(op)) {
        auto fn = symbols.lookupNearestSymbolFrom<func::FuncOp>(o, o.getCombineAttr());
        if (!fn || fn.getBody().getBlocks().size() != 1) {
          o.emitOpError("needs a single-block combine function");
          return signalPassFailure();
        }
        rewriter.replaceOp(op, lowerAssociativeScan(rewriter, o, fn));
        continue;
      }
      else if (auto o = dyn_cast<DotOp>(op)) replacement = lowerDot(rewriter, o);
      else if (auto o = dyn_cast<LoadOp>(op)) replacement = lowerLoad(rewriter, o, blockOf(op));
      else if (auto o = dyn_cast<LoadBlockOp>(op)) replacement = lowerLoadBlock(rewriter, o);
      else if (auto o = dyn_cast<StoreOp>(op)) lowerStore(rewriter, o, blockOf(op));
      else if (auto o = dyn_cast<StoreBlockOp>(op)) lowerStoreBlock(rewriter, o);
      else if (auto o = dyn_cast<AtomicRMWOp>(op)) replacement = lowerAtomic(rewriter, o);
      else if (auto o = dyn_cast<AtomicSwapOp>(op)) replacement = lowerAtomicSwap(rewriter, o);
      else if (auto o = dyn_cast<PrintOp>(op)) lowerPrint(rewriter, o);
      else if (auto o = dyn_cast<AssertOp>(op)) lowerAssert(rewriter, o);
      else {
        op->emitOpError("has no CPU lowering (run kiln-lower-program-ids first?)");
        return signalPassFailure();
      }
      if (replacement)
        rewriter.replaceOp(op, replacement);
      else
        rewriter.eraseOp(op);
    }
  }
};

} // namespace
