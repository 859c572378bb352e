//===- SessionImpl.h - pieces of kiln::Session shared by its files -*- C++ -*-===//
#pragma once

#include "kiln/kiln.h"

#include <string>

namespace kiln::session {

/// A compiled kernel binary and its kilnc metadata (JSON).
struct Binary {
  std::string binary, metadata;
};

/// Compiles `kernel` for `target` with `matrixUnits` ("auto", or a kilnc
/// --matrix-units value). Touches no Session state: safe to call from several
/// threads at once (each compile has its own MLIR context).
rt::Result<Binary> compileBinary(const std::string &source, const std::string &filename,
                                 const std::string &kernel, const ParamSet &params,
                                 const std::string &target, const std::string &matrixUnits);

/// A 32-hex-digit key for cache file names.
std::string hashKey(const std::string &material);

/// The file's bytes, or "" when it cannot be read.
std::string readFile(const std::string &path);

} // namespace kiln::session
