//===- MemoryToGPU.cpp - masked loads and stores per thread ---------------===//
//
// Every register's element gets its own offset and bounds check. When a thread's
// run of `vec` registers is fully in bounds, contiguous and aligned, the run moves
// as one vector access (ld.global.v4 / global_load_dwordx4); otherwise each element
// is loaded or stored under its own predicate.
//
//===----------------------------------------------------------------------===//

#include "passes/Common.h"
#include "passes/GPU/Lowering.h"
#include "passes/GPU/SharedMemory.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace kiln;
using namespace kiln::gpu;

namespace {
/// Where one register's element lives and whether it may be touched.
struct Access {
  Value offset; // i32, in elements
  Value ok;     // i1: in bounds, unmasked, a real element of the tile
};
} // namespace

Value TensorArg::toStorage(OpBuilder &b, Location loc, Value v) const {
  if (elementType.isInteger(1))
    return b.create<arith::ExtUIOp>(loc, storageType, v);
  if (elementType != storageType)
    return b.create<arith::BitcastOp>(loc, storageType, v);
  return v;
}

Type kiln::gpu::storageOf(Value memory, bool integerAtomicsOnly, bool floatAtomicAdd) {
  Type elementType = cast<MemRefType>(memory.getType()).getElementType();
  bool byte = elementType.isInteger(1) || isa<Float8E4M3FNType, Float8E5M2Type>(elementType);
  if (byte)
    return IntegerType::get(elementType.getContext(), 8);
  if (!integerAtomicsOnly || !isa<FloatType>(elementType))
    return elementType;
  bool atomic = false, onlyAdds = true;
  for (Operation *u : memory.getUsers()) {
    auto rmw = dyn_cast<AtomicRMWOp>(u);
    atomic |= rmw || isa<AtomicSwapOp>(u);
    onlyAdds &= !isa<AtomicSwapOp>(u) && (!rmw || rmw.getKind() == ReduceKind::Sum);
  }
  if (!atomic || (floatAtomicAdd && elementType.isF32() && onlyAdds))
    return elementType;
  // SPIR-V has integer atomics of 32 and 64 bits: 16-bit floats go two to a word.
  return IntegerType::get(elementType.getContext(),
                          std::max(32u, elementType.getIntOrFloatBitWidth()));
}

bool kiln::gpu::updatesBySwaps(Operation *op, Type storage) {
  Type element = cast<MemRefType>(op->getOperand(0).getType()).getElementType();
  bool halves = element.getIntOrFloatBitWidth() == 16 && storage.getIntOrFloatBitWidth() == 32;
  if (isa<AtomicRMWOp>(op))
    return storage != element;
  return isa<AtomicSwapOp, StoreOp, StoreBlockOp>(op) && halves;
}

bool TensorArg::holdsHalves() const {
  return elementType.getIntOrFloatBitWidth() == 16 && storageType.getIntOrFloatBitWidth() == 32;
}

Value TensorArg::storedIndex(OpBuilder &b, Location loc, Value offset) const {
  if (holdsHalves())
    offset = b.create<arith::ShRUIOp>(loc, offset, b.create<arith::ConstantIntOp>(loc, 1, 32));
  return b.create<arith::IndexCastOp>(loc, b.getIndexType(), offset);
}

/// The bit position of element `offset`'s half in its word: 0 or 16.
static Value halfShift(OpBuilder &b, Location loc, Value offset) {
  auto c = [&](int64_t v) { return b.create<arith::ConstantIntOp>(loc, v, 32); };
  return b.create<arith::MulIOp>(loc, b.create<arith::AndIOp>(loc, offset, c(1)), c(16));
}

Value TensorArg::elementIn(OpBuilder &b, Location loc, Value stored, Value offset) const {
  if (!holdsHalves())
    return fromStorage(b, loc, stored);
  Value half = b.create<arith::TruncIOp>(
      loc, b.getI16Type(), b.create<arith::ShRUIOp>(loc, stored, halfShift(b, loc, offset)));
  return b.create<arith::BitcastOp>(loc, elementType, half);
}

