//===- MatmulMicroKernel.cpp - register-blocked matmul on tile buffers ----===//
//
// After bufferization a `kiln.dot` is a `linalg.matmul` on small, statically
// shaped buffers (the tiles a program loaded). This pass replaces it with the
// classic BLIS-style micro-kernel: the C tile is walked in MR x NR blocks whose
// accumulators live in vector registers for the whole K loop; each K step loads
// NR/VL vectors of one B row and broadcasts MR scalars of one A column into
// fused multiply-adds. Matmuls it cannot block are left for the loop lowering.
// On x86, 8- and 16-bit integer matmuls into i32 take K in pairs through
// pmaddwd, on a copy of B packed in (k, k + 1) pairs.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinTypes.h"

namespace kiln {
#define GEN_PASS_DEF_KILNCPUMATMULMICROKERNEL
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {

/// The register blocking chosen for one matmul.
struct Blocking {
  int64_t vectorLength; // elements of the accumulator type per vector register
  int64_t vectorsPerRow; // NR / vectorLength
  int64_t rows;          // MR
};

/// A statically shaped 2-D buffer whose rows are contiguous.
bool hasUnitInnerStride(Value v) {
  auto type = dyn_cast<MemRefType>(v.getType());
  if (!type || type.getRank() != 2 || !type.hasStaticShape())
    return false;
  SmallVector<int64_t> strides;
  int64_t offset;
  return succeeded(getStridesAndOffset(type, strides, offset)) && strides.back() == 1;
}

/// MR x NR blocking for an M x N tile with `registers` vector registers of
/// `registerBits` bits, or nothing when N is not a multiple of one vector.
std::optional<Blocking> chooseBlocking(int64_t m, int64_t n, Type accType,
                                       int64_t registerBits, int64_t registers) {
  int64_t bits = accType.getIntOrFloatBitWidth();
  if (bits == 0 || registerBits % bits != 0)
    return std::nullopt;
  int64_t vl = registerBits / bits;
  for (int64_t vectors : {2, 1}) {
    if (n % (vl * vectors) != 0)
      continue;
    // Accumulators, the B row and one broadcast A value must all stay in registers.
    for (int64_t rows : {8, 6, 4, 3, 2, 1}) {
      if (m % rows == 0 && rows * vectors + vectors + 1 <= registers)
        return Blocking{vl, vectors, rows};
    }
  }
  return std::nullopt;
}

/// Converts `v` (scalar or vector) to the element type `to` as linalg.matmul
/// does: floats extend or truncate, integers sign-extend or truncate.
Value castTo(OpBuilder &b, Location loc, Value v, Type to) {
  Type from = getElementTypeOrSelf(v.getType());
  if (from == to)
    return v;
  Type target = to;
  if (auto vt = dyn_cast<VectorType>(v.getType()))
    target = VectorType::get(vt.getShape(), to);
  unsigned fromBits = from.getIntOrFloatBitWidth(), toBits = to.getIntOrFloatBitWidth();
  if (isa<FloatType>(from))
    return fromBits < toBits ? b.create<arith::ExtFOp>(loc, target, v).getResult()
                             : b.create<arith::TruncFOp>(loc, target, v).getResult();
  return fromBits < toBits ? b.create<arith::ExtSIOp>(loc, target, v).getResult()
                           : b.create<arith::TruncIOp>(loc, target, v).getResult();
}

/// acc + a * b on vectors of the accumulator type.
Value multiplyAdd(OpBuilder &b, Location loc, Value a, Value bv, Value acc) {
  if (isa<FloatType>(getElementTypeOrSelf(acc.getType())))
    return b.create<vector::FMAOp>(loc, a, bv, acc);
  Value product = b.create<arith::MulIOp>(loc, a, bv);
  return b.create<arith::AddIOp>(loc, product, acc);
}

/// x86's pmaddwd at `registerBits`: i16 lanes multiplied, each adjacent pair of
/// products summed into one i32 lane.
StringRef pmaddwdIntrinsic(int64_t registerBits) {
  return registerBits == 512   ? "llvm.x86.avx512.pmaddw.d.512"
         : registerBits == 256 ? "llvm.x86.avx2.pmadd.wd"
                               : "llvm.x86.sse2.pmadd.wd";
}

/// B (k x n, 8- or 16-bit integers, k even) as k / 2 rows of 2n i16: row p
/// holds B[2p][j], B[2p + 1][j] for each column j, so that one 2vl-lane load
/// gives pmaddwd vl columns' pairs. Written vl columns at a time.
Value packPairs(OpBuilder &b, Location loc, Value bm, int64_t k, int64_t n, int64_t vl) {
  Type i16 = b.getI16Type();
  Type element = cast<MemRefType>(bm.getType()).getElementType();
  auto index = [&](int64_t v) { return b.create<arith::ConstantIndexOp>(loc, v).getResult(); };
  Value packed = b.create<memref::AllocaOp>(loc, MemRefType::get({k / 2, 2 * n}, i16));
  SmallVector<int64_t> interleave;
  for (int64_t j = 0; j < vl; ++j)
    interleave.append({j, vl + j});
  b.create<scf::ForOp>(
      loc, index(0), index(k / 2), index(1), ValueRange{},
      [&](OpBuilder &rb, Location l, Value p, ValueRange) {
        Value even = rb.create<arith::MulIOp>(l, p, index(2));
        Value odd = rb.create<arith::AddIOp>(l, even, index(1));
        rb.create<scf::ForOp>(
            l, index(0), index(n), index(vl), ValueRange{},
            [&](OpBuilder &cb, Location cl, Value j, ValueRange) {
              auto row = [&](Value kk) {
                Value v = cb.create<vector::LoadOp>(cl, VectorType::get({vl}, element), bm,
                                                    ValueRange{kk, j});
                return castTo(cb, cl, v, i16);
              };
              Value pairs = cb.create<vector::ShuffleOp>(cl, row(even), row(odd), interleave);
              Value at = cb.create<arith::MulIOp>(cl, j, index(2));
              cb.create<vector::StoreOp>(cl, pairs, packed, ValueRange{p, at});
              cb.create<scf::YieldOp>(cl);
            });
        rb.create<scf::YieldOp>(l);
      });
  return packed;
}

/// Replaces `op` with the register-blocked loop nest; false when it does not apply.
bool rewriteMatmul(linalg::MatmulOp op, int64_t registerBits, int64_t registers,
                   bool x86Pmaddwd) {
  if (!op.hasPureBufferSemantics() || op.getInputs().size() != 2 || op.getOutputs().size() != 1)
    return false;
  Value a = op.getInputs()[0], bm = op.getInputs()[1], c = op.getOutputs()[0];
  if (!hasUnitInnerStride(a) || !hasUnitInnerStride(bm) || !hasUnitInnerStride(c))
    return false;
  Type aType = cast<MemRefType>(a.getType()).getElementType();
  Type bType = cast<MemRefType>(bm.getType()).getElementType();
  auto cMemRef = cast<MemRefType>(c.getType());
  Type cType = cMemRef.getElementType();
  // Mixed float/integer products keep linalg's generic semantics.
  auto isFloat = [](Type t) { return isa<FloatType>(t); };
  if (isFloat(aType) != isFloat(cType) || isFloat(bType) != isFloat(cType))
    return false;
  int64_t m = cMemRef.getDimSize(0), n = cMemRef.getDimSize(1);
  int64_t k = cast<MemRefType>(a.getType()).getDimSize(1);
  std::optional<Blocking> blocking = chooseBlocking(m, n, cType, registerBits, registers);
  if (!blocking)
    return false;
  const int64_t vl = blocking->vectorLength, nv = blocking->vectorsPerRow,
                mr = blocking->rows;
  // 8- and 16-bit integer products summed in i32 two K steps at a time.
  bool paired = x86Pmaddwd && llvm::is_contained({128, 256, 512}, registerBits) &&
                isa<IntegerType>(aType) && aType == bType &&
                aType.getIntOrFloatBitWidth() <= 16 && cType.isInteger(32) && k % 2 == 0;

  OpBuilder b(op);
  Location loc = op.getLoc();
  auto index = [&](int64_t v) { return b.create<arith::ConstantIndexOp>(loc, v).getResult(); };
  Value zero = index(0), one = index(1);
  auto accVector = VectorType::get({vl}, cType);
  auto bVector = VectorType::get({vl}, bType);
  auto pairVector = VectorType::get({2 * vl}, b.getI16Type());
  Value packed = paired ? packPairs(b, loc, bm, k, n, vl) : Value();

  auto rowLoop = b.create<scf::ForOp>(loc, zero, index(m), index(mr));
  b.setInsertionPointToStart(rowLoop.getBody());
  Value i0 = rowLoop.getInductionVar();
  auto colLoop = b.create<scf::ForOp>(loc, zero, index(n), index(nv * vl));
  b.setInsertionPointToStart(colLoop.getBody());
  Value j0 = colLoop.getInductionVar();

  // rowIndex(r) = i0 + r, colIndex(v) = j0 + v * vl; the accumulators are laid
  // out row-major: accs[r * nv + v].
  auto offset = [&](OpBuilder &ob, Value base, int64_t delta) -> Value {
    if (delta == 0)
      return base;
    Value d = ob.create<arith::ConstantIndexOp>(loc, delta);
    return ob.create<arith::AddIOp>(loc, base, d);
  };
  SmallVector<Value> accs;
  for (int64_t r = 0; r < mr; ++r)
    for (int64_t v = 0; v < nv; ++v)
      accs.push_back(b.create<vector::LoadOp>(loc, accVector, c,
                                              ValueRange{offset(b, i0, r), offset(b, j0, v * vl)}));

  // Paired: step p covers K steps 2p and 2p + 1; each A pair (adjacent in its
  // row) is broadcast as one 32-bit value.
  auto pairedStep = [&](OpBuilder &kb, Location l, Value p, ValueRange carried) {
    SmallVector<Value> bRow;
    for (int64_t v = 0; v < nv; ++v) {
      Value at = kb.create<arith::MulIOp>(l, offset(kb, j0, v * vl), index(2));
      bRow.push_back(kb.create<vector::LoadOp>(l, pairVector, packed, ValueRange{p, at}));
    }
    Value even = kb.create<arith::MulIOp>(l, p, index(2));
    Value odd = kb.create<arith::AddIOp>(l, even, index(1));
    SmallVector<Value> next;
    for (int64_t r = 0; r < mr; ++r) {
      auto element = [&](Value kk) {
        Value x = kb.create<memref::LoadOp>(l, a, ValueRange{offset(kb, i0, r), kk});
        return castTo(kb, l, x, kb.getI16Type());
      };
      Value pair = kb.create<vector::FromElementsOp>(
          l, VectorType::get({2}, kb.getI16Type()), ValueRange{element(even), element(odd)});
      Value word = kb.create<vector::BitCastOp>(l, VectorType::get({1}, cType), pair);
      Value splat = kb.create<vector::BroadcastOp>(
          l, accVector, kb.create<vector::ExtractOp>(l, word, ArrayRef<int64_t>{0}));
      Value pairs = kb.create<vector::BitCastOp>(l, pairVector, splat);
      for (int64_t v = 0; v < nv; ++v) {
        Value sums = kb.create<LLVM::CallIntrinsicOp>(l, accVector, pmaddwdIntrinsic(registerBits),
                                                      ValueRange{pairs, bRow[v]})
                         .getResult(0);
        next.push_back(kb.create<arith::AddIOp>(l, sums, carried[r * nv + v]));
      }
    }
    kb.create<scf::YieldOp>(l, next);
  };
  auto kLoop = b.create<scf::ForOp>(
      loc, zero, index(paired ? k / 2 : k), one, accs,
      [&](OpBuilder &kb, Location l, Value kk, ValueRange carried) {
        if (paired)
          return pairedStep(kb, l, kk, carried);
        SmallVector<Value> bRow;
        for (int64_t v = 0; v < nv; ++v) {
          Value loaded =
              kb.create<vector::LoadOp>(l, bVector, bm, ValueRange{kk, offset(kb, j0, v * vl)});
          bRow.push_back(castTo(kb, l, loaded, cType));
        }
        SmallVector<Value> next;
        for (int64_t r = 0; r < mr; ++r) {
          Value scalar = kb.create<memref::LoadOp>(l, a, ValueRange{offset(kb, i0, r), kk});
          Value splat = kb.create<vector::BroadcastOp>(l, accVector, castTo(kb, l, scalar, cType));
          for (int64_t v = 0; v < nv; ++v)
            next.push_back(multiplyAdd(kb, l, splat, bRow[v], carried[r * nv + v]));
        }
        kb.create<scf::YieldOp>(l, next);
      });
  for (int64_t r = 0; r < mr; ++r)
    for (int64_t v = 0; v < nv; ++v)
      b.create<vector::StoreOp>(loc, kLoop.getResult(r * nv + v), c,
                                ValueRange{offset(b, i0, r), offset(b, j0, v * vl)});
  op.erase();
  return true;
}

struct MatmulMicroKernel : kiln::impl::KilnCPUMatmulMicroKernelBase<MatmulMicroKernel> {
  using Base::Base;
  void runOnOperation() override {
    if (registerBits <= 0 || registerBits % 8 != 0 || registers <= 0) {
      getOperation().emitError() << "kiln-cpu-matmul-microkernel: register-bits must be a "
                                    "positive multiple of 8 and registers positive (got "
                                 << static_cast<int64_t>(registerBits) << " and "
                                 << static_cast<int64_t>(registers) << ")";
      return signalPassFailure();
    }
    SmallVector<linalg::MatmulOp> matmuls;
    getOperation().walk([&](linalg::MatmulOp op) { matmuls.push_back(op); });
    for (linalg::MatmulOp op : matmuls)
      (void)rewriteMatmul(op, registerBits, registers, x86Pmaddwd);
  }
};

} // namespace
