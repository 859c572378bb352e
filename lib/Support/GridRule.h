//===- GridRule.h - evaluating a kernel's grid rule at launch ---*- C++ -*-===//
#pragma once

#include "kiln/KernelInfo.h"
#include "kiln/TensorRef.h"

#include <array>
#include <string>
#include <vector>

namespace kiln {

/// Evaluates a kernel's grid rule (KernelInfo::grid, as kilnc prints it) for
/// these arguments, with exact integer arithmetic. Sizes bind by name from tensor
/// dimensions, `x.size(d)` and `x.stride(d)` from tensor `x`, scalars from
/// integer scalar arguments; num_processors() is `processors`. Returns false with
/// `error` set on an unknown name, a malformed rule, division by zero, a shift
/// out of range, a `cast<T>` that would change its value, a value beyond 64 bits,
/// or a dimension that is negative or beyond i32 (program ids are i32).
bool evaluateGrid(const KernelInfo &kernel, const std::vector<KernelArg> &args,
                  int64_t processors, std::array<int64_t, 3> &grid, std::string &error);

} // namespace kiln
