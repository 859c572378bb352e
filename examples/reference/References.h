//===- References.h - plain C++ versions of the example kernels -*- C++ -*-===//
//
// Straightforward double-precision loops over strided float inputs: the ground truth
// for the end-to-end tests and the demo. Strides count elements.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "lib/Support/Half.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
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

/// A row's mean and 1 / sqrt(variance + eps) (the population variance).
struct RowStats {
  double mean, rstd;
};
inline RowStats rowStats(const float *row, int64_t n, double eps) {
  double mean = 0, var = 0;
  for (int64_t c = 0; c < n; ++c)
    mean += row[c];
  mean /= n;
  for (int64_t c = 0; c < n; ++c)
    var += (row[c] - mean) * (row[c] - mean);
  var /= n;
  return {mean, 1.0 / std::sqrt(var + eps)};
}

inline std::vector<double> layernorm(const float *x, const float *w, const float *b,
                                     int64_t m, int64_t n, double eps) {
  std::vector<double> y(m * n);
  for (int64_t r = 0; r < m; ++r) {
    const float *row = x + r * n;
    auto [mean, rstd] = rowStats(row, n, eps);
    for (int64_t c = 0; c < n; ++c)
      y[r * n + c] = (row[c] - mean) * rstd * w[c] + b[c];
  }
  return y;
}

/// The gradients of layernorm (with upstream gradient `dy`, [m, n]) with
/// respect to x ([m, n]), w and b ([n] each).
struct LayerNormGradients {
  std::vector<double> dx, dw, db;
};
inline LayerNormGradients layernormBackward(const float *x, const float *w, const float *dy,
                                            int64_t m, int64_t n, double eps) {
  LayerNormGradients g{std::vector<double>(m * n), std::vector<double>(n, 0.0),
                       std::vector<double>(n, 0.0)};
  std::vector<double> xhat(n), wdy(n);
  for (int64_t r = 0; r < m; ++r) {
    const float *row = x + r * n, *drow = dy + r * n;
    auto [mean, rstd] = rowStats(row, n, eps);
    double c1 = 0, c2 = 0;
    for (int64_t c = 0; c < n; ++c) {
      xhat[c] = (row[c] - mean) * rstd;
      wdy[c] = double(w[c]) * drow[c];
      c1 += xhat[c] * wdy[c];
      c2 += wdy[c];
    }
    c1 /= n;
    c2 /= n;
    for (int64_t c = 0; c < n; ++c) {
      g.dx[r * n + c] = (wdy[c] - (xhat[c] * c1 + c2)) * rstd;
      g.dw[c] += drow[c] * xhat[c];
      g.db[c] += drow[c];
    }
  }
  return g;
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
/// `x` rounded to TensorFloat-32 (10 mantissa bits, to nearest, ties away from
/// zero; Inf and NaN unchanged): what `dot(..., tf32=true)` multiplies.
inline float tf32(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  if ((bits & 0x7F800000u) != 0x7F800000u)
    bits = (bits + 0x1000u) & 0xFFFFE000u;
  float out;
  std::memcpy(&out, &bits, sizeof out);
  return out;
}

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

/// c = a * w for examples/quant_matmul.kiln's int4 weights: row-major a [m, k]
/// (f16 values), qw [cdiv(k, 2), n] (row p's code in the low nibble of byte
/// [p / 2] when p is even, the high one when odd), scales (f16 values) and
/// zero points [cdiv(k, group), n]; w = (code - zero) * scale rounded to f16.
inline std::vector<double> quantMatmul(const float *a, const uint8_t *qw, const float *scales,
                                       const uint8_t *zeros, int64_t m, int64_t n, int64_t k,
                                       int64_t group) {
  std::vector<float> w(k * n);
  for (int64_t p = 0; p < k; ++p)
    for (int64_t j = 0; j < n; ++j) {
      int code = (qw[(p / 2) * n + j] >> (p % 2 * 4)) & 0xF;
      int64_t g = (p / group) * n + j;
      w[p * n + j] = halfBitsToFloat(floatToHalfBits(float(code - zeros[g]) * scales[g]));
    }
  return matmul(a, w.data(), m, n, k, k, 1);
}

/// c = (a * w) scaled by sa[row] * sw[column], for examples/quant_matmul.kiln's
/// W8A8 kernel: a [m, k] and w [k, n] row-major int8, the products summed
/// exactly (as the kernel's i32 accumulator does within its range).
inline std::vector<double> matmulW8A8(const int8_t *a, const int8_t *w, const float *sa,
                                      const float *sw, int64_t m, int64_t n, int64_t k) {
  std::vector<double> c(m * n);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      int64_t sum = 0;
      for (int64_t p = 0; p < k; ++p)
        sum += int64_t(a[i * k + p]) * w[p * n + j];
      c[i * n + j] = double(sum) * sa[i] * sw[j];
    }
  return c;
}

