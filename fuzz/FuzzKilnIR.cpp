//===- FuzzKilnIR.cpp - libFuzzer target: kiln-opt's parsing of kiln IR ---===//

#include "lib/Compiler/Compiler.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static mlir::MLIRContext *context = [] {
    mlir::DialectRegistry registry;
    kiln::registerDialects(registry);
    auto *ctx = new mlir::MLIRContext(registry, mlir::MLIRContext::Threading::DISABLED);
    ctx->loadAllAvailableDialects();
    // Diagnostics are expected; printing them would only slow the fuzzer down.
    ctx->getDiagEngine().registerHandler([](mlir::Diagnostic &) {});
    return ctx;
  }();
  // As kiln-opt reads a file: a null-terminated buffer owned by a SourceMgr (MLIR's
  // lexer relies on the terminator).
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(
          llvm::StringRef(reinterpret_cast<const char *>(data), size), "fuzz.mlir"),
      llvm::SMLoc());
  auto module = mlir::parseSourceFile<mlir::ModuleOp>(sourceMgr, context);
  if (module)
    (void)mlir::verify(*module);
  return 0;
}
