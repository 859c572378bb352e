//===- ThreadPool.cpp - run the program grid on all cores -----------------===//

#include "lib/Support/ThreadPool.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <thread>
#include <vector>

unsigned kiln::defaultThreadCount() {
  if (const char *env = std::getenv("KILN_NUM_THREADS")) {
    long n = std::strtol(env, nullptr, 10);
    if (n > 0)
      return static_cast<unsigned>(std::min(n, 1024L));
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

void kiln::parallelFor(int64_t n, unsigned threads,
                       const std::function<void(int64_t, unsigned)> &fn) {
  if (n <= 0)
    return;
  threads = static_cast<unsigned>(std::max<int64_t>(1, std::min<int64_t>(threads, n)));
  if (threads == 1) {
    for (int64_t i = 0; i < n; ++i)
      fn(i, 0);
    return;
  }
  const int64_t chunk = std::max<int64_t>(1, n / (int64_t(threads) * 8));
  std::atomic<int64_t> next{0};
  auto work = [&](unsigned worker) {
    for (;;) {
      int64_t begin = next.fetch_add(chunk);
      if (begin >= n)
        return;
      for (int64_t i = begin, end = std::min(n, begin + chunk); i < end; ++i)
        fn(i, worker);
    }
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t)
    pool.emplace_back(work, t);
  work(0);
  for (auto &t : pool)
    t.join();
}