/// examples/moe.kiln's grouped GEMM: x [t, k], w [e, k, n], y [t, n] row-major;
/// expert i owns the rows from the previous end up to ends[i], the ends read as
/// clamped running maxima. Rows no expert owns keep `y`'s values.
inline void moeMatmul(const float *x, const float *w, const int32_t *ends, int64_t t,
                      int64_t k, int64_t n, int64_t e, std::vector<double> &y) {
  int64_t start = 0;
  for (int64_t i = 0; i < e; ++i) {
    int64_t end = std::min<int64_t>(std::max<int64_t>(ends[i], start), t);
    std::vector<double> part = matmul(x + start * k, w + i * k * n, end - start, n, k, k, 1);
    std::copy(part.begin(), part.end(), y.begin() + start * n);
    start = end;
  }
}

/// y = x / sqrt(mean(x^2) + eps) * w, row by row; x and y row-major [m, n].
inline std::vector<double> rmsnorm(const float *x, const float *w, int64_t m, int64_t n,
                                   double eps) {
  std::vector<double> y(m * n);
  for (int64_t r = 0; r < m; ++r) {
    double sq = 0;
    for (int64_t c = 0; c < n; ++c)
      sq += double(x[r * n + c]) * x[r * n + c];
    double rstd = 1.0 / std::sqrt(sq / n + eps);
    for (int64_t c = 0; c < n; ++c)
      y[r * n + c] = x[r * n + c] * rstd * w[c];
  }
  return y;
}

/// Cross-entropy of row-major [m, n] logits against class indices, as torch's
/// cross_entropy(reduction="none", ignore_index=-100): per row the loss and the
/// logsumexp, and the gradient (softmax - onehot) * dloss.
struct CrossEntropy {
  std::vector<double> loss, lse, dx;
};
inline CrossEntropy crossEntropy(const float *x, const int64_t *target, const float *dloss,
                                 int64_t m, int64_t n) {
  CrossEntropy out{std::vector<double>(m), std::vector<double>(m), std::vector<double>(m * n)};
  for (int64_t r = 0; r < m; ++r) {
    const float *row = x + r * n;
    double top = -INFINITY, sum = 0;
    for (int64_t c = 0; c < n; ++c)
      top = std::max(top, double(row[c]));
    for (int64_t c = 0; c < n; ++c)
      sum += std::exp(double(row[c]) - top);
    out.lse[r] = top + std::log(sum);
    bool ignored = target[r] == -100;
    out.loss[r] = ignored ? 0.0 : out.lse[r] - row[target[r]];
    for (int64_t c = 0; c < n; ++c)
      out.dx[r * n + c] = ignored ? 0.0
                                  : (std::exp(double(row[c]) - out.lse[r]) -
                                     (c == target[r] ? 1.0 : 0.0)) * dloss[r];
  }
  return out;
}

/// c[z] = a[z] * b[z] for row-major a [batch, m, k], b [batch, k, n].
inline std::vector<double> bmm(const float *a, const float *b, int64_t batch, int64_t m,
                               int64_t n, int64_t k) {
  std::vector<double> c;
  c.reserve(batch * m * n);
  for (int64_t z = 0; z < batch; ++z) {
    std::vector<double> one = matmul(a + z * m * k, b + z * k * n, m, n, k, k, 1);
    c.insert(c.end(), one.begin(), one.end());
  }
  return c;
}

/// act(alpha * a * b + bias[col]) with act 0 none, 1 relu, 2 tanh-approximated gelu.
inline std::vector<double> matmulBiasAct(const float *a, const float *b, const float *bias,
                                         int64_t m, int64_t n, int64_t k, double alpha,
                                         int act) {
  std::vector<double> c = matmul(a, b, m, n, k, k, 1);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double y = alpha * c[i * n + j] + bias[j];
      if (act == 1)
        y = std::max(y, 0.0);
      else if (act == 2)
        y = 0.5 * y * (1 + std::tanh(0.7978845608028654 * (y + 0.044715 * y * y * y)));
      c[i * n + j] = y;
    }
  return c;
}

/// softmax(q k^T * scale, causal-masked when asked) v for row-major [batch, s, d].
inline std::vector<double> attention(const float *q, const float *k, const float *v,
                                     int64_t batch, int64_t s, int64_t d, double scale,
                                     bool causal) {
  std::vector<double> o(batch * s * d, 0.0), p(s);
  for (int64_t z = 0; z < batch; ++z) {
    const float *qz = q + z * s * d, *kz = k + z * s * d, *vz = v + z * s * d;
    for (int64_t i = 0; i < s; ++i) {
      int64_t end = causal ? i + 1 : s;
      double mx = -INFINITY, total = 0;
      for (int64_t j = 0; j < end; ++j) {
        double dotp = 0;
        for (int64_t c = 0; c < d; ++c)
          dotp += double(qz[i * d + c]) * kz[j * d + c];
        p[j] = dotp * scale;
        mx = std::max(mx, p[j]);
      }
      for (int64_t j = 0; j < end; ++j)
        total += (p[j] = std::exp(p[j] - mx));
      for (int64_t j = 0; j < end; ++j)
        for (int64_t c = 0; c < d; ++c)
          o[(z * s + i) * d + c] += p[j] / total * vz[j * d + c];
    }
  }
  return o;
}

