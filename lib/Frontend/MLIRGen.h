//===- MLIRGen.h - .kiln AST to the kiln dialect ----------------*- C++ -*-===//
#pragma once

#include "kiln/KernelInfo.h"
#include "lib/Frontend/AST.h"
#include "lib/Frontend/Diagnostics.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <map>
#include <string>
#include <vector>

namespace kiln {

struct GenOptions {
  /// Only this kernel (all kernels when empty).
  std::string kernel;
  /// `-D NAME=VALUE` overrides of params, as written on the command line.
  std::map<std::string, std::string> defines;
};

/// Emits each selected kernel as a `func.func` with the `kiln.kernel` attribute,
/// plus its grid function, and fills `infos` with one KernelInfo per kernel.
/// Returns null after reporting errors through `diag`.
mlir::OwningOpRef<mlir::ModuleOp> mlirGen(mlir::MLIRContext &context,
                                          const Module &module, DiagEngine &diag,
                                          const GenOptions &options,
                                          std::vector<KernelInfo> &infos);

} // namespace kiln
