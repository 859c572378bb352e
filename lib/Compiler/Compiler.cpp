//===- Compiler.cpp - from .kiln source to kiln IR and to the host --------===//

#include "lib/Compiler/Compiler.h"

#include "codegen/CPU/CPUPipeline.h"
#include "lib/Frontend/Parser.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"

#include <mutex>

using namespace kiln;

mlir::OwningOpRef<mlir::ModuleOp> kiln::buildKilnModule(mlir::MLIRContext &context,
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

llvm::Expected<std::unique_ptr<cpu::Executable>>
kiln::compileForCPU(llvm::StringRef source, llvm::StringRef filename, const GenOptions &options) {
  static std::once_flag registered;
  std::call_once(registered, [] { registerPasses(); });
  mlir::DialectRegistry registry;
  registerDialects(registry);
  mlir::MLIRContext context(registry, mlir::MLIRContext::Threading::DISABLED);

  std::string messages;
  llvm::raw_string_ostream errs(messages);
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy(source, filename),
                               llvm::SMLoc());
  std::vector<KernelInfo> infos;
  auto module = buildKilnModule(context, sourceMgr, options, infos, errs);
  auto fail = [&]() {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), errs.str());
  };
  if (!module)
    return fail();
  mlir::SourceMgrDiagnosticHandler handler(sourceMgr, &context, errs);
  if (mlir::failed(cpu::lowerToLLVMDialect(*module)))
    return fail();
  auto exe = cpu::Executable::create(*module, std::move(infos));
  if (!exe) {
    errs << llvm::toString(exe.takeError());
    return fail();
  }
  return exe;
}
