//===- ExchangeToGPU.cpp - ops that move elements between threads ---------===//
//
// broadcast, trans, reduce, scan and dot need elements other threads hold. They
// go through shared memory: every thread writes its registers at their row-major
// element index, a barrier, every thread reads what its result registers need, and
// a barrier again so the buffer can be reused. Whole-tile reductions instead
// combine in registers, then across the subgroup (shuffle butterflies or a
// subgroup reduction), and only exchange one partial per subgroup.
//
//===----------------------------------------------------------------------===//

#include "passes/Common.h"
#include "passes/GPU/Lowering.h"
#include "passes/GPU/SharedMemory.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/ROCDLDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include "llvm/ADT/MapVector.h"

#include <numeric>

using namespace mlir;
using namespace kiln;
using namespace kiln::gpu;

Value ThreadEmitter::sharedBuffer(Type elementType) {
  return shared.lookup(sharedStorageType(elementType));
}

void ThreadEmitter::barrier(bool deviceMemory) {
  auto op = b.create<mlir::gpu::BarrierOp>(loc);
  if (deviceMemory)
    op->setAttr(gpu::kDeviceMemoryBarrierAttr, b.getUnitAttr());
}

Value ThreadEmitter::toSharedStorage(Value v) {
  Type type = v.getType(), storage = sharedStorageType(type);
  if (type.isInteger(1))
    v = b.create<arith::ExtUIOp>(loc, b.getI32Type(), v);
  if (v.getType() != storage)
    v = b.create<arith::BitcastOp>(loc, storage, v);
  return v;
}

void ThreadEmitter::writeShared(const Registers &regs, int64_t numElements, Type type,
                                int64_t base, function_ref<Value(Value)> place,
                                int64_t together) {
  Value runStart;
  for (auto [r, v] : llvm::enumerate(regs)) {
    Value at = elementIndex(r);
    if (place && r % together == 0)
      at = runStart = place(at);
    else if (place)
      at = b.create<arith::AddIOp>(loc, runStart, i32(r % together));
    writeSharedAt(v, b.create<arith::AddIOp>(loc, at, i32(base)), registerValid(r, numElements),
                  type);
  }
}

void ThreadEmitter::writeSharedAt(Value v, Value index, Value valid, Type type) {
  Value stored = toSharedStorage(v), buffer = sharedBuffer(type);
  emitIfElse(
      valid, {},
      [&]() -> SmallVector<Value> {
        Value i = b.create<arith::IndexCastOp>(loc, b.getIndexType(), index);
        b.create<memref::StoreOp>(loc, stored, buffer, i);
        return {};
      },
      nullptr);
}

Value ThreadEmitter::readShared(Value index, Type type) {
  Value i = b.create<arith::IndexCastOp>(loc, b.getIndexType(), index);
  Value v = b.create<memref::LoadOp>(loc, sharedBuffer(type), i);
  if (type.isInteger(1) || type.isInteger(32))
    v = b.create<arith::BitcastOp>(loc, b.getI32Type(), v);
  if (type.isInteger(1))
    v = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ne, v, i32(0));
  return v;
}

/// The index of a result register's element, or 0 for registers past the tile's
/// end (their values are never used, but they must read inside the buffer).
static Value clampedIndex(OpBuilder &b, Location loc, Value index, Value valid) {
  return b.create<arith::SelectOp>(loc, valid, index, b.create<arith::ConstantIntOp>(loc, 0, 32));
}

/// elements[index] (index an i32 below elements.size(), or any value for a
/// register past the tile), as a chain of selects.
static Value pick(OpBuilder &b, Location loc, ArrayRef<Value> elements, Value index) {
  Value v = elements[0];
  for (int64_t i = 1; i < int64_t(elements.size()); ++i) {
    Value at = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, index,
                                       b.create<arith::ConstantIntOp>(loc, i, 32));
    v = b.create<arith::SelectOp>(loc, at, elements[i], v);
  }
  return v;
}

