//===- MatrixToGPU.cpp - dots on tensor cores and matrix cores ------------===//
//
// A dot C = A * B + acc with f16/bf16 operands (or f32 ones with tf32, or fp8)
// and an f32 accumulator, or s8 operands and an i32 one, runs on the target's
// matrix instructions:
//
//   1. A and B reach shared memory (registers -> st.shared, or straight from
//      global memory with cp.async, see MemoryToGPU and PipelineToGPU), laid out
//      for the instruction (OperandLayouts.h; matrixOperandIndex): rows with
//      XOR-permuted chunks for mma.sync, swizzled atoms for wgmma, row-major
//      for MFMA / WMMA;
//   2. the result is cut into instruction tiles dealt round-robin to the workers
//      (warps; warpgroups of four for wgmma): slot j of worker w is tile
//      w + j * workers (FragmentLayout). Each worker loops over K from its
//      accumulator registers (the fragment layout), issuing one instruction per
//      K step;
//   3. when a loop carries the accumulator only through this dot, the fragments
//      stay in registers to the next iteration (KilnGPUToGPU's emitFor); else
//      they go through the f32 shared buffer (i32 as its bits) back to the blocked layout, where
//      the incoming accumulator is added (fromFragments).
//
// Instructions and their operand fragments (g = lane / 4, t = lane % 4):
//   mma.sync.m16n8k16 (sm_80+), fed by ldmatrix.x4 (A: lane l points at row
//     l % 16, column 8 (l / 16)) and ldmatrix.x2.trans (B: lanes 0..15 at rows
//     0..15): A regs hold A[g][2t..2t+1], A[g+8][2t..], A[g][2t+8..],
//     A[g+8][2t+8..]; B regs B[2t..2t+1][g], B[2t+8..2t+9][g];
//   mma.sync.m16n8k8.tf32: A[g][t], A[g+8][t], A[g][t+4], A[g+8][t+4];
//     B[t][g], B[t+4][g], each rounded by cvt.rna.tf32.f32;
//   wgmma.mma_async.m64nNk16 (sm_90a): both operands by shared-memory
//     descriptor over swizzled layouts (wgmmaTile);
//   v_mfma_f32_16x16x16f16 / 16x16x16bf16_1k (CDNA, wave64), and for int8
//     v_mfma_i32_16x16x16i8 (CDNA2) / 16x16x32_i8 (CDNA3); v_wmma_f32_16x16x16_f16
//     / _bf16 / v_wmma_i32_16x16x16_iu8 (gfx11, wave32): each lane gathers its
//     elements from shared memory (amdTile); bf16 goes in as i16 bits, fp8
//     widened to f16, int8 packed into 32-, 64- or 128-bit registers.
// fragmentElement gives each instruction's accumulator layout.
//
//===----------------------------------------------------------------------===//

#include "passes/GPU/Lowering.h"
#include "passes/GPU/MatrixUnits.h"
#include "passes/GPU/SharedMemory.h"
#include "passes/GPU/OperandLayouts.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/ROCDLDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include "llvm/ADT/StringSwitch.h"

#include <numeric>

using namespace mlir;
using namespace kiln;
using namespace kiln::gpu;

std::optional<MatrixUnits> kiln::gpu::parseMatrixUnits(llvm::StringRef name) {
  return llvm::StringSwitch<std::optional<MatrixUnits>>(name)
      .Case("none", MatrixUnits::None)
      .Case("mma-sync", MatrixUnits::MmaSync)
      .Case("wgmma", MatrixUnits::Wgmma)
      .Case("mfma", MatrixUnits::Mfma)
      .Case("mfma-cdna3", MatrixUnits::MfmaCdna3)
      .Case("wmma", MatrixUnits::Wmma)
      .Default(std::nullopt);
}

