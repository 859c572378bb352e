//===- Compiler.h - from .kiln source to kiln IR and to the host -*- C++ -*-===//
#pragma once

#include "codegen/CPU/CPUExecutable.h"
#include "kiln/KernelInfo.h"
#include "lib/Frontend/AST.h"
#include "lib/Frontend/MLIRGen.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/OwningOpRef.h"

#include "llvm/Support/SourceMgr.h"

namespace kiln {

/// Registers the dialects and interfaces every Kiln pipeline needs.
void registerDialects(mlir::DialectRegistry &registry);

/// Registers Kiln's passes and the upstream ones its pipelines use.
void registerPasses();

/// Parses the main buffer of `sourceMgr` and emits kiln IR for the selected kernels.
/// Errors are printed to `errs` with file:line:col, the source line and a caret.
mlir::OwningOpRef<mlir::ModuleOp> buildKilnModule(mlir::MLIRContext &context,
                                                  llvm::SourceMgr &sourceMgr,
                                                  const GenOptions &options,
                                                  std::vector<KernelInfo> &infos,
                                                  llvm::raw_ostream &errs);

/// Source to an in-process executable: parse, emit, lower, JIT. On failure the error
/// carries every diagnostic, formatted as kilnc prints them.
llvm::Expected<std::unique_ptr<cpu::Executable>>
compileForCPU(llvm::StringRef source, llvm::StringRef filename, const GenOptions &options);

} // namespace kiln