/// Emits `for k in [0, count): acc = body(k, acc)` (k and count are i32) and returns
/// the final acc. The loop itself counts in index, as SPIR-V's lowering expects.
template <typename Body>
static Value foldLoop(OpBuilder &b, Location loc, Value count, Value init, Body body) {
  Value zero = b.create<arith::ConstantIndexOp>(loc, 0);
  Value one = b.create<arith::ConstantIndexOp>(loc, 1);
  Value end = b.create<arith::IndexCastOp>(loc, b.getIndexType(), count);
  auto loop = b.create<scf::ForOp>(loc, zero, end, one, ValueRange{init});
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  Value k = b.create<arith::IndexCastOp>(loc, b.getI32Type(), loop.getInductionVar());
  b.create<scf::YieldOp>(loc, body(k, loop.getRegionIterArgs()[0]));
  return loop.getResult(0);
}

Registers ThreadEmitter::exchange(Value source, RankedTensorType result,
                                  function_ref<Value(ArrayRef<Value>)> compute) {
  auto src = cast<RankedTensorType>(source.getType());
  writeShared(regs(source), src.getNumElements(), src.getElementType());
  return readExchanged(result, compute);
}

Registers ThreadEmitter::readExchanged(RankedTensorType result,
                                       function_ref<Value(ArrayRef<Value>)> compute) {
  barrier();
  Registers out;
  for (int64_t r = 0, n = registers(result); r < n; ++r) {
    Value e = clampedIndex(b, loc, elementIndex(r), registerValid(r, result.getNumElements()));
    out.push_back(compute(delinearize(e, result.getShape())));
  }
  barrier();
  return out;
}

void ThreadEmitter::emitBroadcast(BroadcastOp op) {
  auto src = op.getSource().getType();
  auto sourceIndex = [&](ArrayRef<Value> at) {
    SmallVector<Value> index(at);
    for (int64_t d = 0; d < src.getRank(); ++d)
      if (src.getDimSize(d) == 1)
        index[d] = i32(0);
    return linearize(index, src.getShape());
  };
  if (auto held = heldByEveryThread.find(op.getSource()); held != heldByEveryThread.end()) {
    // Every thread holds the source's elements: no exchange. Along the last
    // axis of rows that span whole waves, a register's row is the same on every
    // thread; otherwise the element is picked by its index.
    SmallVector<Value> elements = held->second;
    auto dst = op.getType();
    int64_t row = dst.getShape().back(), wave = layout.getVec() * layout.getThreads();
    bool lastAxisOnly = src.getShape().back() == 1 && row % wave == 0 &&
                        src.getShape().drop_back() == dst.getShape().drop_back();
    Registers out;
    for (int64_t r = 0, count = registers(dst); r < count; ++r) {
      if (lastAxisOnly) {
        out.push_back(elements[layout.elementOfRegister(r) / row]);
        continue;
      }
      Value e = clampedIndex(b, loc, elementIndex(r), registerValid(r, dst.getNumElements()));
      out.push_back(pick(b, loc, elements, sourceIndex(delinearize(e, dst.getShape()))));
    }
    tiles[op.getResult()] = std::move(out);
    return;
  }
  tiles[op.getResult()] = exchange(op.getSource(), op.getType(), [&](ArrayRef<Value> at) {
    return readShared(sourceIndex(at), src.getElementType());
  });
}

void ThreadEmitter::emitGather(GatherOp op) {
  RankedTensorType src = op.getSource().getType(), result = op.getType();
  int64_t axis = op.getAxis();
  Type elem = src.getElementType();
  writeShared(regs(op.getSource()), src.getNumElements(), elem);
  barrier();
  Registers index = regs(op.getIndex()); // the result's shape, so the same elements
  Value zero = b.create<arith::ConstantOp>(loc, b.getZeroAttr(elem));
  Registers out;
  for (int64_t r = 0, n = registers(result); r < n; ++r) {
    Value e = clampedIndex(b, loc, elementIndex(r), registerValid(r, result.getNumElements()));
    SmallVector<Value> at = delinearize(e, result.getShape());
    // One unsigned compare: negative indices wrap high; outside reads element 0.
    Value ok = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ult, index[r],
                                       i32(src.getDimSize(axis)));
    at[axis] = b.create<arith::SelectOp>(loc, ok, index[r], i32(0));
    Value v = readShared(linearize(at, src.getShape()), elem);
    out.push_back(b.create<arith::SelectOp>(loc, ok, v, zero));
  }
  barrier();
  tiles[op.getResult()] = std::move(out);
}