/// Philox-4x32-10 (Salmon et al., Random123) on one counter and key.
inline std::array<uint32_t, 4> philox(std::array<uint32_t, 4> c, uint32_t k0, uint32_t k1) {
  for (int round = 0; round < 10; ++round) {
    uint64_t p0 = uint64_t(0xD2511F53) * c[0], p2 = uint64_t(0xCD9E8D57) * c[2];
    c = {uint32_t(p2 >> 32) ^ c[1] ^ k0, uint32_t(p2), uint32_t(p0 >> 32) ^ c[3] ^ k1,
         uint32_t(p0)};
    k0 += 0x9E3779B9;
    k1 += 0xBB67AE85;
  }
  return c;
}

/// Kiln's (and Triton's) rand(seed, offset): a uniform float in [0, 1).
inline float rand(int64_t seed, int64_t offset) {
  auto c = philox({uint32_t(offset), uint32_t(uint64_t(offset) >> 32), 0, 0}, uint32_t(seed),
                  uint32_t(uint64_t(seed) >> 32));
  int32_t x = int32_t(c[0]);
  return float(x < 0 ? ~x : x) * 4.6566127342e-10f;
}

inline std::vector<double> dropout(const float *x, int64_t n, float p, int64_t seed) {
  std::vector<double> y(n);
  for (int64_t i = 0; i < n; ++i)
    y[i] = rand(seed, i) > p ? double(x[i]) / (1.0 - p) : 0.0;
  return y;
}

/// torch.searchsorted(sorted, queries) (side 'left'): per query, the number of
/// elements of the ascending `sorted` that are less than it, NaN ordered last.
inline std::vector<int32_t> searchsorted(const float *sorted, int64_t n, const float *queries,
                                         int64_t q) {
  auto less = [](float a, float b) { return a < b || (std::isnan(b) && !std::isnan(a)); };
  std::vector<int32_t> out(q);
  for (int64_t i = 0; i < q; ++i)
    out[i] = int32_t(std::lower_bound(sorted, sorted + n, queries[i], less) - sorted);
  return out;
}

/// h[t] = a[t] * h[t-1] + x[t] per channel of row-major [t, d] inputs, from
/// `h0` (h[-1]); the result holds T rows of h, then the final state (T + 1 rows).
inline std::vector<double> linearRecurrence(const float *a, const float *x, const float *h0,
                                            int64_t t, int64_t d) {
  std::vector<double> out((t + 1) * d);
  for (int64_t j = 0; j < d; ++j) {
    double h = h0[j];
    for (int64_t i = 0; i < t; ++i)
      out[i * d + j] = h = double(a[i * d + j]) * h + x[i * d + j];
    out[t * d + j] = h;
  }
  return out;
}

/// Rotary embeddings, interleaved pairs: row r of `x` ([rows, head]) rotated by
/// the table entries (`cos`, `sin`: [positions, head / 2]) of position pos[r].
inline std::vector<double> rope(const float *x, const int32_t *pos, const float *cos,
                                const float *sin, int64_t rows, int64_t head) {
  std::vector<double> out(rows * head);
  int64_t half = head / 2;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < half; ++i) {
      double x0 = x[r * head + 2 * i], x1 = x[r * head + 2 * i + 1];
      double c = cos[pos[r] * half + i], s = sin[pos[r] * half + i];
      out[r * head + 2 * i] = x0 * c - x1 * s;
      out[r * head + 2 * i + 1] = x0 * s + x1 * c;
    }
  return out;
}

/// Rotary embeddings, rotate-half layout: feature i of row r pairs with feature
/// i + head / 2, rotated by the table entries of position pos[r].
inline std::vector<double> ropeHalf(const float *x, const int32_t *pos, const float *cos,
                                    const float *sin, int64_t rows, int64_t head) {
  std::vector<double> out(rows * head);
  int64_t half = head / 2;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < half; ++i) {
      double x0 = x[r * head + i], x1 = x[r * head + i + half];
      double c = cos[pos[r] * half + i], s = sin[pos[r] * half + i];
      out[r * head + i] = x0 * c - x1 * s;
      out[r * head + i + half] = x1 * c + x0 * s;
    }
  return out;
}

} // namespace kiln::reference
