//===- TensorRef.h - host memory handed to a kernel -------------*- C++ -*-===//
#pragma once

#include "kiln/DType.h"

#include <cstdint>
#include <vector>

namespace kiln {

/// A strided view of host memory: element `(i, j, ...)` lives at
/// `data + (i * strides[0] + j * strides[1] + ...) * dtypeBytes(dtype)`.
/// Strides count elements, like numpy's strides divided by the item size.
struct TensorRef {
  void *data = nullptr;
  DType dtype = DType::F32;
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;

  /// A dense row-major view.
  static TensorRef contiguous(void *data, DType dtype, std::vector<int64_t> sizes) {
    TensorRef t{data, dtype, std::move(sizes), {}};
    t.strides.assign(t.sizes.size(), 1);
    for (int64_t d = static_cast<int64_t>(t.sizes.size()) - 2; d >= 0; --d)
      t.strides[d] = t.strides[d + 1] * t.sizes[d + 1];
    return t;
  }
};

/// A kernel argument: a tensor, or a scalar of the given dtype.
struct KernelArg {
  bool isTensor = false;
  TensorRef tensor;
  DType dtype = DType::F32; // scalars
  union {
    int64_t i;
    double f;
  } scalar = {0};

  static KernelArg of(const TensorRef &t) {
    KernelArg a;
    a.isTensor = true;
    a.tensor = t;
    a.dtype = t.dtype;
    return a;
  }
  static KernelArg ofInt(int64_t v, DType dt = DType::I32) {
    KernelArg a;
    a.dtype = dt;
    a.scalar.i = v;
    return a;
  }
  static KernelArg ofFloat(double v, DType dt = DType::F32) {
    KernelArg a;
    a.dtype = dt;
    a.scalar.f = v;
    return a;
  }
};

} // namespace kiln