void ThreadEmitter::emitTrans(TransOp op) {
  auto src = op.getSource().getType();
  tiles[op.getResult()] = exchange(op.getSource(), op.getType(), [&](ArrayRef<Value> at) {
    SmallVector<Value> index(at.size());
    for (auto [i, p] : llvm::enumerate(op.getPerm()))
      index[p] = at[i];
    return readShared(linearize(index, src.getShape()), src.getElementType());
  });
}

/// The subgroup-reduction kind for a kiln reduction of `type`.
static mlir::gpu::AllReduceOperation subgroupKind(ReduceKind kind, Type type) {
  bool f = isa<FloatType>(type);
  switch (kind) {
  case ReduceKind::Sum: return mlir::gpu::AllReduceOperation::ADD;
  case ReduceKind::Prod: return mlir::gpu::AllReduceOperation::MUL;
  case ReduceKind::Max:
    return f ? mlir::gpu::AllReduceOperation::MAXNUMF : mlir::gpu::AllReduceOperation::MAXSI;
  case ReduceKind::Min:
    return f ? mlir::gpu::AllReduceOperation::MINNUMF : mlir::gpu::AllReduceOperation::MINSI;
  case ReduceKind::UMax: return mlir::gpu::AllReduceOperation::MAXUI;
  case ReduceKind::UMin: return mlir::gpu::AllReduceOperation::MINUI;
  case ReduceKind::And: return mlir::gpu::AllReduceOperation::AND;
  case ReduceKind::Or: return mlir::gpu::AllReduceOperation::OR;
  case ReduceKind::Xor: return mlir::gpu::AllReduceOperation::XOR;
  }
  return mlir::gpu::AllReduceOperation::ADD;
}

