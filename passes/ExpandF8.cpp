//===- ExpandF8.cpp - fp8 conversions as integer arithmetic ---------------===//
//
// No target Kiln compiles for has fp8 arithmetic that LLVM or SPIR-V can name
// (LLVM 19 has no 8-bit float type), so conversions to and from fp8 become
// integer operations on the bits, identical on every target: decoding is exact,
// encoding rounds to nearest even and saturates to the largest finite value (as
// NVIDIA's cvt.rn.satfinite does), NaN stays NaN; f64 sources round once (via
// round-to-odd f32). Other arithmetic on fp8 has
// been widened by arith-emulate-unsupported-floats before this pass runs.
//
// With narrow-bf16 set, conversions to bf16 are written out the same way, so
// that a NaN keeps its sign (arith-expand's made every NaN 0x7FC0), and a
// select that the emulation widened returns its operand's bits for bf16 and f16
// as for fp8.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/TypeUtilities.h"

namespace kiln {
#define GEN_PASS_DEF_KILNEXPANDF8
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {

/// The fields of an OCP fp8 format.
struct F8Format {
  int64_t mantBits, bias;
  bool ieeeSpecials;      // e5m2: exponent 31 is inf/NaN; e4m3: only 0x7f is NaN
  int64_t maxFiniteCode;  // 0x7e (448) or 0x7b (57344)
};

std::optional<F8Format> f8Format(Type t) {
  if (isa<Float8E4M3FNType>(t))
    return F8Format{3, 7, false, 0x7e};
  if (isa<Float8E5M2Type>(t))
    return F8Format{2, 15, true, 0x7b};
  return std::nullopt;
}

/// Builds element-wise integer and float code over scalars or vectors of one
/// shape.
struct BitBuilder {
  OpBuilder &b;
  Location loc;
  Type shapeOf; // a scalar or vector type whose shape the values share

  Type like(Type elem) const {
    if (auto v = dyn_cast<VectorType>(shapeOf))
      return v.clone(elem);
    return elem;
  }
  Type i32() const { return like(b.getI32Type()); }
  Value constI32(int64_t v) {
    Type t = i32();
    auto attr = b.getI32IntegerAttr(static_cast<int32_t>(v));
    if (auto vt = dyn_cast<VectorType>(t))
      return b.create<arith::ConstantOp>(loc, DenseElementsAttr::get(vt, attr.getValue()));
    return b.create<arith::ConstantOp>(loc, attr);
  }
  Value bitcast(Value v, Type elem) { return b.create<arith::BitcastOp>(loc, like(elem), v); }
  Value add(Value x, Value y) { return b.create<arith::AddIOp>(loc, x, y); }
  Value sub(Value x, Value y) { return b.create<arith::SubIOp>(loc, x, y); }
  Value band(Value x, int64_t m) { return b.create<arith::AndIOp>(loc, x, constI32(m)); }
  Value bor(Value x, Value y) { return b.create<arith::OrIOp>(loc, x, y); }
  Value shl(Value x, int64_t s) { return b.create<arith::ShLIOp>(loc, x, constI32(s)); }
  Value shr(Value x, int64_t s) { return b.create<arith::ShRUIOp>(loc, x, constI32(s)); }
  Value cmp(arith::CmpIPredicate p, Value x, int64_t y) {
    return b.create<arith::CmpIOp>(loc, p, x, constI32(y));
  }
  Value select(Value c, Value x, Value y) { return b.create<arith::SelectOp>(loc, c, x, y); }
  Value f32(Value bits) { return bitcast(bits, b.getF32Type()); }
  Value bits(Value f) { return bitcast(f, b.getI32Type()); }
};

/// f8 bits (in i32 lanes) -> f32.
Value decode(BitBuilder &bb, Value code, const F8Format &f) {
  using P = arith::CmpIPredicate;
  Value sign = bb.shl(bb.band(code, 0x80), 24);
  Value mag = bb.band(code, 0x7f);
  Value mant = bb.band(mag, (1 << f.mantBits) - 1);
  // Normal: the exponent and mantissa fields move up as one, and the exponent
  // is rebiased.
  Value normal = bb.add(bb.shl(mag, 23 - f.mantBits), bb.constI32((127 - f.bias) << 23));
  // Subnormal (exponent field 0): mant x 2^(1 - bias - mantBits), exactly.
  Value scaled = bb.b.create<arith::MulFOp>(
      bb.loc, bb.b.create<arith::UIToFPOp>(bb.loc, bb.like(bb.b.getF32Type()), mant),
      bb.f32(bb.constI32((127 + 1 - f.bias - f.mantBits) << 23)));
  Value isSubnormal = bb.cmp(P::ult, mag, 1 << f.mantBits);
  Value value = bb.select(isSubnormal, bb.bits(scaled), normal);
  Value special =
      f.ieeeSpecials
          ? bb.bor(bb.constI32(0x7f800000), bb.shl(mant, 23 - f.mantBits)) // inf or NaN
          : bb.constI32(0x7fc00000);
  Value isSpecial = f.ieeeSpecials ? bb.cmp(P::uge, mag, 0x7c) : bb.cmp(P::eq, mag, 0x7f);
  return bb.f32(bb.bor(bb.select(isSpecial, special, value), sign));
}

/// f32 -> f8 bits (in i32 lanes): round to nearest even, saturate, keep NaN.
Value encode(BitBuilder &bb, Value x, const F8Format &f) {
  using P = arith::CmpIPredicate;
  Value bits = bb.bits(x);
  Value sign = bb.band(bb.shr(bits, 24), 0x80);
  Value abs = bb.band(bits, 0x7fffffff);
  int64_t shift = 23 - f.mantBits;
  // Results below the smallest normal: adding 2^(24 - bias - mantBits), whose
  // f32 ulp is fp8's smallest subnormal, lets the FPU round to nearest even.
  int64_t magic = (127 - f.bias + shift + 1) << 23;
  Value sum = bb.b.create<arith::AddFOp>(bb.loc, bb.f32(abs), bb.f32(bb.constI32(magic)));
  Value subnormal = bb.sub(bb.bits(sum), bb.constI32(magic));
  // Normal results: rebias, then round the dropped bits to nearest even.
  Value odd = bb.band(bb.shr(abs, shift), 1);
  int64_t rebias = (f.bias - 127) * (int64_t(1) << 23); // negative: no shift
  Value rounded =
      bb.add(bb.add(abs, bb.constI32(rebias + (int64_t(1) << (shift - 1)) - 1)), odd);
  Value normal = bb.shr(rounded, shift);
  Value code = bb.select(bb.cmp(P::ult, abs, (127 - f.bias + 1) << 23), subnormal, normal);
  // Past the largest finite value (infinity included) saturates.
  code = bb.b.create<arith::MinUIOp>(bb.loc, code, bb.constI32(f.maxFiniteCode));
  code = bb.select(bb.cmp(P::ugt, abs, 0x7f800000), bb.constI32(0x7f), code);
  return bb.bor(code, sign);
}

/// f32 -> bf16 bits (in i32 lanes): round to nearest even (the carry runs into
/// the exponent, so large values become infinity); a NaN keeps its sign and the
/// top of its payload and is quieted, as the CPU's own conversion does.
Value encodeBF16(BitBuilder &bb, Value x) {
  Value bits = bb.bits(x);
  Value odd = bb.band(bb.shr(bits, 16), 1);
  Value rounded = bb.shr(bb.add(bb.add(bits, bb.constI32(0x7fff)), odd), 16);
  Value quiet = bb.bor(bb.shr(bits, 16), bb.constI32(0x40));
  Value isNaN = bb.cmp(arith::CmpIPredicate::ugt, bb.band(bits, 0x7fffffff), 0x7f800000);
  return bb.select(isNaN, quiet, rounded);
}

/// `v` as f32: widened from f16/bf16 exactly, or narrowed from f64 with
/// round-to-odd (an inexact result keeps its last bit set), so that the one
/// rounding to fp8 or bf16 that follows is correct: f32 carries at least 16
/// more bits than either, and round-to-odd never lands on a midpoint it did not
/// start on.
Value toF32(BitBuilder &bb, Value v, Type f32Like) {
  OpBuilder &b = bb.b;
  Location loc = bb.loc;
  Type elem = getElementTypeOrSelf(v.getType());
  if (elem.isF32())
    return v;
  if (elem.getIntOrFloatBitWidth() < 32)
    return b.create<arith::ExtFOp>(loc, f32Like, v);
  using P = arith::CmpFPredicate;
  Value nearest = b.create<arith::TruncFOp>(loc, f32Like, v);
  Value back = b.create<arith::ExtFOp>(loc, v.getType(), nearest);
  Value inexact = b.create<arith::CmpFOp>(loc, P::ONE, back, v); // false for NaN
  Value zero = b.create<arith::ConstantOp>(loc, b.getZeroAttr(v.getType()));
  // Rounded away from zero: step back toward it (the bits are sign-magnitude).
  Value away = b.create<arith::XOrIOp>(loc, b.create<arith::CmpFOp>(loc, P::OGT, back, v),
                                       b.create<arith::CmpFOp>(loc, P::OLT, v, zero));
  Value bits = bb.bits(nearest);
  Value truncated = bb.select(away, bb.sub(bits, bb.constI32(1)), bits);
  Value odd = bb.bor(truncated, bb.constI32(1));
  return bb.f32(bb.select(inexact, odd, bits));
}

Value fromF32(OpBuilder &b, Location loc, Value v, Type to) {
  Type elem = getElementTypeOrSelf(to);
  if (elem.isF32())
    return v;
  if (elem.getIntOrFloatBitWidth() > 32)
    return b.create<arith::ExtFOp>(loc, to, v);
  return b.create<arith::TruncFOp>(loc, to, v); // exact: fp8 values fit f16 and bf16
}

/// truncf(select(c, extf(a), extf(b))) back to the type of a and b becomes a
/// select of their bits. arith-emulate-unsupported-floats widens a select of
/// fp8, bf16 or f16 values (`where`, `min`, `max`) that way, and encoding the
/// f32 result again would saturate e5m2's infinities to 57344 and rewrite NaN
/// payloads (a negative bf16 NaN became 0x7FC0 in arith-expand).
void selectBytes(Operation *root) {
  SmallVector<arith::TruncFOp> truncs;
  root->walk([&](arith::TruncFOp t) {
    Type elem = getElementTypeOrSelf(t.getType());
    if (!isa<TensorType>(t.getType()) && elem.getIntOrFloatBitWidth() <= 16)
      truncs.push_back(t);
  });
  for (arith::TruncFOp t : truncs) {
    auto select = t.getIn().getDefiningOp<arith::SelectOp>();
    if (!select)
      continue;
    auto x = select.getTrueValue().getDefiningOp<arith::ExtFOp>();
    auto y = select.getFalseValue().getDefiningOp<arith::ExtFOp>();
    if (!x || !y || x.getIn().getType() != t.getType() || y.getIn().getType() != t.getType())
      continue;
    OpBuilder b(t);
    BitBuilder bb{b, t.getLoc(), t.getType()};
    Type bitsType = b.getIntegerType(getElementTypeOrSelf(t.getType()).getIntOrFloatBitWidth());
    Value bytes = b.create<arith::SelectOp>(t.getLoc(), select.getCondition(),
                                            bb.bitcast(x.getIn(), bitsType),
                                            bb.bitcast(y.getIn(), bitsType));
    t.replaceAllUsesWith(b.create<arith::BitcastOp>(t.getLoc(), t.getType(), bytes).getResult());
    t.erase();
  }
}

struct ExpandF8 : kiln::impl::KilnExpandF8Base<ExpandF8> {
  using KilnExpandF8Base::KilnExpandF8Base;

  bool encodes(Type t) const { return f8Format(t) || (narrowBF16 && t.isBF16()); }

  void runOnOperation() override {
    selectBytes(getOperation());
    SmallVector<Operation *> casts;
    getOperation()->walk([&](Operation *op) {
      // Scalars and vectors only: tensors are bufferized before this runs.
      if (llvm::any_of(op->getOperandTypes(), llvm::IsaPred<TensorType>))
        return;
      if (auto ext = dyn_cast<arith::ExtFOp>(op);
          ext && f8Format(getElementTypeOrSelf(ext.getIn().getType())))
        casts.push_back(op);
      if (auto trunc = dyn_cast<arith::TruncFOp>(op);
          trunc && encodes(getElementTypeOrSelf(trunc.getType())))
        casts.push_back(op);
    });
    for (Operation *op : casts) {
      OpBuilder b(op);
      Value in = op->getOperand(0);
      Type out = op->getResult(0).getType();
      BitBuilder bb{b, op->getLoc(), in.getType()};
      Type elem = getElementTypeOrSelf(out);
      // f32 `x` written out as `out`'s bits.
      auto encodeAs = [&](Value x) -> Value {
        Value code = elem.isBF16() ? encodeBF16(bb, x) : encode(bb, x, *f8Format(elem));
        Type bitsType = bb.like(b.getIntegerType(elem.getIntOrFloatBitWidth()));
        Value narrow = b.create<arith::TruncIOp>(bb.loc, bitsType, code);
        return b.create<arith::BitcastOp>(bb.loc, out, narrow);
      };
      Value result;
      if (isa<arith::ExtFOp>(op)) {
        F8Format f = *f8Format(getElementTypeOrSelf(in.getType()));
        Value code = b.create<arith::ExtUIOp>(bb.loc, bb.i32(), bb.bitcast(in, b.getI8Type()));
        Value x = decode(bb, code, f);
        // To bf16 as well by its bits where those are written out: a truncf
        // would reach arith-expand, which makes a negative NaN positive.
        result = encodes(elem) ? encodeAs(x) : fromF32(b, bb.loc, x, out);
      } else {
        result = encodeAs(toF32(bb, in, bb.like(b.getF32Type())));
      }
      op->getResult(0).replaceAllUsesWith(result);
      op->erase();
    }
  }
};
} // namespace
