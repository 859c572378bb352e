//===- Sema.cpp - types and typing rules of the .kiln language ------------===//

#include "lib/Frontend/Sema.h"

#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringSet.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

using namespace kiln;

std::string kiln::shapeStr(const Shape &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string SType::str() const {
  switch (kind) {
  case Scalar: return dtypeName(dtype);
  case Tile: return std::string(dtypeName(dtype)) + shapeStr(shape);
  case Tensor: return "tensor<" + std::string(dtypeName(dtype)) + "> of rank " +
                      std::to_string(shape.size());
  case View: return "view " + std::string(dtypeName(dtype)) + shapeStr(shape);
  case List: return "list";
  case Tuple: return "tuple";
  case Void: return "void";
  }
  return "?";
}

std::optional<Shape> kiln::broadcastShapes(const Shape &a, const Shape &b) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      return std::nullopt;
    out[i] = da == 1 ? db : da;
  }
  return out;
}

DType kiln::promote(const SType &a, const SType &b) {
  if (a.dtype == b.dtype)
    return a.dtype;
  if (a.weak != b.weak) {
    const SType &strong = a.weak ? b : a;
    const SType &weak = a.weak ? a : b;
    if (isFloat(weak.dtype) && !isFloat(strong.dtype))
      return DType::F32;
    if (strong.dtype == DType::I1 && weak.dtype != DType::I1)
      return weak.dtype;
    return strong.dtype;
  }
  bool fa = isFloat(a.dtype), fb = isFloat(b.dtype);
  if (fa != fb)
    return fa ? a.dtype : b.dtype;
  if (fa && dtypeBits(a.dtype) == 16 && dtypeBits(b.dtype) == 16)
    return DType::F32; // f16 with bf16
  if (fa && dtypeBits(a.dtype) == 8 && dtypeBits(b.dtype) == 8)
    return DType::F16; // e4m3 with e5m2: f16 holds both exactly
  if (dtypeBits(a.dtype) == dtypeBits(b.dtype))
    return isUnsigned(a.dtype) ? a.dtype : b.dtype;
  return dtypeBits(a.dtype) > dtypeBits(b.dtype) ? a.dtype : b.dtype;
}

bool kiln::assignable(const SType &from, const SType &to) {
  if (!from.isValue() || !to.isValue())
    return false;
  if (from.dtype != to.dtype && !from.weak)
    return false;
  // A float constant would be truncated in an integer slot: ask for a cast.
  if (from.dtype != to.dtype && isFloat(from.dtype) && !isFloat(to.dtype))
    return false;
  auto shape = broadcastShapes(from.shape, to.shape);
  return shape && *shape == to.shape;
}

/// The semantics of float type `dt` (f64 for anything else).
static const llvm::fltSemantics &floatSemantics(DType dt) {
  switch (dt) {
  case DType::F16: return llvm::APFloat::IEEEhalf();
  case DType::BF16: return llvm::APFloat::BFloat();
  case DType::F32: return llvm::APFloat::IEEEsingle();
  case DType::F8E4M3: return llvm::APFloat::Float8E4M3FN();
  case DType::F8E5M2: return llvm::APFloat::Float8E5M2();
  default: return llvm::APFloat::IEEEdouble();
  }
}

/// `v` rounded to the float type `dt` as every target converts: to nearest even;
/// past the largest finite value f16, bf16 and f32 give infinity and fp8 saturates
/// to it (docs/language.md, 4.1); NaN stays NaN.
static double roundToFloatType(double v, DType dt) {
  if (dt == DType::F64 || std::isnan(v))
    return v;
  const llvm::fltSemantics &semantics = floatSemantics(dt);
  if (isF8(dt)) {
    double largest = llvm::APFloat::getLargest(semantics).convertToDouble();
    v = std::clamp(v, -largest, largest);
  }
  llvm::APFloat f(v);
  bool losesInfo = false;
  f.convert(semantics, llvm::APFloat::rmNearestTiesToEven, &losesInfo);
  f.convert(llvm::APFloat::IEEEdouble(), llvm::APFloat::rmNearestTiesToEven, &losesInfo);
  return f.convertToDouble();
}