Value TensorArg::withElement(OpBuilder &b, Location loc, Value stored, Value offset,
                             Value element) const {
  if (!holdsHalves())
    return toStorage(b, loc, element);
  Value shift = halfShift(b, loc, offset);
  Value placed = b.create<arith::ShLIOp>(
      loc,
      b.create<arith::ExtUIOp>(loc, storageType,
                               b.create<arith::BitcastOp>(loc, b.getI16Type(), element)),
      shift);
  Value other = b.create<arith::XOrIOp>(
      loc, b.create<arith::ShLIOp>(loc, b.create<arith::ConstantIntOp>(loc, 0xffff, 32), shift),
      b.create<arith::ConstantIntOp>(loc, -1, 32));
  return b.create<arith::OrIOp>(loc, b.create<arith::AndIOp>(loc, stored, other), placed);
}

Value TensorArg::fromStorage(OpBuilder &b, Location loc, Value v) const {
  if (elementType.isInteger(1))
    return b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ne, v,
                                   b.create<arith::ConstantIntOp>(loc, 0, storageType));
  if (elementType != storageType)
    return b.create<arith::BitcastOp>(loc, elementType, v);
  return v;
}

static unsigned storageBytes(const TensorArg &t) {
  return std::max(1u, t.storageType.getIntOrFloatBitWidth() / 8);
}

bool ThreadEmitter::canAccessRuns(const TensorArg &t, int64_t numRegisters) {
  unsigned vec = layout.getVec();
  unsigned runBytes = vec * storageBytes(t);
  return memory == MemoryModel::LLVMPointers && vec > 1 && numRegisters % vec == 0 &&
         (runBytes == 4 || runBytes == 8 || runBytes == 16);
}

Value ThreadEmitter::loadElement(const TensorArg &t, Value offset) {
  Value v;
  if (memory == MemoryModel::LLVMPointers) {
    Value ptr = b.create<LLVM::GEPOp>(loc, t.base.getType(), t.storageType, t.base,
                                      ValueRange{offset});
    v = b.create<LLVM::LoadOp>(loc, t.storageType, ptr);
  } else {
    v = b.create<memref::LoadOp>(loc, t.base, t.storedIndex(b, loc, offset));
  }
  return t.elementIn(b, loc, v, offset);
}

Value ThreadEmitter::loadElementOr(const TensorArg &t, Value offset, Value ok, Value other) {
  return emitIfElse(
             ok, TypeRange{t.elementType},
             [&]() -> SmallVector<Value> { return {loadElement(t, offset)}; },
             [&]() -> SmallVector<Value> { return {other}; })
      .getResult(0);
}

void ThreadEmitter::storeElement(const TensorArg &t, Value offset, Value value) {
  value = t.toStorage(b, loc, value);
  if (memory == MemoryModel::LLVMPointers) {
    Value ptr = b.create<LLVM::GEPOp>(loc, t.base.getType(), t.storageType, t.base,
                                      ValueRange{offset});
    b.create<LLVM::StoreOp>(loc, value, ptr);
  } else {
    Value index = b.create<arith::IndexCastOp>(loc, b.getIndexType(), offset);
    b.create<memref::StoreOp>(loc, value, t.base, index);
  }
}

Value ThreadEmitter::isAlignedRun(const TensorArg &t, Value offset, unsigned vec) {
  Value ptr = b.create<LLVM::GEPOp>(loc, t.base.getType(), t.storageType, t.base,
                                    ValueRange{offset});
  Value address = b.create<LLVM::PtrToIntOp>(loc, b.getI64Type(), ptr);
  Value low = b.create<arith::AndIOp>(
      loc, address, b.create<arith::ConstantIntOp>(loc, vec * storageBytes(t) - 1, 64));
  return b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, low,
                                 b.create<arith::ConstantIntOp>(loc, 0, 64));
}

Value ThreadEmitter::loadRun(const TensorArg &t, Value offset, unsigned vec) {
  auto vecType = VectorType::get({vec}, t.storageType);
  Value ptr = b.create<LLVM::GEPOp>(loc, t.base.getType(), t.storageType, t.base,
                                    ValueRange{offset});
  return b.create<LLVM::LoadOp>(loc, vecType, ptr, vec * storageBytes(t));
}

void ThreadEmitter::storeRun(const TensorArg &t, Value offset, ValueRange values) {
  unsigned vec = values.size();
  auto vecType = VectorType::get({vec}, t.storageType);
  Value v = b.create<LLVM::UndefOp>(loc, vecType);
  for (auto [k, value] : llvm::enumerate(values)) {
    v = b.create<LLVM::InsertElementOp>(loc, v, t.toStorage(b, loc, value), i32(k));
  }
  Value ptr = b.create<LLVM::GEPOp>(loc, t.base.getType(), t.storageType, t.base,
                                    ValueRange{offset});
  b.create<LLVM::StoreOp>(loc, v, ptr, vec * storageBytes(t));
}

