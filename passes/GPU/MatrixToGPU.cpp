//===- MatrixToGPU.cpp - dots on tensor cores and matrix cores ------------===//
//
// A dot C = A * B + acc with A: M x K, B: K x N of f16/bf16 and an f32
// accumulator runs on the warp-level matrix instructions:
//
//   1. A and B go to shared memory row-major (as for the FMA loop);
//   2. the result is cut into instruction-sized tiles, dealt round-robin to the
//      warps; each warp loops over K, loading its fragments from shared memory
//      and issuing one matrix instruction per K step;
//   3. each warp writes its accumulator fragments to a row-major f32 buffer in
//      shared memory, and every thread reads back the elements its blocked
//      layout owns, adding the incoming accumulator.
//
// NVIDIA (mma-sync, sm_80+): ldmatrix.x4 / ldmatrix.x2.trans and
// mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}, emitted as inline PTX.
// Fragment layouts (PTX ISA, "Matrix Fragments for mma.m16n8k16"), with
// g = lane / 4 and t = lane % 4:
//   A regs a0..a3 hold A[g][2t..2t+1], A[g+8][2t..], A[g][2t+8..], A[g+8][2t+8..]
//   B regs b0, b1 hold B[2t..2t+1][g], B[2t+8..2t+9][g]
//   C c0..c3 are C[g][2t], C[g][2t+1], C[g+8][2t], C[g+8][2t+1]
// ldmatrix.x4 gives exactly the A registers when lane l points at row l % 16,
// column 8 * (l / 16) of the 16 x 16 A block; ldmatrix.x2.trans gives the B
// registers when lanes 0..15 point at rows 0..15 of the 16 x 8 B block.
//
// AMD (mfma, gfx90a/gfx94x, 64-lane waves): rocdl.mfma.f32.16x16x16f16 (bf16 not yet),
// with lane l, element i (i < 4) holding A[l % 16][4 (l / 16) + i],
// B[4 (l / 16) + i][l % 16] and C[4 (l / 16) + i][l % 16].
//
//===----------------------------------------------------------------------===//

#include "passes/GPU/Lowering.h"
#include "passes/GPU/MatrixUnits.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/ROCDLDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace kiln;
using namespace kiln::gpu;

std::optional<MatrixUnits> kiln::gpu::parseMatrixUnits(llvm::StringRef name) {
  if (name == "none")
    return MatrixUnits::None;
  if (name == "mma-sync")
    return MatrixUnits::MmaSync;
  if (name == "mfma")
    return MatrixUnits::Mfma;
  return std::nullopt;
}

std::optional<MatrixShape> kiln::gpu::matrixInstruction(DotOp op, MatrixUnits units) {
  if (units == MatrixUnits::None)
    return std::nullopt;
  auto a = op.getA().getType(), b = op.getB().getType(), c = op.getType();
  Type in = a.getElementType();
  if (!(in.isF16() || in.isBF16()) || b.getElementType() != in || !c.getElementType().isF32())
    return std::nullopt;
  // bf16 on AMD stays on the FMA loop: the ROCDL lowering turns bf16 into i16
  // and leaves casts that LLVM translation rejects (MLIR 19).
  if (units == MatrixUnits::Mfma && in.isBF16())
    return std::nullopt;
  MatrixShape shape = units == MatrixUnits::MmaSync ? MatrixShape{16, 8, 16}
                                                    : MatrixShape{16, 16, 16};
  int64_t m = a.getDimSize(0), k = a.getDimSize(1), n = b.getDimSize(1);
  if (m % shape.m != 0 || n % shape.n != 0 || k % shape.k != 0)
    return std::nullopt;
  return shape;
}

namespace {

/// Emits one warp's matrix-instruction tiles; `emitTile` builds the K loop of one.
struct MatrixDot {
  OpBuilder &b;
  Location loc;
  int64_t m, n, k;
  Type in; // f16 or bf16

  Value i32(int64_t v) { return b.create<arith::ConstantIntOp>(loc, v, 32); }
  Value add(Value x, Value y) { return b.create<arith::AddIOp>(loc, x, y); }
  Value mul(Value x, Value y) { return b.create<arith::MulIOp>(loc, x, y); }
  Value div(Value x, int64_t y) { return b.create<arith::DivUIOp>(loc, x, i32(y)); }
  Value rem(Value x, int64_t y) { return b.create<arith::RemUIOp>(loc, x, i32(y)); }