std::optional<MatrixShape> kiln::gpu::matrixInstruction(DotOp op, MatrixUnits units,
                                                        int64_t numWarps) {
  if (units == MatrixUnits::None)
    return std::nullopt;
  // CDNA3 runs CDNA2's instructions but for int8 (below); its dots are Mfma dots.
  bool cdna3 = units == MatrixUnits::MfmaCdna3;
  if (cdna3)
    units = MatrixUnits::Mfma;
  auto a = op.getA().getType(), b = op.getB().getType(), c = op.getType();
  Type in = a.getElementType();
  int64_t m = a.getDimSize(0), k = a.getDimSize(1), n = b.getDimSize(1);
  auto fits = [&](MatrixShape s) -> std::optional<MatrixShape> {
    if (m % s.m != 0 || n % s.n != 0 || k % s.k != 0)
      return std::nullopt;
    return s;
  };
  // f32 with tf32 rounding: mma.sync.m16n8k8.tf32 on every NVIDIA target with
  // tensor cores (wgmma's tf32 form is not used yet).
  if (op.getTf32())
    return c.getElementType().isF32() &&
                   (units == MatrixUnits::MmaSync || units == MatrixUnits::Wgmma)
               ? fits({MatrixUnits::MmaSync, 16, 8, 8})
               : std::nullopt;
  // fp8 (e4m3, e5m2): mma.sync.m16n8k32 exists from sm_89; Kiln uses it on the
  // sm_90 family (whose units are wgmma; wgmma's fp8 form wants B K-major in
  // shared memory, which the operand staging does not produce yet).
  // On AMD, fp8 operands are widened to f16 as each lane gathers them (exact:
  // every e4m3 and e5m2 value is an f16 value) and run on the f16 instructions;
  // CDNA3's own fp8 MFMA reads the FNUZ encodings, not OCP's.
  if (isa<Float8E4M3FNType, Float8E5M2Type>(in)) {
    if (b.getElementType() != in || !c.getElementType().isF32())
      return std::nullopt;
    if (units == MatrixUnits::Wgmma)
      return fits({MatrixUnits::MmaSync, 16, 8, 32});
    if (units == MatrixUnits::Mfma || units == MatrixUnits::Wmma)
      return fits({units, 16, 16, 16});
    return std::nullopt;
  }
  // int8 into i32 (s8 products summed in 32 bits, wrapping as the FMA loop
  // does): mma.sync.m16n8k32.s32.s8.s8.s32 from sm_80, the sm_90 family too
  // (wgmma's s8 form wants B K-major, as fp8's does); on AMD
  // v_mfma_i32_16x16x16i8 (gfx90a), v_mfma_i32_16x16x32_i8 (gfx94x, which has
  // no K = 16 form) and v_wmma_i32_16x16x16_iu8 (gfx11, signed, no clamp).
  // u8 operands reach the dot widened to i16 and keep the FMA loop.
  if (in.isInteger(8)) {
    if (b.getElementType() != in || !c.getElementType().isInteger(32))
      return std::nullopt;
    if (units == MatrixUnits::MmaSync || units == MatrixUnits::Wgmma)
      return fits({MatrixUnits::MmaSync, 16, 8, 32});
    return fits({units, 16, 16, cdna3 ? 32 : 16});
  }
  if (!(in.isF16() || in.isBF16()) || b.getElementType() != in || !c.getElementType().isF32())
    return std::nullopt;
  switch (units) {
  case MatrixUnits::Wgmma:
    // One warpgroup (four warps) computes 64 rows; the widest N up to 128 keeps
    // the accumulator at 64 registers a thread.
    if (numWarps % 4 == 0)
      for (int64_t width : {128, 64, 32, 16, 8})
        if (auto s = fits({MatrixUnits::Wgmma, 64, width, 16}))
          return s;
    return fits({MatrixUnits::MmaSync, 16, 8, 16});
  case MatrixUnits::MmaSync: return fits({MatrixUnits::MmaSync, 16, 8, 16});
  case MatrixUnits::Mfma: return fits({MatrixUnits::Mfma, 16, 16, 16});
  case MatrixUnits::Wmma: return fits({MatrixUnits::Wmma, 16, 16, 16});
  case MatrixUnits::MfmaCdna3: // made Mfma above
  case MatrixUnits::None: break;
  }
  return std::nullopt;
}

SmallVector<Value> kiln::gpu::inlinePTX(OpBuilder &b, Location loc, StringRef text,
                                        StringRef constraints, unsigned results, Type type,
                                        ValueRange operands) {
  Type resultType;
  if (results == 1)
    resultType = type;
  else if (results > 1)
    resultType =
        LLVM::LLVMStructType::getLiteral(b.getContext(), SmallVector<Type>(results, type));
  auto asmOp = b.create<LLVM::InlineAsmOp>(
      loc, resultType ? TypeRange{resultType} : TypeRange{}, operands, text, constraints,
      /*has_side_effects=*/true, /*is_align_stack=*/false,
      LLVM::AsmDialectAttr::get(b.getContext(), LLVM::AsmDialect::AD_ATT),
      /*operand_attrs=*/ArrayAttr());
  SmallVector<Value> out;
  if (results == 1)
    out.push_back(asmOp.getResult(0));
  for (unsigned i = 0; results > 1 && i < results; ++i)
    out.push_back(b.create<LLVM::ExtractValueOp>(loc, asmOp.getResult(0), i));
  return out;
}

FragmentLayout kiln::gpu::fragmentLayout(DotOp op, MatrixUnits units, int64_t numWarps) {
  FragmentLayout f;
  f.shape = *matrixInstruction(op, units, numWarps);
  f.m = op.getType().getDimSize(0);
  f.n = op.getType().getDimSize(1);
  f.group = f.shape.units == MatrixUnits::Wgmma ? 4 : 1;
  f.workers = numWarps / f.group;
  f.tilesN = f.n / f.shape.n;
  f.numTiles = (f.m / f.shape.m) * f.tilesN;
  f.slots = llvm::divideCeil(f.numTiles, f.workers);
  switch (f.shape.units) {
  case MatrixUnits::Wgmma: f.perTile = f.shape.n / 2; break;
  case MatrixUnits::Wmma: f.perTile = 8; break;
  default: f.perTile = 4; break;
  }
  return f;
}

namespace {

/// Builds one dot's matrix-instruction code. Each `*Tile` method emits the K loop
/// of one instruction tile at (row0, col0) of the result, starting from this
/// thread's accumulator registers of that tile and returning the new ones
/// (ThreadEmitter::fragmentElement says which element each register holds).
struct MatrixDot {
  OpBuilder &b;
  Location loc;
  int64_t m, n, k;
  Type in; // f16, bf16, fp8, i8 or f32 (tf32)
  MatrixShape shape;
  Value operands;  // shared memory: A at stage, B at stage + m * k, laid out per instruction
  Value stageBase; // i32 element offset of the pipeline stage (null: 0)

