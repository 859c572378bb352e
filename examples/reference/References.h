//===- References.h - plain C++ versions of the example kernels -*- C++ -*-===//
//
// Straightforward double-precision loops over strided float inputs: the ground truth
// for the end-to-end tests and the demo. Strides count elements.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace kiln::reference {

inline std::vector<double> vectorAdd(const float *x, const float *y, int64_t n) {
  std::vector<double> z(n);
  for (int64_t i = 0; i < n; ++i)
    z[i] = double(x[i]) + double(y[i]);
  return z;
}

/// Row-wise softmax of an [m, n] matrix whose rows are `ld` elements apart.
inline std::vector<double> softmax(const float *x, int64_t m, int64_t n, int64_t ld) {
  std::vector<double> y(m * n);
  for (int64_t r = 0; r < m; ++r) {
    const float *row = x + r * ld;
    double mx = -INFINITY, s = 0;
    for (int64_t c = 0; c < n; ++c)
      mx = std::max(mx, double(row[c]));
    for (int64_t c = 0; c < n; ++c)
      s += std::exp(double(row[c]) - mx);
    for (int64_t c = 0; c < n; ++c)
      y[r * n + c] = std::exp(double(row[c]) - mx) / s;
  }
  return y;
}

inline std::vector<double> layernorm(const float *x, const float *w, const float *b,
                                     int64_t m, int64_t n, double eps) {
  std::vector<double> y(m * n);
  for (int64_t r = 0; r < m; ++r) {
    const float *row = x + r * n;
    double mean = 0, var = 0;
    for (int64_t c = 0; c < n; ++c)
      mean += row[c];
    mean /= n;
    for (int64_t c = 0; c < n; ++c)
      var += (row[c] - mean) * (row[c] - mean);
    var /= n;
    double rstd = 1.0 / std::sqrt(var + eps);
    for (int64_t c = 0; c < n; ++c)
      y[r * n + c] = (row[c] - mean) * rstd * w[c] + b[c];
  }
  return y;
}

/// Sums along rows (`alongRows`: one result per row) or columns of an [m, n] view
/// with strides (s0, s1).
inline std::vector<double> sum2d(const float *x, int64_t m, int64_t n, int64_t s0,
                                 int64_t s1, bool alongRows) {
  std::vector<double> out(alongRows ? m : n, 0.0);
  for (int64_t r = 0; r < m; ++r)
    for (int64_t c = 0; c < n; ++c)
      out[alongRows ? r : c] += x[r * s0 + c * s1];
  return out;
}

/// c[m, n] = a[m, k] * b[k, n] with a's strides (sa0, sa1) and b row-major.
inline std::vector<double> matmul(const float *a, const float *b, int64_t m, int64_t n,
                                  int64_t k, int64_t sa0, int64_t sa1) {
  std::vector<double> c(m * n, 0.0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t p = 0; p < k; ++p) {
      double av = a[i * sa0 + p * sa1];
      for (int64_t j = 0; j < n; ++j)
        c[i * n + j] += av * double(b[p * n + j]);
    }
  return c;
}

} // namespace kiln::reference