Const kiln::convertConst(const Const &c, DType dt) {
  if (isFloat(dt))
    return Const::ofFloat(roundToFloatType(c.asDouble(), dt));
  unsigned bits = dtypeBits(dt);
  if (bits == 1) // as castValue compares: any nonzero value, NaN included, is true
    return Const::ofInt(c.isFloat ? c.f != 0 : c.i != 0);
  if (c.isFloat) {
    // As MLIRGen's saturatingFloatToInt converts: toward zero, saturating at the
    // type's range (infinities included), NaN gives 0.
    double t = std::trunc(c.f), range = std::ldexp(1.0, bits - !isUnsigned(dt));
    if (!(t == t))
      return Const::ofInt(0);
    if (isUnsigned(dt))
      return Const::ofUnsigned(t <= 0 ? 0 : t >= range ? ~uint64_t(0) >> (64 - bits)
                                                       : uint64_t(t));
    return Const::ofInt(t <= -range ? int64_t(~uint64_t(0) << (bits - 1))
                        : t >= range  ? int64_t(~uint64_t(0) >> (65 - bits))
                                      : int64_t(t));
  }
  int64_t v = c.i;
  if (bits < 64) {
    // Wrap like the hardware would, then sign-extend (signed types only).
    uint64_t mask = (uint64_t(1) << bits) - 1;
    uint64_t u = static_cast<uint64_t>(v) & mask;
    if (!isUnsigned(dt) && u >> (bits - 1))
      u |= ~mask;
    v = static_cast<int64_t>(u);
  }
  return isUnsigned(dt) ? Const::ofUnsigned(static_cast<uint64_t>(v)) : Const::ofInt(v);
}

std::string kiln::shortestDouble(double v) {
  char text[32];
  if (v == std::trunc(v) && std::abs(v) < 1e16) { // 100000, not 1e+05
    std::snprintf(text, sizeof text, "%.0f", v);
    return text;
  }
  for (int digits = 1; digits <= 17; ++digits) {
    std::snprintf(text, sizeof text, "%.*g", digits, v);
    if (std::strtod(text, nullptr) == v)
      break;
  }
  return text;
}

std::string kiln::floatConstantLoss(double x, DType dt) {
  if (std::isinf(x) && dt == DType::F8E4M3)
    return "does not fit in f8e4m3 (largest 448, and it has no infinity)";
  if (!std::isfinite(x) || x == 0)
    return "";
  const llvm::fltSemantics &semantics = floatSemantics(dt);
  llvm::APFloat f(x);
  bool losesInfo = false;
  llvm::APFloat::opStatus status =
      f.convert(semantics, llvm::APFloat::rmNearestTiesToEven, &losesInfo);
  auto limit = [&](llvm::APFloat v) {
    llvm::SmallString<24> text;
    v.toString(text);
    return std::string(text);
  };
  if (status & llvm::APFloat::opOverflow)
    return std::string("does not fit in ") + dtypeName(dt) + " (largest " +
           limit(llvm::APFloat::getLargest(semantics)) +
           (dt == DType::F8E4M3 ? ", and it has no infinity)" : "); write inf for infinity");
  if (f.isZero())
    return std::string("rounds to 0 in ") + dtypeName(dt) + " (smallest nonzero " +
           limit(llvm::APFloat::getSmallest(semantics)) + ")";
  return "";
}

