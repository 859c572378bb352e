//===- FuzzFrontend.cpp - libFuzzer target: source to verified kiln IR ----===//

#include "fuzz/FuzzSupport.h"

#include "llvm/Support/raw_ostream.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::SourceMgr sourceMgr;
  kiln::addSourceBuffer(sourceMgr, {reinterpret_cast<const char *>(data), size}, "fuzz.kiln");
  std::vector<kiln::KernelInfo> infos;
  kiln::GenOptions options;
  auto module = kiln::buildKilnModule(kiln::fuzz::context(), sourceMgr, options, infos, llvm::nulls());
  return 0;
}