/// Offset and predicate of each register's element. `coords(r)` gives the
/// element's index per tensor dimension.
template <typename CoordsFn>
static SmallVector<Access> accesses(OpBuilder &b, Location loc, const TensorArg &t, int64_t n,
                                    CoordsFn coords, function_ref<Value(int64_t)> extraOk) {
  SmallVector<Access> out;
  for (int64_t r = 0; r < n; ++r) {
    SmallVector<Value> c = coords(r);
    Value offset = b.create<arith::ConstantIntOp>(loc, 0, 32);
    Value ok = extraOk(r);
    for (auto [coord, size, stride] : llvm::zip(c, t.sizes, t.strides)) {
      // One unsigned compare checks both bounds: negative coordinates wrap high.
      Value inside = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ult, coord, size);
      ok = ok ? b.create<arith::AndIOp>(loc, ok, inside) : inside;
      offset = b.create<arith::AddIOp>(loc, offset, b.create<arith::MulIOp>(loc, coord, stride));
    }
    out.push_back({offset, ok});
  }
  return out;
}

/// True when the run starting at register `r0` is fully valid and contiguous.
static Value runIsContiguous(OpBuilder &b, Location loc, ArrayRef<Access> run) {
  Value all = run[0].ok;
  for (size_t k = 1; k < run.size(); ++k) {
    Value expected = b.create<arith::AddIOp>(
        loc, run[0].offset, b.create<arith::ConstantIntOp>(loc, k, 32));
    Value next = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, run[k].offset, expected);
    all = b.create<arith::AndIOp>(loc, all, b.create<arith::AndIOp>(loc, run[k].ok, next));
  }
  return all;
}

std::function<SmallVector<Value>(int64_t)>
ThreadEmitter::coordinates(ValueRange indices, ValueRange offsets, RankedTensorType tile) {
  if (offsets.empty()) // gather: the index tiles hold the coordinates
    return [this, indices](int64_t r) {
      SmallVector<Value> c;
      for (Value index : indices)
        c.push_back(element(index, r));
      return c;
    };
  // block: the element's position in the tile, shifted by the block's offsets
  return [this, offsets, tile](int64_t r) {
    SmallVector<Value> c = delinearize(elementIndex(r), tile.getShape());
    for (auto [ci, off] : llvm::zip(c, offsets))
      ci = b.create<arith::AddIOp>(loc, scalar(off), ci);
    return c;
  };
}

LogicalResult ThreadEmitter::emitLoad(Operation *op) {
  Value memoryArg = op->getOperand(0);
  const TensorArg &t = tensors.find(memoryArg)->second;
  Type resultType = op->getResult(0).getType();
  auto tile = dyn_cast<RankedTensorType>(resultType);
  int64_t n = tile ? registers(tile) : 1;
  Type elem = t.elementType;

  Value otherOriginal, mask;
  std::function<SmallVector<Value>(int64_t)> coords;
  if (auto load = dyn_cast<LoadOp>(op)) {
    otherOriginal = load.getOther();
    mask = load.getMask();
    coords = coordinates(load.getIndices(), {}, tile);
  } else {
    auto block = cast<LoadBlockOp>(op);
    otherOriginal = block.getOther();
    coords = coordinates({}, block.getOffsets(), tile);
  }
  int64_t numElements = tile ? tile.getNumElements() : 1;
  auto extraOk = [&](int64_t r) -> Value {
    Value ok = tile ? registerValid(r, numElements) : Value();
    if (mask) {
      Value m = element(mask, r);
      ok = ok ? b.create<arith::AndIOp>(loc, ok, m) : m;
    }
    return ok;
  };
  SmallVector<Access> acc = accesses(b, loc, t, n, coords, extraOk);
  auto otherOf = [&](int64_t r) -> Value {
    if (otherOriginal)
      return element(otherOriginal, r);
    return b.create<arith::ConstantOp>(loc, b.getZeroAttr(elem));
  };
  auto guardedLoad = [&](int64_t r) -> Value {
    return loadElementOr(t, acc[r].offset, acc[r].ok, otherOf(r));
  };

  Registers out;
  unsigned vec = layout.getVec();
  bool vectorize = tile && canAccessRuns(t, n);
  for (int64_t r0 = 0; r0 < n; r0 += vectorize ? vec : 1) {
    if (!vectorize) {
      out.push_back(guardedLoad(r0));
      continue;
    }
    ArrayRef<Access> run(acc.begin() + r0, vec);
    Value fast = b.create<arith::AndIOp>(loc, runIsContiguous(b, loc, run),
                                         isAlignedRun(t, run[0].offset, vec));
    // The run travels as one vector through the branch: if its lanes were yielded
    // separately, LLVM would split the wide load back into scalar ones.
    auto vecType = VectorType::get({vec}, t.storageType);
    auto ifOp = emitIfElse(
        fast, TypeRange{vecType},
        [&]() -> SmallVector<Value> { return {loadRun(t, run[0].offset, vec)}; },
        [&]() -> SmallVector<Value> {
          Value lanes = b.create<LLVM::UndefOp>(loc, vecType);
          for (unsigned k = 0; k < vec; ++k) {
            Value lane = t.toStorage(b, loc, guardedLoad(r0 + k));
            lanes = b.create<LLVM::InsertElementOp>(loc, lanes, lane, i32(k));
          }
          return {lanes};
        });
    for (unsigned k = 0; k < vec; ++k) {
      Value lane = b.create<LLVM::ExtractElementOp>(loc, ifOp.getResult(0), i32(k));
      out.push_back(t.fromStorage(b, loc, lane));
    }
  }
  if (tile)
    tiles[op->getResult(0)] = out;
  else
    scalars.map(op->getResult(0), out[0]);
  return success();
}

