//===- FuzzFrontend.cpp - libFuzzer target: source to verified kiln IR ----===//

#include "lib/Compiler/Compiler.h"

#include "mlir/IR/MLIRContext.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static mlir::MLIRContext *context = [] {
    mlir::DialectRegistry registry;
    kiln::registerDialects(registry);
    auto *ctx = new mlir::MLIRContext(registry, mlir::MLIRContext::Threading::DISABLED);
    ctx->loadAllAvailableDialects();
    return ctx;
  }();
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(
          llvm::StringRef(reinterpret_cast<const char *>(data), size), "fuzz.kiln"),
      llvm::SMLoc());
  std::vector<kiln::KernelInfo> infos;
  kiln::GenOptions options;
  auto module = kiln::buildKilnModule(*context, sourceMgr, options, infos, llvm::nulls());
  return 0;
}
