//===- Tolerance.h - comparing results with a reference ---------*- C++ -*-===//
#pragma once

#include <cmath>

namespace kiln {

/// Whether `got` lies within `atol + rtol * |want|` of `want`. Equal values
/// match (infinities of one sign too, whose difference is NaN), and so do two
/// NaNs: docs/targets.md's tolerances say NaN matches NaN. An infinity matches
/// only itself (its tolerance, rtol * inf, would let any value through).
inline bool withinTolerance(double got, double want, double rtol, double atol) {
  if (got == want || (std::isnan(got) && std::isnan(want)))
    return true;
  if (std::isinf(want))
    return false;
  return std::abs(got - want) <= atol + rtol * std::abs(want);
}

} // namespace kiln