void ThreadEmitter::emitAsyncCopy(LoadBlockOp op, DotOp dot, unsigned operand, Value stageBase,
                                  bool commit) {
  const TensorArg &t = tensors.find(op.getMemory())->second;
  RankedTensorType tile = op.getType();
  int64_t n = registers(tile), numElements = tile.getNumElements();
  unsigned vec = layout.getVec(), bytes = storageBytes(t);
  SmallVector<Access> acc =
      accesses(b, loc, t, n, coordinates({}, op.getOffsets(), tile),
               [&](int64_t r) { return registerValid(r, numElements); });
  Value buffer = sharedBuffer(t.elementType);
  Value bufferAddress = b.create<arith::IndexCastOp>(
      loc, b.getI32Type(), b.create<memref::ExtractAlignedPointerAsIndexOp>(loc, buffer));
  for (int64_t r0 = 0; r0 < n; r0 += vec) {
    ArrayRef<Access> run(acc.begin() + r0, vec);
    Value fast = b.create<arith::AndIOp>(loc, runIsContiguous(b, loc, run),
                                         isAlignedRun(t, run[0].offset, vec));
    // Where the run's elements go in the dot's operand buffer: one after the
    // other, as every operand layout keeps 16-byte chunks whole.
    SmallVector<Value> at = {matrixOperandIndex(dot, operand, elementIndex(r0), stageBase)};
    for (unsigned k = 1; k < vec; ++k)
      at.push_back(b.create<arith::AddIOp>(loc, at[0], i32(k)));
    emitIfElse(
        fast, {},
        [&]() -> SmallVector<Value> {
          Value dst = b.create<arith::AddIOp>(loc, bufferAddress,
                                              b.create<arith::MulIOp>(loc, at[0], i32(bytes)));
          Value src = b.create<LLVM::GEPOp>(loc, t.base.getType(), t.storageType, t.base,
                                            ValueRange{run[0].offset});
          // 16-byte copies may bypass L1 (.cg); smaller ones must go through it.
          std::string copy = vec * bytes == 16 ? "cp.async.cg.shared.global [$0], [$1], 16;"
                                               : "cp.async.ca.shared.global [$0], [$1], " +
                                                     std::to_string(vec * bytes) + ";";
          inlinePTX(b, loc, copy, "r,l", 0, Type(), {dst, src});
          return {};
        },
        [&]() -> SmallVector<Value> {
          // A ragged, strided or unaligned chunk: element by element, zero outside.
          for (unsigned k = 0; k < vec; ++k) {
            Value zero = b.create<arith::ConstantOp>(loc, b.getZeroAttr(t.elementType));
            Value value = loadElementOr(t, run[k].offset, run[k].ok, zero);
            emitIfElse(
                registerValid(r0 + k, numElements), {},
                [&]() -> SmallVector<Value> {
                  Value index = b.create<arith::IndexCastOp>(loc, b.getIndexType(), at[k]);
                  b.create<memref::StoreOp>(loc, value, buffer, index);
                  return {};
                },
                nullptr);
          }
          return {};
        });
  }
  if (commit)
    inlinePTX(b, loc, "cp.async.commit_group;", "", 0, Type(), {});
  copiedToShared.insert(op.getResult());
}

