//===- Npy.h - NumPy .npy files for kiln-run's tensors -------------------===//
//
// kiln-run reads a tensor argument from a .npy file (--load) and writes every
// tensor after the launch (--save), so kernels run on a user's data and their
// results open in NumPy. Little-endian, C-order arrays of the numeric types
// NumPy has; bf16 and fp8, which it lacks, travel as their raw bits (unsigned
// integers of the same width, or ml_dtypes' void types of that width).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TOOLS_KILN_RUN_NPY_H
#define KILN_TOOLS_KILN_RUN_NPY_H

#include "kiln/DType.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::npy {

/// An array read from a .npy file: its shape and its bytes.
struct Array {
  std::vector<int64_t> shape;
  std::vector<char> bytes;
};

/// Reads `path` as an array of element type `dtype`. On failure returns false
/// and says why in `error`, without the path, which the caller names
/// (unreadable file, not .npy, another element type, big-endian or Fortran
/// order, fewer or more bytes than the shape needs).
bool read(const std::string &path, DType dtype, Array &out, std::string &error);

/// Writes `bytes` (C order, `shape`) as a .npy file; false with `error` when
/// the file cannot be written.
bool write(const std::string &path, DType dtype, const std::vector<int64_t> &shape,
           const std::vector<char> &bytes, std::string &error);

/// The shape as NumPy prints it: (3, 4), (5,), ().
std::string shapeText(const std::vector<int64_t> &shape);

} // namespace kiln::npy

#endif // KILN_TOOLS_KILN_RUN_NPY_H