  /// The 32-bit shared-memory address of element `index` of `buffer` (for PTX).
  Value sharedAddress(Value buffer, Value index) {
    Value base = b.create<memref::ExtractAlignedPointerAsIndexOp>(loc, buffer);
    Value base32 = b.create<arith::IndexCastOp>(loc, b.getI32Type(), base);
    int64_t bytes = in.getIntOrFloatBitWidth() / 8;
    return add(base32, mul(index, i32(bytes)));
  }

  /// Inline PTX with `results` 32-bit outputs of `kind` ('r' or 'f').
  SmallVector<Value> ptx(StringRef text, StringRef constraints, unsigned results, Type type,
                         ValueRange operands) {
    auto structType =
        LLVM::LLVMStructType::getLiteral(b.getContext(), SmallVector<Type>(results, type));
    auto asmOp = b.create<LLVM::InlineAsmOp>(
        loc, structType, operands, text, constraints, /*has_side_effects=*/true,
        /*is_align_stack=*/false,
        LLVM::AsmDialectAttr::get(b.getContext(), LLVM::AsmDialect::AD_ATT),
        /*operand_attrs=*/ArrayAttr());
    SmallVector<Value> out;
    for (unsigned i = 0; i < results; ++i)
      out.push_back(b.create<LLVM::ExtractValueOp>(loc, asmOp.getResult(0), i));
    return out;
  }
};

} // namespace