Value ThreadEmitter::reduceWholeTile(const Registers &values, int64_t numElements,
                                     ReduceKind kind, Type type) {
  // Shuffles move 32- or 64-bit values; narrower types are combined widened
  // (unsigned max/min zero-extended).
  Type wide = type;
  if (type.getIntOrFloatBitWidth() < 32)
    wide = isa<FloatType>(type) ? (Type)b.getF32Type() : (Type)b.getI32Type();
  auto widen = [&](Value v) -> Value {
    if (wide == type)
      return v;
    if (isa<FloatType>(type))
      return b.create<arith::ExtFOp>(loc, wide, v);
    if (kind == ReduceKind::UMax || kind == ReduceKind::UMin)
      return b.create<arith::ExtUIOp>(loc, wide, v);
    return b.create<arith::ExtSIOp>(loc, wide, v);
  };
  // The identity of the tile's type, widened: a subgroup with no elements
  // stores its partial narrowed, and the wide type's own identity would not
  // survive that (i32's largest value is -1 as an i8).
  Value neutral = widen(identity(kind, type));
  Value partial = neutral;
  for (auto [r, v] : llvm::enumerate(values)) {
    Value x = widen(v);
    Value valid = registerValid(r, numElements);
    x = b.create<arith::SelectOp>(loc, valid, x, neutral);
    partial = combine(kind, x, partial);
  }

  Value lane, group, groups;
  if (nativeSubgroupReduce) {
    // SPIR-V's GroupNonUniformFMax/FMin leave NaN inputs undefined (lavapipe
    // returns the identity), so float max/min carry an "any lane NaN" flag of
    // their own and restore the NaN that IEEE maximum/minimum propagate.
    Value anyNaN;
    bool floatMinMax = isa<FloatType>(wide) && (kind == ReduceKind::Max || kind == ReduceKind::Min);
    if (floatMinMax) {
      Value isNaN = b.create<arith::CmpFOp>(loc, arith::CmpFPredicate::UNO, partial, partial);
      Value flag = b.create<arith::ExtUIOp>(loc, b.getI32Type(), isNaN);
      flag = b.create<mlir::gpu::SubgroupReduceOp>(loc, flag, mlir::gpu::AllReduceOperation::MAXUI,
                                                   /*uniform=*/false);
      anyNaN = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ne, flag, i32(0));
    }
    // A subgroup add may start from +0.0 (lavapipe's does), which turns a sum
    // of negative zeros positive: such a sum is -0.0, which IEEE gives and the
    // shuffles keep, when every lane's partial is -0.0.
    Value allNegativeZero;
    if (isa<FloatType>(wide) && kind == ReduceKind::Sum) {
      auto bitsType = b.getIntegerType(wide.getIntOrFloatBitWidth());
      Value bits = b.create<arith::BitcastOp>(loc, bitsType, partial);
      Value sign = b.create<arith::ConstantOp>(
          loc, b.getIntegerAttr(bitsType, APInt::getSignMask(bitsType.getWidth())));
      Value isNegativeZero = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, bits, sign);
      Value flag = b.create<arith::ExtUIOp>(loc, b.getI32Type(), isNegativeZero);
      flag = b.create<mlir::gpu::SubgroupReduceOp>(loc, flag, mlir::gpu::AllReduceOperation::MINUI,
                                                   /*uniform=*/false);
      allNegativeZero = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ne, flag, i32(0));
    }
    partial = b.create<mlir::gpu::SubgroupReduceOp>(loc, partial, subgroupKind(kind, wide),
                                                    /*uniform=*/false);
    if (allNegativeZero)
      partial = b.create<arith::SelectOp>(
          loc, allNegativeZero, b.create<arith::ConstantOp>(loc, b.getFloatAttr(wide, -0.0)),
          partial);
    if (floatMinMax) {
      Value nan = b.create<arith::ConstantOp>(
          loc, b.getFloatAttr(wide, APFloat::getQNaN(cast<FloatType>(wide).getFloatSemantics())));
      partial = b.create<arith::SelectOp>(loc, anyNaN, nan, partial);
    }
    // Every lane holds the subgroup's result, so all of them may write it: the
    // stores agree, and no lane id (which SPIR-V lowering lacks) is needed.
    group = b.create<mlir::gpu::SubgroupIdOp>(loc, /*upper_bound=*/nullptr);
    groups = b.create<mlir::gpu::NumSubgroupsOp>(loc, /*upper_bound=*/nullptr);
    group = b.create<arith::IndexCastOp>(loc, b.getI32Type(), group);
    groups = b.create<arith::IndexCastOp>(loc, b.getI32Type(), groups);
  } else {
    unsigned width = layout.getWarpSize();
    for (unsigned offset = width / 2; offset >= 1; offset /= 2) {
      Value other;
      if (amdSwizzle && offset < 32 && wide.getIntOrFloatBitWidth() == 32) {
        // ds_swizzle's bit mode swaps lanes within 32-lane groups without going
        // through the LDS crossbar: and_mask 0x1f, xor_mask = offset.
        Value bits = isa<FloatType>(wide)
                         ? (Value)b.create<arith::BitcastOp>(loc, b.getI32Type(), partial)
                         : partial;
        Value swapped = b.create<ROCDL::DsSwizzleOp>(loc, b.getI32Type(), bits,
                                                     i32(0x1f | (offset << 10)));
        other = isa<FloatType>(wide) ? (Value)b.create<arith::BitcastOp>(loc, wide, swapped)
                                     : swapped;
      } else {
        other = b.create<mlir::gpu::ShuffleOp>(loc, partial, i32(offset), i32(width),
                                               mlir::gpu::ShuffleMode::XOR)
                    .getShuffleResult();
      }
      partial = combine(kind, other, partial);
    }
    lane = b.create<arith::RemUIOp>(loc, threadId, i32(width));
    group = b.create<arith::DivUIOp>(loc, threadId, i32(width));
    groups = i32(layout.getNumWarps());
  }
  // One partial per subgroup through shared memory, then every thread combines them.
  auto narrow = [&](Value v) -> Value {
    if (wide == type)
      return v;
    return isa<FloatType>(type) ? (Value)b.create<arith::TruncFOp>(loc, type, v)
                                : b.create<arith::TruncIOp>(loc, type, v);
  };
  Value isLeader =
      lane ? (Value)b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, lane, i32(0))
           : (Value)b.create<arith::ConstantIntOp>(loc, 1, 1);
  writeSharedAt(narrow(partial), group, isLeader, type); // exchange in the tile's type
  barrier();
  Value total = foldLoop(b, loc, groups, neutral, [&](Value w, Value acc) {
    return combine(kind, widen(readShared(w, type)), acc);
  });
  barrier();
  return narrow(total);
}


