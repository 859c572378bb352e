//===- FuzzParser.cpp - libFuzzer target: lexer and parser ----------------===//

#include "lib/Frontend/Parser.h"

#include "llvm/Support/raw_ostream.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::SourceMgr sourceMgr;
  kiln::addSourceBuffer(sourceMgr, {reinterpret_cast<const char *>(data), size}, "fuzz.kiln");
  kiln::DiagEngine diag(sourceMgr, llvm::nulls());
  auto module = kiln::parseModule(
      sourceMgr.getMemoryBuffer(sourceMgr.getMainFileID())->getBuffer(), diag);
  if (module)
    kiln::dumpAST(*module, llvm::nulls());
  return 0;
}
