//===- Common.h - helpers shared by the CPU and GPU lowerings ---*- C++ -*-===//
#pragma once

#include "dialects/Kiln/IR/KilnOps.h"

#include "mlir/IR/Builders.h"

namespace kiln {

/// The neutral element of `kind` for `elementType` (-inf for float max, ...).
mlir::TypedAttr reductionIdentity(mlir::OpBuilder &b, ReduceKind kind, mlir::Type elementType);

/// `a (kind) b` on scalars or vectors; float max/min propagate NaN.
mlir::Value combineReduction(mlir::OpBuilder &b, mlir::Location loc, ReduceKind kind,
                             mlir::Value a, mlir::Value acc);

} // namespace kiln