void ThreadEmitter::emitReduce(ReduceOp op) {
  auto src = op.getSource().getType();
  Type elem = src.getElementType();
  if (src.getRank() == 1) {
    scalars.map(op.getResult(),
                reduceWholeTile(regs(op.getSource()), src.getNumElements(), op.getKind(), elem));
    return;
  }
  int64_t axis = op.getAxis();
  if (axis == src.getRank() - 1) {
    if (src.getDimSize(axis) % (layout.getVec() * layout.getThreads()) == 0) {
      tiles[op.getResult()] = reduceLongRows(op);
      return;
    }
    if (int64_t segment = std::gcd<int64_t>(src.getDimSize(axis), layout.getVec()); segment > 1) {
      tiles[op.getResult()] = reduceRowSegments(op, segment);
      return;
    }
  }
  auto dst = cast<RankedTensorType>(op.getType());
  int64_t positions = axis == src.getRank() - 1 ? 0 : foldAlongAxis(op);
  if (!positions) {
    writeShared(regs(op.getSource()), src.getNumElements(), elem);
    positions = src.getDimSize(axis);
  }
  tiles[op.getResult()] = readExchanged(dst, [&](ArrayRef<Value> at) {
    return foldLoop(b, loc, i32(positions), identity(op.getKind(), elem),
                    [&](Value k, Value acc) {
                      SmallVector<Value> index(at);
                      index.insert(index.begin() + axis, k);
                      Value v = readShared(linearize(index, src.getShape()), elem);
                      return combine(op.getKind(), v, acc);
                    });
  });
}

Registers ThreadEmitter::reduceLongRows(ReduceOp op) {
  auto src = op.getSource().getType();
  auto dst = cast<RankedTensorType>(op.getType());
  Type elem = src.getElementType();
  int64_t row = src.getShape().back(), n = src.getNumElements();
  int64_t vec = layout.getVec(), wave = vec * layout.getThreads();
  // Register r holds element (r / vec) * wave + thread * vec + r % vec; a row
  // starts on a multiple of wave, so run r / vec lies in row r / vec * wave / row
  // on every thread, and a row is row / wave runs of each thread.
  const Registers &values = regs(op.getSource());
  int64_t runsPerRow = row / wave;
  SmallVector<Value> totals;
  for (int64_t first = 0; first < n / wave; first += runsPerRow) {
    Registers rowValues(values.begin() + first * vec,
                        values.begin() + (first + runsPerRow) * vec);
    totals.push_back(reduceWholeTile(rowValues, n, op.getKind(), elem));
  }
  // Every thread holds every row's total; a result register picks its own.
  heldByEveryThread[op.getResult()] = totals;
  Registers out;
  for (int64_t r = 0, count = registers(dst); r < count; ++r)
    out.push_back(pick(b, loc, totals, elementIndex(r)));
  return out;
}

int64_t ThreadEmitter::foldAlongAxis(ReduceOp op) {
  auto src = op.getSource().getType();
  int64_t axis = op.getAxis(), length = src.getDimSize(axis), n = src.getNumElements();
  int64_t stride = 1; // elements between neighbours along the axis
  for (int64_t d = axis + 1; d < src.getRank(); ++d)
    stride *= src.getDimSize(d);
  // The threads cover `wave` consecutive elements a register run; register r
  // holds element elementOfRegister(r) + thread * vec. Two registers of a
  // thread whose elements are a multiple of `period` apart within one slab
  // (`length * stride` elements: one result row's worth) differ only along the
  // axis, and a register's group starts at the first `period` elements of its
  // slab: its axis position is below period / stride.
  int64_t vec = layout.getVec(), wave = vec * layout.getThreads();
  int64_t period = std::lcm(wave, stride), slab = length * stride;
  if (n % wave || slab % period || period == slab)
    return 0;
  const Registers &values = regs(op.getSource());
  llvm::MapVector<int64_t, Value> partials; // the group's first register, its fold
  for (int64_t r = 0, count = values.size(); r < count; ++r) {
    int64_t e = layout.elementOfRegister(r), start = e / slab * slab;
    int64_t first = start + (e - start) % period; // a multiple of wave apart: same lane
    int64_t firstReg = first / wave * vec + first % wave;
    auto [it, inserted] = partials.try_emplace(firstReg, values[r]);
    if (!inserted)
      it->second = combine(op.getKind(), values[r], it->second);
  }
  for (auto [r, partial] : partials)
    writeSharedAt(partial, elementIndex(r), b.create<arith::ConstantIntOp>(loc, 1, 1),
                  src.getElementType());
  return period / stride;
}

