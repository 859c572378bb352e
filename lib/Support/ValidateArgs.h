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

} // namespace kiln
