//===- cpu_loops.cpp - plain C++ peers for the CPU benchmarks --------------===//
//
// What a careful programmer writes without a kernel language: straight loops over
// rows, compiled with -O3 -march=native, parallelized over rows with the same
// thread pool Kiln's CPU backend uses.

#include "bench/peers/Peers.h"

#include "lib/Support/ThreadPool.h"

#include <algorithm>
#include <cmath>

void peers::softmax(const float *x, float *y, int64_t m, int64_t n, unsigned threads) {
  kiln::parallelFor(m, threads, [&](int64_t r, unsigned) {
    const float *row = x + r * n;
    float mx = -INFINITY, sum = 0;
    for (int64_t c = 0; c < n; ++c)
      mx = std::max(mx, row[c]);
    for (int64_t c = 0; c < n; ++c)
      sum += std::exp(row[c] - mx);
    float inv = 1.0f / sum;
    for (int64_t c = 0; c < n; ++c)
      y[r * n + c] = std::exp(row[c] - mx) * inv;
  });
}

void peers::layernorm(const float *x, const float *w, const float *b, float *y, int64_t m,
                      int64_t n, float eps, unsigned threads) {
  kiln::parallelFor(m, threads, [&](int64_t r, unsigned) {
    const float *row = x + r * n;
    float mean = 0, var = 0;
    for (int64_t c = 0; c < n; ++c)
      mean += row[c];
    mean /= n;
    for (int64_t c = 0; c < n; ++c)
      var += (row[c] - mean) * (row[c] - mean);
    float rstd = 1.0f / std::sqrt(var / n + eps);
    for (int64_t c = 0; c < n; ++c)
      y[r * n + c] = (row[c] - mean) * rstd * w[c] + b[c];
  });
}

void peers::rowSum(const float *x, float *out, int64_t m, int64_t n, unsigned threads) {
  kiln::parallelFor(m, threads, [&](int64_t r, unsigned) {
    float s = 0;
    for (int64_t c = 0; c < n; ++c)
      s += x[r * n + c];
    out[r] = s;
  });
}

void peers::linearRecurrence(const float *a, const float *x, const float *h0, float *h,
                             float *last, int64_t t, int64_t d, unsigned threads) {
  // Sequential in time, vectorized across a block of channels per task.
  constexpr int64_t kBlock = 64;
  kiln::parallelFor((d + kBlock - 1) / kBlock, threads, [&](int64_t blk, unsigned) {
    int64_t c0 = blk * kBlock, c1 = std::min(d, c0 + kBlock);
    float state[kBlock];
    for (int64_t c = c0; c < c1; ++c)
      state[c - c0] = h0[c];
    for (int64_t i = 0; i < t; ++i)
      for (int64_t c = c0; c < c1; ++c)
        h[i * d + c] = state[c - c0] = a[i * d + c] * state[c - c0] + x[i * d + c];
    for (int64_t c = c0; c < c1; ++c)
      last[c] = state[c - c0];
  });
}
