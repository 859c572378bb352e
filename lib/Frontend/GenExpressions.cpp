//===- GenExpressions.cpp - expressions of the .kiln AST ------------------===//
//
// Names, unary and binary operators with Sema's promotions, indexing and
// slicing, methods (`.tile`, `.size`, `.stride`) and list/tuple literals.
//
//===----------------------------------------------------------------------===//

#include "lib/Frontend/Generator.h"

namespace kiln::gen {

MaybeValue Generator::genExpr(const Expr &e) {
  if (failed)
    return std::nullopt;
  Nesting nested(*this, e.loc);
  if (!nested.ok)
    return std::nullopt;
  mlir::Location l = loc(e.loc);
  switch (e.kind) {
  case Expr::IntLit: {
    // i32 when it fits, else i64, else (up to 2^64 - 1) u64.
    uint64_t v = static_cast<const IntLitExpr &>(e).value;
    if (v > INT64_MAX)
      return constant(Const::ofUnsigned(v), DType::U64, true, l);
    return constant(Const::ofInt(static_cast<int64_t>(v)), v > INT32_MAX ? DType::I64 : DType::I32,
                    true, l);
  }
  case Expr::FloatLit:
    return constant(Const::ofFloat(static_cast<const FloatLitExpr &>(e).value), DType::F32,
                    true, l);
  case Expr::BoolLit:
    return constant(Const::ofInt(static_cast<const BoolLitExpr &>(e).value), DType::I1, true,
                    l);
  case Expr::StringLit:
    return error(e.loc,
                 "a string is only allowed as the text of print, static_assert or device_assert");
  case Expr::Name: return genName(static_cast<const NameExpr &>(e));
  case Expr::Unary: return genUnary(static_cast<const UnaryExpr &>(e));
  case Expr::Binary: return genBinary(static_cast<const BinaryExpr &>(e));
  case Expr::Call: return genCall(static_cast<const CallExpr &>(e));
  case Expr::Index: return genIndex(static_cast<const IndexExpr &>(e));
  case Expr::Slice:
    return error(e.loc, static_cast<const SliceExpr &>(e).ellipsis
                            ? "'...' is only allowed in the index list of a tile"
                            : "a slice 'a:b' is only allowed in the index list of a tile");
  case Expr::Method: return genMethod(static_cast<const MethodExpr &>(e));
  case Expr::List:
    return genElements(static_cast<const ListExpr &>(e).elements, SType::List, "list element");
  case Expr::Tuple:
    return genElements(static_cast<const TupleExpr &>(e).elements, SType::Tuple,
                       "tuple element");
  }
  return std::nullopt;
}

MaybeValue Generator::genValue(const Expr &e, const char *what) {
  MaybeValue v = genExpr(e);
  if (!v)
    return std::nullopt;
  if (v->type.isValue())
    return v;
  if (v->type.kind == SType::Tensor && inGridRule) {
    // No loads in a grid rule: what it wants from a tensor is its size.
    llvm::SmallVector<llvm::StringRef> names;
    if (currentKernel)
      for (const ArgDecl &arg : currentKernel->args)
        if (arg.name == v->tensorName)
          for (const DimSpec &d : arg.dims)
            if (!d.name.empty())
              names.push_back(d.name);
    std::string sizes = v->tensorName + ".size(0)";
    if (names.size() == 1)
      sizes += " or the size name " + names[0].str();
    else if (names.size() > 1)
      sizes += " or its size names " + llvm::join(names, ", ");
    return error(e.loc, "tensor argument '" + v->tensorName + "' is not a value here (" + what +
                            "); use its size, " + sizes);
  }
  if (v->type.kind == SType::Tensor)
    return error(e.loc, "tensor argument '" + v->tensorName + "' is not a value here (" +
                            what + "); load from it, e.g. load(" + v->tensorName + "[i])");
  if (v->type.kind == SType::View)
    return error(e.loc, llvm::Twine("a view is not a value (") + what +
                            "); wrap it in load(...)");
  if (v->type.kind == SType::Tuple)
    return error(e.loc, llvm::Twine("a tuple is not a value (") + what +
                            "); unpack it first: let (a, b) = ...;");
  return error(e.loc, llvm::Twine("expected a scalar or tile for the ") + what +
                          ", got " + withArticle(v->type.str()));
}

MaybeValue Generator::genName(const NameExpr &e) {
  if (Binding *b = lookup(e.name))
    return b->val;
  if (e.name == "inf" || e.name == "nan")
    return constant(Const::ofFloat(e.name == "inf" ? std::numeric_limits<double>::infinity()
                                                   : std::numeric_limits<double>::quiet_NaN()),
                    DType::F32, true, loc(e.loc));
  if (isBuiltin(e.name))
    return error(e.loc, "'" + e.name + "' is a builtin function; call it with (...)");
  if (module.findFunction(e.name))
    return error(e.loc, "'" + e.name + "' is a function; call it with (...)");
  if (inGridRule)
    return error(e.loc, "unknown name '" + e.name +
                            "' in the grid rule (it may use sizes, scalar arguments and params)");
  if (currentKernel && !currentKernelArgsBound) {
    for (const ArgDecl &arg : currentKernel->args)
      if (arg.name == e.name || llvm::any_of(arg.dims, [&](const DimSpec &d) {
            return d.name == e.name;
          }))
        return error(e.loc, "param defaults are compile-time constants; '" + e.name +
                                "' is known only at launch");
  }
  if (e.name == "tl")
    return error(e.loc, "unknown name 'tl'; Kiln's builtins take no module prefix "
                        "(Triton's tl.arange is arange)");
  // Python's spellings, as Triton code has them.
  static const std::pair<llvm::StringLiteral, llvm::StringLiteral> python[] = {
      {"True", "true"}, {"False", "false"}, {"None", "None only as a whole index of a tile, t[:, None]"},
      {"not", "!"},     {"and", "&&"},      {"or", "||"}};
  for (auto [name, kiln] : python)
    if (e.name == name)
      return error(e.loc, "unknown name '" + e.name + "' (Kiln writes " + kiln + ")");
  return error(e.loc, "unknown name '" + e.name + "'");
}

/// The unsigned form of a signed integer comparison (others unchanged).
static mlir::arith::CmpIPredicate unsignedPredicate(mlir::arith::CmpIPredicate p) {
  using mlir::arith::CmpIPredicate;
  switch (p) {
  case CmpIPredicate::slt: return CmpIPredicate::ult;
  case CmpIPredicate::sle: return CmpIPredicate::ule;
  case CmpIPredicate::sgt: return CmpIPredicate::ugt;
  case CmpIPredicate::sge: return CmpIPredicate::uge;
  default: return p;
  }
}

MaybeValue Generator::genUnary(const UnaryExpr &e) {
  // -9223372036854775808 is INT64_MIN, though its digits alone are a u64, and
  // -2147483648 is an i32 (INT32_MIN), though its digits alone are an i64.
  if (e.op == '-' && e.operand->kind == Expr::IntLit) {
    uint64_t digits = static_cast<const IntLitExpr &>(*e.operand).value;
    if (digits == uint64_t(INT64_MAX) + 1)
      return constant(Const::ofInt(INT64_MIN), DType::I64, true, loc(e.loc));
    if (digits == uint64_t(INT32_MAX) + 1)
      return constant(Const::ofInt(INT32_MIN), DType::I32, true, loc(e.loc));
  }
  MaybeValue v = genValue(*e.operand, "operand");
  if (!v)
    return std::nullopt;
  mlir::Location l = loc(e.loc);
  if (e.op == '!') {
    if (v->type.dtype != DType::I1)
      return error(e.loc, "'!' needs a bool operand, got " + v->type.str());
    if (v->cst)
      return constant(Const::ofInt(!v->cst->i), DType::I1, v->type.weak, l);
    TValue out = *v;
    out.value = builder.create<mlir::arith::XOrIOp>(
        l, v->value, splat(Const::ofInt(1), DType::I1, v->type.shape, e.loc));
    return out;
  }
  if (e.op == '~') {
    if (!isInteger(v->type.dtype))
      return error(e.loc, "'~' needs an integer operand, got " + v->type.str() +
                              (v->type.dtype == DType::I1 ? " (use '!' for bool)" : ""));
    if (v->cst)
      return constant(convertConst(Const::ofInt(~v->cst->i), v->type.dtype), v->type.dtype,
                      v->type.weak, l);
    TValue out = *v;
    out.value = builder.create<mlir::arith::XOrIOp>(
        l, v->value, splat(Const::ofInt(-1), v->type.dtype, v->type.shape, e.loc));
    return out;
  }
  if (v->type.dtype == DType::I1)
    return error(e.loc, "unary '-' is not defined on bool");
  if (rejectF8(v->type.dtype, e.loc, "unary '-'"))
    return std::nullopt;
  if (isFloat(v->type.dtype)) {
    if (v->cst)
      return constant(Const::ofFloat(-v->cst->f), v->type.dtype, v->type.weak, l);
    TValue out = *v;
    if (v->type.dtype == DType::BF16) {
      // The sign bit flipped, as IEEE's negate says, NaNs included: negf on
      // bf16 runs in f32 on most targets, and narrowing back quiets a signaling
      // NaN (MLIR's arith-expand also dropped a NaN's sign).
      mlir::Type bits = valueType(DType::I16, v->type.shape);
      Value flipped = builder.create<mlir::arith::XOrIOp>(
          l, builder.create<mlir::arith::BitcastOp>(l, bits, v->value),
          splat(Const::ofInt(-32768), DType::I16, v->type.shape, e.loc));
      out.value = builder.create<mlir::arith::BitcastOp>(l, v->value.getType(), flipped);
      return out;
    }
    out.value = builder.create<mlir::arith::NegFOp>(l, v->value);
    return out;
  }
  // A constant past i64 is a u64 (§4): its negation is exact in i64 down to
  // -2^63, and fits no 64-bit type below (it wrapped modulo 2^64).
  if (v->cst && v->type.weak && isUnsigned(v->type.dtype)) {
    uint64_t magnitude = uint64_t(v->cst->i);
    if (magnitude > uint64_t(INT64_MAX) + 1)
      return error(e.loc, "-" + std::to_string(magnitude) +
                              " does not fit in 64 bits (the smallest i64 is "
                              "-9223372036854775808)");
    return constant(Const::ofInt(int64_t(0 - magnitude)), DType::I64, true, l);
  }
  TValue zero = constant(Const::ofInt(0), v->type.dtype, true, l);
  return binary(BinOp::Sub, zero, *v, e.loc);
}

MaybeValue Generator::genBinary(const BinaryExpr &e) {
  MaybeValue l = genValue(*e.lhs, "left operand");
  if (!l)
    return std::nullopt;
  MaybeValue r = genValue(*e.rhs, "right operand");
  if (!r)
    return std::nullopt;
  return binary(e.op, *l, *r, e.loc);
}

/// Weak integer constants fold exactly, as Python's (and so Triton's constexpr)
/// integers do: the result keeps `dt` when it fits, else takes i64 or u64, so
/// `1 << 40` and `65536 * 65536` are 2^40 and 2^32 (they wrapped to 0 in i32).
/// A value past 64 bits is an error; a typed operand (a cast) folds with wrap-around.
MaybeValue Generator::foldWeakIntegers(BinOp op, const TValue &l, const TValue &r, DType dt,
                                       SMLoc at) {
  auto exact = [](const TValue &v) -> __int128 {
    return isUnsigned(v.type.dtype) ? __int128(uint64_t(v.cst->i)) : __int128(v.cst->i);
  };
  const __int128 a = exact(l), b = exact(r);
  if ((op == BinOp::Div || op == BinOp::Rem) && b == 0)
    return error(at, "integer division by zero in a constant expression");
  if (op == BinOp::Shl && (b < 0 || (b >= 64 && a != 0)))
    return error(at, "shift by " + std::to_string(int64_t(b)) +
                         " in a constant expression (the amount must be from 0 to 63)");
  __int128 value = 0;
  switch (op) {
  case BinOp::Add: value = a + b; break;
  case BinOp::Sub: value = a - b; break;
  case BinOp::Mul: value = a * b; break;
  case BinOp::Div: value = a / b; break; // toward zero, as at run time
  case BinOp::Rem: value = a % b; break;
  default: value = a == 0 ? 0 : a * (__int128(1) << int(b)); break; // Shl; a * 2^b fits 128 bits
  }
  auto fits = [&](DType t) {
    switch (t) {
    case DType::I32: return value >= INT32_MIN && value <= INT32_MAX;
    case DType::I64: return value >= INT64_MIN && value <= INT64_MAX;
    case DType::U32: return value >= 0 && value <= UINT32_MAX;
    case DType::U64: return value >= 0 && value <= __int128(UINT64_MAX);
    default: return false;
    }
  };
  DType type = fits(dt) ? dt : fits(DType::I64) ? DType::I64 : fits(DType::U64) ? DType::U64
                                                                                : DType::I1;
  if (type == DType::I1) {
    bool negative = value < 0;
    unsigned __int128 magnitude = negative ? 0 - (unsigned __int128)value : value;
    std::string digits;
    do {
      digits.insert(digits.begin(), char('0' + int(magnitude % 10)));
      magnitude /= 10;
    } while (magnitude);
    return error(at, "constant " + std::string(negative ? "-" : "") + digits +
                         " does not fit in 64 bits; cast<i64>(...) or cast<u64>(...) an "
                         "operand to fold with wrap-around");
  }
  Const c = type == DType::U64 ? Const::ofUnsigned(uint64_t(value)) : Const::ofInt(int64_t(value));
  return constant(c, type, /*weak=*/true, loc(at));
}

MaybeValue Generator::binary(BinOp op, const TValue &l, const TValue &r, SMLoc at) {
  bool logical = op == BinOp::LAnd || op == BinOp::LOr;
  bool bitwise = op == BinOp::And || op == BinOp::Or || op == BinOp::Xor;
  bool shift = op == BinOp::Shl || op == BinOp::Shr;
  bool compare = op >= BinOp::Eq;
  if (shift && (!isInteger(l.type.dtype) || !isInteger(r.type.dtype)))
    return error(at, llvm::Twine("'") + binOpSpelling(op) + "' needs integer operands, got " +
                         l.type.str() + " and " + r.type.str());
  if (logical && (l.type.dtype != DType::I1 || r.type.dtype != DType::I1))
    return error(at, llvm::Twine("'") + binOpSpelling(op) + "' needs bool operands, got " +
                         l.type.str() + " and " + r.type.str());
  if (bitwise && (isFloat(l.type.dtype) || isFloat(r.type.dtype)))
    return error(at, llvm::Twine("'") + binOpSpelling(op) +
                         "' needs integer or bool operands, got " + l.type.str() + " and " +
                         r.type.str());
  if (!logical && !bitwise && !compare &&
      (l.type.dtype == DType::I1 || r.type.dtype == DType::I1))
    return error(at, llvm::Twine("arithmetic '") + binOpSpelling(op) +
                         "' is not defined on bool; cast<i32>(...) first");
  auto shape = broadcastShapes(l.type.shape, r.type.shape);
  if (!shape)
    return error(at, llvm::Twine("shapes ") + shapeStr(l.type.shape) + " and " +
                         shapeStr(r.type.shape) + " do not broadcast for '" +
                         binOpSpelling(op) + "'");
  if (!checkTileSize(*shape, at))
    return std::nullopt;
  DType dt = promote(l.type, r.type);
  if (!compare && rejectF8(dt, at, llvm::Twine("arithmetic '") + binOpSpelling(op) + "'"))
    return std::nullopt;
  if (!operandsFit(l, r, dt, at, bitwise))
    return std::nullopt;
  DType resultType = compare ? DType::I1 : dt;
  mlir::Location loc_ = loc(at);
  if (l.cst && r.cst && shape->empty()) {
    bool weak = l.type.weak && r.type.weak;
    if (weak && isInteger(dt) && dt != DType::I1 &&
        (op == BinOp::Add || op == BinOp::Sub || op == BinOp::Mul || op == BinOp::Div ||
         op == BinOp::Rem || op == BinOp::Shl))
      return foldWeakIntegers(op, l, r, dt, at);
    if (auto folded = foldBinary(op, foldOperand(l, dt, weak), foldOperand(r, dt, weak), dt))
      return constant(*folded, resultType, weak, loc_);
    if (!isFloat(dt) && (op == BinOp::Div || op == BinOp::Rem))
      return error(at, "integer division by zero in a constant expression");
  }
  // The grid rule runs on the host at every launch: a constant zero divisor
  // (a literal or a param) would fail each one.
  if (inGridRule && !isFloat(dt) && (op == BinOp::Div || op == BinOp::Rem) && r.cst &&
      r.cst->i == 0)
    return error(at, llvm::Twine("integer ") + (op == BinOp::Div ? "division" : "remainder") +
                         " by zero in the grid rule");
  TValue a = convert(l, dt, *shape, at), b = convert(r, dt, *shape, at);
  Value x = a.value, y = b.value, out;
  bool f = isFloat(dt);
  using namespace mlir::arith;
  switch (op) {
  case BinOp::Add: out = f ? (Value)builder.create<AddFOp>(loc_, x, y) : builder.create<AddIOp>(loc_, x, y); break;
  case BinOp::Sub: out = f ? (Value)builder.create<SubFOp>(loc_, x, y) : builder.create<SubIOp>(loc_, x, y); break;
  case BinOp::Mul: out = f ? (Value)builder.create<MulFOp>(loc_, x, y) : builder.create<MulIOp>(loc_, x, y); break;
  case BinOp::Div:
  case BinOp::Rem:
    if (f && op == BinOp::Rem && dtypeBits(dt) < 32) {
      // fmod is exact in its operands' type, so taking it in f32 and rounding
      // back changes nothing; Vulkan's f16 OpFRem is x - y * trunc(x / y)
      // evaluated in f16, off by whole units of the quotient's last place.
      Value wide = builder.create<RemFOp>(loc_, castValue(x, dt, DType::F32, loc_),
                                          castValue(y, dt, DType::F32, loc_));
      out = castValue(wide, DType::F32, dt, loc_);
    } else if (f)
      out = op == BinOp::Div ? (Value)builder.create<DivFOp>(loc_, x, y)
                             : builder.create<RemFOp>(loc_, x, y);
    else
      out = integerDivide(op, x, y, dt, *shape, at);
    break;
  case BinOp::And:
  case BinOp::LAnd: out = builder.create<AndIOp>(loc_, x, y); break;
  case BinOp::Or:
  case BinOp::LOr: out = builder.create<OrIOp>(loc_, x, y); break;
  case BinOp::Xor: out = builder.create<XOrIOp>(loc_, x, y); break;
  case BinOp::Shl:
  case BinOp::Shr: out = shiftBy(op, x, y, dt, *shape, at); break;
  default: {
    static const std::pair<CmpFPredicate, CmpIPredicate> preds[] = {
        {CmpFPredicate::OEQ, CmpIPredicate::eq},  {CmpFPredicate::UNE, CmpIPredicate::ne},
        {CmpFPredicate::OLT, CmpIPredicate::slt}, {CmpFPredicate::OLE, CmpIPredicate::sle},
        {CmpFPredicate::OGT, CmpIPredicate::sgt}, {CmpFPredicate::OGE, CmpIPredicate::sge}};
    auto [fp, ip] = preds[static_cast<int>(op) - static_cast<int>(BinOp::Eq)];
    if (isUnsigned(dt))
      ip = unsignedPredicate(ip);
    out = f ? (Value)builder.create<CmpFOp>(loc_, fp, x, y) : builder.create<CmpIOp>(loc_, ip, x, y);
  }
  }
  TValue result;
  result.type = SType::value(resultType, *shape);
  result.value = out;
  return result;
}

Value Generator::integerDivide(BinOp op, Value x, Value y, DType dt, const Shape &shape,
                               SMLoc where) {
  // LLVM and SPIR-V leave x / 0 undefined, and the CPU's divide instruction
  // stops the process (as it does for the most negative value / -1). Kiln
  // defines both, as RISC-V does: x / 0 is all bits set (-1, or an unsigned
  // type's largest value) and x % 0 is x; MIN / -1 wraps to MIN and MIN % -1
  // is 0. Such divisors divide by 1 instead, and selects fix the results; a
  // constant divisor folds the selects away.
  using namespace mlir::arith;
  mlir::Location at = loc(where);
  auto integer = [&](int64_t v) { return splat(Const::ofInt(v), dt, shape, where); };
  Value byZero = builder.create<CmpIOp>(at, CmpIPredicate::eq, y, integer(0));
  Value unsafe = byZero;
  if (!isUnsigned(dt)) {
    Value min = splat(Const::ofInt(int64_t(uint64_t(1) << (dtypeBits(dt) - 1))), dt, shape, where);
    Value xIsMin = builder.create<CmpIOp>(at, CmpIPredicate::eq, x, min);
    Value yIsMinusOne = builder.create<CmpIOp>(at, CmpIPredicate::eq, y, integer(-1));
    Value overflows = builder.create<AndIOp>(at, xIsMin, yIsMinusOne);
    unsafe = builder.create<OrIOp>(at, byZero, overflows);
  }
  Value divisor = builder.create<SelectOp>(at, unsafe, integer(1), y);
  bool u = isUnsigned(dt);
  if (op == BinOp::Div) {
    Value q = u ? (Value)builder.create<DivUIOp>(at, x, divisor)
                : builder.create<DivSIOp>(at, x, divisor);
    return builder.create<SelectOp>(at, byZero, integer(-1), q);
  }
  Value r = u ? (Value)builder.create<RemUIOp>(at, x, divisor)
              : builder.create<RemSIOp>(at, x, divisor);
  return builder.create<SelectOp>(at, byZero, x, r);
}

Value Generator::shiftBy(BinOp op, Value x, Value amount, DType dt, const Shape &shape,
                         SMLoc where) {
  // LLVM and SPIR-V leave amounts outside [0, bits) undefined; Kiln defines them
  // as shifting every bit out: '<<' gives 0, '>>' the sign (arithmetic, on
  // signed integers) or 0 (logical, on unsigned ones).
  using namespace mlir::arith;
  mlir::Location at = loc(where);
  auto integer = [&](int64_t v) { return splat(Const::ofInt(v), dt, shape, where); };
  int64_t bits = dtypeBits(dt);
  Value inRange = builder.create<CmpIOp>(at, CmpIPredicate::ult, amount, integer(bits));
  if (op == BinOp::Shl)
    return builder.create<SelectOp>(at, inRange, builder.create<ShLIOp>(at, x, amount),
                                    integer(0));
  if (isUnsigned(dt))
    return builder.create<SelectOp>(at, inRange, builder.create<ShRUIOp>(at, x, amount),
                                    integer(0));
  Value clamped = builder.create<SelectOp>(at, inRange, amount, integer(bits - 1));
  return builder.create<ShRSIOp>(at, x, clamped);
}

static bool isNone(const Expr &e) {
  return e.kind == Expr::Name && static_cast<const NameExpr &>(e).name == "None";
}

MaybeValue Generator::genIndex(const IndexExpr &e) {
  MaybeValue base = genExpr(*e.base);
  if (!base)
    return std::nullopt;
  if (base->type.kind == SType::Tile)
    return genTileIndex(e, *base);
  if (base->type.kind == SType::Tuple) {
    // t[i] with i known at compile time (a param, a constant, a static_range
    // variable), as in Triton.
    if (e.indices.size() != 1)
      return error(e.loc, "a tuple takes one index, got " + llvm::Twine(e.indices.size()));
    MaybeValue i = genExpr(*e.indices[0]);
    if (!i)
      return std::nullopt;
    if (i->type.kind != SType::Scalar || isFloat(i->type.dtype) || !i->cst)
      return error(e.indices[0]->loc, "a tuple's index must be an integer known at compile "
                                      "time (a param, a constant or a static_range variable)");
    int64_t n = static_cast<int64_t>(base->elements.size());
    bool huge = i->cst->isUnsigned && i->cst->i < 0; // a u64 past 2^63
    int64_t at = i->cst->i < 0 ? i->cst->i + n : i->cst->i;
    if (huge || at < 0 || at >= n)
      return error(e.indices[0]->loc,
                   "index " +
                       (huge ? std::to_string(uint64_t(i->cst->i)) : std::to_string(i->cst->i)) +
                       " is out of range for a tuple of " + std::to_string(n));
    return base->elements[at];
  }
  if (base->type.kind == SType::Tensor)
    for (const ExprPtr &i : e.indices) {
      auto *slice = i->kind == Expr::Slice ? static_cast<const SliceExpr *>(i.get()) : nullptr;
      if (slice && (slice->start || slice->stop || slice->step))
        return error(i->loc, "a tensor argument takes no slices: index with a tile, "
                             "x[a + arange(0, B)], or take a block, x.tile([B], [a])");
      if (i->kind == Expr::Slice || isNone(*i))
        return error(i->loc, "a tensor argument's index is a tile of positions, not " +
                                 llvm::Twine(slice && slice->ellipsis ? "'...'" : "':'") +
                                 " or 'None' (arange(0, B), or a block view x.tile(...))");
    }
  if (base->type.kind != SType::Tensor)
    return error(e.loc, "only tensor arguments and tiles can be indexed, not " +
                            withArticle(base->type.str()) +
                            (base->type.kind == SType::Scalar
                                 ? "; full([1], s) makes a one-element tile of a scalar s"
                                 : ""));
  size_t rank = base->type.shape.size();
  if (e.indices.size() != rank)
    return error(e.loc, "tensor '" + base->tensorName + "' has rank " + llvm::Twine(rank) +
                            " but " + llvm::Twine(e.indices.size()) +
                            (e.indices.size() == 1 ? " index was given" : " indices were given"));
  std::vector<TValue> indices;
  Shape shape;
  for (auto &ie : e.indices) {
    MaybeValue idx = genValue(*ie, "index");
    if (!idx)
      return std::nullopt;
    if (isFloat(idx->type.dtype) || idx->type.dtype == DType::I1 ||
        dtypeBits(idx->type.dtype) == 64)
      return error(ie->loc, "an index must be an integer of at most 32 bits, got " +
                                idx->type.str() +
                                (dtypeBits(idx->type.dtype) == 64 && !isFloat(idx->type.dtype)
                                     ? "; convert it with cast<i32>(...) (a tensor's "
                                       "dimensions are below 2^31)"
                                     : ""));
    // A constant index below 0 is always out of bounds (a load gives its
    // `other`): Python's x[-1] counts from the end, Kiln's does not.
    if (idx->cst && !isUnsigned(idx->type.dtype) && idx->cst->i < 0)
      return error(ie->loc, "index " + std::to_string(idx->cst->i) + " is before the start of '" +
                                base->tensorName +
                                "' (always out of bounds); indices do not count from the end "
                                "as Python's do: the last element is at the size minus 1");
    auto s = broadcastShapes(shape, idx->type.shape);
    if (!s)
      return error(ie->loc, "index shape " + shapeStr(idx->type.shape) +
                                " does not broadcast with " + shapeStr(shape));
    shape = *s;
    if (!checkTileSize(shape, ie->loc))
      return std::nullopt;
    indices.push_back(*idx);
  }
  auto view = std::make_shared<ViewData>();
  view->memory = base->value;
  view->tensorName = base->tensorName;
  for (auto [i, idx] : llvm::enumerate(indices))
    view->coords.push_back(convert(idx, DType::I32, shape, e.indices[i]->loc).value);
  TValue out;
  out.type = {SType::View, base->type.dtype, shape, false};
  out.view = view;
  return out;
}

MaybeValue Generator::genTileIndex(const IndexExpr &e, const TValue &tile) {
  // numpy's basic indexing, with constants: a slice `a:b:s` (or `:`) keeps part of
  // the next dimension, an integer picks one position of it and drops it, None adds
  // a dimension of size 1, `...` keeps as many dimensions whole as the other
  // indices leave; the dimensions past the list are kept whole. Each sliced or
  // picked dimension is a gather of the positions it keeps.
  DType dt = tile.type.dtype;
  Shape current = tile.type.shape, shape;
  Value v = tile.value;
  mlir::Location l = loc(e.loc);
  auto isEllipsis = [](const Expr &i) {
    return i.kind == Expr::Slice && static_cast<const SliceExpr &>(i).ellipsis;
  };
  const Expr *ellipsis = nullptr;
  size_t used = 0; // dimensions the indices other than None and `...` take
  for (const ExprPtr &i : e.indices) {
    if (isEllipsis(*i) && ellipsis)
      return error(i->loc, "an index list can have only one '...'");
    if (isEllipsis(*i))
      ellipsis = i.get();
    else if (!isNone(*i))
      ++used;
  }
  size_t d = 0;
  for (const ExprPtr &i : e.indices) {
    if (isNone(*i)) {
      shape.push_back(1);
      continue;
    }
    if (i.get() == ellipsis) {
      size_t whole = current.size() - std::min(used, current.size());
      shape.append(current.begin() + d, current.begin() + d + whole);
      d += whole;
      continue;
    }
    if (d == current.size())
      return error(i->loc, "too many indices for " + withArticle(tile.type.str()));
    int64_t n = current[d], start = 0, count = n, step = 1;
    bool pick = i->kind != Expr::Slice;
    // A constant integer (not a bool); a u64 past 2^63 saturates to INT64_MAX,
    // which clamps as a bound and steps past any tile (`spelled` keeps its value).
    std::string spelled;
    auto constant = [&](const Expr &part, const char *what) -> std::optional<int64_t> {
      MaybeValue c = genValue(part, what);
      if (!c)
        return std::nullopt;
      if (!c->cst)
        return error(part.loc, llvm::Twine("a tile's ") + what + " must be known at compile "
                               "time; gather picks elements by run-time positions");
      if (c->type.kind != SType::Scalar || isFloat(c->type.dtype) || c->type.dtype == DType::I1)
        return error(part.loc, llvm::Twine("a tile's ") + what + " must be an integer, got " +
                                   withArticle(c->type.str()));
      bool huge = c->cst->isUnsigned && c->cst->i < 0;
      spelled = huge ? std::to_string(uint64_t(c->cst->i)) : std::to_string(c->cst->i);
      return huge ? INT64_MAX : c->cst->i;
    };
    if (pick) {
      auto k = constant(*i, "index");
      if (!k)
        return std::nullopt;
      if (*k < -n || *k >= n)
        return error(i->loc, "index " + spelled + " is out of range for dimension " +
                                 llvm::Twine(d) + " of " + withArticle(tile.type.str()));
      start = *k < 0 ? *k + n : *k;
      count = 1;
    } else {
      // Python's slice.indices(n): bounds past either end are clamped.
      auto &slice = static_cast<const SliceExpr &>(*i);
      std::optional<int64_t> a, b;
      if (slice.step) {
        auto s = constant(*slice.step, "slice step");
        if (!s)
          return std::nullopt;
        if (*s == 0)
          return error(slice.step->loc, "a slice step cannot be zero");
        step = *s;
      }
      if ((slice.start && !(a = constant(*slice.start, "slice bound"))) ||
          (slice.stop && !(b = constant(*slice.stop, "slice bound"))))
        return std::nullopt;
      int64_t lower = step > 0 ? 0 : -1, upper = step > 0 ? n : n - 1;
      auto bound = [&](std::optional<int64_t> x, int64_t otherwise) {
        if (!x)
          return otherwise;
        int64_t at = *x < 0 ? std::max(*x, -n - 1) + n : *x; // no overflow adding n
        return std::clamp(at, lower, upper);
      };
      start = bound(a, step > 0 ? lower : upper);
      int64_t stop = bound(b, step > 0 ? upper : lower);
      // span <= n + 1; the step's size as unsigned, so that INT64_MIN has one.
      int64_t span = step > 0 ? stop - start : start - stop;
      uint64_t by = step > 0 ? uint64_t(step) : 0 - uint64_t(step);
      count = span > 0 ? int64_t(1 + uint64_t(span - 1) / by) : 0;
      if (count == 0)
        return error(i->loc, "this slice of dimension " + llvm::Twine(d) + " of " +
                                 withArticle(tile.type.str()) +
                                 " is empty; a tile has no empty dimensions");
    }
    if (count == 1)
      step = 1; // one position: the step plays no part (and may not fit in i32)
    if (count != n || step != 1) {
      Shape kept = current;
      kept[d] = count;
      Shape line(current.size(), 1);
      line[d] = count;
      auto c = [&](int64_t x) { return splat(Const::ofInt(x), DType::I32, line, i->loc); };
      Value at = builder.create<mlir::arith::AddIOp>(
          l, builder.create<mlir::arith::MulIOp>(l, axisPositions(line, d, l), c(step)), c(start));
      v = builder.create<GatherOp>(l, valueType(dt, kept), v,
                                   broadcastValue(at, line, kept, DType::I32, l),
                                   builder.getI32IntegerAttr(d));
      current = kept;
    }
    if (!pick)
      shape.push_back(count);
    ++d;
  }
  shape.append(current.begin() + d, current.end());
  TValue out = tile;
  out.type = SType::value(dt, shape);
  if (shape.empty()) // every dimension picked: the one element, as a scalar
    out.value = onlyElement(builder.create<ReshapeOp>(l, valueType(dt, {1}), v), dt, l);
  else if (shape != current)
    out.value = builder.create<ReshapeOp>(l, valueType(dt, shape), v);
  else
    out.value = v;
  return out;
}

MaybeValue Generator::genMethod(const MethodExpr &e) {
  if (e.name == "to") // Triton's x.to(tl.float16)
    return error(e.nameLoc, "Kiln has no '.to' method; convert with cast<TYPE>(value) or "
                             "value.cast<TYPE>()");
  MaybeValue base = genExpr(*e.base);
  if (!base)
    return std::nullopt;
  if (base->type.kind != SType::Tensor)
    return error(e.nameLoc, "'" + e.name + "' is a method of tensor arguments, called here on " +
                                withArticle(base->type.str()) +
                                (base->type.kind == SType::Tile
                                     ? "; a tile's sizes are constants of its type"
                                     : ""));
  size_t rank = base->type.shape.size();
  mlir::Location l = loc(e.loc);
  if (e.name == "size" || e.name == "stride") {
    if (e.args.size() != 1)
      return error(e.nameLoc, "'" + e.name + "' takes one argument, the dimension");
    auto d = axisArg(*e.args[0], rank, /*allowEnd=*/false, "dimension");
    if (!d)
      return std::nullopt;
    Value idx = builder.create<mlir::arith::ConstantIndexOp>(l, *d);
    Value v;
    if (e.name == "size") {
      v = builder.create<mlir::memref::DimOp>(l, base->value, idx);
    } else {
      auto meta = builder.create<mlir::memref::ExtractStridedMetadataOp>(l, base->value);
      v = meta.getStrides()[*d];
    }
    TValue out;
    out.type = SType::scalar(DType::I32);
    out.value = builder.create<mlir::arith::IndexCastOp>(l, builder.getI32Type(), v);
    return out;
  }
  if (e.args.size() != 2) // `tile`: the parser makes every other name a call
    return error(e.nameLoc, "tile takes a shape and offsets: x.tile([B0, B1], [o0, o1])");
  auto shape = constShape(*e.args[0], "block shape");
  if (!shape)
    return std::nullopt;
  if (shape->size() != rank)
    return error(e.args[0]->loc, "block shape has " + llvm::Twine(shape->size()) +
                                     " dimensions but tensor '" + base->tensorName +
                                     "' has rank " + llvm::Twine(rank));
  MaybeValue offsets = genExpr(*e.args[1]);
  if (!offsets)
    return std::nullopt;
  if (offsets->type.kind != SType::List || offsets->elements.size() != rank)
    return error(e.args[1]->loc, "offsets must be a list of " + llvm::Twine(rank) +
                                     " integer scalars");
  auto view = std::make_shared<ViewData>();
  view->block = true;
  view->memory = base->value;
  view->tensorName = base->tensorName;
  for (auto [i, off] : llvm::enumerate(offsets->elements)) {
    if (off.type.kind != SType::Scalar || isFloat(off.type.dtype) ||
        off.type.dtype == DType::I1 || dtypeBits(off.type.dtype) == 64)
      return error(e.args[1]->loc, "offset " + llvm::Twine(i) +
                                       " must be an integer scalar of at most 32 bits, got " +
                                       off.type.str());
    view->coords.push_back(convert(off, DType::I32, {}, e.args[1]->loc).value);
  }
  TValue out;
  out.type = {SType::View, base->type.dtype, *shape, false};
  out.view = view;
  return out;
}

MaybeValue Generator::genElements(const std::vector<ExprPtr> &elements, SType::Kind kind,
                                  const char *what) {
  TValue out;
  out.type.kind = kind;
  for (auto &el : elements) {
    MaybeValue v = genValue(*el, what);
    if (!v)
      return std::nullopt;
    out.elements.push_back(*v);
  }
  return out;
}

} // namespace kiln::gen