  // i32 arithmetic (also OperandLayouts' `Arith`).
  using Int = Value;
  Value i32(int64_t v) { return b.create<arith::ConstantIntOp>(loc, v, 32); }
  Value add(Value x, Value y) { return b.create<arith::AddIOp>(loc, x, y); }
  Value mul(Value x, Value y) { return b.create<arith::MulIOp>(loc, x, y); }
  Value mul(Value x, int64_t y) { return mul(x, i32(y)); }
  Value div(Value x, int64_t y) { return b.create<arith::DivUIOp>(loc, x, i32(y)); }
  Value rem(Value x, int64_t y) { return b.create<arith::RemUIOp>(loc, x, i32(y)); }
  Value bitXor(Value x, Value y) { return b.create<arith::XOrIOp>(loc, x, y); }
  Value index(Value v) { return b.create<arith::IndexCastOp>(loc, b.getIndexType(), v); }
  Value toI32(Value v) { return b.create<arith::IndexCastOp>(loc, b.getI32Type(), v); }

  /// `for (step = 0; step < k / shape.k; ++step) acc = body(step * shape.k, acc)`.
  scf::ForOp kLoop(ValueRange init, function_ref<SmallVector<Value>(Value k0, ValueRange)> body) {
    Value zero = index(i32(0)), one = index(i32(1));
    return b.create<scf::ForOp>(
        loc, zero, index(i32(k / shape.k)), one, init,
        [&](OpBuilder &, Location, Value step, ValueRange acc) {
          b.create<scf::YieldOp>(loc, body(mul(toI32(step), i32(shape.k)), acc));
        });
  }

  /// The 32-bit shared-memory address of operand element `index` of the
  /// current stage (for PTX).
  Value sharedAddress(Value index) {
    if (stageBase)
      index = add(stageBase, index);
    Value base = b.create<memref::ExtractAlignedPointerAsIndexOp>(loc, operands);
    int64_t bytes = in.getIntOrFloatBitWidth() / 8;
    return add(toI32(base), mul(index, i32(bytes)));
  }

  SmallVector<Value> ptx(StringRef text, StringRef constraints, unsigned results, Type type,
                         ValueRange operands) {
    return inlinePTX(b, loc, text, constraints, results, type, operands);
  }

  WgmmaOperand wgmmaA() const { return WgmmaOperand::forA(m, k); }
  WgmmaOperand wgmmaB() const { return WgmmaOperand::forB(k, n, shape.n); }
  /// mma.sync's operand elements A[row][col] and B[row][col] in the stage.
  SwizzledRows rowsA() const { return {m, k, in.getIntOrFloatBitWidth() / 8}; }
  SwizzledRows rowsB() const { return {k, n, in.getIntOrFloatBitWidth() / 8}; }
  Value aIndex(Value row, Value col) { return rowsA().offset(*this, row, col); }
  Value bIndex(Value row, Value col) { return add(i32(m * k), rowsB().offset(*this, row, col)); }
  /// The readers' A[row][step + lane] and B[row][step + lane] (SwizzledRows).
  Value aIndex(Value row, Value step, Value lane) {
    return rowsA().offset(*this, row, step, lane);
  }
  Value bIndex(Value row, Value step, Value lane) {
    return add(i32(m * k), rowsB().offset(*this, row, step, lane));
  }
  SmallVector<Value> ldmatrixA(Value lane, Value row0, Value k0);
  SmallVector<Value> mmaSyncTile(Value lane, Value row0, Value col0, ValueRange acc);
  SmallVector<Value> mmaSyncByteTile(Value lane, Value row0, Value col0, ValueRange acc);
  SmallVector<Value> wgmmaTile(Value row0, Value col0, ValueRange acc);
  SmallVector<Value> amdTile(Value lane, Value row0, Value col0, ValueRange acc);
};

} // namespace

// mma.sync.m16n8k16 fed by ldmatrix from A and B (aIndex, bIndex); for f32 operands
// (tf32), mma.sync.m16n8k8.tf32 with each register read from shared memory and
// rounded by cvt.rna.tf32.f32: with g = lane / 4, t = lane % 4, A registers
// hold A[g][t], A[g+8][t], A[g][t+4], A[g+8][t+4] and B registers B[t][g],
// B[t+4][g] (PTX ISA, "Matrix Fragments for mma.m16n8k8").
SmallVector<Value> MatrixDot::mmaSyncTile(Value lane, Value row0, Value col0, ValueRange acc) {
  Type f32 = b.getF32Type();
  if (in.isF32()) {
    Value g = div(lane, 4), t = rem(lane, 4);
    auto tf32 = [&](Value element) {
      if (stageBase)
        element = add(stageBase, element);
      Value v = b.create<memref::LoadOp>(loc, operands, ValueRange{index(element)});
      return ptx("cvt.rna.tf32.f32 $0, $1;", "=r,f", 1, b.getI32Type(), {v})[0];
    };
    auto loop = kLoop(acc, [&](Value k0, ValueRange acc) {
      SmallVector<Value> args;
      for (int64_t i = 0; i < 4; ++i) // A: rows g, g + 8; columns t, t + 4
        args.push_back(tf32(aIndex(add(row0, add(g, i32(i % 2 ? 8 : 0))), k0,
                                   add(t, i32(i >= 2 ? 4 : 0)))));
      for (int64_t i = 0; i < 2; ++i) // B: rows t, t + 4; column g
        args.push_back(tf32(bIndex(add(k0, add(t, i32(4 * i))), col0, g)));
      args.append(acc.begin(), acc.end());
      return ptx("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {$0,$1,$2,$3}, "
                 "{$4,$5,$6,$7}, {$8,$9}, {$10,$11,$12,$13};",
                 "=f,=f,=f,=f,r,r,r,r,r,r,f,f,f,f", 4, f32, args);
    });
    return loop.getResults();
  }
  if (shape.k == 32)
    return mmaSyncByteTile(lane, row0, col0, acc);
  const char *kind = in.isF16() ? "f16" : "bf16";
  std::string mma = std::string("mma.sync.aligned.m16n8k16.row.col.f32.") + kind + "." + kind +
                    ".f32 {$0,$1,$2,$3}, {$4,$5,$6,$7}, {$8,$9}, {$10,$11,$12,$13};";
  // Lane addresses for ldmatrix.x2.trans: B rows 0..15 (lanes 16..31 repeat
  // lanes 0..15; .x2 ignores them).
  Value lane16 = rem(lane, 16);
  auto loop = kLoop(acc, [&](Value k0, ValueRange acc) {
    SmallVector<Value> args = ldmatrixA(lane, row0, k0);
    args.append(ptx("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {$0,$1}, [$2];",
                    "=r,=r,r", 2, b.getI32Type(),
                    {sharedAddress(bIndex(add(k0, lane16), col0, i32(0)))}));
    args.append(acc.begin(), acc.end());
    return ptx(mma, "=f,=f,=f,=f,r,r,r,r,r,r,f,f,f,f", 4, f32, args);
  });
  return loop.getResults();
}

