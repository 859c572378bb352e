//===- Compiler.cpp - from .kiln source to kiln IR and to the host --------===//

#include "lib/Compiler/Compiler.h"

#include "codegen/CPU/CPUPipeline.h"
#include "lib/Frontend/Parser.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"

#include "llvm/Support/thread.h"

#include <mutex>

using namespace kiln;

/// The stack the front end runs on. Parsing and generation recurse as deep as
/// the source nests; Kiln's limits (language.md section 12) bound that to a few
/// MB in a release build (a builtin call takes 4-8 KB a level), more under
/// AddressSanitizer, and a caller's thread may have less than the main
/// thread's 8 MB.
constexpr unsigned kFrontEndStackBytes = 256u << 20;

static mlir::OwningOpRef<mlir::ModuleOp> buildOnThisThread(mlir::MLIRContext &context,
                                                           llvm::SourceMgr &sourceMgr,
                                                           const GenOptions &options,
                                                           std::vector<KernelInfo> &infos,
                                                           llvm::raw_ostream &errs) {
  DiagEngine diag(sourceMgr, errs);
  llvm::StringRef buffer = sourceMgr.getMemoryBuffer(sourceMgr.getMainFileID())->getBuffer();
  std::unique_ptr<Module> ast = parseModule(buffer, diag);
  if (!ast)
    return nullptr;
  context.loadAllAvailableDialects();
  // Errors point at .kiln source; dumping the IR op alongside helps nobody there.
  context.printOpOnDiagnostic(false);
  mlir::SourceMgrDiagnosticHandler handler(sourceMgr, &context, errs);
  auto module = mlirGen(context, *ast, diag, options, infos);
  if (!module)
    return nullptr;
  // The front end only emits well-typed IR; a verifier failure here is a Kiln bug,
  // but it is still reported against the .kiln source rather than crashing.
  if (mlir::failed(mlir::verify(*module)))
    return nullptr;
  return module;
}

mlir::OwningOpRef<mlir::ModuleOp> kiln::buildKilnModule(mlir::MLIRContext &context,
                                                        llvm::SourceMgr &sourceMgr,
                                                        const GenOptions &options,
                                                        std::vector<KernelInfo> &infos,
                                                        llvm::raw_ostream &errs) {
  mlir::OwningOpRef<mlir::ModuleOp> module;
  llvm::thread frontEnd(std::optional<unsigned>(kFrontEndStackBytes), [&] {
    module = buildOnThisThread(context, sourceMgr, options, infos, errs);
  });
  frontEnd.join();
  return module;
}

SourceModule::SourceModule(llvm::StringRef source, llvm::StringRef filename,
                           const GenOptions &options) {
  static std::once_flag registered;
  std::call_once(registered, [] { registerPasses(); });
  registerDialects(registry_);
  context_ = std::make_unique<mlir::MLIRContext>(registry_,
                                                 mlir::MLIRContext::Threading::DISABLED);
  addSourceBuffer(sourceMgr_, source, filename);
  module_ = buildKilnModule(*context_, sourceMgr_, options, kernels, errs_);
  // Later passes report through the same source manager, at .kiln locations.
  handler_ = std::make_unique<mlir::SourceMgrDiagnosticHandler>(sourceMgr_, context_.get(),
                                                                errs_);
}

llvm::Error SourceModule::error(llvm::StringRef fallback) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 messages_.empty() ? fallback.str() : messages_);
}

llvm::Expected<std::unique_ptr<cpu::Executable>>
kiln::compileForCPU(llvm::StringRef source, llvm::StringRef filename, const GenOptions &options) {
  SourceModule compiled(source, filename, options);
  if (!compiled.ok() || mlir::failed(cpu::lowerToLLVMDialect(compiled.module())))
    return compiled.error();
  auto exe = cpu::Executable::create(compiled.module(), compiled.kernels);
  if (!exe)
    return compiled.error(llvm::toString(exe.takeError()));
  return exe;
}
