//===- Common.h - helpers shared by the CPU and GPU lowerings ---*- C++ -*-===//
#pragma once

#include "dialects/Kiln/IR/KilnOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"

namespace kiln {

/// Marks on a memref.load or memref.store: the number of loops around it that
/// LLVM should leave rolled (kAccessLoopsRolled) or also scalar
/// (kAccessLoopsScalar). convert-kiln-to-linalg sets them, and
/// kiln-annotate-access-loops makes them loop annotations once loops are
/// branches.
inline constexpr llvm::StringLiteral kAccessLoopsRolled = "kiln.loops_rolled";
inline constexpr llvm::StringLiteral kAccessLoopsScalar = "kiln.loops_scalar";

/// The neutral element of `kind` for `elementType` (-inf for float max, ...).
mlir::TypedAttr reductionIdentity(mlir::OpBuilder &b, ReduceKind kind, mlir::Type elementType);

/// `a (kind) b` on scalars or vectors; float max/min propagate NaN.
mlir::Value combineReduction(mlir::OpBuilder &b, mlir::Location loc, ReduceKind kind,
                             mlir::Value a, mlir::Value acc);

/// The memref.atomic_rmw kind of a kiln atomic: sum, max or min, on floats
/// (addf, maximumf, minimumf) or signed integers (addi, maxs, mins), umax and
/// umin (maxu, minu), and the bitwise andi, ori. Xor has no kind (MLIR 19):
/// nullopt, see atomicUpdate.
std::optional<mlir::arith::AtomicRMWKind> atomicKind(ReduceKind kind, bool isFloat);

/// The atomic update of `memref[indices]` by `kind` with `value`; returns the
/// old value. A memref.atomic_rmw, or for xor a generic_atomic_rmw whose body is
/// one xori (kiln-gpu-to-spirv makes it an OpAtomicXor).
mlir::Value atomicUpdate(mlir::OpBuilder &b, mlir::Location loc, ReduceKind kind,
                         mlir::Value value, mlir::Value memref, mlir::ValueRange indices);

/// Float atomic max or min of the element at `ptr` (an LLVM pointer) with
/// `value`, NaN propagating as in arith.maximumf: a loop of compare-and-swaps
/// of the element's bits, since LLVM 19's atomicrmw fmax/fmin ignore NaN (and
/// its cmpxchg takes no floats). `ordering` and `scope` are the cmpxchg's; a
/// relaxed update that would leave the element as it is writes nothing.
/// Returns the element's value before the update.
mlir::Value floatAtomicMinMax(mlir::OpBuilder &b, mlir::Location loc, ReduceKind kind,
                              mlir::Value ptr, mlir::Value value,
                              mlir::LLVM::AtomicOrdering ordering, llvm::StringRef scope = {});

/// `v` (f32, or a tensor or vector of f32) rounded to TensorFloat-32: the low 13
/// mantissa bits cleared after rounding to nearest, ties away from zero (PTX's
/// cvt.rna.tf32.f32); Inf and NaN pass unchanged.
mlir::Value roundToTF32(mlir::OpBuilder &b, mlir::Location loc, mlir::Value v);

/// The printf format of one line of `kiln.print`: "pid (%d, %d, %d)", then
/// " idx (%d, ...)" with `rank` coordinates, " PREFIX" (its % doubled), and
/// ": VALUE" when `element` (the printed element type) is not null; integers
/// print as unsigned values when `isUnsigned`, as 0x and `hexDigits` hex digits
/// when that is not 0.
std::string printFormat(llvm::StringRef prefix, unsigned rank, mlir::Type element,
                        bool isUnsigned = false, unsigned hexDigits = 0);

/// The hex digits `print(..., hex = true)` shows for `element`: one per four
/// bits (at least one); 0 unless `op` asks for hex.
unsigned printHexDigits(PrintOp op);

/// Whether `op`'s integer value prints zero-extended: unsigned, or its bits
/// in hex.
inline bool printsUnsigned(PrintOp op) { return op.getValueUnsigned() || op.getHex(); }

/// `element` as printf's variadic arguments take it: floats as f64, integers
/// narrower than 32 bits sign-extended to i32 (bools, and every integer when
/// `isUnsigned`, zero-extended).
mlir::Value printArgument(mlir::OpBuilder &b, mlir::Location loc, mlir::Value element,
                          bool isUnsigned = false);

/// Gives each result of `op`, and each argument of the blocks in its regions, the
/// type `retype` maps its type to: one step of a walk that changes types in place.
void retypeResultsAndArguments(mlir::Operation *op,
                               llvm::function_ref<mlir::Type(mlir::Type)> retype);

} // namespace kiln