/// The four A registers of an mma.sync tile at rows row0.., K columns k0..:
/// ldmatrix.x4 with lane l pointing at row l % 16, 16 bytes into the row when
/// l >= 16 (8 f16/bf16 elements or 16 fp8 ones).
SmallVector<Value> MatrixDot::ldmatrixA(Value lane, Value row0, Value k0) {
  int64_t perHalf = 16 / (in.getIntOrFloatBitWidth() / 8);
  Value at = aIndex(add(row0, rem(lane, 16)), k0, mul(div(lane, 16), i32(perHalf)));
  return ptx("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {$0,$1,$2,$3}, [$4];", "=r,=r,=r,=r,r",
             4, b.getI32Type(), {sharedAddress(at)});
}

// mma.sync.m16n8k32 with fp8 or s8 operands (PTX ISA, "Matrix Fragments for
// mma.m16n8k32"), g = lane / 4, t = lane % 4, four 8-bit elements per register:
// A regs hold A[g][4t..4t+3], A[g+8][4t..], A[g][16+4t..], A[g+8][16+4t..], the
// rows' 16-byte halves that ldmatrix.x4 (b16) delivers when lane l points at row
// l % 16, byte 16 (l / 16); B regs hold B[4t..4t+3][g], B[16+4t..][g], columns of
// row-major B that ldmatrix cannot transpose at 8 bits, so each thread gathers
// its eight bytes. The accumulator layout (f32, or s32 for s8) is m16n8k16's.
SmallVector<Value> MatrixDot::mmaSyncByteTile(Value lane, Value row0, Value col0,
                                              ValueRange acc) {
  Type i32Type = b.getI32Type();
  bool integer = in.isInteger(8);
  const char *kind = integer ? "s8" : isa<Float8E4M3FNType>(in) ? "e4m3" : "e5m2";
  const char *sum = integer ? "s32" : "f32";
  std::string mma = std::string("mma.sync.aligned.m16n8k32.row.col.") + sum + "." + kind + "." +
                    kind + "." + sum +
                    " {$0,$1,$2,$3}, {$4,$5,$6,$7}, {$8,$9}, {$10,$11,$12,$13};";
  std::string constraints =
      integer ? "=r,=r,=r,=r,r,r,r,r,r,r,r,r,r,r" : "=f,=f,=f,=f,r,r,r,r,r,r,f,f,f,f";
  Value g = div(lane, 4), t = rem(lane, 4);
  auto byteAt = [&](Value element) -> Value {
    if (stageBase)
      element = add(stageBase, element);
    Value bits = b.create<memref::LoadOp>(loc, operands, ValueRange{index(element)});
    if (!integer)
      bits = b.create<arith::BitcastOp>(loc, b.getI8Type(), bits);
    return b.create<arith::ExtUIOp>(loc, i32Type, bits);
  };
  auto loop = kLoop(acc, [&](Value k0, ValueRange acc) {
    SmallVector<Value> args = ldmatrixA(lane, row0, k0);
    for (int64_t reg = 0; reg < 2; ++reg) { // B rows 16 reg + 4t .. + 3, column g
      Value word = i32(0);
      for (int64_t i = 0; i < 4; ++i) {
        Value kk = add(k0, add(mul(t, i32(4)), i32(16 * reg + i)));
        Value byte = byteAt(bIndex(kk, col0, g));
        word = b.create<arith::OrIOp>(loc, word,
                                      b.create<arith::ShLIOp>(loc, byte, i32(8 * i)));
      }
      args.push_back(word);
    }
    args.append(acc.begin(), acc.end());
    return ptx(mma, constraints, 4, integer ? i32Type : b.getF32Type(), args);
  });
  return loop.getResults();
}