void ThreadEmitter::emitMatrixDot(DotOp op) {
  auto at = op.getA().getType(), bt = op.getB().getType(), ct = op.getType();
  MatrixShape shape = *matrixInstruction(op, matrixUnits);
  MatrixDot md{b, loc, at.getDimSize(0), bt.getDimSize(1), at.getDimSize(1),
               at.getElementType()};
  Type f32 = b.getF32Type();
  writeShared(regs(op.getA()), md.m * md.k, md.in, 0);
  writeShared(regs(op.getB()), md.k * md.n, md.in, md.m * md.k);
  barrier();

  Value operands = sharedBuffer(md.in), results = sharedBuffer(f32);
  int64_t warp = layout.getWarpSize();
  Value warpId = md.div(threadId, warp), lane = md.rem(threadId, warp);
  int64_t tilesN = md.n / shape.n, numTiles = (md.m / shape.m) * tilesN;
  auto index = [&](Value v) { return b.create<arith::IndexCastOp>(loc, b.getIndexType(), v); };
  auto storeResult = [&](Value value, Value row, Value col) {
    Value at = md.add(md.mul(row, md.i32(md.n)), col);
    b.create<memref::StoreOp>(loc, value, results, ValueRange{index(at)});
  };

  // for (tile = warpId; tile < tiles; tile += numWarps)
  auto tileLoop = b.create<scf::ForOp>(loc, index(warpId), index(md.i32(numTiles)),
                                       index(md.i32(layout.getNumWarps())));
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(tileLoop.getBody());
    Value tile = b.create<arith::IndexCastOp>(loc, b.getI32Type(), tileLoop.getInductionVar());
    Value row0 = md.mul(md.div(tile, tilesN), md.i32(shape.m));
    Value col0 = md.mul(md.rem(tile, tilesN), md.i32(shape.n));
    Value zero = b.create<arith::ConstantOp>(loc, b.getF32FloatAttr(0));
    Value zeroIdx = index(md.i32(0)), one = index(md.i32(1));

    if (matrixUnits == MatrixUnits::MmaSync) {
      const char *kind = md.in.isF16() ? "f16" : "bf16";
      std::string mma = std::string("mma.sync.aligned.m16n8k16.row.col.f32.") + kind + "." +
                        kind + ".f32 {$0,$1,$2,$3}, {$4,$5,$6,$7}, {$8,$9}, {$10,$11,$12,$13};";
      // Lane addresses for ldmatrix: A row lane % 16 at column 8 * (lane / 16);
      // B rows 0..15 (lanes 16..31 repeat lanes 0..15; .x2 ignores them).
      Value lane16 = md.rem(lane, 16), half = md.mul(md.div(lane, 16), md.i32(8));
      auto kLoop = b.create<scf::ForOp>(
          loc, zeroIdx, index(md.i32(md.k / shape.k)), one, ValueRange{zero, zero, zero, zero},
          [&](OpBuilder &, Location, Value kIdx, ValueRange acc) {
            Value k0 = md.mul(b.create<arith::IndexCastOp>(loc, b.getI32Type(), kIdx),
                              md.i32(shape.k));
            Value aIndex = md.add(md.mul(md.add(row0, lane16), md.i32(md.k)), md.add(k0, half));
            SmallVector<Value> a = md.ptx(
                "ldmatrix.sync.aligned.m8n8.x4.shared.b16 {$0,$1,$2,$3}, [$4];", "=r,=r,=r,=r,r",
                4, b.getI32Type(), {md.sharedAddress(operands, aIndex)});
            Value bIndex = md.add(md.i32(md.m * md.k),
                                  md.add(md.mul(md.add(k0, lane16), md.i32(md.n)), col0));
            SmallVector<Value> bf = md.ptx(
                "ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {$0,$1}, [$2];", "=r,=r,r", 2,
                b.getI32Type(), {md.sharedAddress(operands, bIndex)});
            SmallVector<Value> args(a);
            args.append(bf);
            args.append(acc.begin(), acc.end());
            SmallVector<Value> c =
                md.ptx(mma, "=f,=f,=f,=f,r,r,r,r,r,r,f,f,f,f", 4, f32, args);
            b.create<scf::YieldOp>(loc, c);
          });
      Value g = md.div(lane, 4), t2 = md.mul(md.rem(lane, 4), md.i32(2));
      for (int i = 0; i < 4; ++i) {
        Value row = md.add(md.add(row0, g), md.i32(i >= 2 ? 8 : 0));
        Value col = md.add(md.add(col0, t2), md.i32(i % 2));
        storeResult(kLoop.getResult(i), row, col);
      }
    } else {
      // MFMA: every lane reads its four A and four B elements straight from
      // shared memory.
      auto vecIn = VectorType::get({4}, md.in.isBF16() ? Type(b.getI16Type()) : md.in);
      auto vecAcc = VectorType::get({4}, f32);
      Value accInit = b.create<arith::ConstantOp>(loc, DenseElementsAttr::get(vecAcc, 0.0f));
      Value lane16 = md.rem(lane, 16), quad = md.mul(md.div(lane, 16), md.i32(4));
      auto kLoop = b.create<scf::ForOp>(
          loc, zeroIdx, index(md.i32(md.k / shape.k)), one, ValueRange{accInit},
          [&](OpBuilder &, Location, Value kIdx, ValueRange acc) {
            Value k0 = md.mul(b.create<arith::IndexCastOp>(loc, b.getI32Type(), kIdx),
                              md.i32(shape.k));
            Value av = b.create<LLVM::UndefOp>(loc, vecIn), bv = b.create<LLVM::UndefOp>(loc, vecIn);
            for (int i = 0; i < 4; ++i) {
              Value kk = md.add(k0, md.add(quad, md.i32(i)));
              Value aAt = md.add(md.mul(md.add(row0, lane16), md.i32(md.k)), kk);
              Value bAt = md.add(md.i32(md.m * md.k),
                                 md.add(md.mul(kk, md.i32(md.n)), md.add(col0, lane16)));
              Value x = b.create<memref::LoadOp>(loc, operands, ValueRange{index(aAt)});
              Value y = b.create<memref::LoadOp>(loc, operands, ValueRange{index(bAt)});
              if (md.in.isBF16()) {
                x = b.create<arith::BitcastOp>(loc, b.getI16Type(), x);
                y = b.create<arith::BitcastOp>(loc, b.getI16Type(), y);
              }
              Value pos = b.create<arith::ConstantIntOp>(loc, i, 32);
              av = b.create<LLVM::InsertElementOp>(loc, av, x, pos);
              bv = b.create<LLVM::InsertElementOp>(loc, bv, y, pos);
            }
            Value zero32 = md.i32(0);
            SmallVector<Value> args{av, bv, acc[0], zero32, zero32, zero32};
            Value c = md.in.isF16()
                          ? b.create<ROCDL::mfma_f32_16x16x16f16>(loc, vecAcc, args).getResult()
                          : b.create<ROCDL::mfma_f32_16x16x16bf16_1k>(loc, vecAcc, args)
                                .getResult();
            b.create<scf::YieldOp>(loc, c);
          });
      for (int i = 0; i < 4; ++i) {
        Value v = b.create<LLVM::ExtractElementOp>(loc, kLoop.getResult(0),
                                                     b.create<arith::ConstantIntOp>(loc, i, 32));
        storeResult(v, md.add(row0, md.add(quad, md.i32(i))), md.add(col0, lane16));
      }
    }
  }
  barrier();

  // Back to the blocked layout, adding the incoming accumulator.
  Registers out;
  const Registers &acc = regs(op.getAcc());
  for (int64_t r = 0, count = registers(ct); r < count; ++r) {
    Value valid = registerValid(r, ct.getNumElements());
    Value e = b.create<arith::SelectOp>(loc, valid, elementIndex(r), md.i32(0));
    Value product = b.create<memref::LoadOp>(loc, results, ValueRange{index(e)});
    out.push_back(b.create<arith::AddFOp>(loc, product, acc[r]));
  }
  barrier();
  tiles[op.getResult()] = out;
}
