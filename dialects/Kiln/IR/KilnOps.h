//===- KilnOps.h - the kiln tile dialect ------------------------*- C++ -*-===//
#pragma once

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/Kiln/IR/KilnDialect.h.inc"
#include "dialects/Kiln/IR/KilnEnums.h.inc"

namespace kiln {
/// and, or, xor: combiners of integers only.
inline bool isBitwise(ReduceKind kind) {
  return kind == ReduceKind::And || kind == ReduceKind::Or || kind == ReduceKind::Xor;
}
/// Whether an atomic of ordering `sem` orders the accesses before it (release)
/// or after it (acquire).
inline bool releases(MemoryOrder sem) {
  return sem == MemoryOrder::Release || sem == MemoryOrder::AcqRel;
}
inline bool acquires(MemoryOrder sem) {
  return sem == MemoryOrder::Acquire || sem == MemoryOrder::AcqRel;
}
/// Kinds defined on integers only: the bitwise ones and unsigned max/min.
inline bool needsIntegers(ReduceKind kind) {
  return isBitwise(kind) || kind == ReduceKind::UMax || kind == ReduceKind::UMin;
}
} // namespace kiln

#define GET_OP_CLASSES
#include "dialects/Kiln/IR/KilnOps.h.inc"

namespace kiln {
/// Attribute names shared by the front end, the passes and the runtime glue.
inline constexpr llvm::StringLiteral kKernelAttr = "kiln.kernel";
inline constexpr llvm::StringLiteral kArgNameAttr = "kiln.name";
/// On an scf.for: software-pipeline the loop's tile loads this many iterations
/// deep (`range(..., stages=N)`); targets without asynchronous copies ignore it.
inline constexpr llvm::StringLiteral kStagesAttr = "kiln.stages";
/// On a kernel: the warps one program runs on GPU targets, from a `NUM_WARPS`
/// param (the pipeline's default otherwise).
inline constexpr llvm::StringLiteral kNumWarpsAttr = "kiln.num_warps";
} // namespace kiln