Registers ThreadEmitter::reduceRowSegments(ReduceOp op, int64_t segment) {
  auto src = op.getSource().getType();
  auto dst = cast<RankedTensorType>(op.getType());
  Type elem = src.getElementType();
  ReduceKind kind = op.getKind();
  const Registers &values = regs(op.getSource());
  // Segments start on multiples of `segment` (which divides vec), and rows end
  // on them, so a segment lies in one row and is wholly inside or past the tile.
  for (int64_t r = 0, n = values.size(); r < n; r += segment) {
    Value partial = values[r];
    for (int64_t j = 1; j < segment; ++j)
      partial = combine(kind, values[r + j], partial);
    Value slot = b.create<arith::DivUIOp>(loc, elementIndex(r), i32(segment));
    writeSharedAt(partial, slot, registerValid(r, src.getNumElements()), elem);
  }
  barrier();
  int64_t partials = src.getShape().back() / segment;
  Registers out;
  for (int64_t r = 0, n = registers(dst); r < n; ++r) {
    Value row = clampedIndex(b, loc, elementIndex(r), registerValid(r, dst.getNumElements()));
    Value first = b.create<arith::MulIOp>(loc, row, i32(partials));
    out.push_back(foldLoop(b, loc, i32(partials), identity(kind, elem), [&](Value k, Value acc) {
      Value at = b.create<arith::AddIOp>(loc, first, k);
      return combine(kind, readShared(at, elem), acc);
    }));
  }
  barrier();
  return out;
}

/// Scans whose axis is at least this long take log2(length) doubling steps
/// instead of folding each element's whole prefix.
constexpr int64_t kDoublingScanFrom = 128;

void ThreadEmitter::emitScan(ScanOp op) {
  auto type = op.getType();
  Type elem = type.getElementType();
  int64_t axis = op.getAxis();
  if (type.getDimSize(axis) >= kDoublingScanFrom) {
    tiles[op.getResult()] = scanByDoubling(op);
    return;
  }
  tiles[op.getResult()] = exchange(op.getSource(), type, [&](ArrayRef<Value> at) {
    Value count = b.create<arith::AddIOp>(loc, at[axis], i32(1)); // inclusive
    return foldLoop(b, loc, count, identity(op.getKind(), elem), [&](Value k, Value acc) {
      SmallVector<Value> index(at);
      index[axis] = k;
      return combine(op.getKind(), readShared(linearize(index, type.getShape()), elem), acc);
    });
  });
}

