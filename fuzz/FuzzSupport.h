//===- FuzzSupport.h - what the MLIR-based fuzz targets share ---*- C++ -*-===//
#pragma once

#include "lib/Compiler/Compiler.h"
#include "lib/Frontend/Diagnostics.h"

#include "mlir/IR/MLIRContext.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

namespace kiln::fuzz {

/// One context with every Kiln dialect for the whole run (single-threaded, and
/// silent: diagnostics are expected, printing them would only slow fuzzing).
inline mlir::MLIRContext &context() {
  static mlir::MLIRContext *ctx = [] {
    mlir::DialectRegistry registry;
    kiln::registerDialects(registry);
    auto *c = new mlir::MLIRContext(registry, mlir::MLIRContext::Threading::DISABLED);
    c->loadAllAvailableDialects();
    c->getDiagEngine().registerHandler([](mlir::Diagnostic &) {});
    return c;
  }();
  return *ctx;
}

/// Adds the input as a null-terminated buffer owned by `sourceMgr`, as the tools
/// read a file (MLIR's lexer relies on the terminator). Kiln sources go through
/// kiln::addSourceBuffer instead, as in the tools.
inline void addInput(llvm::SourceMgr &sourceMgr, const uint8_t *data, size_t size,
                     const char *name) {
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(
          llvm::StringRef(reinterpret_cast<const char *>(data), size), name),
      llvm::SMLoc());
}

} // namespace kiln::fuzz
