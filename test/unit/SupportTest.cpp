//===- SupportTest.cpp - dtypes, half floats, tolerances, the thread pool -===//

#include "kiln/DType.h"
#include "lib/Support/Half.h"
#include "lib/Support/ThreadPool.h"
#include "lib/Support/Tolerance.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cmath>
#include <set>
#include <thread>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

using namespace kiln;

TEST(DType, NamesRoundTrip) {
  for (DType dt : {DType::I1, DType::I8, DType::I16, DType::I32, DType::I64, DType::F16,
                   DType::BF16, DType::F32, DType::F64})
    EXPECT_EQ(parseDType(dtypeName(dt)), dt);
  EXPECT_FALSE(parseDType("f8").has_value());
  EXPECT_EQ(dtypeBytes(DType::I1), 1u);
  EXPECT_EQ(dtypeBytes(DType::BF16), 2u);
}

TEST(Half, ExactValuesRoundTrip) {
  for (float f : {0.0f, -0.0f, 1.0f, -2.5f, 65504.0f, 6.103515625e-05f, 5.9604645e-08f})
    EXPECT_EQ(halfBitsToFloat(floatToHalfBits(f)), f) << f;
  EXPECT_EQ(floatToHalfBits(1.0f), 0x3c00);
}

TEST(Half, RoundsToNearestEvenAndSaturates) {
  EXPECT_EQ(floatToHalfBits(1.0f + 1.0f / 2048), 0x3c00);       // tie to even (down)
  EXPECT_EQ(floatToHalfBits(1.0f + 3.0f / 2048), 0x3c02);       // tie to even (up)
  EXPECT_EQ(floatToHalfBits(1e6f), 0x7c00);                     // overflow to inf
  EXPECT_TRUE(std::isnan(halfBitsToFloat(floatToHalfBits(NAN))));
}

TEST(BF16, RoundTripAndRounding) {
  EXPECT_EQ(bf16BitsToFloat(floatToBF16Bits(1.5f)), 1.5f);
  EXPECT_EQ(floatToBF16Bits(1.0f), 0x3f80);
  EXPECT_TRUE(std::isnan(bf16BitsToFloat(floatToBF16Bits(NAN))));
  EXPECT_EQ(bf16BitsToFloat(floatToBF16Bits(INFINITY)), INFINITY);
}

TEST(Tolerance, InfinitiesMatchOnlyThemselvesAndNaNMatchesNaN) {
  EXPECT_TRUE(withinTolerance(1.00001, 1.0, 1e-4, 0));
  EXPECT_FALSE(withinTolerance(1.001, 1.0, 1e-4, 0));
  EXPECT_TRUE(withinTolerance(1e-6, 0.0, 0, 1e-5));
  EXPECT_TRUE(withinTolerance(INFINITY, INFINITY, 1e-4, 1e-5));
  EXPECT_TRUE(withinTolerance(-INFINITY, -INFINITY, 1e-4, 1e-5));
  EXPECT_TRUE(withinTolerance(NAN, NAN, 0, 0));
  // rtol * |inf| is inf: without care any value would pass against an infinity.
  EXPECT_FALSE(withinTolerance(-12345.0, INFINITY, 1e-4, 1e-5));
  EXPECT_FALSE(withinTolerance(-INFINITY, INFINITY, 1e-4, 1e-5));
  EXPECT_FALSE(withinTolerance(NAN, INFINITY, 1e-4, 1e-5));
  EXPECT_FALSE(withinTolerance(INFINITY, 1e30, 1e-4, 1e-5));
  EXPECT_FALSE(withinTolerance(NAN, 1.0, 1e-4, 1e-5));
  EXPECT_FALSE(withinTolerance(1.0, NAN, 1e-4, 1e-5));
}

TEST(ThreadPool, ThreadCountFromTheEnvironmentOrTheCores) {
  unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  auto countWith = [](const char *value) {
    setenv("KILN_NUM_THREADS", value, 1);
    unsigned n = defaultThreadCount();
    unsetenv("KILN_NUM_THREADS");
    return n;
  };
  EXPECT_EQ(countWith("5"), 5u);
  EXPECT_EQ(countWith("1024"), 1024u);
  // Not a count from 1 to 1024: a warning, and the cores (huge values were cut
  // to 1024, words and zero ignored without a word).
  for (const char *bad : {"0", "-1", "abc", "4x", "1025", "99999999999999999999", ""})
    EXPECT_EQ(countWith(bad), cores) << "'" << bad << "'";
}

TEST(ThreadPool, EveryIndexExactlyOnce) {
  for (unsigned threads : {1u, 2u, 7u}) {
    const int64_t n = 10007;
    std::vector<std::atomic<int>> hits(n);
    std::vector<std::atomic<int>> busy(threads);
    parallelFor(n, threads, [&](int64_t i, unsigned w) {
      ASSERT_LT(w, threads);
      EXPECT_EQ(busy[w].fetch_add(1), 0) << "worker slot shared by two threads";
      hits[i].fetch_add(1);
      busy[w].fetch_sub(1);
    });
    for (int64_t i = 0; i < n; ++i)
      ASSERT_EQ(hits[i].load(), 1) << "index " << i << " with " << threads << " threads";
  }
}

TEST(ThreadPool, ConcurrentNestedAndForkedCallsAllFinish) {
  // The pool takes one job at a time; a call that finds it busy (from another
  // thread, or from inside a job) and a call in a forked child (which has no
  // workers) run on threads of their own.
  auto count = [](int64_t n, unsigned threads) {
    std::atomic<int64_t> sum{0};
    parallelFor(n, threads, [&](int64_t i, unsigned) { sum.fetch_add(i); });
    return sum.load();
  };
  const int64_t n = 5000, want = n * (n - 1) / 2;
  std::vector<std::thread> callers;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 4; ++t)
    callers.emplace_back([&] {
      for (int rep = 0; rep < 50; ++rep)
        wrong += count(n, 3) != want;
    });
  for (auto &t : callers)
    t.join();
  EXPECT_EQ(wrong.load(), 0);
  std::atomic<int64_t> inner{0};
  parallelFor(8, 2, [&](int64_t, unsigned) { inner += count(100, 2); });
  EXPECT_EQ(inner.load(), 8 * 4950);
  pid_t child = fork();
  if (child == 0)
    _exit(count(n, 2) == want ? 0 : 1);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

TEST(ThreadPool, EmptyRangeRunsNothing) {
  bool ran = false;
  parallelFor(0, 4, [&](int64_t, unsigned) { ran = true; });
  EXPECT_FALSE(ran);
}