Registers ThreadEmitter::scanByDoubling(ScanOp op) {
  auto type = op.getType();
  Type elem = type.getElementType();
  ReduceKind kind = op.getKind();
  int64_t length = type.getDimSize(op.getAxis()), n = type.getNumElements();
  int64_t stride = 1; // elements between neighbours along the axis
  for (int64_t d = op.getAxis() + 1; d < type.getRank(); ++d)
    stride *= type.getDimSize(d);
  // Along the last axis a thread holds runs of `segment` consecutive elements of
  // one row (as in reduceRowSegments): it scans them in registers, and only
  // their totals take the doubling steps, `units` to a row.
  int64_t segment = stride == 1 ? std::gcd<int64_t>(length, layout.getVec()) : 1;
  int64_t units = length / segment, unitStride = segment > 1 ? 1 : stride;
  const Registers &values = regs(op.getSource());
  Registers local(values);
  SmallVector<Value> totals, slot, along, valid;
  for (int64_t r = 0, count = values.size(); r < count; r += segment) {
    for (int64_t j = 1; j < segment; ++j)
      local[r + j] = combine(kind, values[r + j], local[r + j - 1]);
    totals.push_back(local[r + segment - 1]);
    valid.push_back(registerValid(r, n));
    // Registers past the tile stand in for element 0 and never combine.
    Value e = clampedIndex(b, loc, elementIndex(r), valid.back());
    slot.push_back(segment > 1 ? b.create<arith::DivUIOp>(loc, e, i32(segment)).getResult() : e);
    Value k = b.create<arith::DivUIOp>(loc, slot.back(), i32(unitStride));
    along.push_back(b.create<arith::RemUIOp>(loc, k, i32(units)));
  }
  auto shareTotals = [&] {
    for (auto [s, total] : llvm::enumerate(totals))
      writeSharedAt(total, slot[s], valid[s], elem);
    barrier();
  };
  // The total `distance` (i32) units before unit s, where there is one.
  auto before = [&](size_t s, Value distance) -> std::pair<Value, Value> {
    Value has = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::uge, along[s], distance);
    Value back = b.create<arith::MulIOp>(loc, distance, i32(unitStride));
    Value from = b.create<arith::SubIOp>(loc, slot[s], back);
    from = b.create<arith::SelectOp>(loc, has, from, slot[s]);
    return {has, readShared(from, elem)};
  };
  // Step t, reach = 2^t: every unit takes in the total `reach` units before it,
  // which covers the `reach` units before those; after log2(units) steps each
  // total covers its whole prefix. The steps are a loop (of a handful of trips)
  // so the code holds one of them: lavapipe took 26 s to compile four scans of
  // [2, 256, 2] with eight steps written out.
  int64_t steps = llvm::Log2_64_Ceil(units);
  if (steps > 0) {
    Value zero = b.create<arith::ConstantIndexOp>(loc, 0);
    Value one = b.create<arith::ConstantIndexOp>(loc, 1);
    Value end = b.create<arith::ConstantIndexOp>(loc, steps);
    auto loop = b.create<scf::ForOp>(loc, zero, end, one, totals);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    for (auto [s, carried] : llvm::enumerate(loop.getRegionIterArgs()))
      totals[s] = carried;
    Value t = b.create<arith::IndexCastOp>(loc, b.getI32Type(), loop.getInductionVar());
    Value reach = b.create<arith::ShLIOp>(loc, i32(1), t);
    shareTotals();
    SmallVector<Value> next;
    for (size_t s = 0; s < totals.size(); ++s) {
      auto [has, earlier] = before(s, reach);
      next.push_back(
          b.create<arith::SelectOp>(loc, has, combine(kind, earlier, totals[s]), totals[s]));
    }
    barrier();
    b.create<scf::YieldOp>(loc, next);
    b.setInsertionPointAfter(loop);
    totals.assign(loop.getResults().begin(), loop.getResults().end());
  }
  if (segment == 1)
    return Registers(totals.begin(), totals.end());
  // Each run adds the prefix of the runs before it in its row.
  shareTotals();
  Registers out(local);
  for (size_t s = 0; s < totals.size(); ++s) {
    auto [has, prefix] = before(s, i32(1));
    for (int64_t j = 0; j < segment; ++j) {
      Value &v = out[s * segment + j];
      v = b.create<arith::SelectOp>(loc, has, combine(kind, prefix, v), v);
    }
  }
  barrier();
  return out;
}

