//===- AOTHeader.h - kilnc --header: a typed C++ header for a bundle ------===//
#pragma once

#include "kiln/KernelInfo.h"

#include <string>
#include <vector>

namespace kiln {

/// A C++ header that embeds `bundle` and declares `kiln_aot::<stem>::Kernels`, with one
/// launch method per kernel that takes typed arguments and the grid from the kernel's
/// rule. A kernel, argument or stem whose name C++ (or the header itself) already uses
/// gets a trailing `_` (`delete` -> `delete_`), so every valid Kiln name gives valid C++;
/// one spelled like a macro (`INT32_MAX`) is checked with an `#error` that names it.
std::string generateAOTHeader(const std::string &bundle, const std::vector<KernelInfo> &kernels,
                              const std::string &stem, const std::string &source);

} // namespace kiln
