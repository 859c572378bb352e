//===- Compiler.h - from .kiln source to kiln IR and to the host -*- C++ -*-===//
#pragma once

#include "codegen/CPU/CPUExecutable.h"
#include "kiln/KernelInfo.h"
#include "lib/Frontend/AST.h"
#include "lib/Frontend/MLIRGen.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
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

/// One source compiled to kiln IR in a context of its own. Diagnostics from the front
/// end and from every later pass on `module` are collected in `messages`, formatted
/// as kilnc prints them (file:line:col, source line, caret).
class SourceModule {
public:
  SourceModule(llvm::StringRef source, llvm::StringRef filename, const GenOptions &options);
  mlir::ModuleOp module() { return *module_; }
  bool ok() const { return static_cast<bool>(module_); }
  std::vector<KernelInfo> kernels;
  /// The collected diagnostics as an error; `fallback` when there are none.
  llvm::Error error(llvm::StringRef fallback = "compilation failed");

private:
  mlir::DialectRegistry registry_;
  std::unique_ptr<mlir::MLIRContext> context_;
  llvm::SourceMgr sourceMgr_;
  std::string messages_;
  llvm::raw_string_ostream errs_{messages_};
  mlir::OwningOpRef<mlir::ModuleOp> module_;
  std::unique_ptr<mlir::SourceMgrDiagnosticHandler> handler_;
};

/// Source to an in-process executable: parse, emit, lower, JIT. On failure the error
/// carries every diagnostic, formatted as kilnc prints them.
llvm::Expected<std::unique_ptr<cpu::Executable>>
compileForCPU(llvm::StringRef source, llvm::StringRef filename, const GenOptions &options);

} // namespace kiln
