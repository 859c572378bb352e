//===- Sema.h - types and typing rules of the .kiln language ----*- C++ -*-===//
//
// Sema owns the rules: what type each construct has, which implicit conversions
// exist, how shapes broadcast, which builtin takes what, and how compile-time
// constants fold. MLIRGen asks Sema at every node before it emits anything, so no
// ill-typed program reaches the kiln dialect.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "lib/Frontend/AST.h"

#include "llvm/ADT/SmallVector.h"

#include <optional>
#include <string>

namespace kiln {

using Shape = llvm::SmallVector<int64_t, 4>;

/// Largest tile Kiln accepts; bigger shapes are almost always a typo.
inline constexpr int64_t kMaxTileElements = 1 << 22;

/// The static type of a value in a .kiln program.
struct SType {
  enum Kind { Scalar, Tile, Tensor, View, List, Tuple, Void };
  Kind kind = Void;
  DType dtype = DType::I32;
  Shape shape;       // Tile and View: the tile shape. Tensor: rank only (all -1).
  bool weak = false; // a compile-time constant whose dtype yields to its partner's

  static SType scalar(DType dt, bool weak = false) { return {Scalar, dt, {}, weak}; }
  static SType tile(DType dt, Shape shape) { return {Tile, dt, std::move(shape), false}; }
  /// A scalar for an empty shape, else a tile.
  static SType value(DType dt, const Shape &shape) {
    return shape.empty() ? scalar(dt) : tile(dt, shape);
  }
  bool isValue() const { return kind == Scalar || kind == Tile; }
  bool sameValueType(const SType &o) const {
    return isValue() && o.isValue() && dtype == o.dtype && shape == o.shape;
  }
  std::string str() const;
};

/// `v` truncated toward zero, saturated to the int64 range; NaN gives 0. (A plain
/// cast of inf, NaN or huge values is undefined behaviour.)
inline int64_t truncateToInt(double v) {
  if (!(v == v))
    return 0;
  if (v >= 9223372036854775807.0)
    return INT64_MAX;
  if (v <= -9223372036854775808.0)
    return INT64_MIN;
  return static_cast<int64_t>(v);
}

/// A compile-time constant: integers (and bools) or floats.
struct Const {
  bool isFloat = false;
  int64_t i = 0; // an unsigned value's bits (u64 values past 2^63 are negative here)
  double f = 0;
  bool isUnsigned = false;
  static Const ofInt(int64_t v) { return {false, v, static_cast<double>(v)}; }
  static Const ofUnsigned(uint64_t v) {
    return {false, static_cast<int64_t>(v), static_cast<double>(v), true};
  }
  static Const ofFloat(double v) { return {true, truncateToInt(v), v}; }
  double asDouble() const {
    return isFloat ? f : isUnsigned ? static_cast<double>(static_cast<uint64_t>(i))
                                     : static_cast<double>(i);
  }
};

std::string shapeStr(const Shape &shape);

/// numpy broadcasting of two shapes (a scalar is the empty shape). Returns nullopt
/// when a pair of dimensions differs and neither is 1.
std::optional<Shape> broadcastShapes(const Shape &a, const Shape &b);

/// The dtype two operands are converted to before a binary operation.
/// Weak (constant) operands take their partner's kind; ints meet floats in the float;
/// narrower meets wider in the wider; signed meets unsigned of the same width in the
/// unsigned (as in C); f16 meets bf16 in f32.
DType promote(const SType &a, const SType &b);

/// Can a value of type `from` be assigned to a variable of type `to` without an
/// explicit cast? (same dtype, or a weak constant; shape broadcastable to `to`.)
bool assignable(const SType &from, const SType &to);

/// Folds `lhs op rhs` on constants of dtype `dt`. Returns nullopt when the result
/// is not a constant (division by zero stays a runtime operation).
std::optional<Const> foldBinary(BinOp op, const Const &lhs, const Const &rhs, DType dt);

/// Converts a constant to dtype `dt` (truncation, int<->float; integers wrap, and
/// unsigned ones are held zero-extended).
Const convertConst(const Const &c, DType dt);

/// Why the constant `x` cannot take the float type `dt` without losing it, to
/// follow "constant X": its magnitude passes the type's largest finite value, or
/// it is nonzero and rounds to zero. Empty when it can: rounding to the nearest
/// value of `dt` is no loss.
std::string floatConstantLoss(double x, DType dt);

/// Parses a param value as -D (and kiln-run's --tune) spell it: `true`/`false`
/// or a number for i1, a number that fits for i32 and i64, a number that f32
/// keeps for f32. Returns why it is not a `dtype`, or "" with `out` set.
std::string parseParamText(llvm::StringRef text, DType dtype, Const &out);

/// `v` in the fewest significant digits that read back as the same double
/// (an integer below 1e16 in all its digits).
std::string shortestDouble(double v);

/// Whether `name` is a builtin the language reserves.
bool isBuiltin(llvm::StringRef name);

} // namespace kiln