// wgmma.mma_async.m64nNk16 with both operands read through shared-memory
// descriptors (PTX ISA, "Matrix Descriptor Format"): the start address of the
// instruction's first element in the unswizzled layout, the byte offsets and
// the swizzle of WgmmaOperand. A is K-major (imm-trans-a 0), B N-major
// (imm-trans-b 1).
SmallVector<Value> MatrixDot::wgmmaTile(Value row0, Value col0, ValueRange acc) {
  Type f32 = b.getF32Type(), i64 = b.getI64Type();
  const int64_t regs = shape.n / 2;
  const char *kind = in.isF16() ? "f16" : "bf16";
  auto descriptor = [&](Value element, const WgmmaOperand &layout) {
    Value address = b.create<arith::ShRUIOp>(loc, sharedAddress(element), i32(4));
    address = b.create<arith::AndIOp>(loc, address, i32(0x3FFF));
    Value fields =
        b.create<arith::ConstantIntOp>(loc, int64_t(layout.descriptorFields()), 64);
    return b.create<arith::OrIOp>(loc, b.create<arith::ExtUIOp>(loc, i64, address), fields);
  };
  WgmmaOperand aLayout = wgmmaA(), bLayout = wgmmaB();

  // The fence orders the accumulator registers' last writes (the incoming
  // values, or the previous step) before the asynchronous read; it sits in the
  // same asm statement so that no register move can fall between the two.
  std::string text = "{\n.reg .pred p;\nwgmma.fence.sync.aligned;\nsetp.ne.b32 p, $" +
                     std::to_string(2 * regs + 2) + ", 0;\nwgmma.mma_async.sync.aligned.m64n" +
                     std::to_string(shape.n) + "k16.f32." + kind + "." + kind + " {";
  std::string constraints, tied;
  for (int64_t r = 0; r < regs; ++r) {
    text += (r ? ",$" : "$") + std::to_string(r);
    constraints += "=f,";
    tied += std::to_string(r) + ",";
  }
  text += "}, $" + std::to_string(2 * regs) + ", $" + std::to_string(2 * regs + 1) +
          ", p, 1, 1, 0, 1;\n}";
  std::string mmaConstraints = constraints + tied + "l,l,r";
  // wait_group names the accumulators so that nothing reads them before the
  // asynchronous products land.
  std::string waitConstraints = constraints + tied;
  waitConstraints.pop_back();

  auto loop = kLoop(acc, [&](Value k0, ValueRange acc) {
    Value aStart = aLayout.linear(*this, row0, k0);
    Value bStart = add(i32(m * k), bLayout.linear(*this, k0, col0));
    SmallVector<Value> args(acc);
    args.append({descriptor(aStart, aLayout), descriptor(bStart, bLayout), i32(1)});
    return ptx(text, mmaConstraints, regs, f32, args);
  });
  ptx("wgmma.commit_group.sync.aligned;", "", 0, f32, {});
  return ptx("wgmma.wait_group.sync.aligned 0;", waitConstraints, regs, f32, loop.getResults());
}

