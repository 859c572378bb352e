//===- ValidateArgs.h - launch arguments against kernel metadata -*- C++ -*-===//
#pragma once

#include "kiln/KernelInfo.h"
#include "kiln/TensorRef.h"

#include <string>
#include <vector>

namespace kiln {

/// Checks `args` against `info`: counts, tensor/scalar kinds, dtypes, ranks, size
/// names that must agree, fixed sizes and index ranges. Returns "" when they fit,
/// else a message naming the kernel and the offending argument.
std::string validateArgs(const KernelInfo &info, const std::vector<KernelArg> &args);

/// Whether integer dtype `dt` holds `v`: i1 only 0 and 1, u64 any 64 bits (a
/// value past INT64_MAX is negative here).
bool integerFits(int64_t v, DType dt);

} // namespace kiln