Value ThreadEmitter::writerOk(RankedTensorType tile, Value mask, int64_t reg) {
  // Replicated registers are skipped; a scalar is written by thread 0 alone.
  Value ok = tile ? registerValid(reg, tile.getNumElements())
                  : b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, threadId, i32(0));
  if (mask)
    ok = b.create<arith::AndIOp>(loc, ok, element(mask, reg));
  return ok;
}

LogicalResult ThreadEmitter::emitStore(Operation *op) {
  Value memoryArg = op->getOperand(0);
  const TensorArg &t = tensors.find(memoryArg)->second;
  Value value = isa<StoreOp>(op) ? cast<StoreOp>(op).getValue() : cast<StoreBlockOp>(op).getValue();
  auto tile = dyn_cast<RankedTensorType>(value.getType());
  int64_t n = tile ? registers(tile) : 1;

  Value mask;
  std::function<SmallVector<Value>(int64_t)> coords;
  if (auto store = dyn_cast<StoreOp>(op)) {
    mask = store.getMask();
    coords = coordinates(store.getIndices(), {}, tile);
  } else {
    coords = coordinates({}, cast<StoreBlockOp>(op).getOffsets(), tile);
  }
  SmallVector<Access> acc = accesses(b, loc, t, n, coords, [&](int64_t r) {
    return writerOk(tile, mask, r);
  });
  if (updatesBySwaps(op, t.storageType)) {
    // A 16-bit float that atomics also update, two to a 32-bit word: a store of
    // the word would overwrite the other element, so each is exchanged into it.
    SmallVector<Value> offsets, oks;
    for (const Access &a : acc) {
      offsets.push_back(a.offset);
      oks.push_back(a.ok);
    }
    updateBySwaps(t, offsets, oks, [&](Value, int64_t r) { return element(value, r); },
                  tile ? tile.getNumElements() : 1);
    return success();
  }
  auto guardedStore = [&](int64_t r) {
    Value v = element(value, r);
    emitIfElse(
        acc[r].ok, {},
        [&]() -> SmallVector<Value> {
          storeElement(t, acc[r].offset, v);
          return {};
        },
        nullptr);
  };
  unsigned vec = layout.getVec();
  bool vectorize = tile && canAccessRuns(t, n);
  for (int64_t r0 = 0; r0 < n; r0 += vectorize ? vec : 1) {
    if (!vectorize) {
      guardedStore(r0);
      continue;
    }
    ArrayRef<Access> run(acc.begin() + r0, vec);
    Value fast = b.create<arith::AndIOp>(loc, runIsContiguous(b, loc, run),
                                         isAlignedRun(t, run[0].offset, vec));
    emitIfElse(
        fast, {},
        [&]() -> SmallVector<Value> {
          SmallVector<Value> lanes;
          for (unsigned k = 0; k < vec; ++k)
            lanes.push_back(element(value, r0 + k));
          storeRun(t, run[0].offset, lanes);
          return {};
        },
        [&]() -> SmallVector<Value> {
          for (unsigned k = 0; k < vec; ++k)
            guardedStore(r0 + k);
          return {};
        });
  }
  return success();
}