void ThreadEmitter::emitDot(DotOp op) {
  auto a = op.getA().getType(), bt = op.getB().getType(), c = op.getType();
  int64_t m = a.getDimSize(0), k = a.getDimSize(1), n = bt.getDimSize(1);
  Type in = a.getElementType(), accType = c.getElementType();
  auto operand = [&](Value tile) {
    Registers values = regs(tile);
    if (op.getTf32())
      for (Value &v : values)
        v = roundToTF32(b, loc, v);
    return values;
  };
  writeShared(operand(op.getA()), m * k, in, 0);
  writeShared(operand(op.getB()), k * n, in, m * k);
  barrier();
  bool isFloatAcc = isa<FloatType>(accType);
  // A bf16 accumulator multiplies and adds in two roundings, as the CPU does:
  // math.fma has no bf16 form on SPIR-V, and math-legalize-to-f32 leaves fma
  // alone (in f32 it would round twice anyway).
  bool fusedMultiplyAdd = !accType.isBF16();
  auto extend = [&](Value v) -> Value {
    if (v.getType() == accType)
      return v;
    return isFloatAcc ? (Value)b.create<arith::ExtFOp>(loc, accType, v)
                      : b.create<arith::ExtSIOp>(loc, accType, v);
  };

  // Where each result register's row of A starts and its column of B lies in
  // shared memory. In the usual case (every register inside the tile, and the
  // blocked layout's rows and columns repeating evenly) a thread's registers are
  // the product of a few rows and a few columns: register r sits at the thread's
  // first element plus a constant offset, so one A load per distinct row and one
  // B load per distinct column serve all of them, each step of k. Otherwise every
  // register reads its own (past-the-end registers read element 0).
  int64_t count = registers(c), threads = layout.getThreads(), vec = layout.getVec();
  int64_t span = threads * vec;
  bool product = n % vec == 0 && (span % n == 0 || n % span == 0);
  for (int64_t r = 0; r < count && product; ++r)
    product = layout.elementOfRegister(r) + span - vec < c.getNumElements();
  SmallVector<Value> aRow(count), bColumn(count);
  if (product) {
    Value first = elementIndex(0);
    Value row = b.create<arith::DivUIOp>(loc, first, i32(n));
    Value column = b.create<arith::RemUIOp>(loc, first, i32(n));
    llvm::DenseMap<int64_t, Value> rows, columns;
    for (int64_t r = 0; r < count; ++r) {
      int64_t offset = layout.elementOfRegister(r);
      Value &rowStart = rows[offset / n];
      if (!rowStart)
        rowStart = b.create<arith::MulIOp>(
            loc, b.create<arith::AddIOp>(loc, row, i32(offset / n)), i32(k));
      Value &col = columns[offset % n];
      if (!col)
        col = b.create<arith::AddIOp>(loc, column, i32(offset % n + m * k));
      aRow[r] = rowStart;
      bColumn[r] = col;
    }
  } else {
    for (int64_t r = 0; r < count; ++r) {
      Value e = clampedIndex(b, loc, elementIndex(r), registerValid(r, c.getNumElements()));
      SmallVector<Value> ij = delinearize(e, c.getShape());
      aRow[r] = b.create<arith::MulIOp>(loc, ij[0], i32(k));
      bColumn[r] = b.create<arith::AddIOp>(loc, ij[1], i32(m * k));
    }
  }

  // One loop over k carries every accumulator: c[i][j] += a[i][kk] * b[kk][j], in
  // the order of k, as the other targets add.
  Value zero = b.create<arith::ConstantIndexOp>(loc, 0);
  Value one = b.create<arith::ConstantIndexOp>(loc, 1);
  Value end = b.create<arith::ConstantIndexOp>(loc, k);
  auto loop = b.create<scf::ForOp>(loc, zero, end, one, regs(op.getAcc()));
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value kk = b.create<arith::IndexCastOp>(loc, b.getI32Type(), loop.getInductionVar());
    Value bRow = b.create<arith::MulIOp>(loc, kk, i32(n));
    llvm::DenseMap<Value, Value> aValues, bValues;
    SmallVector<Value> sums;
    for (int64_t r = 0; r < count; ++r) {
      Value &x = aValues[aRow[r]];
      if (!x)
        x = extend(readShared(b.create<arith::AddIOp>(loc, aRow[r], kk), in));
      Value &y = bValues[bColumn[r]];
      if (!y)
        y = extend(readShared(b.create<arith::AddIOp>(loc, bRow, bColumn[r]), in));
      Value sum = loop.getRegionIterArgs()[r];
      if (!isFloatAcc)
        sums.push_back(b.create<arith::AddIOp>(loc, sum, b.create<arith::MulIOp>(loc, x, y)));
      else if (fusedMultiplyAdd)
        sums.push_back(b.create<math::FmaOp>(loc, x, y, sum));
      else
        sums.push_back(b.create<arith::AddFOp>(loc, sum, b.create<arith::MulFOp>(loc, x, y)));
    }
    b.create<scf::YieldOp>(loc, sums);
  }
  barrier();
  tiles[op.getResult()] = Registers(loop.getResults().begin(), loop.getResults().end());
}
