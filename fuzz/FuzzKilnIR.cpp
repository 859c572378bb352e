//===- FuzzKilnIR.cpp - libFuzzer target: kiln-opt's parsing of kiln IR ---===//

#include "fuzz/FuzzSupport.h"

#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::SourceMgr sourceMgr;
  kiln::fuzz::addInput(sourceMgr, data, size, "fuzz.mlir");
  auto module = mlir::parseSourceFile<mlir::ModuleOp>(sourceMgr, &kiln::fuzz::context());
  if (module)
    (void)mlir::verify(*module);
  return 0;
}