Value ThreadEmitter::atomicUpdate(Operation *op, const TensorArg &t, Value offset, Value value,
                                  Value compare) {
  bool isFloat = isa<FloatType>(t.elementType);
  auto rmw = dyn_cast<AtomicRMWOp>(op);
  if (memory == MemoryModel::LLVMPointers) {
    Value ptr =
        b.create<LLVM::GEPOp>(loc, t.base.getType(), t.storageType, t.base, ValueRange{offset});
    // The op's `sem`: read-modify-writes are relaxed by default, swaps order
    // like a lock's acquire and release. NVPTX (LLVM 19) emits every atom as
    // relaxed and selects no LLVM fence, so there the ordering comes from PTX
    // fences: one before a releasing atomic, one after an acquiring one.
    // Atomics are device-wide (Triton's scope="gpu"): on AMD at agent scope,
    // which gfx9 serves with its native min/max (system scope makes LLVM
    // expand them into compare-and-swap loops, for fine-grained host memory).
    MemoryOrder sem = rmw ? rmw.getSem() : cast<AtomicSwapOp>(op).getSem();
    auto ordering = sem == MemoryOrder::AcqRel    ? LLVM::AtomicOrdering::acq_rel
                    : sem == MemoryOrder::Acquire ? LLVM::AtomicOrdering::acquire
                    : sem == MemoryOrder::Release ? LLVM::AtomicOrdering::release
                                                  : LLVM::AtomicOrdering::monotonic;
    StringRef scope = vendor == Vendor::AMD ? "agent" : "";
    auto fence = [&](bool needed) {
      if (!needed)
        return;
      if (vendor == Vendor::AMD) // LLVM fences at device (agent) scope
        b.create<LLVM::FenceOp>(loc, LLVM::AtomicOrdering::acq_rel, "agent");
      else
        inlinePTX(b, loc, "fence.acq_rel.gpu;", "", 0, Type(), {});
    };
    fence(releases(sem));
    Value old;
    if (compare) {
      // A failed compare-and-swap writes nothing: it may acquire, not release.
      auto failure = acquires(sem) ? LLVM::AtomicOrdering::acquire
                                   : LLVM::AtomicOrdering::monotonic;
      auto cas = b.create<LLVM::AtomicCmpXchgOp>(loc, ptr, compare, value, ordering, failure,
                                                 scope);
      old = b.create<LLVM::ExtractValueOp>(loc, cas, ArrayRef<int64_t>{0});
      fence(acquires(sem));
      return old;
    }
    if (rmw && isFloat &&
        (rmw.getKind() == ReduceKind::Max || rmw.getKind() == ReduceKind::Min)) {
      old = kiln::floatAtomicMinMax(b, loc, rmw.getKind(), ptr, value, ordering, scope);
      fence(acquires(sem));
      return old;
    }
    LLVM::AtomicBinOp bin = LLVM::AtomicBinOp::xchg;
    if (rmw) {
      switch (rmw.getKind()) {
      case ReduceKind::Sum: bin = isFloat ? LLVM::AtomicBinOp::fadd : LLVM::AtomicBinOp::add; break;
      case ReduceKind::Max: bin = isFloat ? LLVM::AtomicBinOp::fmax : LLVM::AtomicBinOp::max; break;
      case ReduceKind::UMax: bin = LLVM::AtomicBinOp::umax; break;
      case ReduceKind::UMin: bin = LLVM::AtomicBinOp::umin; break;
      case ReduceKind::And: bin = LLVM::AtomicBinOp::_and; break;
      case ReduceKind::Or: bin = LLVM::AtomicBinOp::_or; break;
      case ReduceKind::Xor: bin = LLVM::AtomicBinOp::_xor; break;
      default: bin = isFloat ? LLVM::AtomicBinOp::fmin : LLVM::AtomicBinOp::min; break;
      }
    }
    old = b.create<LLVM::AtomicRMWOp>(loc, bin, ptr, value, ordering, scope);
    fence(acquires(sem));
    return old;
  }
  // memref (SPIR-V): kiln-gpu-to-spirv turns the exchange (assign), xor and the
  // compare-and-swap form of generic_atomic_rmw into SPIR-V atomics.
  SmallVector<Value> index{b.create<arith::IndexCastOp>(loc, b.getIndexType(), offset)};
  if (compare)
    return compareAndSwap(t, index[0], compare, value);
  if (rmw)
    return kiln::atomicUpdate(b, loc, rmw.getKind(), value, t.base, index);
  return b.create<memref::AtomicRMWOp>(loc, arith::AtomicRMWKind::assign, value, t.base, index);
}

Value ThreadEmitter::compareAndSwap(const TensorArg &t, Value index, Value expected,
                                   Value desired) {
  auto cas = b.create<memref::GenericAtomicRMWOp>(loc, t.base, index);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToEnd(cas.getBody());
  Value current = cas.getCurrentValue();
  Value equal = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, current, expected);
  Value written = b.create<arith::SelectOp>(loc, equal, desired, current);
  b.create<memref::AtomicYieldOp>(loc, written);
  return cas.getResult();
}

