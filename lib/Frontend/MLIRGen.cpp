//===- MLIRGen.cpp - .kiln AST to the kiln dialect ------------------------===//
//
// One walk over the AST per kernel (and per helper specialization). At each node
// Sema's rules decide the type, the implicit conversions and whether the node is
// legal; only then is IR emitted, so every error carries a .kiln location.
//
//===----------------------------------------------------------------------===//

#include "lib/Frontend/Generator.h"

#include "llvm/ADT/ScopeExit.h"

#include <cmath>

using namespace kiln;

namespace kiln::gen {

//===----------------------------------------------------------------------===//
// Conversions
//===----------------------------------------------------------------------===//

Value Generator::castValue(Value v, DType from, DType to, mlir::Location l) {
  if (from == to)
    return v;
  mlir::Type target = mlirType(to);
  if (auto tensor = mlir::dyn_cast<mlir::RankedTensorType>(v.getType()))
    target = tensor.clone(target);
  auto zeroLike = [&](DType dt) { return constantLike(v, constAttr(Const::ofInt(0), dt), l); };
  if (to == DType::I1) {
    if (isFloat(from))
      return builder.create<mlir::arith::CmpFOp>(l, mlir::arith::CmpFPredicate::UNE, v,
                                                 zeroLike(from));
    return builder.create<mlir::arith::CmpIOp>(l, mlir::arith::CmpIPredicate::ne, v,
                                               zeroLike(from));
  }
  // fp8 converts to and from integers through f32 (no target converts directly).
  if ((isF8(from) && !isFloat(to)) || (isF8(to) && !isFloat(from)))
    return castValue(castValue(v, from, DType::F32, l), DType::F32, to, l);
  if (isFloat(from) && isFloat(to)) {
    // f16 <-> bf16 and e4m3 <-> e5m2 go through f32.
    if (dtypeBits(from) == dtypeBits(to)) {
      Value wide = castValue(v, from, DType::F32, l);
      return castValue(wide, DType::F32, to, l);
    }
    // f64 <-> bf16 and fp8: targets without these types emulate them to and
    // from f32 only, so every target takes two steps, as exact as one. f64 ->
    // f16 too: lavapipe converts through f32.
    bool emulated = from == DType::BF16 || to == DType::BF16 || isF8(from) || isF8(to);
    if (emulated && to == DType::F64)
      return castValue(castValue(v, from, DType::F32, l), DType::F32, to, l);
    if ((emulated || to == DType::F16) && from == DType::F64)
      return castValue(narrowToOddF32(v, l), DType::F32, to, l);
    if (dtypeBits(to) > dtypeBits(from))
      return builder.create<mlir::arith::ExtFOp>(l, target, v);
    return builder.create<mlir::arith::TruncFOp>(l, target, v);
  }
  // Bools and unsigned integers widen with zeros, signed integers with their sign.
  bool zeroExtends = from == DType::I1 || isUnsigned(from);
  if (!isFloat(from) && !isFloat(to)) {
    if (dtypeBits(to) == dtypeBits(from)) // i32 <-> u32: the same bits
      return v;
    if (dtypeBits(to) > dtypeBits(from)) {
      if (zeroExtends)
        return builder.create<mlir::arith::ExtUIOp>(l, target, v);
      return builder.create<mlir::arith::ExtSIOp>(l, target, v);
    }
    return builder.create<mlir::arith::TruncIOp>(l, target, v);
  }
  // Targets convert integers to bf16 through f32, rounding twice; an f32
  // rounded to odd makes the second rounding the only one.
  if (to == DType::BF16 && dtypeBits(from) > 24)
    return builder.create<mlir::arith::TruncFOp>(l, target, intToOddF32(v, from, l));
  if (isFloat(to)) {
    if (zeroExtends)
      return builder.create<mlir::arith::UIToFPOp>(l, target, v);
    return builder.create<mlir::arith::SIToFPOp>(l, target, v);
  }
  return saturatingFloatToInt(v, from, to, l);
}

/// `v` (a float scalar or tile) to the integer type `to`, truncating toward
/// zero; values beyond the type's range give its minimum or maximum (infinities
/// included) and NaN gives 0, as Rust's `as` and NVIDIA's cvt.rzi do, so every
/// target agrees where fptosi/fptoui alone would be undefined.
Value Generator::saturatingFloatToInt(Value v, DType from, DType to, mlir::Location l) {
  using namespace mlir::arith;
  mlir::Type target = mlirType(to);
  if (auto tensor = mlir::dyn_cast<mlir::RankedTensorType>(v.getType()))
    target = tensor.clone(target);
  const unsigned bits = dtypeBits(to);
  const bool isSigned = !isUnsigned(to);
  // The range's ends as `from` values: -2^(bits-1) and 2^(bits-1), or 0 and
  // 2^bits, exact in every float type wide enough to hold them, and infinity
  // in those (f16) that are not, which then only infinity reaches.
  auto floatConstant = [&](double value) {
    auto type = mlir::cast<mlir::FloatType>(mlirType(from));
    llvm::APFloat f(value);
    bool losesInfo = false;
    f.convert(type.getFloatSemantics(), llvm::APFloat::rmNearestTiesToEven, &losesInfo);
    return constantLike(v, builder.getFloatAttr(type, f), l);
  };
  auto intConstant = [&](const llvm::APInt &value) {
    return constantLike(v, builder.getIntegerAttr(mlirType(to), value), l);
  };
  Value converted = isSigned ? Value(builder.create<FPToSIOp>(l, target, v))
                             : Value(builder.create<FPToUIOp>(l, target, v));
  Value tooHigh = builder.create<CmpFOp>(l, CmpFPredicate::OGE, v,
                                         floatConstant(std::ldexp(1.0, bits - isSigned)));
  Value tooLow = builder.create<CmpFOp>(l, CmpFPredicate::OLT, v,
                                        floatConstant(isSigned ? -std::ldexp(1.0, bits - 1) : 0.0));
  Value isNaN = builder.create<CmpFOp>(l, CmpFPredicate::UNO, v, v);
  Value high = intConstant(isSigned ? llvm::APInt::getSignedMaxValue(bits)
                                    : llvm::APInt::getMaxValue(bits));
  Value low = intConstant(isSigned ? llvm::APInt::getSignedMinValue(bits)
                                   : llvm::APInt::getZero(bits));
  Value result = builder.create<SelectOp>(l, tooHigh, high, converted);
  result = builder.create<SelectOp>(l, tooLow, low, result);
  return builder.create<SelectOp>(l, isNaN, intConstant(llvm::APInt::getZero(bits)), result);
}

/// `value` as a constant shaped like `like`: a scalar, or a splat tile.
Value Generator::constantLike(Value like, mlir::TypedAttr value, mlir::Location l) {
  auto tensor = mlir::dyn_cast<mlir::RankedTensorType>(like.getType());
  if (!tensor)
    return builder.create<mlir::arith::ConstantOp>(l, value);
  auto type = tensor.clone(value.getType());
  return builder.create<mlir::arith::ConstantOp>(
      l, mlir::SplatElementsAttr::get(type, mlir::Attribute(value)));
}

/// `v` (f64, a scalar or a tile) narrowed to f32 rounding to odd: toward zero,
/// with the last bit set when that was inexact. Rounding the result again, to
/// a type with at least two fewer significand bits, gives what rounding `v`
/// once would (double rounding through round-to-nearest would not).
Value Generator::narrowToOddF32(Value v, mlir::Location l) {
  using namespace mlir::arith;
  auto tensor = mlir::dyn_cast<mlir::RankedTensorType>(v.getType());
  auto like = [&](mlir::Type element) -> mlir::Type {
    return tensor ? mlir::Type(tensor.clone(element)) : element;
  };
  auto constant = [&](mlir::TypedAttr value) { return constantLike(v, value, l); };
  mlir::Type f32 = like(builder.getF32Type()), i32 = like(builder.getI32Type());
  Value one = constant(builder.getI32IntegerAttr(1));
  Value near = builder.create<TruncFOp>(l, f32, v);
  Value back = builder.create<ExtFOp>(l, v.getType(), near);
  // Rounding went away from zero when `back` lies beyond `v`; one step down in
  // the bits' magnitude is then the value toward zero (from infinity, the
  // largest finite float).
  Value negative = builder.create<CmpFOp>(l, CmpFPredicate::OLT, v,
                                          constant(builder.getF64FloatAttr(0)));
  Value beyond = builder.create<SelectOp>(
      l, negative, builder.create<CmpFOp>(l, CmpFPredicate::OLT, back, v),
      builder.create<CmpFOp>(l, CmpFPredicate::OGT, back, v));
  Value bits = builder.create<BitcastOp>(l, i32, near);
  Value towardZero =
      builder.create<SelectOp>(l, beyond, builder.create<SubIOp>(l, bits, one), bits);
  Value inexact = builder.create<CmpFOp>(l, CmpFPredicate::UNE, back, v);
  Value toOdd = builder.create<SelectOp>(
      l, inexact, builder.create<OrIOp>(l, towardZero, one), towardZero);
  return builder.create<BitcastOp>(l, f32, toOdd);
}

/// `v` (a 32- or 64-bit integer scalar or tile of dtype `from`) as f32 rounded
/// to odd, as narrowToOddF32 does for f64: the magnitude's bits past f32's 24
/// fold into its last bit (a sticky bit), the rest converts exactly, and a power
/// of two scales it back.
Value Generator::intToOddF32(Value v, DType from, mlir::Location l) {
  using namespace mlir::arith;
  auto tensor = mlir::dyn_cast<mlir::RankedTensorType>(v.getType());
  auto like = [&](mlir::Type element) -> mlir::Type {
    return tensor ? mlir::Type(tensor.clone(element)) : element;
  };
  const unsigned width = dtypeBits(from);
  mlir::Type intType = v.getType(), f32 = like(builder.getF32Type()),
             i32 = like(builder.getI32Type());
  auto wide = [&](int64_t x) {
    return constantLike(v, builder.getIntegerAttr(builder.getIntegerType(width), x), l);
  };
  auto word = [&](int32_t x) { return constantLike(v, builder.getI32IntegerAttr(x), l); };
  Value negative, magnitude = v; // unsigned; i64's minimum is 2^63 there
  if (!isUnsigned(from)) {
    negative = builder.create<CmpIOp>(l, CmpIPredicate::slt, v, wide(0));
    magnitude = builder.create<SelectOp>(l, negative, builder.create<SubIOp>(l, wide(0), v), v);
  }
  // The magnitude's binary exponent, read from its nearest f32 (one too high
  // when that rounded up to a power of two, which only keeps a bit fewer).
  Value nearBits = builder.create<BitcastOp>(l, i32, builder.create<UIToFPOp>(l, f32, magnitude));
  Value exponent = builder.create<SubIOp>(
      l, builder.create<AndIOp>(l, builder.create<ShRUIOp>(l, nearBits, word(23)), word(255)),
      word(127));
  Value shift32 = builder.create<MaxSIOp>(l, builder.create<SubIOp>(l, exponent, word(23)), word(0));
  Value shift = width == 32 ? shift32 : builder.create<ExtUIOp>(l, intType, shift32).getResult();
  Value lostMask = builder.create<SubIOp>(l, builder.create<ShLIOp>(l, wide(1), shift), wide(1));
  Value lost = builder.create<CmpIOp>(l, CmpIPredicate::ne,
                                      builder.create<AndIOp>(l, magnitude, lostMask), wide(0));
  Value kept = builder.create<OrIOp>(l, builder.create<ShRUIOp>(l, magnitude, shift),
                                     builder.create<ExtUIOp>(l, intType, lost));
  Value scale = builder.create<BitcastOp>(
      l, f32,
      builder.create<ShLIOp>(l, builder.create<AddIOp>(l, shift32, word(127)), word(23)));
  Value result = builder.create<MulFOp>(l, builder.create<UIToFPOp>(l, f32, kept), scale);
  if (negative)
    result = builder.create<SelectOp>(l, negative, builder.create<NegFOp>(l, result), result);
  return result;
}

Value Generator::broadcastValue(Value v, const Shape &from, const Shape &to, DType dt,
                                mlir::Location l) {
  if (from == to)
    return v;
  auto target = mlir::RankedTensorType::get(to, mlirType(dt));
  if (from.empty())
    return builder.create<SplatOp>(l, target, v);
  if (from.size() < to.size()) {
    Shape padded(to.size() - from.size(), 1);
    padded.append(from.begin(), from.end());
    v = builder.create<ReshapeOp>(l, mlir::RankedTensorType::get(padded, mlirType(dt)), v);
    if (padded == to)
      return v;
  }
  return builder.create<BroadcastOp>(l, target, v);
}

TValue Generator::convert(const TValue &v, DType dt, const Shape &shape, SMLoc at) {
  mlir::Location l = loc(at);
  if (v.cst && shape.empty())
    return constant(*v.cst, dt, v.type.weak, l);
  if (v.cst) {
    // A constant tile is one splat attribute, not a scalar plus a splat op.
    TValue out;
    out.type = SType::tile(dt, shape);
    out.cst = constantOf(*v.cst, dt, v.type.weak);
    auto type = mlir::RankedTensorType::get(shape, mlirType(dt));
    out.value = builder.create<mlir::arith::ConstantOp>(
        l, mlir::SplatElementsAttr::get(type, mlir::Attribute(constAttr(*v.cst, dt, v.type.weak))));
    return out;
  }
  TValue out;
  out.type = SType::value(dt, shape);
  Value cast = castValue(v.value, v.type.dtype, dt, l);
  out.value = broadcastValue(cast, v.type.shape, shape, dt, l);
  return out;
}

//===----------------------------------------------------------------------===//
// Module and kernels
//===----------------------------------------------------------------------===//

mlir::OwningOpRef<mlir::ModuleOp> Generator::run(const GenOptions &options,
                                                 std::vector<KernelInfo> &infos) {
  mlir::OwningOpRef<mlir::ModuleOp> owned = mlir::ModuleOp::create(builder.getUnknownLoc());
  moduleOp = *owned;

  std::vector<const KernelDecl *> selected;
  for (auto &k : module.kernels)
    if (options.kernel.empty() || k->name == options.kernel)
      selected.push_back(k.get());
  if (selected.empty()) {
    std::string names;
    for (auto &k : module.kernels)
      names += (names.empty() ? "" : ", ") + k->name;
    diag.fileError((options.kernel.empty() ? "no kernel in the file"
                                           : "no kernel named '" + options.kernel + "'") +
                   (names.empty() ? "" : " (kernels: " + names + ")"));
    return nullptr;
  }
  for (auto &fn : module.functions)
    if (isBuiltin(fn->name)) {
      error(fn->loc, "'" + fn->name + "' is a builtin and cannot be redefined");
      return nullptr;
    }
  for (auto &[name, value] : options.defines) {
    bool known = llvm::any_of(selected, [&](const KernelDecl *k) {
      return llvm::any_of(k->params, [&](const ParamDecl &p) { return p.name == name; });
    });
    if (!known) {
      diag.fileError("-D " + name + ": no selected kernel has a param named '" + name + "'");
      return nullptr;
    }
  }
  for (const KernelDecl *kernel : selected) {
    KernelInfo info;
    if (!genKernel(*kernel, options, info)) {
      // An error past the params may come from a -D value: say which were given.
      if (paramsBound)
        for (const ParamDecl &param : kernel->params)
          if (auto define = options.defines.find(param.name); define != options.defines.end())
            diag.note(param.loc, "param '" + param.name + "' given as -D " + param.name + "=" +
                                     define->second);
      return nullptr;
    }
    infos.push_back(std::move(info));
  }
  return owned;
}

/// Parses a param value as -D spells it; returns why it is not a `dtype`, or "".
static std::string readParamText(llvm::StringRef text, DType dtype, Const &out) {
  if (dtype == DType::I1 && (text == "true" || text == "false")) {
    out = Const::ofInt(text == "true");
    return "";
  }
  if (isFloat(dtype)) {
    double d;
    if (text.getAsDouble(d))
      return "not a number";
    // Past a double's range the text reads as inf or 0 (1e400, 1e-400).
    llvm::StringRef mantissa = text.split('e').first.split('E').first;
    if (std::isinf(d) && !text.contains_insensitive("inf"))
      return std::string("does not fit in ") + dtypeName(dtype) + "; write inf for infinity";
    if (d == 0 && mantissa.find_first_of("123456789") != llvm::StringRef::npos)
      return std::string("rounds to 0 in ") + dtypeName(dtype);
    out = Const::ofFloat(d);
    return "";
  }
  // Decimal, or 0x hexadecimal / 0b binary as kiln-run's --arg takes them (a
  // leading 0 is not octal).
  unsigned radix =
      text.starts_with_insensitive("0x") || text.starts_with_insensitive("0b") ? 0 : 10;
  long long i;
  if (text.getAsInteger(radix, i) || (dtype == DType::I32 && (i < INT32_MIN || i > INT32_MAX)) ||
      (dtype == DType::I1 && i != 0 && i != 1))
    return std::string("not a valid ") + dtypeName(dtype);
  out = Const::ofInt(i);
  return "";
}

/// Why `value` would change on conversion to a param of `dtype` (an i32 past
/// 2^31, an f32 that overflows or rounds to 0), or "".
static std::string paramValueLoss(const Const &value, DType dtype) {
  if (isFloat(dtype))
    return floatConstantLoss(value.asDouble(), dtype);
  if (value.isFloat)
    return "";
  // An unsigned value past 2^63 is negative in Const.
  bool fits = value.isUnsigned ? value.i >= 0 && (dtype == DType::I64 ||
                                                  value.i <= (dtype == DType::I1 ? 1 : INT32_MAX))
              : dtype == DType::I1  ? value.i == 0 || value.i == 1
              : dtype == DType::I32 ? value.i >= INT32_MIN && value.i <= INT32_MAX
                                    : true;
  if (fits)
    return "";
  return (value.isUnsigned ? std::to_string(uint64_t(value.i)) : std::to_string(value.i)) +
         " does not fit in " + dtypeName(dtype);
}

/// Why `warps` cannot be NUM_WARPS, or "" when it can.
static std::string numWarpsProblem(int64_t warps) {
  if (warps >= 1 && warps <= 16 && (warps & (warps - 1)) == 0)
    return "";
  return "NUM_WARPS must be 1, 2, 4, 8 or 16, got " + std::to_string(warps);
}

bool Generator::bindParams(const KernelDecl &kernel, const GenOptions &options,
                           KernelInfo &info) {
  for (const ParamDecl &param : kernel.params) {
    if (paramValues.count(param.name)) {
      error(param.loc, "redefinition of param '" + param.name + "'");
      return false;
    }
    if (isBuiltin(param.name)) {
      error(param.loc, "'" + param.name + "' is a builtin; a param may not take its name " +
                           "(grid rules call builtins)");
      return false;
    }
    if (lookup(param.name)) {
      error(param.loc, "param '" + param.name + "' shadows another name");
      return false;
    }
    if (param.dtype != DType::I1 && param.dtype != DType::I32 &&
        param.dtype != DType::I64 && param.dtype != DType::F32) {
      error(param.loc, "params must be i1, i32, i64 or f32, not " +
                           llvm::Twine(dtypeName(param.dtype)));
      return false;
    }
    for (auto [text, at] : llvm::zip_equal(param.tuneValues, param.tuneValueLocs)) {
      Const candidate;
      std::string why = readParamText(text, param.dtype, candidate);
      if (why.empty())
        why = paramValueLoss(candidate, param.dtype);
      if (why.empty() && param.name == "NUM_WARPS")
        why = numWarpsProblem(convertConst(candidate, param.dtype).i);
      if (!why.empty()) {
        error(at, "tune value " + text + " of param '" + param.name + "': " + why);
        return false;
      }
    }
    Const value;
    auto define = options.defines.find(param.name);
    if (define != options.defines.end()) {
      llvm::StringRef text = define->second;
      std::string why = readParamText(text, param.dtype, value);
      if (why.empty())
        why = paramValueLoss(value, param.dtype);
      if (!why.empty()) {
        error(param.loc, "-D " + param.name + "=" + text + ": " + why);
        return false;
      }
    } else if (param.defaultValue) {
      MaybeValue v = genExpr(*param.defaultValue);
      if (!v)
        return false;
      if (!v->cst || v->type.kind != SType::Scalar) {
        error(param.defaultValue->loc, "default of param '" + param.name +
                                           "' must be a compile-time constant");
        return false;
      }
      if (isFloat(v->type.dtype) && !isFloat(param.dtype)) {
        error(param.defaultValue->loc, "default of param '" + param.name + "' is " +
                                           dtypeName(v->type.dtype) + ", expected " +
                                           dtypeName(param.dtype));
        return false;
      }
      value = *v->cst;
      if (std::string why = paramValueLoss(value, param.dtype); !why.empty()) {
        if (isFloat(param.dtype)) // the integer messages show the value already
          why = shortestDouble(value.asDouble()) + " " + why;
        error(param.defaultValue->loc, "default of param '" + param.name + "': " + why);
        return false;
      }
    } else {
      error(param.loc, "param '" + param.name + "' has no default; give it with -D " +
                           param.name + "=VALUE");
      return false;
    }
    value = convertConst(value, param.dtype);
    paramValues[param.name] = value;
    info.params.push_back({param.name, param.dtype, value.asDouble(), param.tuneValues});
    declare(param.loc, param.name, constant(value, param.dtype, /*weak=*/true,
                                            loc(param.loc)),
            false);
  }
  return true;
}

bool Generator::bindArgs(const KernelDecl &kernel, mlir::Block &entry) {
  for (auto [i, arg] : llvm::enumerate(kernel.args)) {
    Value v = entry.getArgument(i);
    TValue tv;
    tv.value = v;
    if (arg.isTensor) {
      tv.type.kind = SType::Tensor;
      tv.type.dtype = arg.dtype;
      tv.type.shape.assign(arg.dims.size(), -1);
      tv.tensorName = arg.name;
    } else {
      tv.type = SType::scalar(arg.dtype);
    }
    if (!declare(arg.loc, arg.name, tv, false))
      return false;
  }
  // Size names: the first tensor that mentions a name defines it.
  for (auto [i, arg] : llvm::enumerate(kernel.args)) {
    for (auto [d, dim] : llvm::enumerate(arg.dims)) {
      if (dim.name.empty())
        continue;
      // A param named as a size makes a fixed size (checked at launch).
      if (auto p = paramValues.find(dim.name); p != paramValues.end()) {
        auto decl = llvm::find_if(kernel.params,
                                  [&](const ParamDecl &d) { return d.name == dim.name; });
        if (decl != kernel.params.end() && decl->dtype == DType::I1) {
          error(dim.loc, "param '" + dim.name + "' used as a size must be an integer, not a bool");
          return false;
        }
        if (p->second.isFloat || p->second.i <= 0 || p->second.i >= (int64_t(1) << 31)) {
          error(dim.loc, "param '" + dim.name + "' used as a size must be a positive i32 (it is " +
                             (p->second.isFloat ? std::to_string(p->second.f)
                                                : std::to_string(p->second.i)) +
                             ")");
          return false;
        }
        continue;
      }
      if (Binding *b = lookup(dim.name)) {
        if (b->val.type.kind == SType::Scalar && !b->val.cst && b->val.tensorName == "#dim")
          continue; // already bound by an earlier tensor
        error(dim.loc, "size name '" + dim.name + "' clashes with another name");
        return false;
      }
      mlir::Location l = loc(dim.loc);
      Value idx = builder.create<mlir::arith::ConstantIndexOp>(l, d);
      Value size = builder.create<mlir::memref::DimOp>(l, entry.getArgument(i), idx);
      TValue tv;
      tv.type = SType::scalar(DType::I32);
      tv.value = builder.create<mlir::arith::IndexCastOp>(l, builder.getI32Type(), size);
      tv.tensorName = "#dim";
      if (!declare(dim.loc, dim.name, tv, false))
        return false;
    }
  }
  return true;
}

bool Generator::genKernel(const KernelDecl &kernel, const GenOptions &options,
                          KernelInfo &info) {
  info.name = kernel.name;
  llvm::SmallVector<mlir::Type> argTypes;
  for (const ArgDecl &arg : kernel.args) {
    argTypes.push_back(arg.isTensor ? mlir::Type(memrefType(arg)) : mlirType(arg.dtype));
    ArgInfo ai;
    ai.name = arg.name;
    ai.dtype = arg.dtype;
    ai.isTensor = arg.isTensor;
    for (const DimSpec &dim : arg.dims)
      ai.dims.push_back(dim.name.empty() ? std::to_string(dim.fixed) : dim.name);
    info.args.push_back(std::move(ai));
  }
  builder.setInsertionPointToEnd(moduleOp.getBody());
  auto func = builder.create<mlir::func::FuncOp>(loc(kernel.loc), kernel.name,
                                                 builder.getFunctionType(argTypes, {}));
  func->setAttr(kKernelAttr, builder.getUnitAttr());
  for (auto [i, arg] : llvm::enumerate(kernel.args))
    func.setArgAttr(i, kArgNameAttr, builder.getStringAttr(arg.name));
  mlir::Block *entry = func.addEntryBlock();
  for (auto [i, arg] : llvm::enumerate(kernel.args)) // errors about an argument point at it
    entry->getArgument(i).setLoc(loc(arg.loc));
  builder.setInsertionPointToStart(entry);

  scopes.clear();
  paramValues.clear();
  currentKernel = &kernel;
  unrolledCopies = 0;
  currentKernelArgsBound = false;
  paramsBound = false;
  {
    ScopeGuard scope(*this);
    if (!bindParams(kernel, options, info))
      return false;
    paramsBound = true;
    currentKernelArgsBound = true;
    // NUM_WARPS, when declared, sizes the program on GPU targets.
    if (auto p = paramValues.find("NUM_WARPS"); p != paramValues.end()) {
      int64_t warps = p->second.i;
      if (std::string why = numWarpsProblem(warps); !why.empty()) {
        auto decl = llvm::find_if(kernel.params,
                                  [](const ParamDecl &d) { return d.name == "NUM_WARPS"; });
        return error(decl->loc, why), false;
      }
      func->setAttr(kNumWarpsAttr, builder.getI32IntegerAttr(warps));
    }
    if (!bindArgs(kernel, *entry))
      return false;
    // Sizes named by params are fixed sizes for the launcher.
    for (ArgInfo &ai : info.args)
      for (std::string &dim : ai.dims)
        if (auto p = paramValues.find(dim); p != paramValues.end())
          dim = std::to_string(p->second.i);
    // An `if` that returns early leaves what follows it to run only when it did
    // not: the kernel carries a flag for that.
    if (llvm::any_of(kernel.body, [](const StmtPtr &s) {
          return s->kind != Stmt::Return && exits(llvm::ArrayRef(s), Stmt::Return, true);
        }) &&
        !declareExitFlag(kReturnedVar, kernel.loc))
      return false;
    if (!genBlock(kernel.body))
      return false;
    builder.create<mlir::func::ReturnOp>(loc(kernel.loc));
  }
  return genGridRule(kernel, options, info, func);
}

std::optional<std::string> Generator::gridText(const Expr &e) {
  auto integersOnly = [&](llvm::SMLoc at) -> std::optional<std::string> {
    error(at, "a grid rule computes with integers; a float cannot take part in it");
    return std::nullopt;
  };
  auto join = [&](llvm::ArrayRef<ExprPtr> args) -> std::optional<std::string> {
    std::string s;
    for (auto [i, a] : llvm::enumerate(args)) {
      std::optional<std::string> text = gridText(*a);
      if (!text)
        return std::nullopt;
      s += (i ? ", " : "") + *text;
    }
    return s;
  };
  switch (e.kind) {
  case Expr::IntLit: return std::to_string(static_cast<const IntLitExpr &>(e).value);
  case Expr::BoolLit: return std::string(static_cast<const BoolLitExpr &>(e).value ? "1" : "0");
  case Expr::FloatLit: return integersOnly(e.loc);
  case Expr::Name: {
    auto &n = static_cast<const NameExpr &>(e);
    if (auto p = paramValues.find(n.name); p != paramValues.end()) {
      const Const &c = p->second;
      if (c.isFloat)
        return integersOnly(e.loc);
      return c.isUnsigned ? std::to_string(static_cast<uint64_t>(c.i)) : std::to_string(c.i);
    }
    if (n.name == "inf" || n.name == "nan")
      return integersOnly(e.loc);
    for (const ArgDecl &arg : currentKernel->args)
      if (arg.name == n.name && !arg.isTensor && isFloat(arg.dtype))
        return integersOnly(e.loc);
    return n.name;
  }
  case Expr::Unary: {
    auto &u = static_cast<const UnaryExpr &>(e);
    std::optional<std::string> operand = gridText(*u.operand);
    if (!operand)
      return std::nullopt;
    return "(" + std::string(1, u.op) + *operand + ")";
  }
  case Expr::Binary: {
    auto &b = static_cast<const BinaryExpr &>(e);
    std::optional<std::string> lhs = gridText(*b.lhs), rhs = lhs ? gridText(*b.rhs) : lhs;
    if (!rhs)
      return std::nullopt;
    return "(" + *lhs + " " + binOpSpelling(b.op) + " " + *rhs + ")";
  }
  case Expr::Call: {
    auto &c = static_cast<const CallExpr &>(e);
    std::string callee = c.callee;
    if (c.typeArg) {
      if (isFloat(*c.typeArg))
        return integersOnly(e.loc);
      callee += "<" + std::string(dtypeName(*c.typeArg)) + ">";
    }
    std::optional<std::string> args = join(c.args);
    if (!args)
      return std::nullopt;
    return callee + "(" + *args + ")";
  }
  case Expr::Method: {
    auto &m = static_cast<const MethodExpr &>(e);
    std::optional<std::string> base = gridText(*m.base), args = base ? join(m.args) : base;
    if (!args)
      return std::nullopt;
    return *base + "." + m.name + "(" + *args + ")";
  }
  default:
    error(e.loc, "this expression cannot be used in a grid rule");
    return std::nullopt;
  }
}

bool Generator::genGridRule(const KernelDecl &kernel, const GenOptions &options,
                            KernelInfo &info, mlir::func::FuncOp kernelFunc) {
  // The rule's ops are generated (into a scratch function taking the kernel's
  // arguments and the processor count) only to check it: every launcher
  // evaluates its text (lib/Support/GridRule.cpp).
  builder.setInsertionPointToEnd(moduleOp.getBody());
  llvm::SmallVector<mlir::Type> argTypes(kernelFunc.getArgumentTypes());
  argTypes.push_back(builder.getI32Type());
  auto scratch = builder.create<mlir::func::FuncOp>(
      loc(kernel.gridLoc.isValid() ? kernel.gridLoc : kernel.loc), "grid_rule",
      builder.getFunctionType(argTypes, {}));
  auto erase = llvm::make_scope_exit([&] {
    scratch.erase();
    gridProcessors = {};
  });
  mlir::Block *entry = scratch.addEntryBlock();
  builder.setInsertionPointToStart(entry);
  gridProcessors = entry->getArguments().back();

  scopes.clear();
  paramValues.clear();
  ScopeGuard scope(*this);
  KernelInfo unused;
  if (!bindParams(kernel, options, unused) || !bindArgs(kernel, *entry))
    return false;
  inGridRule = true;
  auto leave = llvm::make_scope_exit([&] { inGridRule = false; });
  for (const ExprPtr &g : kernel.grid) {
    MaybeValue v = genValue(*g, "grid dimension");
    if (!v)
      return false;
    if (v->type.kind != SType::Scalar || isFloat(v->type.dtype) ||
        v->type.dtype == DType::I1) {
      error(g->loc, "a grid dimension must be an integer scalar, got " + v->type.str());
      return false;
    }
    if (v->cst && v->cst->i <= 0) {
      error(g->loc, "grid dimension is " + llvm::Twine(v->cst->i) + "; it must be positive");
      return false;
    }
    if (dtypeBits(v->type.dtype) == 64 || v->type.dtype == DType::U32) {
      error(g->loc, "grid dimension must fit in i32; cast it with cast<i32>(...)");
      return false;
    }
    std::optional<std::string> text = gridText(*g);
    if (!text)
      return false;
    info.grid.push_back(*text);
  }
  while (info.grid.size() < 3)
    info.grid.push_back("1");
  return true;
}

} // namespace kiln::gen

std::string kiln::parseParamText(llvm::StringRef text, DType dtype, Const &out) {
  return gen::readParamText(text, dtype, out);
}

mlir::OwningOpRef<mlir::ModuleOp> kiln::mlirGen(mlir::MLIRContext &context,
                                                const Module &module, DiagEngine &diag,
                                                const GenOptions &options,
                                                std::vector<KernelInfo> &infos) {
  return gen::Generator(context, module, diag).run(options, infos);
}