// AMD: every lane reads its A and B elements straight from row-major shared
// memory.
//   mfma (64 lanes), element i < p of lane l, p = K / 4 (4; 8 for 16x16x32_i8):
//     A[l % 16][p (l / 16) + i], B[p (l / 16) + i][l % 16];
//   wmma (gfx11, 32 lanes, both halves hold the operands), element i < 16:
//     A[l % 16][i], B[i][l % 16].
SmallVector<Value> MatrixDot::amdTile(Value lane, Value row0, Value col0, ValueRange acc) {
  bool wmma = shape.units == MatrixUnits::Wmma;
  // MFMA: lane l holds A[l % 16][(l / 16) * perLane + i] and B[that k][l % 16];
  // WMMA: lane l holds row l % 16 of A and column l % 16 of B, all 16 k.
  int64_t perLane = wmma ? 16 : shape.k / 4, results = wmma ? 8 : 4;
  // The bf16 instructions take their operands as i16 bits; fp8 goes in as f16;
  // int8 as its bytes packed into i32 (16x16x16i8), i64 (16x16x32_i8) or 4 x i32
  // (wmma iu8), element i in byte i.
  bool f8 = isa<Float8E4M3FNType, Float8E5M2Type>(in), i8 = in.isInteger(8);
  Type bits = in.isBF16() ? Type(b.getI16Type()) : f8 ? Type(b.getF16Type()) : in;
  Type accType = i8 ? Type(b.getI32Type()) : Type(b.getF32Type());
  auto vecIn = VectorType::get({perLane}, bits);
  auto vecAcc = VectorType::get({results}, accType);
  Value accIn = b.create<LLVM::UndefOp>(loc, vecAcc);
  for (int64_t i = 0; i < results; ++i)
    accIn = b.create<LLVM::InsertElementOp>(loc, accIn, acc[i], i32(i));
  Value lane16 = rem(lane, 16), kLane = mul(div(lane, 16), i32(perLane));
  auto packed = [&](Value bytes) -> Value {
    Type word = perLane == 4    ? Type(b.getI32Type())
                : perLane == 8 ? Type(b.getI64Type())
                               : Type(VectorType::get({4}, b.getI32Type()));
    return b.create<LLVM::BitcastOp>(loc, word, bytes);
  };
  auto loop = kLoop({accIn}, [&](Value k0, ValueRange acc) -> SmallVector<Value> {
    Value av = b.create<LLVM::UndefOp>(loc, vecIn), bv = b.create<LLVM::UndefOp>(loc, vecIn);
    for (int64_t i = 0; i < perLane; ++i) {
      Value kk = add(k0, wmma ? i32(i) : add(kLane, i32(i)));
      Value aAt = add(mul(add(row0, lane16), i32(k)), kk);
      Value bAt = add(i32(m * k), add(mul(kk, i32(n)), add(col0, lane16)));
      if (stageBase) {
        aAt = add(stageBase, aAt);
        bAt = add(stageBase, bAt);
      }
      auto element = [&](Value at) -> Value {
        Value x = b.create<memref::LoadOp>(loc, operands, ValueRange{index(at)});
        if (f8)
          return b.create<arith::ExtFOp>(loc, bits, x);
        return bits == in ? x : b.create<LLVM::BitcastOp>(loc, bits, x);
      };
      Value pos = i32(i);
      av = b.create<LLVM::InsertElementOp>(loc, av, element(aAt), pos);
      bv = b.create<LLVM::InsertElementOp>(loc, bv, element(bAt), pos);
    }
    if (wmma && i8) {
      Value yes = b.create<LLVM::ConstantOp>(loc, b.getI1Type(), b.getBoolAttr(true));
      Value no = b.create<LLVM::ConstantOp>(loc, b.getI1Type(), b.getBoolAttr(false));
      // Operands signed, no clamp: sums wrap as the FMA loop's do.
      return {b.create<ROCDL::wmma_i32_16x16x16_iu8>(
                   loc, vecAcc, ValueRange{yes, packed(av), yes, packed(bv), acc[0], no})
                  .getResult()};
    }
    if (wmma && in.isBF16())
      return {b.create<ROCDL::wmma_f32_16x16x16_bf16>(loc, vecAcc, ValueRange{av, bv, acc[0]})
                  .getResult()};
    if (wmma)
      return {b.create<ROCDL::wmma_f32_16x16x16_f16>(loc, vecAcc, ValueRange{av, bv, acc[0]})
                  .getResult()};
    Value zero = i32(0);
    SmallVector<Value> mfmaArgs{av, bv, acc[0], zero, zero, zero};
    if (i8) {
      mfmaArgs[0] = packed(av);
      mfmaArgs[1] = packed(bv);
      if (shape.k == 32)
        return {b.create<ROCDL::mfma_i32_16x16x32_i8>(loc, vecAcc, mfmaArgs).getResult()};
      return {b.create<ROCDL::mfma_i32_16x16x16i8>(loc, vecAcc, mfmaArgs).getResult()};
    }
    if (in.isBF16())
      return {b.create<ROCDL::mfma_f32_16x16x16bf16_1k>(loc, vecAcc, mfmaArgs).getResult()};
    return {b.create<ROCDL::mfma_f32_16x16x16f16>(loc, vecAcc, mfmaArgs).getResult()};
  });
  SmallVector<Value> out;
  for (int64_t i = 0; i < results; ++i)
    out.push_back(b.create<LLVM::ExtractElementOp>(loc, loop.getResult(0), i32(i)));
  return out;
}

std::array<Value, 3> ThreadEmitter::fragmentTile(const FragmentLayout &f, int64_t slot) {
  auto div = [&](Value x, int64_t y) { return b.create<arith::DivUIOp>(loc, x, i32(y)); };
  auto rem = [&](Value x, int64_t y) { return b.create<arith::RemUIOp>(loc, x, i32(y)); };
  Value worker = div(div(threadId, layout.getWarpSize()), f.group);
  Value tile = b.create<arith::AddIOp>(loc, worker, i32(slot * f.workers));
  Value valid = b.create<arith::ConstantIntOp>(loc, 1, 1);
  if (f.partial()) {
    valid = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ult, tile, i32(f.numTiles));
    tile = b.create<arith::SelectOp>(loc, valid, tile, i32(0));
  }
  Value row0 = b.create<arith::MulIOp>(loc, div(tile, f.tilesN), i32(f.shape.m));
  Value col0 = b.create<arith::MulIOp>(loc, rem(tile, f.tilesN), i32(f.shape.n));
  return {row0, col0, valid};
}

// Accumulator fragments, with lane l, g = l / 4 and t = l % 4:
//   mma-sync m16n8: registers 0..3 hold [g][2t], [g][2t+1], [g+8][2t], [g+8][2t+1];
//   wgmma m64nN: warp w of the warpgroup holds rows 16w.., registers 4j..4j+3 as
//     mma-sync's, shifted by 8j columns;
//   mfma 16x16 (64 lanes): register i holds [4 (l / 16) + i][l % 16];
//   wmma 16x16 (32 lanes): register i holds [2 i + l / 16][l % 16].
std::pair<Value, Value> ThreadEmitter::fragmentElement(const FragmentLayout &f, Value row0,
                                                       Value col0, int64_t reg) {
  auto add = [&](Value x, Value y) { return b.create<arith::AddIOp>(loc, x, y).getResult(); };
  auto div = [&](Value x, int64_t y) { return b.create<arith::DivUIOp>(loc, x, i32(y)); };
  auto rem = [&](Value x, int64_t y) { return b.create<arith::RemUIOp>(loc, x, i32(y)); };
  auto mul = [&](Value x, int64_t y) { return b.create<arith::MulIOp>(loc, x, i32(y)); };
  Value lane = rem(threadId, layout.getWarpSize());
  switch (f.shape.units) {
  case MatrixUnits::MmaSync:
  case MatrixUnits::Wgmma: {
    Value row = add(row0, div(lane, 4)), col = add(col0, mul(rem(lane, 4), 2));
    if (f.shape.units == MatrixUnits::Wgmma)
      row = add(row, mul(rem(div(threadId, layout.getWarpSize()), 4), 16));
    return {add(row, i32(reg % 4 >= 2 ? 8 : 0)), add(col, i32(8 * (reg / 4) + reg % 2))};
  }
  case MatrixUnits::Mfma:
    return {add(row0, add(mul(div(lane, 16), 4), i32(reg))), add(col0, rem(lane, 16))};
  case MatrixUnits::Wmma:
    return {add(row0, add(i32(2 * reg), div(lane, 16))), add(col0, rem(lane, 16))};
  case MatrixUnits::MfmaCdna3: // instructions report Mfma
  case MatrixUnits::None: break;
  }
  llvm_unreachable("FMA dots have no fragments");
}