Registers ThreadEmitter::updateBySwaps(const TensorArg &t, ArrayRef<Value> offsets,
                                       ArrayRef<Value> oks,
                                       function_ref<Value(Value, int64_t)> update,
                                       int64_t numElements) {
  // Each element swaps in its updated bits until no other thread wrote between
  // its read and its swap. One loop serves the whole tile and runs while any
  // element of the program still has a swap to make, each swap under its own
  // flag, so every thread leaves the loop together: when threads leave a loop
  // at different trips, lavapipe loses updates and the stores after the loop.
  // 16-bit elements are swapped as the 32-bit word that holds them (the low
  // half holds the even element), which keeps its other half as it found it.
  int64_t n = offsets.size();
  Type bits = t.storageType, flag = b.getI1Type();
  SmallVector<Value> safeOffsets, indices, guesses;
  for (int64_t r = 0; r < n; ++r) {
    safeOffsets.push_back(b.create<arith::SelectOp>(loc, oks[r], offsets[r], i32(0)));
    indices.push_back(t.storedIndex(b, loc, safeOffsets[r]));
    guesses.push_back(emitIfElse(oks[r], {bits}, [&]() -> SmallVector<Value> {
      return {b.create<memref::LoadOp>(loc, t.base, indices[r])};
    }, [&]() -> SmallVector<Value> {
      return {b.create<arith::ConstantOp>(loc, b.getZeroAttr(bits))};
    }).getResult(0));
  }
  auto anyElement = [&](ArrayRef<Value> pending) -> Value {
    Registers wide;
    for (Value p : pending)
      wide.push_back(b.create<arith::ExtUIOp>(loc, b.getI32Type(), p));
    Value any = reduceWholeTile(wide, numElements, ReduceKind::Max, b.getI32Type());
    return b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ne, any, i32(0));
  };
  // Carried: each element's expected bits, whether it still has to swap, and
  // whether any element has (computed at the end of a trip, not in the loop's
  // header).
  SmallVector<Value> inits(guesses);
  inits.append(oks.begin(), oks.end());
  inits.push_back(anyElement(oks));
  SmallVector<Type> types(n, bits);
  types.append(n + 1, flag);
  SmallVector<Location> locs(types.size(), loc);
  auto loop = b.create<scf::WhileOp>(loc, types, inits);
  {
    OpBuilder::InsertionGuard guard(b);
    Block *before = b.createBlock(&loop.getBefore(), {}, types, locs);
    b.create<scf::ConditionOp>(loc, before->getArguments().back(), before->getArguments());
    Block *after = b.createBlock(&loop.getAfter(), {}, types, locs);
    SmallVector<Value> found, raced;
    for (int64_t r = 0; r < n; ++r) {
      Value expected = after->getArgument(r);
      found.push_back(emitIfElse(after->getArgument(n + r), {bits}, [&]() -> SmallVector<Value> {
        Value updated = update(t.elementIn(b, loc, expected, safeOffsets[r]), r);
        return {compareAndSwap(t, indices[r], expected,
                               t.withElement(b, loc, expected, safeOffsets[r], updated))};
      }, [&]() -> SmallVector<Value> { return {expected}; }).getResult(0));
      raced.push_back(b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ne, found[r], expected));
    }
    SmallVector<Value> yields(found);
    yields.append(raced);
    yields.push_back(anyElement(raced));
    b.create<scf::YieldOp>(loc, yields);
  }
  // The last swap found (and replaced) the old bits; 0 where not `ok`.
  Registers olds;
  Value zero = b.create<arith::ConstantOp>(loc, b.getZeroAttr(t.elementType));
  for (int64_t r = 0; r < n; ++r)
    olds.push_back(b.create<arith::SelectOp>(
        loc, oks[r], t.elementIn(b, loc, loop.getResult(r), safeOffsets[r]), zero));
  return olds;
}

Value ThreadEmitter::broadcastFromThread0(Value value) {
  Type type = value.getType();
  Value buffer = sharedBuffer(type);
  Value zero = b.create<arith::ConstantIndexOp>(loc, 0);
  Value first = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, threadId, i32(0));
  emitIfElse(
      first, {},
      [&]() -> SmallVector<Value> {
        b.create<memref::StoreOp>(loc, toSharedStorage(value), buffer, ValueRange{zero});
        return {};
      },
      nullptr);
  barrier();
  Value all = readShared(i32(0), type);
  barrier();
  return all;
}