std::optional<Const> kiln::foldBinary(BinOp op, const Const &l, const Const &r,
                                      DType dt) {
  if (isFloat(dt)) {
    double a = l.asDouble(), b = r.asDouble();
    switch (op) {
    case BinOp::Add: return Const::ofFloat(a + b);
    case BinOp::Sub: return Const::ofFloat(a - b);
    case BinOp::Mul: return Const::ofFloat(a * b);
    case BinOp::Div: return Const::ofFloat(a / b);
    case BinOp::Rem: return Const::ofFloat(std::fmod(a, b));
    case BinOp::Eq: return Const::ofInt(a == b);
    case BinOp::Ne: return Const::ofInt(a != b);
    case BinOp::Lt: return Const::ofInt(a < b);
    case BinOp::Le: return Const::ofInt(a <= b);
    case BinOp::Gt: return Const::ofInt(a > b);
    case BinOp::Ge: return Const::ofInt(a >= b);
    default: return std::nullopt;
    }
  }
  int64_t a = l.i, b = r.i;
  // Unsigned arithmetic: signed overflow must not be undefined behaviour here.
  auto wrap = [&](uint64_t v) { return convertConst(Const::ofInt(static_cast<int64_t>(v)), dt); };
  if (isUnsigned(dt)) {
    uint64_t ua = uint64_t(a), ub = uint64_t(b);
    switch (op) {
    case BinOp::Div: return ub ? std::optional(wrap(ua / ub)) : std::nullopt;
    case BinOp::Rem: return ub ? std::optional(wrap(ua % ub)) : std::nullopt;
    case BinOp::Shr: return wrap(ub < dtypeBits(dt) ? ua >> ub : 0);
    case BinOp::Shl: return wrap(ub < dtypeBits(dt) ? ua << ub : 0);
    case BinOp::Lt: return Const::ofInt(ua < ub);
    case BinOp::Le: return Const::ofInt(ua <= ub);
    case BinOp::Gt: return Const::ofInt(ua > ub);
    case BinOp::Ge: return Const::ofInt(ua >= ub);
    default: break; // the rest is the same on the bits
    }
  }
  switch (op) {
  case BinOp::Add: return wrap(uint64_t(a) + uint64_t(b));
  case BinOp::Sub: return wrap(uint64_t(a) - uint64_t(b));
  case BinOp::Mul: return wrap(uint64_t(a) * uint64_t(b));
  // As at run time: MIN / -1 wraps to MIN, MIN % -1 is 0 (only a zero divisor
  // is left to the caller, as an error).
  case BinOp::Div:
    if (b == 0)
      return std::nullopt;
    return wrap(b == -1 ? 0 - uint64_t(a) : uint64_t(a / b));
  case BinOp::Rem:
    if (b == 0)
      return std::nullopt;
    return wrap(b == -1 ? 0 : uint64_t(a % b));
  case BinOp::And:
  case BinOp::LAnd: return wrap(a & b);
  case BinOp::Or:
  case BinOp::LOr: return wrap(a | b);
  case BinOp::Xor: return wrap(a ^ b);
  // Amounts outside [0, bits) shift everything out: 0, or the sign for '>>'.
  case BinOp::Shl: return wrap(b >= 0 && b < dtypeBits(dt) ? uint64_t(a) << b : 0);
  case BinOp::Shr:
    return Const::ofInt(b >= 0 && b < dtypeBits(dt) ? a >> b : (a < 0 ? -1 : 0));
  case BinOp::Eq: return Const::ofInt(a == b);
  case BinOp::Ne: return Const::ofInt(a != b);
  case BinOp::Lt: return Const::ofInt(a < b);
  case BinOp::Le: return Const::ofInt(a <= b);
  case BinOp::Gt: return Const::ofInt(a > b);
  case BinOp::Ge: return Const::ofInt(a >= b);
  }
  return std::nullopt;
}

bool kiln::isBuiltin(llvm::StringRef name) {
  static const llvm::StringSet<> builtins = {
      "program_id", "num_programs", "num_processors", "arange", "zeros", "ones", "full", "cast",
      "bitcast", "load", "store",
      "atomic_add", "atomic_max", "atomic_min", "atomic_and", "atomic_or", "atomic_xor",
      "atomic_xchg", "atomic_cas", "exp", "exp2", "log",
      "log2", "sqrt", "rsqrt", "tanh", "erf", "sin", "cos", "abs", "floor", "ceil", "sigmoid",
      "tan", "asin", "acos", "atan", "sinh", "cosh", "log1p", "expm1", "log10", "trunc", "round",
      "pow", "atan2", "clamp", "isnan", "isinf", "isfinite", "asinh", "acosh", "atanh", "cbrt",
      "copysign", "hypot", "popcount", "clz", "umulhi",
      "min", "max", "argmin", "argmax", "rand", "randint", "randn", "sum", "prod", "xor_sum",
      "cumsum", "cumprod", "cummax", "cummin", "fma", "where", "dot", "reshape", "trans", "expand_dims",
      "broadcast_to", "gather", "sort", "argsort", "reduce", "associative_scan", "join", "split",
      "interleave", "cat", "print", "static_assert", "device_assert", "flip", "ravel",
      "histogram", "cdiv", "inf", "nan", "range", "static_range", "swizzle2d", "zeros_like",
      "ones_like", "full_like", "multiple_of", "max_contiguous", "max_constancy"};
  return builtins.contains(name);
}
