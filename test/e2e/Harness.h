//===- Harness.h - compile example kernels and compare with C++ -*- C++ -*-===//
#pragma once

#include "lib/Compiler/Compiler.h"
#include "test/Common/Compare.h"

#include "llvm/Support/MemoryBuffer.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace kiln::test {

inline std::string readExample(const std::string &name) {
  std::string path = std::string(KILN_EXAMPLES_DIR) + "/" + name;
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer) {
    ADD_FAILURE() << "cannot read " << path;
    return "";
  }
  return (*buffer)->getBuffer().str();
}

/// Compiles `kernel` from `source` (named `file` in diagnostics) with `defines`;
/// fails the test on error.
inline std::unique_ptr<cpu::Executable>
compileSource(const std::string &source, const std::string &file, const std::string &kernel,
              std::map<std::string, std::string> defines = {}) {
  GenOptions options;
  options.kernel = kernel;
  options.defines = std::move(defines);
  auto exe = compileForCPU(source, file, options);
  if (!exe) {
    ADD_FAILURE() << llvm::toString(exe.takeError());
    return nullptr;
  }
  return std::move(*exe);
}

/// Compiles `kernel` from inline test source (named `kernel`.kiln).
inline std::unique_ptr<cpu::Executable> compileSource(const std::string &source,
                                                      const std::string &kernel) {
  return compileSource(source, kernel + ".kiln", kernel);
}

/// Compiles `kernel` from examples/`file` with `defines`; fails the test on error.
inline std::unique_ptr<cpu::Executable>
compileExample(const std::string &file, const std::string &kernel,
               std::map<std::string, std::string> defines = {}) {
  return compileSource(readExample(file), file, kernel, std::move(defines));
}

inline void launchOrFail(cpu::Executable &exe, const std::string &kernel,
                         const std::vector<KernelArg> &args, unsigned threads = 0) {
  if (auto err = exe.launch(kernel, args, threads))
    FAIL() << llvm::toString(std::move(err));
}

} // namespace kiln::test