LogicalResult ThreadEmitter::emitAtomic(Operation *op) {
  auto rmw = dyn_cast<AtomicRMWOp>(op);
  auto swap = dyn_cast<AtomicSwapOp>(op);
  Value memoryArg = rmw ? rmw.getMemory() : swap.getMemory();
  Value value = rmw ? rmw.getValue() : swap.getValue();
  Value compare = swap ? swap.getCompare() : Value();
  Value mask = rmw ? rmw.getMask() : swap.getMask();
  Value old = op->getResult(0);
  const TensorArg &t = tensors.find(memoryArg)->second;
  auto tile = dyn_cast<RankedTensorType>(value.getType());
  int64_t n = tile ? registers(tile) : 1;
  bool needOld = !old.use_empty();
  MemoryOrder sem = rmw ? rmw.getSem() : swap.getSem();
  // A scalar atomic, and a releasing one, comes after everything the program's
  // threads did before it (a lock is released only once every thread's stores
  // are done); after an acquiring one every thread's accesses come after it.
  if (!tile || releases(sem))
    barrier(/*deviceMemory=*/true);
  // Exactly one thread updates each element, as for stores.
  SmallVector<Access> acc =
      accesses(b, loc, t, n, coordinates(rmw ? rmw.getIndices() : swap.getIndices(), {}, tile),
               [&](int64_t r) { return writerOk(tile, mask, r); });
  SmallVector<Type> types;
  if (needOld)
    types.push_back(t.elementType);
  Registers olds;
  // SPIR-V float read-modify-writes, and every atomic on 16-bit floats (held
  // there two to a 32-bit word): swaps of the integer bits.
  bool bySwaps = updatesBySwaps(op, t.storageType);
  if (bySwaps) {
    SmallVector<Value> offsets, oks, values, compares;
    for (int64_t r = 0; r < n; ++r) {
      offsets.push_back(acc[r].offset);
      oks.push_back(acc[r].ok);
      values.push_back(element(value, r));
      compares.push_back(compare ? element(compare, r) : Value());
    }
    Type elementBits = b.getIntegerType(t.elementType.getIntOrFloatBitWidth());
    auto update = [&](Value current, int64_t r) -> Value {
      if (rmw)
        return combineReduction(b, loc, rmw.getKind(), current, values[r]);
      if (!compare) // exchange
        return values[r];
      // compare-and-swap: bits, as below
      Value same = b.create<arith::CmpIOp>(
          loc, arith::CmpIPredicate::eq, b.create<arith::BitcastOp>(loc, elementBits, current),
          b.create<arith::BitcastOp>(loc, elementBits, compares[r]));
      return b.create<arith::SelectOp>(loc, same, values[r], current);
    };
    olds = updateBySwaps(t, offsets, oks, update, tile ? tile.getNumElements() : 1);
  }
  // A float exchange or compare-and-swap moves (and compares) the bits.
  Type floatBits = swap && isa<FloatType>(t.elementType)
                       ? b.getIntegerType(t.elementType.getIntOrFloatBitWidth())
                       : Type();
  auto asBits = [&](Value v) -> Value {
    return floatBits && v ? b.create<arith::BitcastOp>(loc, floatBits, v).getResult() : v;
  };
  for (int64_t r = 0; r < n && !bySwaps; ++r) {
    Value v = asBits(element(value, r));
    Value c = asBits(compare ? element(compare, r) : Value());
    auto ifOp = emitIfElse(
        acc[r].ok, types,
        [&]() -> SmallVector<Value> {
          Value o = atomicUpdate(op, t, acc[r].offset, v, c);
          if (floatBits)
            o = b.create<arith::BitcastOp>(loc, t.elementType, o);
          return needOld ? SmallVector<Value>{o} : SmallVector<Value>{};
        },
        needOld ? [&]() -> SmallVector<Value> {
          return {b.create<arith::ConstantOp>(loc, b.getZeroAttr(t.elementType))};
        } : function_ref<SmallVector<Value>()>());
    if (needOld)
      olds.push_back(ifOp.getResult(0));
  }
  if (needOld && !tile)
    scalars.map(old, broadcastFromThread0(olds[0]));
  else if (needOld)
    tiles[old] = std::move(olds);
  if (acquires(sem))
    barrier(/*deviceMemory=*/true);
  return success();
}
