//===- Peers.h - hand-written baselines the benchmarks compare with -*- C++ -*-===//
#pragma once

#include <cstdint>

namespace peers {
void softmax(const float *x, float *y, int64_t m, int64_t n, unsigned threads);
void layernorm(const float *x, const float *w, const float *b, float *y, int64_t m, int64_t n,
               float eps, unsigned threads);
void rowSum(const float *x, float *out, int64_t m, int64_t n, unsigned threads);
/// h[t] = a[t] * h[t-1] + x[t] over [t, d] row-major inputs from h0; `last` gets h[t-1].
void linearRecurrence(const float *a, const float *x, const float *h0, float *h, float *last,
                      int64_t t, int64_t d, unsigned threads);
} // namespace peers
