//===- GenTileOps.cpp - tile builtins -------------------------------------===//
//
// Reductions, arg-reductions, random numbers, scans, min/max, dot, shape ops,
// gather, sort, combine/join/split, print, rearrange, swizzle2d and the
// assertions.
//
//===----------------------------------------------------------------------===//

#include "lib/Frontend/Generator.h"

#include <cmath>

namespace kiln::gen {

std::optional<Generator::ReductionArgs> Generator::reductionArgs(const CallExpr &e) {
  bool extremes = e.callee == "max" || e.callee == "min"; // may also return the indices
  llvm::SmallVector<llvm::StringRef, 3> keywords{"axis", "keepdims"};
  if (extremes)
    keywords.push_back("return_indices");
  if (!checkArity(e, 1, 1, keywords))
    return std::nullopt;
  MaybeValue v = genValue(*e.args[0], "reduction operand");
  if (!v)
    return std::nullopt;
  if (v->type.kind != SType::Tile)
    return error(e.args[0]->loc, "'" + e.callee + "' reduces a tile, got " + withArticle(v->type.str()));
  if (rejectF8(v->type.dtype, e.args[0]->loc, "'" + e.callee + "'"))
    return std::nullopt;
  if (e.callee == "xor_sum" && isFloat(v->type.dtype))
    return error(e.args[0]->loc, "'xor_sum' combines integer bits; got a tile of " +
                                     std::string(dtypeName(v->type.dtype)));
  ReductionArgs r;
  std::optional<bool> keepdims = boolKeyword(e, "keepdims");
  std::optional<bool> withIndices = boolKeyword(e, "return_indices");
  if (!keepdims || !withIndices)
    return std::nullopt;
  r.keepdims = *keepdims;
  r.withIndices = *withIndices;
  mlir::Location l = loc(e.loc);
  r.src = *v;
  // Reductions of bools are done in i32 (sums count).
  if (r.src.type.dtype == DType::I1)
    r.src = convert(r.src, DType::I32, r.src.type.shape, e.loc);
  DType dt = r.src.type.dtype;
  Shape &shape = r.src.type.shape;
  if (const KeywordArg *kw = e.kwarg("axis")) {
    auto a = axisArg(*kw->value, shape.size());
    if (!a)
      return std::nullopt;
    r.axis = *a;
    return r;
  }
  // No axis: reduce every element, in row-major order.
  if (r.keepdims)
    return error(e.loc, "keepdims needs an axis");
  int64_t total = 1;
  for (int64_t d : shape)
    total *= d;
  if (shape.size() > 1)
    r.src.value = builder.create<ReshapeOp>(
        l, mlir::RankedTensorType::get({total}, mlirType(dt)), r.src.value);
  shape = {total};
  r.axis = 0;
  return r;
}

TValue Generator::reduceAlong(const TValue &src, ReduceKind kind, int64_t axis, bool keepdims,
                              mlir::Location l) {
  DType dt = src.type.dtype;
  Shape resultShape = src.type.shape;
  resultShape.erase(resultShape.begin() + axis);
  TValue out;
  out.type = SType::value(dt, resultShape);
  out.value = builder.create<ReduceOp>(l, valueType(dt, resultShape),
                                       ReduceKindAttr::get(&ctx, orderedKind(kind, dt)), src.value,
                                       builder.getI32IntegerAttr(axis));
  if (keepdims) {
    Shape kept = src.type.shape;
    kept[axis] = 1;
    auto type = mlir::RankedTensorType::get(kept, mlirType(dt));
    out.value = resultShape.empty()
                    ? (Value)builder.create<SplatOp>(l, type, out.value)
                    : builder.create<ExpandDimsOp>(l, type, out.value,
                                                   builder.getI32IntegerAttr(axis));
    out.type = SType::tile(dt, kept);
  }
  return out;
}

MaybeValue Generator::genReduce(const CallExpr &e, ReduceKind kind) {
  auto r = reductionArgs(e);
  if (!r)
    return std::nullopt;
  TValue values = reduceAlong(r->src, kind, r->axis, r->keepdims, loc(e.loc));
  if (!r->withIndices)
    return values;
  // max/min(..., return_indices = true): Triton's (values, indices).
  TValue out;
  out.type.kind = SType::Tuple;
  out.elements = {values, argReduce(*r, kind == ReduceKind::Max, e.loc)};
  return out;
}

MaybeValue Generator::genArgReduce(const CallExpr &e, bool isMax) {
  auto r = reductionArgs(e);
  if (!r)
    return std::nullopt;
  return argReduce(*r, isMax, e.loc);
}

TValue Generator::argReduce(const ReductionArgs &r, bool isMax, SMLoc at) {
  // The index of the first extreme along the axis: reduce to the extreme, mark
  // the lanes equal to it (or NaN, which max and min propagate), and take the
  // smallest marked index. Unmarked lanes hold the extent, which never wins.
  mlir::Location l = loc(at);
  const TValue &src = r.src;
  const Shape &shape = src.type.shape;
  DType dt = src.type.dtype;
  int64_t axis = r.axis, extent = shape[axis];
  TValue extreme = reduceAlong(src, isMax ? ReduceKind::Max : ReduceKind::Min, axis,
                               /*keepdims=*/true, l);
  Value spread = broadcastValue(extreme.value, extreme.type.shape, shape, dt, l);
  using namespace mlir::arith;
  Value hit;
  if (isFloat(dt)) {
    hit = builder.create<CmpFOp>(l, CmpFPredicate::OEQ, src.value, spread);
    Value nan = builder.create<CmpFOp>(l, CmpFPredicate::UNO, src.value, src.value);
    hit = builder.create<OrIOp>(l, hit, nan);
  } else {
    hit = builder.create<CmpIOp>(l, CmpIPredicate::eq, src.value, spread);
  }
  Value lanes = axisPositions(shape, axis, l);
  Value none = splat(Const::ofInt(extent), DType::I32, shape, at);
  TValue candidates;
  candidates.type = SType::tile(DType::I32, shape);
  candidates.value = builder.create<SelectOp>(l, hit, lanes, none);
  return reduceAlong(candidates, ReduceKind::Min, axis, r.keepdims, l);
}

MaybeValue Generator::genRandom(const CallExpr &e) {
  if (!checkArity(e, 2, 2))
    return std::nullopt;
  MaybeValue seed = genValue(*e.args[0], "seed");
  if (!seed)
    return std::nullopt;
  MaybeValue offsets = genValue(*e.args[1], "offsets");
  if (!offsets)
    return std::nullopt;
  if (!seed->type.shape.empty() || !isInteger(seed->type.dtype))
    return error(e.args[0]->loc, "'" + e.callee + "' needs an integer scalar seed, got " +
                                     withArticle(seed->type.str()));
  if (!isInteger(offsets->type.dtype) || dtypeBits(offsets->type.dtype) < 32)
    return error(e.args[1]->loc, "'" + e.callee + "' needs i32 or i64 offsets, got " +
                                     withArticle(offsets->type.str()));
  // Philox-4x32-10 as Triton's tl.rand / tl.randint / tl.randn compute it, so the
  // same seed and offsets give the same numbers: counter (offset low word, offset
  // high word, 0, 0), key (seed low word, seed high word), ten rounds.
  mlir::Location l = loc(e.loc);
  const Shape &shape = offsets->type.shape;
  using namespace mlir::arith;
  auto word = [&](int64_t v) {
    return splat(Const::ofInt(int32_t(uint32_t(v))), DType::I32, shape, e.loc);
  };
  auto wide = [&](int64_t v) { return splat(Const::ofInt(v), DType::I64, shape, e.loc); };
  auto f32 = [&](double v) { return splat(Const::ofFloat(v), DType::F32, shape, e.loc); };
  auto typeOf = [&](DType dt) { return valueType(dt, shape); };
  auto low = [&](Value v64) { return builder.create<TruncIOp>(l, typeOf(DType::I32), v64); };
  auto high = [&](Value v64) { return low(builder.create<ShRUIOp>(l, v64, wide(32))); };
  // The high 32 bits of the unsigned 64-bit product.
  auto mulhi = [&](int64_t a, Value x) {
    Value x64 = builder.create<ExtUIOp>(l, typeOf(DType::I64), x);
    return high(builder.create<MulIOp>(l, x64, wide(a)));
  };
  TValue seed64 = convert(*seed, DType::I64, shape, e.loc);
  Value k0 = low(seed64.value), k1 = high(seed64.value);
  TValue off = convert(*offsets, offsets->type.dtype, shape, e.loc);
  Value c0, c1, c2 = word(0), c3 = word(0);
  if (dtypeBits(offsets->type.dtype) == 64) {
    c0 = low(off.value);
    c1 = high(off.value);
  } else {
    c0 = off.value;
    c1 = word(0);
  }
  const int64_t roundA = 0xD2511F53, roundB = 0xCD9E8D57, keyA = 0x9E3779B9, keyB = 0xBB67AE85;
  for (int round = 0; round < 10; ++round) {
    Value p0 = c0, p2 = c2;
    c0 = builder.create<XOrIOp>(l, builder.create<XOrIOp>(l, mulhi(roundB, p2), c1), k0);
    c2 = builder.create<XOrIOp>(l, builder.create<XOrIOp>(l, mulhi(roundA, p0), c3), k1);
    c1 = builder.create<MulIOp>(l, p2, word(roundB));
    c3 = builder.create<MulIOp>(l, p0, word(roundA));
    k0 = builder.create<AddIOp>(l, k0, word(keyA));
    k1 = builder.create<AddIOp>(l, k1, word(keyB));
  }
  TValue out;
  if (e.callee == "randint") {
    out.type = SType::value(DType::I32, shape);
    out.value = c0;
    return out;
  }
  // A uniform f32 in [0, 1): the 32 bits as a signed integer, folded onto
  // [0, 2^31) by complement, times the largest scale that keeps 2^31 - 1 below 1.
  auto uniform = [&](Value bits) -> Value {
    Value negative = builder.create<CmpIOp>(l, CmpIPredicate::slt, bits, word(0));
    Value folded = builder.create<SelectOp>(l, negative,
                                            builder.create<XOrIOp>(l, bits, word(-1)), bits);
    Value f = builder.create<SIToFPOp>(l, typeOf(DType::F32), folded);
    return builder.create<MulFOp>(l, f, f32(4.6566127342e-10));
  };
  out.type = SType::value(DType::F32, shape);
  if (e.callee == "rand") {
    out.value = uniform(c0);
    return out;
  }
  // randn: Box-Muller on the first two words, r * cos(2 pi u2), r = sqrt(-2 log u1).
  Value u1 = builder.create<MaximumFOp>(l, f32(1.0e-7), uniform(c0));
  Value theta = builder.create<MulFOp>(l, f32(6.283185307179586), uniform(c1));
  Value r = builder.create<mlir::math::SqrtOp>(
      l, builder.create<MulFOp>(l, f32(-2.0), builder.create<mlir::math::LogOp>(l, u1)));
  out.value = builder.create<MulFOp>(l, r, builder.create<mlir::math::CosOp>(l, theta));
  return out;
}

MaybeValue Generator::genScan(const CallExpr &e) {
  if (!checkArity(e, 1, 1, {"axis", "reverse"}))
    return std::nullopt;
  std::optional<bool> reverse = boolKeyword(e, "reverse");
  if (!reverse)
    return std::nullopt;
  MaybeValue v = genValue(*e.args[0], "scan operand");
  if (!v)
    return std::nullopt;
  if (v->type.kind != SType::Tile)
    return error(e.args[0]->loc, "'" + e.callee + "' scans a tile, got " +
                                     withArticle(v->type.str()));
  if (rejectF8(v->type.dtype, e.args[0]->loc, "'" + e.callee + "'"))
    return std::nullopt;
  TValue src = *v;
  if (src.type.dtype == DType::I1)
    src = convert(src, DType::I32, src.type.shape, e.loc); // running counts of bools
  int64_t axis = 0;
  if (const KeywordArg *kw = e.kwarg("axis")) {
    auto a = axisArg(*kw->value, src.type.shape.size());
    if (!a)
      return std::nullopt;
    axis = *a;
  } else if (src.type.shape.size() != 1) {
    return error(e.loc, "'" + e.callee + "' of a rank-" +
                            llvm::Twine(src.type.shape.size()) + " tile needs axis=");
  }
  ReduceKind kind = e.callee == "cumsum"    ? ReduceKind::Sum
                    : e.callee == "cumprod" ? ReduceKind::Prod
                    : e.callee == "cummax"  ? ReduceKind::Max
                                            : ReduceKind::Min;
  // reverse = true scans from the end: the scan of the flipped tile, flipped back.
  mlir::Location l = loc(e.loc);
  Value in = *reverse ? flipAlong(src.value, src.type.shape, axis, l) : src.value;
  Value scanned = builder.create<ScanOp>(
      l, in.getType(), ReduceKindAttr::get(&ctx, orderedKind(kind, src.type.dtype)), in,
      builder.getI32IntegerAttr(axis));
  TValue out;
  out.type = SType::tile(src.type.dtype, src.type.shape);
  out.value = *reverse ? flipAlong(scanned, src.type.shape, axis, l) : scanned;
  return out;
}

Value Generator::flipAlong(Value tile, const Shape &shape, int64_t axis, mlir::Location l) {
  Value last = builder.create<mlir::arith::ConstantOp>(
      l, mlir::DenseElementsAttr::get(
             mlir::RankedTensorType::get(shape, builder.getI32Type()),
             builder.getI32IntegerAttr(static_cast<int32_t>(shape[axis] - 1)).getValue()));
  Value reversed = builder.create<mlir::arith::SubIOp>(l, last, axisPositions(shape, axis, l));
  return builder.create<GatherOp>(l, tile.getType(), tile, reversed,
                                  builder.getI32IntegerAttr(axis));
}

MaybeValue Generator::genMinMax(const CallExpr &e, bool isMax) {
  if (e.args.size() == 1)
    return genReduce(e, isMax ? ReduceKind::Max : ReduceKind::Min);
  // Triton's tl.max(t, 1) reduces along axis 1; here two operands are the
  // elementwise maximum, and a reduction names its axis.
  std::string reduction = e.callee + "(t, axis = A)";
  if (e.args.size() == 2 && !e.kwargs.empty() && e.kwargs.front().name != "propagate_nan")
    return error(e.args[1]->loc, "'" + e.callee + "' of two operands is elementwise and takes no "
                                 "keywords; a reduction names its axis: " + reduction);
  if (!checkArity(e, 2, 2))
    return std::nullopt;
  MaybeValue a = genValue(*e.args[0], "operand");
  if (!a)
    return std::nullopt;
  MaybeValue b = genValue(*e.args[1], "operand");
  if (!b)
    return std::nullopt;
  // A tile and a small integer literal is the spelling of tl.max(t, 1):
  // ambiguous, so an error that offers both readings.
  int64_t rank = a->type.shape.size();
  if (rank > 0 && a->type.dtype != DType::I1 && b->cst && b->type.weak &&
      !isFloat(b->type.dtype) && b->type.shape.empty() && b->cst->i >= -rank && b->cst->i < rank) {
    bool fl = isFloat(a->type.dtype);
    std::string n = std::to_string(b->cst->i);
    std::string elementwise =
        fl ? n + ".0" : std::string("cast<") + dtypeName(a->type.dtype) + ">(" + n + ")";
    return error(e.args[1]->loc,
                 "'" + e.callee + "(t, " + n + ")' of " + (fl ? "a float" : "an integer") +
                     " tile and an integer constant is ambiguous: for the " +
                     (isMax ? "maximum" : "minimum") + " along axis " + n + " (Triton's tl." +
                     e.callee + "(t, " + n + ")) write " + e.callee + "(t, axis = " + n +
                     "); for the elementwise " + e.callee + " with " + n + " write " +
                     elementwise);
  }
  auto shape = broadcastShapes(a->type.shape, b->type.shape);
  if (!shape)
    return error(e.loc, "shapes " + shapeStr(a->type.shape) + " and " +
                            shapeStr(b->type.shape) + " do not broadcast");
  if (!checkTileSize(*shape, e.loc))
    return std::nullopt;
  DType dt = promote(a->type, b->type);
  if (!operandsFit(*a, *b, dt, e.loc))
    return std::nullopt;
  mlir::Location l = loc(e.loc);
  if (a->cst && b->cst && shape->empty()) {
    bool weak = a->type.weak && b->type.weak;
    Const x = foldOperand(*a, dt, weak), y = foldOperand(*b, dt, weak);
    if (isFloat(dt)) {
      // NaN if either is, as the devices compute; -0 below +0, as IEEE orders them
      // (the devices may return either zero there: docs/language.md).
      double m = std::isnan(x.f) || std::isnan(y.f) ? std::nan("")
                 : x.f == y.f ? (std::signbit(x.f) == isMax ? y.f : x.f)
                 : isMax      ? std::max(x.f, y.f)
                              : std::min(x.f, y.f);
      return constant(Const::ofFloat(m), dt, weak, l);
    }
    // Unsigned values compare as unsigned (u64 past 2^63 is negative in Const).
    bool xLess = isUnsigned(dt) ? uint64_t(x.i) < uint64_t(y.i) : x.i < y.i;
    return constant(xLess == isMax ? y : x, dt, weak, l);
  }
  TValue out;
  out.type = SType::value(dt, *shape);
  out.value = extremeOf(isMax, convert(*a, dt, *shape, e.loc).value,
                        convert(*b, dt, *shape, e.loc).value, dt, *shape, l);
  return out;
}

Value Generator::extremeOf(bool isMax, Value x, Value y, DType dt, const Shape &shape,
                           mlir::Location l) {
  using namespace mlir::arith;
  auto extreme = [&](Value p, Value q) -> Value {
    return isMax ? (Value)builder.create<MaximumFOp>(l, p, q) : builder.create<MinimumFOp>(l, p, q);
  };
  if (isF8(dt)) {
    // Compared in f32, and one of the operands returned as it is: the f32
    // result rounded back to fp8 would saturate e5m2's infinities to 57344.
    // The one whose bits the f32 result has, x if it is NaN, else y.
    auto f32 = valueType(DType::F32, shape), i32 = valueType(DType::I32, shape);
    Value xf = builder.create<ExtFOp>(l, f32, x), yf = builder.create<ExtFOp>(l, f32, y);
    Value m = extreme(xf, yf);
    Value isX = builder.create<CmpIOp>(l, CmpIPredicate::eq, builder.create<BitcastOp>(l, i32, m),
                                       builder.create<BitcastOp>(l, i32, xf));
    Value xNaN = builder.create<CmpFOp>(l, CmpFPredicate::UNO, xf, xf);
    return builder.create<SelectOp>(l, builder.create<OrIOp>(l, isX, xNaN), x, y);
  }
  if (isFloat(dt))
    return extreme(x, y);
  if (isUnsigned(dt))
    return isMax ? (Value)builder.create<MaxUIOp>(l, x, y) : builder.create<MinUIOp>(l, x, y);
  return isMax ? (Value)builder.create<MaxSIOp>(l, x, y) : builder.create<MinSIOp>(l, x, y);
}

MaybeValue Generator::genDot(const CallExpr &e) {
  if (!checkArity(e, 2, 3, {"tf32"}))
    return std::nullopt;
  MaybeValue a = genValue(*e.args[0], "dot operand");
  if (!a)
    return std::nullopt;
  MaybeValue b = genValue(*e.args[1], "dot operand");
  if (!b)
    return std::nullopt;
  // 2-D, or 3-D with a leading batch dimension both operands share.
  const Shape &sa = a->type.shape, &sb = b->type.shape;
  size_t rank = sa.size();
  if (sb.size() != rank || (rank != 2 && rank != 3))
    return error(e.loc, "dot multiplies 2-D tiles, or 3-D ones with a batch dimension first, "
                        "got " + a->type.str() + " and " + b->type.str());
  if (rank == 3 && sa[0] != sb[0])
    return error(e.loc, "dot: batch dimensions differ (" + a->type.str() + " times " +
                            b->type.str() + ")");
  if (sa[rank - 1] != sb[rank - 2])
    return error(e.loc, "dot: inner dimensions differ (" + a->type.str() + " times " +
                            b->type.str() + ")");
  if (a->type.dtype != b->type.dtype)
    return error(e.loc, "dot: operands have different element types (" +
                            llvm::Twine(dtypeName(a->type.dtype)) + " and " +
                            dtypeName(b->type.dtype) + "); cast one of them");
  if (a->type.dtype == DType::I1)
    return error(e.loc, "dot is not defined on bool");
  Shape shape(sa.begin(), sa.end() - 1);
  shape.push_back(sb.back());
  DType in = a->type.dtype;
  DType accType = isFloat(in)     ? (in == DType::F64 ? DType::F64 : DType::F32)
                  : isUnsigned(in) ? (in == DType::U64 ? DType::U64 : DType::U32)
                                   : (in == DType::I64 ? DType::I64 : DType::I32);
  TValue acc;
  mlir::Location l = loc(e.loc);
  if (e.args.size() == 3) {
    MaybeValue c = genValue(*e.args[2], "accumulator");
    if (!c)
      return std::nullopt;
    if (c->type.kind != SType::Tile || c->type.shape != shape)
      return error(e.args[2]->loc, "dot accumulator must be " +
                                       withArticle(SType::tile(c->type.dtype, shape).str()) +
                                       " tile, got " + c->type.str());
    if (isFloat(c->type.dtype) != isFloat(a->type.dtype))
      return error(e.args[2]->loc, "dot accumulator " + c->type.str() +
                                       " does not match operands of " +
                                       dtypeName(a->type.dtype));
    if (rejectF8(c->type.dtype, e.args[2]->loc, "accumulating a dot"))
      return std::nullopt;
    acc = *c;
  } else {
    acc = convert(constant(Const::ofInt(0), accType, false, l), accType, shape, e.loc);
  }
  bool tf32 = false;
  if (const KeywordArg *kw = e.kwarg("tf32")) {
    MaybeValue v = genValue(*kw->value, "tf32");
    if (!v)
      return std::nullopt;
    if (v->type.kind != SType::Scalar || v->type.dtype != DType::I1)
      return error(kw->value->loc, "tf32 must be a bool, got " + withArticle(v->type.str()));
    if (!v->cst)
      return error(kw->value->loc,
                   "tf32 must be known at compile time (true, false, or built from params)");
    tf32 = v->cst->i != 0;
    if (tf32 && a->type.dtype != DType::F32)
      return error(kw->value->loc, "tf32 rounding applies to f32 operands, got " +
                                       llvm::Twine(dtypeName(a->type.dtype)));
    if (tf32 && acc.type.dtype != DType::F32)
      return error(e.args[2]->loc, "a tf32 dot accumulates in f32, got " +
                                       withArticle(acc.type.str()) + " accumulator");
  }
  // kiln.dot sign-extends narrow integer operands; unsigned ones are
  // zero-extended here into the narrowest signed type that holds them (u8 in
  // i16: tiles stay half the size of i32 ones in shared memory), or the
  // accumulator's (sums and products are the same bits either way).
  Value x = a->value, y = b->value;
  if (isUnsigned(in) && dtypeBits(in) < dtypeBits(acc.type.dtype)) {
    DType wide = in == DType::U8 && dtypeBits(acc.type.dtype) > 16 ? DType::I16
                                                                     : acc.type.dtype;
    x = castValue(x, in, wide, l);
    y = castValue(y, in, wide, l);
  }
  // The products are taken in the accumulator's type. Operands it does not
  // simply widen (wider floats or integers, the other 16-bit float format, and
  // bf16 or fp8 under an f64 accumulator, which no target extends directly) are
  // converted to it here, each rounding once as cast<> does; kiln.dot then
  // extends only narrower operands of the same kind.
  DType accDType = acc.type.dtype;
  bool widens = dtypeBits(in) < dtypeBits(accDType) &&
                !(accDType == DType::F64 && (in == DType::BF16 || isF8(in)));
  bool sameBits = !isFloat(in) && dtypeBits(in) == dtypeBits(accDType);
  if (in != accDType && !widens && !sameBits) {
    x = castValue(x, in, accDType, l);
    y = castValue(y, in, accDType, l);
  }
  auto dot2d = [&](Value x, Value y, Value c) -> Value {
    auto dot = builder.create<DotOp>(l, c.getType(), x, y, c);
    if (tf32)
      dot.setTf32(true);
    return dot;
  };
  TValue out;
  out.type = SType::tile(accDType, shape);
  if (rank == 2) {
    out.value = dot2d(x, y, acc.value);
    return out;
  }
  // A batched dot is one 2-D dot per batch index, on the operands' slices,
  // written back into the batch's slice of the result.
  // Slices: a splat (the zero accumulator) is the same splat, smaller; other
  // tiles gather their batch index (on GPUs, through shared memory).
  auto slice = [&](Value v, int64_t i) -> Value {
    auto type = mlir::cast<mlir::RankedTensorType>(v.getType());
    Shape one(type.getShape()), plain(type.getShape().begin() + 1, type.getShape().end());
    one[0] = 1;
    auto plainType = mlir::RankedTensorType::get(plain, type.getElementType());
    if (one == Shape(type.getShape())) // a batch of one
      return builder.create<ReshapeOp>(l, plainType, v);
    if (auto splatOp = v.getDefiningOp<SplatOp>())
      return builder.create<SplatOp>(l, plainType, splatOp.getValue());
    mlir::DenseElementsAttr dense;
    if (mlir::matchPattern(v, mlir::m_Constant(&dense)) && dense.isSplat())
      return builder.create<mlir::arith::ConstantOp>(l, dense.resizeSplat(plainType));
    Value at = splat(Const::ofInt(i), DType::I32, one, e.loc);
    Value g = builder.create<GatherOp>(l, mlir::RankedTensorType::get(one, type.getElementType()),
                                       v, at, builder.getI32IntegerAttr(0));
    return builder.create<ReshapeOp>(l, plainType, g);
  };
  Shape one = shape;
  one[0] = 1;
  if (shape[0] == 1) {
    out.value = builder.create<ReshapeOp>(
        l, valueType(accDType, shape), dot2d(slice(x, 0), slice(y, 0), slice(acc.value, 0)));
    return out;
  }
  Value batch = axisPositions(shape, 0, l);
  out.value = acc.value;
  for (int64_t i = 0; i < shape[0]; ++i) {
    Value r = dot2d(slice(x, i), slice(y, i), slice(acc.value, i));
    r = builder.create<ReshapeOp>(l, valueType(accDType, one), r);
    Value here = builder.create<mlir::arith::CmpIOp>(
        l, mlir::arith::CmpIPredicate::eq, batch, splat(Const::ofInt(i), DType::I32, shape, e.loc));
    out.value = builder.create<mlir::arith::SelectOp>(
        l, here, broadcastValue(r, one, shape, accDType, l), out.value);
  }
  return out;
}

MaybeValue Generator::genShapeOp(const CallExpr &e) {
  const std::string &name = e.callee;
  if (!checkArity(e, name == "trans" ? 1 : 2, 2))
    return std::nullopt;
  MaybeValue v = genValue(*e.args[0], "operand");
  if (!v)
    return std::nullopt;
  if (v->type.kind != SType::Tile)
    return error(e.args[0]->loc, "'" + name + "' needs a tile, got " + withArticle(v->type.str()));
  DType dt = v->type.dtype;
  const Shape &shape = v->type.shape;
  mlir::Location l = loc(e.loc);
  TValue out;
  if (name == "reshape" || name == "broadcast_to") {
    auto target = constShape(*e.args[1], "target shape");
    if (!target)
      return std::nullopt;
    if (name == "reshape") {
      int64_t from = 1, to = 1;
      for (int64_t d : shape)
        from *= d;
      for (int64_t d : *target)
        to *= d;
      if (from != to)
        return error(e.loc, "cannot reshape " + shapeStr(shape) + " (" + llvm::Twine(from) +
                                " elements) to " + shapeStr(*target) + " (" + llvm::Twine(to) +
                                " elements)");
      out.type = SType::tile(dt, *target);
      out.value = builder.create<ReshapeOp>(l, valueType(dt, *target), v->value);
      return out;
    }
    auto s = broadcastShapes(shape, *target);
    if (!s || *s != *target)
      return error(e.loc, "cannot broadcast " + shapeStr(shape) + " to " + shapeStr(*target));
    return convert(*v, dt, *target, e.loc);
  }
  if (name == "expand_dims") {
    auto axis = axisArg(*e.args[1], shape.size(), /*allowEnd=*/true);
    if (!axis)
      return std::nullopt;
    Shape result = shape;
    result.insert(result.begin() + *axis, 1);
    out.type = SType::tile(dt, result);
    out.value = builder.create<ExpandDimsOp>(l, valueType(dt, result), v->value,
                                             builder.getI32IntegerAttr(*axis));
    return out;
  }
  // trans
  llvm::SmallVector<int32_t> perm;
  if (e.args.size() == 2) {
    if (e.args[1]->kind != Expr::List)
      return error(e.args[1]->loc, "the permutation must be a list like [1, 0]");
    for (auto &p : static_cast<const ListExpr &>(*e.args[1]).elements) {
      auto a = constInt(*p, "permutation entry");
      if (!a)
        return std::nullopt;
      perm.push_back(static_cast<int32_t>(*a));
    }
    llvm::SmallVector<bool> seen(shape.size(), false);
    if (perm.size() != shape.size())
      return error(e.args[1]->loc, "permutation has " + llvm::Twine(perm.size()) +
                                       " entries for a tile of rank " + llvm::Twine(shape.size()));
    for (int32_t p : perm) {
      if (p < 0 || p >= static_cast<int32_t>(shape.size()) || seen[p])
        return error(e.args[1]->loc, "not a permutation of 0.." + llvm::Twine(shape.size() - 1));
      seen[p] = true;
    }
  } else {
    if (shape.size() != 2)
      return error(e.loc, "trans without a permutation needs a 2-D tile, got " + v->type.str());
    perm = {1, 0};
  }
  Shape result;
  for (int32_t p : perm)
    result.push_back(shape[p]);
  out.type = SType::tile(dt, result);
  out.value = builder.create<TransOp>(l, valueType(dt, result), v->value, perm);
  return out;
}

MaybeValue Generator::genGather(const CallExpr &e) {
  if (!checkArity(e, 2, 3, {"axis"}))
    return std::nullopt;
  MaybeValue src = genValue(*e.args[0], "gather source");
  if (!src)
    return std::nullopt;
  if (src->type.kind != SType::Tile)
    return error(e.args[0]->loc, "gather needs a tile to pick from, got " +
                                     withArticle(src->type.str()));
  MaybeValue index = genValue(*e.args[1], "gather index");
  if (!index)
    return std::nullopt;
  DType it = index->type.dtype;
  if (index->type.kind != SType::Tile || isFloat(it) || it == DType::I1)
    return error(e.args[1]->loc, "a gather index must be an integer tile, got " +
                                     withArticle(index->type.str()));
  if (dtypeBits(it) == 64)
    return error(e.args[1]->loc, "a gather index must have at most 32 bits; cast it with "
                                 "cast<i32>(...)");
  const Shape &shape = src->type.shape, &ishape = index->type.shape;
  int64_t rank = shape.size();
  std::optional<int64_t> axis;
  if (!optionalAxis(e, 2, rank, axis))
    return std::nullopt;
  if (!axis && rank != 1)
    return error(e.loc, "gather from a rank-" + llvm::Twine(rank) + " tile needs an axis");
  axis = axis.value_or(0);
  if (static_cast<int64_t>(ishape.size()) != rank)
    return error(e.args[1]->loc, "the index " + index->type.str() +
                                     " must have the source's rank (" + llvm::Twine(rank) + ")");
  for (int64_t d = 0; d < rank; ++d)
    if (d != *axis && ishape[d] != shape[d])
      return error(e.args[1]->loc, "the index " + index->type.str() + " must match the source " +
                                       src->type.str() + " in every dimension but the axis (" +
                                       llvm::Twine(*axis) + ")");
  TValue idx = convert(*index, DType::I32, ishape, e.args[1]->loc);
  TValue out;
  out.type = SType::tile(src->type.dtype, ishape);
  out.value = builder.create<GatherOp>(loc(e.loc), valueType(src->type.dtype, ishape),
                                       src->value, idx.value,
                                       builder.getI32IntegerAttr(static_cast<int32_t>(*axis)));
  return out;
}

MaybeValue Generator::genSort(const CallExpr &e) {
  const std::string &name = e.callee; // sort or argsort
  if (!checkArity(e, 1, 1, {"axis", "descending"}))
    return std::nullopt;
  MaybeValue v = genValue(*e.args[0], "sort operand");
  if (!v)
    return std::nullopt;
  DType dt = v->type.dtype;
  if (v->type.kind != SType::Tile || dt == DType::I1 || isF8(dt))
    return error(e.args[0]->loc, name + " needs a tile of integers or f16/bf16/f32/f64, got " +
                                     withArticle(v->type.str()));
  const Shape &shape = v->type.shape;
  int64_t rank = shape.size(), axis = rank - 1;
  if (const KeywordArg *kw = e.kwarg("axis")) {
    auto a = axisArg(*kw->value, rank);
    if (!a)
      return std::nullopt;
    axis = *a;
  }
  std::optional<bool> descendingFlag = boolKeyword(e, "descending");
  if (!descendingFlag)
    return std::nullopt;
  bool descending = *descendingFlag;
  int64_t n = shape[axis];
  if (!llvm::isPowerOf2_64(n))
    return error(e.args[0]->loc, name + " needs a power-of-two extent along the axis, got " +
                                     llvm::Twine(n) + " in " + v->type.str() +
                                     " (pad with a load's other = inf)");

  // A bitonic sorting network: log2(n) (log2(n) + 1) / 2 compare-exchange steps,
  // each pairing every element with the one whose position along the axis
  // differs in bit j and keeping the smaller or the larger by position and block.
  // argsort carries each element's original position along and breaks ties by
  // it, so its order is the stable one.
  mlir::Location l = loc(e.loc);
  Value pos = axisPositions(shape, axis, l);
  auto i32 = [&](int64_t c) { return splat(Const::ofInt(c), DType::I32, shape, e.loc); };
  auto bitClear = [&](int64_t bit) {
    Value masked = builder.create<mlir::arith::AndIOp>(l, pos, i32(bit));
    return builder.create<mlir::arith::CmpIOp>(l, mlir::arith::CmpIPredicate::eq, masked, i32(0))
        .getResult();
  };
  // a before b in the sorted order; NaN sorts after every number (as in torch.sort).
  auto before = [&](Value a, Value b) -> Value {
    if (descending)
      std::swap(a, b);
    if (!isFloat(dt))
      return builder.create<mlir::arith::CmpIOp>(
          l, isUnsigned(dt) ? mlir::arith::CmpIPredicate::ult : mlir::arith::CmpIPredicate::slt,
          a, b);
    using P = mlir::arith::CmpFPredicate;
    Value less = builder.create<mlir::arith::CmpFOp>(l, P::OLT, a, b);
    Value bNaN = builder.create<mlir::arith::CmpFOp>(l, P::UNO, b, b);
    Value aNumber = builder.create<mlir::arith::CmpFOp>(l, P::ORD, a, a);
    Value nanLast = builder.create<mlir::arith::AndIOp>(l, bNaN, aNumber);
    return builder.create<mlir::arith::OrIOp>(l, less, nanLast);
  };
  // Equal keys, NaN included (-0.0 equals 0.0).
  auto equal = [&](Value a, Value b) -> Value {
    if (!isFloat(dt))
      return builder.create<mlir::arith::CmpIOp>(l, mlir::arith::CmpIPredicate::eq, a, b);
    using P = mlir::arith::CmpFPredicate;
    Value same = builder.create<mlir::arith::CmpFOp>(l, P::OEQ, a, b);
    Value aNaN = builder.create<mlir::arith::CmpFOp>(l, P::UNO, a, a);
    Value bNaN = builder.create<mlir::arith::CmpFOp>(l, P::UNO, b, b);
    return builder.create<mlir::arith::OrIOp>(
        l, same, builder.create<mlir::arith::AndIOp>(l, aNaN, bNaN));
  };
  bool withIndices = name == "argsort";
  llvm::SmallVector<Value, 2> tiles{v->value};
  if (withIndices)
    tiles.push_back(pos);
  auto gatherAt = [&](Value tile, Value at) -> Value {
    return builder.create<GatherOp>(l, tile.getType(), tile, at, builder.getI32IntegerAttr(axis));
  };
  auto select = [&](Value c, Value a, Value b) -> Value {
    return builder.create<mlir::arith::SelectOp>(l, c, a, b);
  };
  for (int64_t k = 2; k <= n; k *= 2) {
    for (int64_t j = k / 2; j > 0; j /= 2) {
      Value partnerPos = builder.create<mlir::arith::XOrIOp>(l, pos, i32(j));
      llvm::SmallVector<Value, 2> partners;
      for (Value t : tiles)
        partners.push_back(gatherAt(t, partnerPos));
      // The lower of the pair keeps the first in order in an ascending block,
      // the upper one in a descending block. Both elements of a pair decide the
      // same way: they swap when the value in the later slot is strictly
      // before the one in the first slot (ties stay, so -0.0 beside 0.0 or two
      // NaNs are not both replaced by one of them).
      Value keepFirst = builder.create<mlir::arith::CmpIOp>(
          l, mlir::arith::CmpIPredicate::eq, bitClear(j), bitClear(k));
      auto slots = [&](size_t i) { // (in the later slot, in the first slot)
        return std::pair(select(keepFirst, partners[i], tiles[i]),
                         select(keepFirst, tiles[i], partners[i]));
      };
      auto [inLater, inFirst] = slots(0);
      Value swap = before(inLater, inFirst);
      if (withIndices) {
        auto [laterAt, firstAt] = slots(1);
        Value tie = equal(inLater, inFirst);
        Value earlier = builder.create<mlir::arith::CmpIOp>(l, mlir::arith::CmpIPredicate::slt,
                                                            laterAt, firstAt);
        swap = builder.create<mlir::arith::OrIOp>(
            l, swap, builder.create<mlir::arith::AndIOp>(l, tie, earlier));
      }
      for (size_t i = 0; i < tiles.size(); ++i)
        tiles[i] = select(swap, partners[i], tiles[i]);
    }
  }
  TValue out;
  out.type = SType::tile(withIndices ? DType::I32 : dt, shape);
  out.value = tiles.back();
  return out;
}

std::optional<bool> Generator::boolKeyword(const CallExpr &e, llvm::StringRef name) {
  const KeywordArg *kw = e.kwarg(name);
  if (!kw)
    return false;
  MaybeValue v = genValue(*kw->value, name.data());
  if (!v)
    return std::nullopt;
  if (!v->cst || v->type.dtype != DType::I1 || v->type.kind != SType::Scalar)
    return error(kw->value->loc, name + " must be true or false");
  return v->cst->i != 0;
}

Value Generator::axisPositions(const Shape &shape, int64_t axis, mlir::Location l) {
  int64_t n = shape[axis];
  Shape line(shape.size(), 1);
  line[axis] = n;
  Value pos = builder.create<ArangeOp>(l, valueType(DType::I32, {n}), 0, n);
  if (shape.size() > 1)
    pos = builder.create<ReshapeOp>(l, valueType(DType::I32, line), pos);
  return broadcastValue(pos, line, shape, DType::I32, l);
}

Value Generator::onlyElement(Value tile, DType dt, mlir::Location l) {
  // A max over one element is that element (NaN and -0.0 included); bools are
  // reduced as i32, as everywhere else.
  DType via = dt == DType::I1 ? DType::I32 : dt;
  if (via != dt)
    tile = castValue(tile, dt, via, l);
  Value v = builder.create<ReduceOp>(l, mlirType(via),
                                     ReduceKindAttr::get(&ctx, ReduceKind::Max), tile,
                                     builder.getI32IntegerAttr(0));
  return via == dt ? v : castValue(v, via, dt, l);
}

MaybeValue Generator::genCombine(const CallExpr &e) {
  const std::string &name = e.callee;
  bool scan = name == "associative_scan";
  llvm::StringRef flagName = scan ? "reverse" : "keepdims";
  if (!checkArity(e, 1, 3, {"axis", "combine", flagName}))
    return std::nullopt;
  // The operands: a tile, or a tuple of tiles of one shape.
  MaybeValue in = genExpr(*e.args[0]);
  if (!in)
    return std::nullopt;
  bool isTuple = in->type.kind == SType::Tuple;
  std::vector<TValue> xs = isTuple ? in->elements : std::vector<TValue>{*in};
  for (TValue &x : xs) {
    // Combined as tiles: a constant tile (ones_like(v)) must reach the combine
    // function as a tile argument, not be folded into its specialization as a
    // scalar constant, and the results are not that constant.
    x.cst.reset();
    if (x.type.kind != SType::Tile)
      return error(e.args[0]->loc, name + " needs a tile or a tuple of tiles, got " +
                                       withArticle(x.type.str()));
    if (x.type.shape != xs[0].type.shape)
      return error(e.args[0]->loc, "the tiles of " + name + "'s tuple must have one shape, got " +
                                       xs[0].type.str() + " and " + x.type.str());
  }
  auto positionalOrKeyword = [&](size_t i, llvm::StringRef kw) -> std::optional<const Expr *> {
    const KeywordArg *k = e.kwarg(kw);
    if (k && e.args.size() > i)
      return error(k->loc, "the " + kw + " is given twice");
    return k ? k->value.get() : e.args.size() > i ? e.args[i].get() : nullptr;
  };
  auto axisExpr = positionalOrKeyword(1, "axis");
  auto combineExpr = positionalOrKeyword(2, "combine");
  if (!axisExpr || !combineExpr)
    return std::nullopt;
  if (!*combineExpr)
    return error(e.loc, name + " needs a combine function: " + name + "(t, axis, f) or " + name +
                            "(t, combine = f)");
  const FnDecl *fn = nullptr;
  if ((*combineExpr)->kind == Expr::Name)
    fn = module.findFunction(static_cast<const NameExpr &>(**combineExpr).name);
  if (!fn)
    return error((*combineExpr)->loc, "the combine function must be the name of a 'fn' "
                                      "declared in this file");
  size_t arity = xs.size();
  if (fn->params.size() != 2 * arity)
    return error((*combineExpr)->loc,
                 "'" + fn->name + "' must take " + llvm::Twine(2 * arity) +
                     " parameters (two of each of the " + llvm::Twine(arity) + " operand" +
                     (arity == 1 ? "" : "s") + "), it takes " + llvm::Twine(fn->params.size()));
  std::optional<bool> flag = boolKeyword(e, flagName);
  if (!flag)
    return std::nullopt;

  mlir::Location l = loc(e.loc);
  int64_t rank = xs[0].type.shape.size();
  std::optional<int64_t> axis;
  if (*axisExpr) {
    if (!(axis = axisArg(**axisExpr, rank)))
      return std::nullopt;
  } else if (rank == 1) {
    axis = 0;
  } else if (scan) {
    return error(e.loc, name + " of a rank-" + llvm::Twine(rank) + " tile needs an axis");
  } else { // reduce every element, in row-major order
    if (*flag)
      return error(e.loc, "keepdims needs an axis");
    int64_t total = 1;
    for (int64_t d : xs[0].type.shape)
      total *= d;
    for (TValue &x : xs) {
      x.value = builder.create<ReshapeOp>(l, valueType(x.type.dtype, {total}), x.value);
      x.type.shape = {total};
    }
    axis = 0;
  }
  Shape shape = xs[0].type.shape;
  int64_t n = shape[*axis];

  // The combine function must be a function of scalars, so that applying it to
  // whole tiles combines them lane by lane: check it on scalars first (the
  // specialization is left unused and dropped by symbol-dce).
  auto describe = [](const std::vector<TValue> &vs, bool asScalars = false) {
    std::string text;
    for (auto [i, v] : llvm::enumerate(vs))
      text += (i ? ", " : "") + (asScalars ? SType::scalar(v.type.dtype) : v.type).str();
    return vs.size() == 1 ? text : "(" + text + ")";
  };
  auto call = [&](std::vector<TValue> args, SMLoc at,
                  llvm::StringRef how) -> std::optional<std::vector<TValue>> {
    llvm::SmallVector<SMLoc> locs(args.size(), at);
    MaybeValue r = callHelper(*fn, std::move(args), locs, at, how);
    if (!r)
      return std::nullopt;
    return r->type.kind == SType::Tuple ? r->elements
           : r->type.kind == SType::Void ? std::vector<TValue>{}
                                          : std::vector<TValue>{*r};
  };
  mlir::FlatSymbolRefAttr scalarCombine; // the specialization the check made
  {
    mlir::Block scratch; // the check's call and operands are thrown away
    mlir::OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPointToStart(&scratch);
    std::vector<TValue> args;
    for (int copy = 0; copy < 2; ++copy)
      for (const TValue &x : xs) {
        TValue a;
        a.type = SType::scalar(x.type.dtype);
        a.value = builder.create<mlir::arith::ConstantOp>(l, constAttr(Const::ofInt(0),
                                                                       x.type.dtype));
        args.push_back(a);
      }
    auto results = call(std::move(args), (*combineExpr)->loc,
                        "as " + e.callee + " checks its combine on scalars");
    if (!results)
      return std::nullopt;
    bool same = results->size() == arity;
    for (size_t i = 0; same && i < arity; ++i)
      same = (*results)[i].type.sameValueType(SType::scalar(xs[i].type.dtype));
    if (!same)
      return error((*combineExpr)->loc,
                   "'" + fn->name + "' must return " + describe(xs, true) + " for scalars " +
                       describe(xs, true) + ", got " +
                       (results->empty() ? std::string("nothing") : describe(*results)));
    for (auto callOp : scratch.getOps<mlir::func::CallOp>())
      scalarCombine = callOp.getCalleeAttr();
    scratch.clear();
  }

  // A scan is one op over the scalar and the tile specializations: each target
  // picks how to evaluate it (the CPU folds along the axis row by row; GPUs
  // expand it into a tree of gathers, kiln-expand-associative-scans). A
  // reduction is the last lane of the forward scan.
  // The result: the tile, or the tuple of tiles.
  auto packed = [&]() -> TValue {
    if (!isTuple)
      return xs[0];
    TValue out;
    out.type.kind = SType::Tuple;
    out.elements = std::move(xs);
    return out;
  };
  mlir::FlatSymbolRefAttr tileCombine;
  {
    // The tree (kiln-expand-associative-scans) calls the function on whole
    // tiles: specialize it for them too.
    mlir::Block scratch;
    mlir::OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPointToStart(&scratch);
    std::vector<TValue> args = xs;
    args.insert(args.end(), xs.begin(), xs.end());
    // A run-time `if` in it fails here (its condition is a tile): the note says
    // where the tile call comes from.
    auto combined = call(std::move(args), (*combineExpr)->loc,
                         "which " + e.callee + " applies to whole tiles, lane by lane");
    if (!combined)
      return std::nullopt;
    for (size_t i = 0; i < arity; ++i)
      if (combined->size() != arity || !(*combined)[i].type.sameValueType(xs[i].type))
        return error((*combineExpr)->loc, "'" + fn->name + "' must return " + describe(xs) +
                                              " for tiles " + describe(xs) + ", got " +
                                              describe(*combined));
    for (auto callOp : scratch.getOps<mlir::func::CallOp>())
      tileCombine = callOp.getCalleeAttr();
    scratch.clear();
  }
  // callHelper makes a call whenever it succeeds.
  assert(scalarCombine && tileCombine && "the combine function's specializations");
  llvm::SmallVector<Value> sources;
  llvm::SmallVector<mlir::Type> types;
  for (const TValue &x : xs) {
    sources.push_back(x.value);
    types.push_back(x.value.getType());
  }
  bool reverse = scan && *flag;
  auto op = builder.create<AssociativeScanOp>(l, types, sources, scalarCombine, tileCombine,
                                              builder.getI32IntegerAttr(*axis),
                                              reverse ? builder.getUnitAttr() : nullptr);
  for (auto [x, r] : llvm::zip(xs, op.getResults()))
    x.value = r;
  if (scan)
    return packed();
  // A reduction: the last lane along the axis, which holds the whole range.
  Shape kept = shape;
  kept[*axis] = 1;
  Shape dropped = shape;
  dropped.erase(dropped.begin() + *axis);
  Value last = splat(Const::ofInt(n - 1), DType::I32, kept, e.loc);
  for (TValue &x : xs) {
    DType dt = x.type.dtype;
    x.value = builder.create<GatherOp>(l, valueType(dt, kept), x.value, last,
                                       builder.getI32IntegerAttr(*axis));
    x.type = SType::tile(dt, kept);
    if (*flag) // keepdims
      continue;
    x.type = SType::value(dt, dropped);
    x.value = dropped.empty() ? onlyElement(x.value, dt, l)
                              : builder.create<ReshapeOp>(l, valueType(dt, dropped), x.value)
                                    .getResult();
  }
  return packed();
}

MaybeValue Generator::genJoin(const CallExpr &e) {
  const std::string &name = e.callee; // join, interleave or cat
  bool isCat = name == "cat";
  if (isCat ? !checkArity(e, 2, 3, {"axis"}) : !checkArity(e, 2, 2))
    return std::nullopt;
  MaybeValue a = genValue(*e.args[0], "operand");
  if (!a)
    return std::nullopt;
  MaybeValue b = genValue(*e.args[1], "operand");
  if (!b)
    return std::nullopt;
  DType dt = promote(a->type, b->type);
  if (!operandsFit(*a, *b, dt, e.loc))
    return std::nullopt;
  mlir::Location l = loc(e.loc);
  if (name != "join" && (a->type.kind != SType::Tile || b->type.kind != SType::Tile))
    return error(e.loc, name + " needs two tiles, got " + a->type.str() + " and " +
                            b->type.str());
  TValue out;
  if (isCat) {
    const Shape &sa = a->type.shape, &sb = b->type.shape;
    std::optional<int64_t> given;
    if (!optionalAxis(e, 2, sa.size(), given))
      return std::nullopt;
    int64_t axis = given.value_or(0);
    Shape shape = sa;
    bool fits = sa.size() == sb.size();
    for (size_t d = 0; fits && d < sa.size(); ++d)
      fits = static_cast<int64_t>(d) == axis || sa[d] == sb[d];
    if (!fits)
      return error(e.loc, "cat: " + a->type.str() + " and " + b->type.str() +
                              " must have the same sizes except along axis " +
                              llvm::Twine(axis));
    shape[axis] = sa[axis] + sb[axis];
    if (!checkTileSize(shape, e.loc))
      return std::nullopt;
    // Each result lane gathers from the operand it falls in; the other gather
    // is out of range (0) and not selected.
    Value pos = axisPositions(shape, axis, l);
    Value split = splat(Const::ofInt(sa[axis]), DType::I32, shape, e.loc);
    Value bPos = builder.create<mlir::arith::SubIOp>(l, pos, split);
    auto gatherFrom = [&](const TValue &v, Value at) -> Value {
      return builder.create<GatherOp>(l, valueType(dt, shape),
                                      convert(v, dt, v.type.shape, e.loc).value, at,
                                      builder.getI32IntegerAttr(axis));
    };
    Value inA = builder.create<mlir::arith::CmpIOp>(l, mlir::arith::CmpIPredicate::slt, pos, split);
    out.type = SType::tile(dt, shape);
    out.value = builder.create<mlir::arith::SelectOp>(l, inA, gatherFrom(*a, pos),
                                                      gatherFrom(*b, bPos));
    return out;
  }
  auto s = broadcastShapes(a->type.shape, b->type.shape);
  if (!s)
    return error(e.loc, name + ": shapes " + shapeStr(a->type.shape) + " and " +
                            shapeStr(b->type.shape) + " do not broadcast");
  Shape joined = *s;
  joined.push_back(2);
  if (!checkTileSize(joined, e.loc))
    return std::nullopt;
  // Each operand gains a trailing dimension of 1, broadcast to 2; lane 0 of it
  // is `a`, lane 1 is `b`.
  auto widen = [&](const TValue &v) -> Value {
    TValue c = convert(v, dt, *s, e.loc);
    if (s->empty())
      return convert(c, dt, joined, e.loc).value;
    Shape one = *s;
    one.push_back(1);
    Value x = builder.create<ExpandDimsOp>(l, valueType(dt, one), c.value,
                                           builder.getI32IntegerAttr(s->size()));
    return broadcastValue(x, one, joined, dt, l);
  };
  Value first = builder.create<mlir::arith::CmpIOp>(
      l, mlir::arith::CmpIPredicate::eq, axisPositions(joined, s->size(), l),
      splat(Const::ofInt(0), DType::I32, joined, e.loc));
  out.type = SType::tile(dt, joined);
  out.value = builder.create<mlir::arith::SelectOp>(l, first, widen(*a), widen(*b));
  if (name == "interleave") {
    Shape flat = *s;
    flat.back() *= 2;
    out.type = SType::tile(dt, flat);
    out.value = builder.create<ReshapeOp>(l, valueType(dt, flat), out.value);
  }
  return out;
}

MaybeValue Generator::genSplit(const CallExpr &e) {
  if (!checkArity(e, 1, 1))
    return std::nullopt;
  MaybeValue v = genValue(*e.args[0], "split operand");
  if (!v)
    return std::nullopt;
  if (v->type.kind != SType::Tile || v->type.shape.back() != 2)
    return error(e.args[0]->loc, "split needs a tile whose last dimension is 2, got " +
                                     withArticle(v->type.str()));
  mlir::Location l = loc(e.loc);
  DType dt = v->type.dtype;
  Shape half(v->type.shape.begin(), v->type.shape.end() - 1), kept = half;
  kept.push_back(1);
  TValue out;
  out.type.kind = SType::Tuple;
  for (int64_t k = 0; k < 2; ++k) {
    Value at = splat(Const::ofInt(k), DType::I32, kept, e.loc);
    Value g = builder.create<GatherOp>(l, valueType(dt, kept), v->value, at,
                                       builder.getI32IntegerAttr(half.size()));
    TValue part;
    part.type = SType::value(dt, half);
    part.value = half.empty() ? onlyElement(g, dt, l)
                              : builder.create<ReshapeOp>(l, valueType(dt, half), g).getResult();
    out.elements.push_back(part);
  }
  return out;
}

MaybeValue Generator::genPrint(const CallExpr &e) {
  if (!checkArity(e, 1, 2, {"hex"}))
    return std::nullopt;
  std::optional<bool> hex = boolKeyword(e, "hex");
  if (!hex)
    return std::nullopt;
  if (e.args[0]->kind != Expr::StringLit)
    return error(e.args[0]->loc, "print's first argument is the text to print, a string: "
                                 "print(\"x\", x)");
  const std::string &prefix = static_cast<const StringLitExpr &>(*e.args[0]).value;
  Value value;
  bool valueUnsigned = false;
  if (e.args.size() == 2) {
    MaybeValue v = genValue(*e.args[1], "printed value");
    if (!v)
      return std::nullopt;
    if (isF8(v->type.dtype))
      return error(e.args[1]->loc, "print shows numbers; cast an fp8 value to f32 first");
    if (*hex && isFloat(v->type.dtype))
      return error(e.args[1]->loc, "hex = true prints an integer's bits; bitcast<u" +
                                       llvm::Twine(dtypeBits(v->type.dtype)) +
                                       ">(x) gives a float's");
    value = v->value;
    valueUnsigned = isUnsigned(v->type.dtype);
  } else if (*hex) {
    return error(e.loc, "hex = true needs a value to print");
  }
  mlir::Location l = loc(e.loc);
  llvm::SmallVector<Value, 3> pids = programIds(l);
  builder.create<PrintOp>(l, builder.getStringAttr(prefix), pids[0], pids[1], pids[2], value,
                          valueUnsigned, *hex);
  TValue out;
  out.type.kind = SType::Void;
  return out;
}

MaybeValue Generator::genRearrange(const CallExpr &e) {
  const std::string &name = e.callee;
  bool isHistogram = name == "histogram";
  if (name == "flip" ? !checkArity(e, 1, 2, {"axis"})
                     : !checkArity(e, isHistogram ? 2 : 1, isHistogram ? 2 : 1))
    return std::nullopt;
  MaybeValue v = genValue(*e.args[0], "operand");
  if (!v)
    return std::nullopt;
  if (v->type.kind != SType::Tile)
    return error(e.args[0]->loc, name + " needs a tile, got " + withArticle(v->type.str()));
  mlir::Location l = loc(e.loc);
  DType dt = v->type.dtype;
  const Shape &shape = v->type.shape;
  int64_t total = 1;
  for (int64_t d : shape)
    total *= d;
  TValue out;
  if (name == "ravel") {
    out.type = SType::tile(dt, {total});
    out.value = builder.create<ReshapeOp>(l, valueType(dt, {total}), v->value);
    return out;
  }
  if (name == "flip") {
    std::optional<int64_t> given;
    if (!optionalAxis(e, 1, shape.size(), given))
      return std::nullopt;
    out.type = v->type;
    out.value = flipAlong(v->value, shape, given.value_or(shape.size() - 1), l);
    return out;
  }
  // histogram(x, bins): counts of each value 0 .. bins - 1 among the integers of
  // a rank-1 tile; other values are not counted.
  if (shape.size() != 1 || isFloat(dt) || dt == DType::I1)
    return error(e.args[0]->loc, "histogram counts the values of a rank-1 integer tile, got " +
                                     withArticle(v->type.str()));
  auto bins = constInt(*e.args[1], "the number of bins");
  if (!bins)
    return std::nullopt;
  if (*bins < 1)
    return error(e.args[1]->loc, "histogram needs at least one bin, got " + llvm::Twine(*bins));
  Shape grid = {total, *bins};
  if (!checkTileSize(grid, e.loc))
    return std::nullopt;
  TValue values = convert(*v, DType::I64, shape, e.loc);
  Value column = builder.create<ExpandDimsOp>(l, valueType(DType::I64, {total, 1}), values.value,
                                              builder.getI32IntegerAttr(1));
  Value bin = castValue(axisPositions(grid, 1, l), DType::I32, DType::I64, l);
  Value hit = builder.create<mlir::arith::CmpIOp>(
      l, mlir::arith::CmpIPredicate::eq, broadcastValue(column, {total, 1}, grid, DType::I64, l),
      bin);
  TValue counts;
  counts.type = SType::tile(DType::I32, grid);
  counts.value = castValue(hit, DType::I1, DType::I32, l);
  return reduceAlong(counts, ReduceKind::Sum, 0, /*keepdims=*/false, l);
}

MaybeValue Generator::genSwizzle2d(const CallExpr &e) {
  if (!checkArity(e, 5, 5))
    return std::nullopt;
  std::vector<TValue> a;
  for (const ExprPtr &arg : e.args) {
    MaybeValue v = genValue(*arg, "swizzle2d operand");
    if (!v)
      return std::nullopt;
    if (v->type.kind != SType::Scalar || isFloat(v->type.dtype) || v->type.dtype == DType::I1)
      return error(arg->loc, "swizzle2d takes integer scalars (program ids and grid sizes), got " +
                                 withArticle(v->type.str()));
    a.push_back(*v);
  }
  // As tl.swizzle2d: the position ij = i nj + j of a row-major ni x nj grid,
  // renumbered so that each group of g rows is walked column by column (the
  // last group may have fewer rows).
  SMLoc at = e.loc;
  auto op = [&](BinOp o, const TValue &x, const TValue &y) { return binary(o, x, y, at); };
  const TValue &i = a[0], &j = a[1], &nj = a[3], &g = a[4];
  MaybeValue ij = op(BinOp::Mul, i, nj);
  ij = ij ? op(BinOp::Add, *ij, j) : ij;
  MaybeValue perGroup = op(BinOp::Mul, g, nj);
  if (!ij || !perGroup)
    return std::nullopt;
  MaybeValue group = op(BinOp::Div, *ij, *perGroup);
  MaybeValue firstRow = group ? op(BinOp::Mul, *group, g) : group;
  MaybeValue rowsLeft = firstRow ? op(BinOp::Sub, a[2], *firstRow) : firstRow;
  MaybeValue fewer = rowsLeft ? op(BinOp::Lt, *rowsLeft, g) : rowsLeft;
  MaybeValue within = op(BinOp::Rem, *ij, *perGroup);
  if (!fewer || !within)
    return std::nullopt;
  // The group's rows: min(rows left, g), folded when both are known.
  DType dt = promote(g.type, rowsLeft->type);
  TValue rows = convert(fewer->cst && fewer->cst->i ? *rowsLeft : g, dt, {}, at);
  if (!fewer->cst) {
    rows.value = builder.create<mlir::arith::SelectOp>(
        loc(at), fewer->value, convert(*rowsLeft, dt, {}, at).value, rows.value);
    rows.cst.reset();
  }
  MaybeValue newI = op(BinOp::Rem, *within, rows);
  newI = newI ? op(BinOp::Add, *firstRow, *newI) : newI;
  MaybeValue newJ = op(BinOp::Div, *within, rows);
  if (!newI || !newJ)
    return std::nullopt;
  TValue out;
  out.type.kind = SType::Tuple;
  out.elements = {*newI, *newJ};
  return out;
}

MaybeValue Generator::assertCondition(const CallExpr &e) {
  if (!checkArity(e, 1, 2))
    return std::nullopt;
  if (e.args.size() == 2 && e.args[1]->kind != Expr::StringLit)
    return error(e.args[1]->loc, e.callee + "'s message must be a string");
  return genValue(*e.args[0], (e.callee + " condition").c_str());
}

llvm::SmallVector<Value, 3> Generator::programIds(mlir::Location l) {
  llvm::SmallVector<Value, 3> pids;
  for (int32_t axis = 0; axis < 3; ++axis)
    pids.push_back(builder.create<ProgramIdOp>(l, builder.getI32Type(), axis));
  return pids;
}

MaybeValue Generator::genDeviceAssert(const CallExpr &e) {
  MaybeValue c = assertCondition(e);
  if (!c)
    return std::nullopt;
  if (c->type.dtype != DType::I1)
    return error(e.args[0]->loc, "device_assert needs a bool or a tile of bools, got " +
                                     withArticle(c->type.str()) +
                                     " (compare it: x != 0)");
  TValue out;
  out.type.kind = SType::Void;
  if (c->cst && c->cst->i) // holds everywhere
    return out;
  // The message names the assert's place in the source, as the front end's errors do.
  mlir::Location l = loc(e.loc);
  std::string message = "device_assert failed";
  if (auto at = mlir::dyn_cast<mlir::FileLineColLoc>(l))
    message = (at.getFilename().getValue() + ":" + llvm::Twine(at.getLine()) + ":" +
               llvm::Twine(at.getColumn()) + ": " + message)
                  .str();
  if (e.args.size() == 2)
    message += ": " + static_cast<const StringLitExpr &>(*e.args[1]).value;
  llvm::SmallVector<Value, 3> pids = programIds(l);
  builder.create<AssertOp>(l, c->value, builder.getStringAttr(message), pids[0], pids[1],
                           pids[2]);
  return out;
}

MaybeValue Generator::genStaticAssert(const CallExpr &e) {
  MaybeValue c = assertCondition(e);
  if (!c)
    return std::nullopt;
  if (c->type.kind != SType::Scalar || c->type.dtype != DType::I1 || !c->cst)
    return error(e.args[0]->loc, "static_assert needs a bool known at compile time (from "
                                 "params and constants), got " +
                                     withArticle(c->type.str()) + (c->cst ? "" : " value"));
  if (!c->cst->i) {
    std::string message = "static assertion failed";
    if (e.args.size() == 2)
      message += ": " + static_cast<const StringLitExpr &>(*e.args[1]).value;
    return error(e.loc, message);
  }
  TValue out;
  out.type.kind = SType::Void;
  return out;
}

} // namespace kiln::gen
