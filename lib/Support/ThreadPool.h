//===- ThreadPool.h - run the program grid on all cores ---------*- C++ -*-===//
#pragma once

#include <cstdint>
#include <functional>

namespace kiln {

/// Number of worker threads: KILN_NUM_THREADS when set, else the hardware's.
unsigned defaultThreadCount();

/// Calls `fn(i, worker)` for every i in [0, n) on up to `threads` threads; each
/// worker index in [0, threads) is used by one thread at a time. Work is handed out
/// in small chunks from a shared counter, so uneven programs balance themselves.
void parallelFor(int64_t n, unsigned threads,
                 const std::function<void(int64_t, unsigned)> &fn);

} // namespace kiln
