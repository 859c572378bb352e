//===- Compare.h - random inputs and tolerance checks for tests -*- C++ -*-===//
// Header-only and free of LLVM, so the runtime-only tests (which also run on GPU
// machines without LLVM) share it with the compiler tests.
#pragma once

#include "lib/Support/Tolerance.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace kiln::test {

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
    if (!withinTolerance(got[i], want[i], rtol, atol))
      return ::testing::AssertionFailure()
             << "element " << i << ": got " << got[i] << ", want " << want[i];
  }
  return ::testing::AssertionSuccess();
}

} // namespace kiln::test