Registers ThreadEmitter::toFragments(DotOp dot, const Registers &blocked) {
  FragmentLayout f = fragmentLayout(dot, matrixUnits, layout.getNumWarps());
  Type accType = dot.getType().getElementType(); // f32, or i32 for s8
  int64_t base = matrixResultsOffset(dot, f.shape);
  writeShared(blocked, f.m * f.n, accType, base);
  barrier();
  Registers out;
  for (int64_t slot = 0; slot < f.slots; ++slot) {
    auto [row0, col0, valid] = fragmentTile(f, slot);
    for (int64_t r = 0; r < f.perTile; ++r) {
      auto [row, col] = fragmentElement(f, row0, col0, r);
      Value at = b.create<arith::AddIOp>(loc, b.create<arith::MulIOp>(loc, row, i32(f.n)), col);
      at = b.create<arith::AddIOp>(loc, at, i32(base));
      out.push_back(readShared(at, accType)); // slots without a tile read their origin
    }
  }
  barrier();
  return out;
}

Registers ThreadEmitter::fromFragments(DotOp dot, const Registers &fragments,
                                       const Registers *addend) {
  FragmentLayout f = fragmentLayout(dot, matrixUnits, layout.getNumWarps());
  Type accType = dot.getType().getElementType();
  Value results = sharedBuffer(accType);
  int64_t base = matrixResultsOffset(dot, f.shape);
  for (int64_t slot = 0; slot < f.slots; ++slot) {
    auto [row0, col0, valid] = fragmentTile(f, slot);
    for (int64_t r = 0; r < f.perTile; ++r) {
      auto [row, col] = fragmentElement(f, row0, col0, r);
      Value flat = b.create<arith::AddIOp>(loc, b.create<arith::MulIOp>(loc, row, i32(f.n)), col);
      Value at = b.create<arith::IndexCastOp>(loc, b.getIndexType(),
                                              b.create<arith::AddIOp>(loc, flat, i32(base)));
      Value value = toSharedStorage(fragments[slot * f.perTile + r]);
      emitIfElse(
          valid, {},
          [&]() -> SmallVector<Value> {
            b.create<memref::StoreOp>(loc, value, results, ValueRange{at});
            return {};
          },
          nullptr);
    }
  }
  barrier();
  Registers out;
  auto ct = dot.getType();
  for (int64_t r = 0, count = registers(ct); r < count; ++r) {
    Value valid = registerValid(r, ct.getNumElements());
    Value e = b.create<arith::SelectOp>(loc, valid, elementIndex(r), i32(0));
    Value value = readShared(b.create<arith::AddIOp>(loc, e, i32(base)), accType);
    if (addend)
      value = isa<FloatType>(accType)
                  ? b.create<arith::AddFOp>(loc, value, (*addend)[r]).getResult()
                  : b.create<arith::AddIOp>(loc, value, (*addend)[r]).getResult();
    out.push_back(value);
  }
  barrier();
  return out;
}

Value ThreadEmitter::matrixOperandIndex(DotOp dot, unsigned operand, Value e, Value stageBase) {
  auto at = dot.getA().getType(), bt = dot.getB().getType();
  MatrixShape shape = *matrixInstruction(dot, matrixUnits, layout.getNumWarps());
  MatrixDot md{b, loc, at.getDimSize(0), bt.getDimSize(1), at.getDimSize(1),
               at.getElementType(), shape, Value(), Value()};
  int64_t m = md.m, n = md.n, k = md.k;
  Value index;
  if (shape.units == MatrixUnits::MmaSync) // rows with permuted chunks
    index = operand == 0 ? md.aIndex(md.div(e, k), md.rem(e, k))
                         : md.bIndex(md.div(e, n), md.rem(e, n));
  else if (shape.units != MatrixUnits::Wgmma) // row-major A, then B
    index = operand == 0 ? e : md.add(e, md.i32(m * k));
  else if (operand == 0) // swizzled atoms: A K-major, B N-major
    index = md.wgmmaA().offset(md, md.div(e, k), md.rem(e, k));
  else
    index = md.add(md.i32(m * k), md.wgmmaB().offset(md, md.div(e, n), md.rem(e, n)));
  return stageBase ? md.add(stageBase, index) : index;
}

int64_t ThreadEmitter::stageElements(DotOp dot) {
  return dot.getA().getType().getNumElements() + dot.getB().getType().getNumElements();
}

