//===- Harness.h - compile example kernels and compare with C++ -*- C++ -*-===//
#pragma once

#include "lib/Compiler/Compiler.h"

#include "llvm/Support/MemoryBuffer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
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

/// Compiles `kernel` from examples/`file` with `defines`; fails the test on error.
inline std::unique_ptr<cpu::Executable>
compileExample(const std::string &file, const std::string &kernel,
               std::map<std::string, std::string> defines = {}) {
  GenOptions options;
  options.kernel = kernel;
  options.defines = std::move(defines);
  auto exe = compileForCPU(readExample(file), file, options);
  if (!exe) {
    ADD_FAILURE() << llvm::toString(exe.takeError());
    return nullptr;
  }
  return std::move(*exe);
}

inline std::vector<float> randomVector(size_t n, unsigned seed, float lo = -1, float hi = 1) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float &x : v)
    x = dist(gen);
  return v;
}

/// Relative-plus-absolute tolerance comparison, reporting the first mismatch.
inline ::testing::AssertionResult allClose(const std::vector<float> &got,
                                           const std::vector<double> &want,
                                           double rtol = 1e-5, double atol = 1e-5) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure() << "size " << got.size() << " vs " << want.size();
  for (size_t i = 0; i < got.size(); ++i) {
    double diff = std::abs(double(got[i]) - want[i]);
    if (!(diff <= atol + rtol * std::abs(want[i])))
      return ::testing::AssertionFailure()
             << "element " << i << ": got " << got[i] << ", want " << want[i];
  }
  return ::testing::AssertionSuccess();
}

inline void launchOrFail(cpu::Executable &exe, const std::string &kernel,
                         const std::vector<KernelArg> &args) {
  if (auto err = exe.launch(kernel, args))
    FAIL() << llvm::toString(std::move(err));
}

} // namespace kiln::test
