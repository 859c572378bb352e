//===- ThreadPool.cpp - run the program grid on all cores -----------------===//
//
// One pool of worker threads lives for the whole process, so a launch costs a
// wake-up, not a thread creation and join per worker (which took longer than a
// small GEMM's whole grid). Workers spin briefly after a job, then sleep on a
// condition variable. A parallelFor that finds the pool busy (another thread's
// launch, or a call from inside a job) and one in a forked child (which has no
// workers) start threads of their own, as every call used to.
//
//===----------------------------------------------------------------------===//

#include "lib/Support/ThreadPool.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

#include <sched.h>
#include <unistd.h>

/// The cores this process may run on (its affinity mask: `taskset -c 0` gives
/// one), read once: glibc's hardware_concurrency() opens and parses a sysfs file
/// on every call, which took 80% of an empty kernel's 22 us launch.
static unsigned hostCores() {
  static const unsigned cores = [] {
    cpu_set_t set;
    // The process's mask (its main thread's), whichever thread launches first.
    if (sched_getaffinity(getpid(), sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
      return static_cast<unsigned>(CPU_COUNT(&set));
    return std::max(1u, std::thread::hardware_concurrency());
  }();
  return cores;
}

unsigned kiln::defaultThreadCount() {
  unsigned cores = hostCores();
  const char *env = std::getenv("KILN_NUM_THREADS");
  if (!env || !*env)
    return cores;
  char *end = nullptr;
  errno = 0;
  long n = std::strtol(env, &end, 10);
  if (*end == '\0' && errno == 0 && n > 0 && n <= 1024)
    return static_cast<unsigned>(n);
  static std::atomic<bool> warned{false};
  if (!warned.exchange(true))
    std::fprintf(stderr,
                 "kiln: warning: KILN_NUM_THREADS='%s' is not a thread count from 1 to 1024; "
                 "using %u\n",
                 env, cores);
  return cores;
}

namespace {

/// Hands out [0, n) in chunks from a shared counter; worker slots are fixed per
/// participating thread.
struct Job {
  const std::function<void(int64_t, unsigned)> *fn = nullptr;
  int64_t n = 0, chunk = 1;
  std::atomic<int64_t> next{0};

  void run(unsigned worker) {
    for (;;) {
      int64_t begin = next.fetch_add(chunk);
      if (begin >= n)
        return;
      for (int64_t i = begin, end = std::min(n, begin + chunk); i < end; ++i)
        (*fn)(i, worker);
    }
  }
};

class Pool {
public:
  explicit Pool(unsigned workers) : owner(getpid()) {
    for (unsigned w = 1; w <= workers; ++w)
      threads.emplace_back([this, w] { serve(w); });
  }

  /// Runs `job` on the calling thread and workers 1 .. threads-1; false (and
  /// nothing run) when the pool cannot take it now.
  bool tryRun(Job &job, unsigned participants) {
    if (getpid() != owner || participants - 1 > threads.size())
      return false;
    std::unique_lock<std::mutex> busy(launch, std::try_to_lock);
    if (!busy.owns_lock())
      return false;
    {
      std::lock_guard<std::mutex> lock(mutex);
      current = &job;
      helpers = participants - 1;
      pending.store(helpers);
      generation.fetch_add(1);
    }
    wake.notify_all();
    job.run(0);
    // Wait for the helpers to leave the job before it goes out of scope.
    while (pending.load() != 0)
      std::this_thread::yield();
    return true;
  }

private:
  void serve(unsigned worker) {
    uint64_t seen = 0;
    for (;;) {
      // Spin a little: back-to-back launches find the worker awake.
      for (int spin = 0; spin < 4000 && generation.load() == seen; ++spin)
        std::this_thread::yield();
      Job *job;
      unsigned active;
      {
        std::unique_lock<std::mutex> lock(mutex);
        wake.wait(lock, [&] { return generation.load() != seen; });
        seen = generation.load();
        job = current;
        active = helpers;
      }
      if (worker <= active) {
        job->run(worker);
        pending.fetch_sub(1);
      }
    }
  }

  const pid_t owner;
  std::vector<std::thread> threads;
  std::mutex launch;            // one job at a time
  std::mutex mutex;             // guards current/helpers and the wake-up
  std::condition_variable wake;
  Job *current = nullptr;
  unsigned helpers = 0;
  std::atomic<uint64_t> generation{0};
  std::atomic<unsigned> pending{0};
};

/// Never destroyed: a launch may still run while the process exits (a global
/// Stream's destructor waits for its work), and a pool torn down under it left
/// the launch waiting for workers that had gone. The workers end with the process.
Pool &pool() {
  static Pool *instance = new Pool(kiln::defaultThreadCount() - 1);
  return *instance;
}

} // namespace

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
  Job job;
  job.fn = &fn;
  job.n = n;
  job.chunk = std::max<int64_t>(1, n / (int64_t(threads) * 8));
  if (pool().tryRun(job, threads))
    return;
  std::vector<std::thread> spawned;
  for (unsigned t = 1; t < threads; ++t)
    spawned.emplace_back([&job, t] { job.run(t); });
  job.run(0);
  for (auto &t : spawned)
    t.join();
}