std::optional<std::pair<DotOp, unsigned>> ThreadEmitter::asyncOperand(LoadBlockOp load) {
  if (memory != MemoryModel::LLVMPointers || load.getOther() || !load->hasOneUse() ||
      (matrixUnits != MatrixUnits::MmaSync && matrixUnits != MatrixUnits::Wgmma))
    return std::nullopt;
  OpOperand &use = *load->use_begin();
  auto dot = dyn_cast<DotOp>(use.getOwner());
  unsigned operand = use.getOperandNumber();
  if (!dot || operand > 1 || dot->getBlock() != load->getBlock())
    return std::nullopt;
  auto shape = matrixInstruction(dot, matrixUnits, layout.getNumWarps());
  if (!shape)
    return std::nullopt;
  // Each thread's run of `vec` registers is one 4-, 8- or 16-byte chunk of a
  // tile row.
  auto tile = load.getType();
  int64_t vec = layout.getVec(), bytes = tile.getElementType().getIntOrFloatBitWidth() / 8;
  if (!llvm::is_contained({4, 8, 16}, vec * bytes) || tile.getDimSize(1) % vec != 0 ||
      !canAccessRuns(tensors.find(load.getMemory())->second, registers(tile)))
    return std::nullopt;
  // Nothing in between may use shared memory: the copy lands while it runs.
  for (Operation *op = load->getNextNode(); op != dot.getOperation(); op = op->getNextNode())
    if (op->getNumRegions() != 0 || !sharedRequirement(op, layout, matrixUnits).empty())
      return std::nullopt;
  return std::make_pair(dot, operand);
}

void ThreadEmitter::emitMatrixDot(DotOp op) {
  auto at = op.getA().getType(), bt = op.getB().getType();
  FragmentLayout f = fragmentLayout(op, matrixUnits, layout.getNumWarps());
  MatrixShape shape = f.shape;
  Type in = at.getElementType(), f32 = b.getF32Type(), accType = op.getType().getElementType();
  auto staged = stagedDots.find(op);
  Value stageBase = staged != stagedDots.end() ? staged->second.stageBase : Value();
  MatrixDot md{b, loc, at.getDimSize(0), bt.getDimSize(1), at.getDimSize(1), in, shape,
               sharedBuffer(in), stageBase};
  bool wgmma = shape.units == MatrixUnits::Wgmma;
  bool copiedA = copiedToShared.contains(op.getA()), copiedB = copiedToShared.contains(op.getB());
  // Both operand layouts keep 16-byte chunks whole; a thread's registers run
  // along rows `vec` elements at a time.
  auto together = [&](int64_t columns) {
    return std::gcd(std::gcd(int64_t(layout.getVec()), 16 / (in.getIntOrFloatBitWidth() / 8)),
                    columns);
  };
  if (!copiedA)
    writeShared(
        regs(op.getA()), md.m * md.k, in, 0,
        [&](Value e) { return matrixOperandIndex(op, 0, e, stageBase); }, together(md.k));
  if (!copiedB)
    writeShared(
        regs(op.getB()), md.k * md.n, in, 0,
        [&](Value e) { return matrixOperandIndex(op, 1, e, stageBase); }, together(md.n));
  // This dot's copies are done once at most `inFlight` later groups are pending.
  if (staged != stagedDots.end())
    md.ptx("cp.async.wait_group " + std::to_string(staged->second.inFlight) + ";", "", 0, f32,
           {});
  else if (copiedA || copiedB)
    md.ptx("cp.async.wait_all;", "", 0, f32, {});
  // wgmma reads shared memory through the async proxy: make the writes visible.
  if (wgmma)
    md.ptx("fence.proxy.async.shared::cta;", "", 0, f32, {});
  barrier();

  // The accumulator starts from the incoming fragments when a loop carries
  // them, else from zeros (the blocked accumulator is added at the end).
  auto carried = fragmentTiles.find(op.getAcc());
  bool accIsFragments = carried != fragmentTiles.end();
  Registers acc = accIsFragments ? carried->second : Registers();
  if (!accIsFragments)
    acc.assign(f.registers(), b.create<arith::ConstantOp>(loc, b.getZeroAttr(accType)));
  Value lane = md.rem(threadId, layout.getWarpSize());
  Registers out;
  for (int64_t slot = 0; slot < f.slots; ++slot) {
    auto [row0, col0, valid] = fragmentTile(f, slot);
    ValueRange slotAcc = ValueRange(acc).slice(slot * f.perTile, f.perTile);
    auto tile = [&, row0 = row0, col0 = col0]() -> SmallVector<Value> {
      switch (shape.units) {
      case MatrixUnits::MmaSync: return md.mmaSyncTile(lane, row0, col0, slotAcc);
      case MatrixUnits::Wgmma: return md.wgmmaTile(row0, col0, slotAcc);
      case MatrixUnits::Mfma:
      case MatrixUnits::Wmma: return md.amdTile(lane, row0, col0, slotAcc);
      case MatrixUnits::MfmaCdna3: // instructions report Mfma
      case MatrixUnits::None: break;
      }
      llvm_unreachable("FMA dots do not come here");
    };
    if (!f.partial()) {
      llvm::append_range(out, tile());
      continue;
    }
    SmallVector<Type> types(f.perTile, accType);
    auto ifOp = emitIfElse(valid, types, tile, [&]() -> SmallVector<Value> { return slotAcc; });
    llvm::append_range(out, ifOp.getResults());
  }

  if (fragmentResultDots.contains(op)) {
    // The loop carries the fragments; only the operand buffers must be free
    // before the next iteration's copies.
    fragmentTiles[op.getResult()] = out;
    barrier();
    return;
  }
  Registers blocked = fromFragments(op, out, accIsFragments ? nullptr : &regs(op.getAcc()));
  tiles[op.getResult()] = std::move(blocked);
}
