//===- SessionTest.cpp - the C++ JIT API and its kernel cache -------------===//

#include "examples/reference/References.h"
#include "kiln/kiln.h"
#include "lib/Support/Half.h"
#include "test/Common/Compare.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <csignal>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace kiln;

namespace {

const char *kSoftmax = R"(
kernel softmax(x: tensor<f32>[M, N], y: tensor<f32>[M, N]) params(BLOCK: i32 = 64) grid(M) {
  let row = program_id(0);
  let cols = arange(0, BLOCK);
  let v = load(x[row, cols], other = -inf);
  let e = exp(v - max(v, axis = 0));
  store(y[row, cols], e / sum(e, axis = 0));
}
)";


/// A fresh cache folder per test, set through KILN_CACHE_DIR.
class SessionTest : public ::testing::Test {
protected:
  void SetUp() override {
    char tmpl[] = "/tmp/kiln-cache-test-XXXXXX";
    dir = mkdtemp(tmpl);
    setenv("KILN_CACHE_DIR", dir.c_str(), 1);
  }
  void TearDown() override {
    std::string cmd = "rm -rf '" + dir + "'";
    (void)std::system(cmd.c_str());
    unsetenv("KILN_CACHE_DIR");
  }
  /// Runs softmax through `s` and checks it; returns false on any failure.
  static ::testing::AssertionResult runSoftmax(Session &s, const Kernel &k) {
    int64_t m = 5, n = 50;
    auto host = test::randomVector(m * n, 1, -3, 3);
    Tensor x = s.upload(host, {m, n});
    Tensor y = s.empty<float>({m, n});
    if (rt::Status st = k(x, y); !st)
      return ::testing::AssertionFailure() << st.message();
    std::vector<float> out;
    if (rt::Status st = y.download(out); !st)
      return ::testing::AssertionFailure() << st.message();
    auto want = reference::softmax(host.data(), m, n, n);
    for (size_t i = 0; i < out.size(); ++i)
      if (std::abs(out[i] - want[i]) > 1e-5)
        return ::testing::AssertionFailure() << "element " << i << ": " << out[i] << " vs " << want[i];
    return ::testing::AssertionSuccess();
  }
  std::vector<std::string> cacheFiles() {
    std::vector<std::string> files;
    std::string cmd = "ls '" + dir + "'";
    if (FILE *p = popen(cmd.c_str(), "r")) {
      char line[512];
      while (fgets(line, sizeof line, p))
        files.push_back(dir + "/" + std::string(line, strcspn(line, "\n")));
      pclose(p);
    }
    return files;
  }
  std::string dir;
};

TEST_F(SessionTest, CompilesRunsAndCaches) {
  Session s("cpu");
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s.cacheDir(), dir);
  Kernel k = s.compile(kSoftmax, "softmax");
  ASSERT_TRUE(k.ok()) << k.status().message();
  EXPECT_TRUE(runSoftmax(s, k));
  EXPECT_EQ(s.cacheStats().compiles, 1);
  ASSERT_EQ(cacheFiles().size(), 1u);

  // Same request: the in-memory cache answers.
  EXPECT_TRUE(s.compile(kSoftmax, "softmax").ok());
  EXPECT_EQ(s.cacheStats().memoryHits, 1);

  // A new session (a new process, in effect) finds it on disk.
  Session t("cpu");
  Kernel k2 = t.compile(kSoftmax, "softmax");
  ASSERT_TRUE(k2.ok());
  EXPECT_EQ(t.cacheStats().diskHits, 1);
  EXPECT_EQ(t.cacheStats().compiles, 0);
  EXPECT_TRUE(runSoftmax(t, k2));
}

TEST_F(SessionTest, EveryKeyPartMisses) {
  Session s("cpu");
  ASSERT_TRUE(s.compile(kSoftmax, "softmax").ok());
  ASSERT_TRUE(s.compile(kSoftmax, "softmax", {{"BLOCK", "128"}}).ok()); // params
  ASSERT_TRUE(s.compile(std::string(kSoftmax) + "\n// edited\n", "softmax").ok()); // source
  EXPECT_EQ(s.cacheStats().compiles, 3);
  EXPECT_EQ(cacheFiles().size(), 3u);
  Session v("vulkan");
  if (v.ok()) { // another target
    Kernel k = v.compile(kSoftmax, "softmax");
    ASSERT_TRUE(k.ok()) << k.status().message();
    EXPECT_EQ(v.cacheStats().compiles, 1);
    EXPECT_TRUE(runSoftmax(v, k));
  }
}

TEST_F(SessionTest, MatrixUnitsOverrideIsPartOfTheKey) {
  // KILN_MATRIX_UNITS selects the matrix instructions (here "none", the only
  // choice besides auto on the CPU): a separate cache entry, and a value the
  // device cannot use is a compile error that names the choices.
  Session plain("cpu");
  ASSERT_TRUE(plain.compile(kSoftmax, "softmax").ok());
  setenv("KILN_MATRIX_UNITS", "none", 1);
  Session none("cpu");
  Kernel k = none.compile(kSoftmax, "softmax");
  ASSERT_TRUE(k.ok()) << k.status().message();
  EXPECT_EQ(none.cacheStats().compiles, 1);
  EXPECT_EQ(none.cacheStats().diskHits, 0);
  EXPECT_TRUE(runSoftmax(none, k));
  EXPECT_EQ(cacheFiles().size(), 2u);
  setenv("KILN_MATRIX_UNITS", "wgmma", 1);
  Session wrong("cpu");
  Kernel bad = wrong.compile(kSoftmax, "softmax");
  unsetenv("KILN_MATRIX_UNITS");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("KILN_MATRIX_UNITS: matrix units 'wgmma' are not "
                                        "available on cpu (choose auto, none)"),
            std::string::npos)
      << bad.status().message();
}

TEST_F(SessionTest, DamagedEntryIsRecompiled) {
  {
    Session s("cpu");
    ASSERT_TRUE(s.compile(kSoftmax, "softmax").ok());
  }
  auto files = cacheFiles();
  ASSERT_EQ(files.size(), 1u);
  std::string bytes;
  {
    std::ifstream in(files[0], std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    bytes = ss.str();
  }
  bytes[bytes.size() / 2] ^= 0x5a;
  std::ofstream(files[0], std::ios::binary) << bytes;

  Session s("cpu");
  Kernel k = s.compile(kSoftmax, "softmax");
  ASSERT_TRUE(k.ok()) << k.status().message();
  EXPECT_EQ(s.cacheStats().damagedEntries, 1);
  EXPECT_EQ(s.cacheStats().compiles, 1);
  EXPECT_TRUE(runSoftmax(s, k));
  Session t("cpu"); // the rewritten entry is good again
  ASSERT_TRUE(t.compile(kSoftmax, "softmax").ok());
  EXPECT_EQ(t.cacheStats().diskHits, 1);
}

TEST_F(SessionTest, ConcurrentProcessesShareTheCache) {
  // Two processes compile the same kernel into the same cache at once.
  std::vector<pid_t> children;
  for (int i = 0; i < 2; ++i) {
    pid_t pid = fork();
    if (pid == 0) {
      Session s("cpu");
      Kernel k = s.compile(kSoftmax, "softmax");
      _exit(k.ok() && runSoftmax(s, k) ? 0 : 1);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child failed";
  }
  auto files = cacheFiles();
  ASSERT_EQ(files.size(), 1u) << "a temporary file was left behind";
  Session s("cpu");
  ASSERT_TRUE(s.compile(kSoftmax, "softmax").ok());
  EXPECT_EQ(s.cacheStats().diskHits, 1);
}

TEST_F(SessionTest, UnwritableCacheFallsBackToMemory) {
  std::string file = dir + "/not-a-folder";
  std::ofstream(file) << "x";
  setenv("KILN_CACHE_DIR", (file + "/cache").c_str(), 1);
  Session s("cpu");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s.cacheDir(), "");
  Kernel k = s.compile(kSoftmax, "softmax");
  ASSERT_TRUE(k.ok());
  EXPECT_TRUE(runSoftmax(s, k));
  EXPECT_TRUE(s.compile(kSoftmax, "softmax").ok());
  EXPECT_EQ(s.cacheStats().memoryHits, 1);
}

/// Compiles and runs softmax on `device` in a child process whose file-size limit
/// is far below a cache entry's size: its writes fail the way a full disk makes
/// them fail (EFBIG instead of ENOSPC). Returns the child's exit code: 0 ran
/// correctly, 1 wrong result, 2 compile error (printed), 3 no such device.
int compileOnFullDisk(const char *device,
                      ::testing::AssertionResult (*runSoftmax)(Session &, const Kernel &)) {
  pid_t pid = fork();
  if (pid == 0) {
    std::signal(SIGXFSZ, SIG_IGN);
    rlimit limit{512, 512};
    setrlimit(RLIMIT_FSIZE, &limit);
    Session s(device);
    if (!s.ok())
      _exit(3);
    Kernel k = s.compile(kSoftmax, "softmax");
    if (!k.ok()) {
      fprintf(stderr, "%s\n", k.status().message().c_str());
      _exit(2);
    }
    _exit(runSoftmax(s, k) ? 0 : 1);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

TEST_F(SessionTest, FullDiskCostsOnlyTheCacheEntry) {
  // GPU code needs no files: only the cache entry is lost.
  int vulkan = compileOnFullDisk("vulkan", runSoftmax);
  if (vulkan != 3) {
    EXPECT_EQ(vulkan, 0) << "Vulkan compile or run failed on a full disk";
  }
  // Host code is linked and loaded from temporary files: a clear error, no crash.
  EXPECT_EQ(compileOnFullDisk("cpu", runSoftmax), 2);
  EXPECT_TRUE(cacheFiles().empty()) << "a partial entry or temporary file was left behind";

  // The next process compiles afresh and finds nothing damaged.
  Session s("cpu");
  ASSERT_TRUE(s.compile(kSoftmax, "softmax").ok());
  EXPECT_EQ(s.cacheStats().compiles, 1);
  EXPECT_EQ(s.cacheStats().damagedEntries, 0);
  EXPECT_EQ(cacheFiles().size(), 1u);
}

const char *kReductions = R"(
kernel reduce(x: tensor<f32>[N], out: tensor<f32>[4]) params(B: i32 = 64) {
  let i = arange(0, B);
  store(out[0], sum(load(x[i])));
  store(out[1], max(load(x[i], other = -inf)));
  store(out[2], min(load(x[i], other = inf)));
  store(out[3], prod(load(x[i], other = 1.0)));
})";

/// sum, max, min and prod of `x` on `device`; the same kernel as the CPU
/// numerics tests in test/e2e/DTypeTest.cpp, here through the GPU path.
std::vector<float> reduceOn(Session &s, std::vector<float> x) {
  Kernel k = s.compile(kReductions, "reduce");
  if (!k.ok()) {
    ADD_FAILURE() << k.status().message();
    return {};
  }
  int64_t n = static_cast<int64_t>(x.size());
  Tensor in = s.upload(x, {n});
  Tensor out = s.upload(std::vector<float>(4, -123.0f), {4});
  std::vector<float> result;
  if (rt::Status st = k(in, out); !st)
    ADD_FAILURE() << st.message();
  else if (rt::Status st = out.download(result); !st)
    ADD_FAILURE() << st.message();
  return result;
}

TEST_F(SessionTest, VulkanNaNInfAndEmptyExtents) {
  Session s("vulkan");
  if (!s.ok())
    GTEST_SKIP() << "no Vulkan device: " << s.status().message();
  auto nan = reduceOn(s, {1.0f, NAN, 2.0f});
  ASSERT_EQ(nan.size(), 4u);
  for (float v : nan)
    EXPECT_TRUE(std::isnan(v)) << v;
  auto inf = reduceOn(s, {INFINITY, 1.0f});
  ASSERT_EQ(inf.size(), 4u);
  EXPECT_EQ(inf[0], INFINITY);
  EXPECT_EQ(inf[1], INFINITY);
  EXPECT_EQ(inf[2], 1.0f);
  auto cancel = reduceOn(s, {INFINITY, -INFINITY});
  ASSERT_EQ(cancel.size(), 4u);
  EXPECT_TRUE(std::isnan(cancel[0]));
  EXPECT_EQ(cancel[1], INFINITY);
  EXPECT_EQ(cancel[2], -INFINITY);
  auto one = reduceOn(s, {-2.5f});
  ASSERT_EQ(one.size(), 4u);
  for (float v : one)
    EXPECT_EQ(v, -2.5f);
  auto empty = reduceOn(s, {});
  ASSERT_EQ(empty.size(), 4u);
  EXPECT_EQ(empty[0], 0.0f);
  EXPECT_EQ(empty[1], -INFINITY);
  EXPECT_EQ(empty[2], INFINITY);
  EXPECT_EQ(empty[3], 1.0f);
}

/// examples/matmul.kiln (matmul, matmul_bias_act, matmul_f16).
std::string matmulSource() {
  std::ifstream in(std::string(KILN_EXAMPLES_DIR) + "/matmul.kiln");
  std::stringstream source;
  source << in.rdbuf();
  return source.str();
}

/// The matmul example, tuned over tile shapes on the CPU and on Vulkan.
void tuneMatmul(const std::string &device, const std::string &cacheDir) {
  const std::string source = matmulSource();
  auto candidates = Session::combinations({{"BM", {"16", "32"}}, {"BN", {"16", "32"}}});
  ASSERT_EQ(candidates.size(), 4u);
  // One candidate cannot compile (a tile shape that is not a positive size): it is
  // reported and skipped, not fatal.
  candidates.push_back({{"BM", "0"}, {"BN", "32"}});

  int64_t m = 100, n = 70, k = 60;
  auto ha = test::randomVector(m * k, 1), hb = test::randomVector(k * n, 2);
  auto run = [&](Session &s, bool expectCached) -> ParamSet {
    Tensor a = s.upload(ha, {m, k}), b = s.upload(hb, {k, n}), c = s.empty<float>({m, n});
    TuneOptions options;
    options.repeats = 2;
    options.progress = 0;
    TuneResult r = s.autotune(source, "matmul", candidates, {a.arg(), b.arg(), c.arg()},
                              options, "matmul.kiln");
    EXPECT_TRUE(r.kernel.ok()) << r.kernel.status().message();
    EXPECT_EQ(r.fromCache, expectCached);
    if (!expectCached) {
      EXPECT_EQ(r.trials.size(), candidates.size());
      for (size_t i = 0; i + 1 < r.trials.size(); ++i)
        EXPECT_GT(r.trials[i].milliseconds, 0) << r.trials[i].error;
      EXPECT_LT(r.trials.back().milliseconds, 0);
      EXPECT_FALSE(r.trials.back().error.empty());
    } else {
      EXPECT_TRUE(r.trials.empty());
    }
    // Whatever won computes the right product.
    EXPECT_TRUE(r.kernel(a, b, c).ok());
    std::vector<float> out;
    EXPECT_TRUE(c.download(out).ok());
    EXPECT_TRUE(test::allClose(out, reference::matmul(ha.data(), hb.data(), m, n, k, k, 1), 1e-4,
                               1e-4));
    return r.params;
  };

  Session first(device);
  if (!first.ok())
    GTEST_SKIP() << "no " << device << " device: " << first.status().message();
  ParamSet chosen = run(first, false);
  EXPECT_EQ(first.cacheStats().tuneRuns, 1);
  EXPECT_EQ(first.cacheStats().compiles, 4);
  EXPECT_NE(std::find(candidates.begin(), candidates.end(), chosen), candidates.end());

  // A new session (a new process, in effect) reads the stored choice: no timing,
  // and only the winner is loaded, from the disk cache.
  Session second(device);
  EXPECT_EQ(run(second, true), chosen);
  EXPECT_EQ(second.cacheStats().tuneHits, 1);
  EXPECT_EQ(second.cacheStats().tuneRuns, 0);
  EXPECT_EQ(second.cacheStats().compiles, 0);
  EXPECT_EQ(second.cacheStats().diskHits, 1);

  // A damaged decision file is not trusted: the next session tunes again.
  std::string cmd = "for f in '" + cacheDir + "'/*.tune; do printf 'BM=7\\n' > \"$f\"; done";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  Session third(device);
  run(third, false);
  EXPECT_EQ(third.cacheStats().tuneRuns, 1);
  EXPECT_EQ(third.cacheStats().compiles, 0); // the candidates themselves were cached
}

TEST_F(SessionTest, VulkanDotEveryTileShapeAgrees) {
  // The FMA dot reads one A value per distinct row and one B value per distinct
  // column of a thread's registers when the layout repeats evenly: 32 x 32 (rows
  // repeat within a span of threads x 4 elements), 1 x 1024 (columns do). Other
  // shapes read per register: 64 x 48 (48 divides no span), 3 x 5 x 7 (ragged),
  // 16 x 16 on the generic Vulkan target (its 512-element span leaves threads
  // past the tile; the 32 threads of vulkan:*:cpu do not). All must agree.
  Session s("vulkan");
  if (!s.ok())
    GTEST_SKIP() << "no Vulkan device: " << s.status().message();
  const std::string source = matmulSource();
  int64_t m = 70, n = 530, k = 45;
  auto ha = test::randomVector(m * k, 3), hb = test::randomVector(k * n, 4);
  auto want = reference::matmul(ha.data(), hb.data(), m, n, k, k, 1);
  Tensor a = s.upload(ha, {m, k}), b = s.upload(hb, {k, n});
  for (auto [bm, bn, bk] : {std::tuple{32, 32, 32}, {1, 1024, 2}, {16, 16, 16}, {64, 48, 16},
                            {3, 5, 7}}) {
    Kernel kernel = s.compile(source, "matmul",
                              {{"BM", std::to_string(bm)}, {"BN", std::to_string(bn)},
                               {"BK", std::to_string(bk)}},
                              "matmul.kiln");
    ASSERT_TRUE(kernel.ok()) << kernel.status().message();
    Tensor c = s.upload(std::vector<float>(m * n, NAN), {m, n});
    ASSERT_TRUE(kernel(a, b, c).ok());
    std::vector<float> out;
    ASSERT_TRUE(c.download(out).ok());
    EXPECT_TRUE(test::allClose(out, want, 1e-4, 1e-4)) << bm << "x" << bn << "x" << bk;
  }
}

TEST_F(SessionTest, ShiftsAndBitwiseOperatorsOnEveryDevice) {
  // Shift amounts outside [0, bits) are defined (0 for <<, the sign for >>),
  // where LLVM and SPIR-V leave them undefined; ~, hex literals and the compound
  // assignments lower the same on the CPU and on Vulkan.
  const char *source = R"(
kernel bits(x: tensor<i32>[N], s: tensor<i32>[N], l: tensor<i32>[N], r: tensor<i32>[N],
            m: tensor<i32>[N], b: tensor<i8>[N], c: tensor<i8>[N])
    params(BLOCK: i32 = 64) grid(cdiv(N, BLOCK)) {
  let i = program_id(0) * BLOCK + arange(0, BLOCK);
  let v = load(x[i]);
  let a = load(s[i]);
  store(l[i], v << a);
  store(r[i], v >> a);
  var t = ~v;
  t %= 1000;
  t <<= 3;
  t >>= 1;
  t &= 0x7FFF_FF0F;
  t |= 0x100;
  t ^= 0x55;
  store(m[i], t);
  let w = load(b[i]);
  store(c[i], (w << cast<i8>(a)) + (w >> cast<i8>(a)));
}
)";
  const std::vector<int32_t> amounts = {0, 1, 5, 7, 8, 31, 32, 33, 100, -1, INT32_MIN};
  std::vector<int32_t> xs, ss;
  for (int32_t v : {0, 1, -1, 0x1234567, -0x7654321, INT32_MAX, INT32_MIN})
    for (int32_t a : amounts) {
      xs.push_back(v);
      ss.push_back(a);
    }
  const int64_t n = xs.size();
  std::vector<int8_t> bs(n);
  for (int64_t k = 0; k < n; ++k)
    bs[k] = static_cast<int8_t>(xs[k] ^ (xs[k] >> 8));
  auto shl = [](int64_t v, int64_t a, int bits) -> int64_t {
    if (a < 0 || a >= bits)
      return 0;
    uint64_t u = uint64_t(v) << a, mask = bits == 64 ? ~0ull : (1ull << bits) - 1;
    u &= mask;
    return (u >> (bits - 1)) & 1 ? int64_t(u | ~mask) : int64_t(u);
  };
  auto shr = [](int64_t v, int64_t a, int bits) -> int64_t {
    return a >= 0 && a < bits ? v >> a : (v < 0 ? -1 : 0);
  };
  for (const char *device : {"cpu", "vulkan"}) {
    Session s(device);
    if (!s.ok()) {
      std::printf("skipping %s: %s\n", device, s.status().message().c_str());
      continue;
    }
    Kernel k = s.compile(source, "bits");
    ASSERT_TRUE(k.ok()) << k.status().message();
    Tensor x = s.upload(xs, {n}), sh = s.upload(ss, {n}), l = s.empty<int32_t>({n}),
           r = s.empty<int32_t>({n}), m = s.empty<int32_t>({n}), b = s.upload(bs, {n}),
           c = s.empty<int8_t>({n});
    ASSERT_TRUE(k(x, sh, l, r, m, b, c).ok()) << device;
    std::vector<int32_t> lo, ro, mo;
    std::vector<int8_t> co;
    ASSERT_TRUE(l.download(lo).ok() && r.download(ro).ok() && m.download(mo).ok() &&
                c.download(co).ok());
    for (int64_t e = 0; e < n; ++e) {
      int32_t v = xs[e], a = ss[e];
      EXPECT_EQ(lo[e], shl(v, a, 32)) << device << ": " << v << " << " << a;
      EXPECT_EQ(ro[e], shr(v, a, 32)) << device << ": " << v << " >> " << a;
      int32_t t = ~v;
      t %= 1000;
      t = int32_t(shl(t, 3, 32));
      t >>= 1;
      t &= 0x7FFFFF0F;
      t |= 0x100;
      t ^= 0x55;
      EXPECT_EQ(mo[e], t) << device << ": " << v;
      int8_t a8 = static_cast<int8_t>(a), w = bs[e];
      EXPECT_EQ(co[e], static_cast<int8_t>(shl(w, a8, 8) + shr(w, a8, 8)))
          << device << ": " << int(w) << " and " << int(a8);
    }
  }
}

TEST_F(SessionTest, IntegerEdgeCasesAgreeOnEveryDevice) {
  // Division, remainder, min/max/abs, wrapping casts and 64-bit products at the
  // extremes, on the CPU and on Vulkan, against C++ (divisors 0, and -1 with
  // INT_MIN, are undefined and replaced by 1).
  const char *source = R"(
kernel ints(a: tensor<i32>[N], b: tensor<i32>[N], q: tensor<i32>[N], r: tensor<i32>[N],
            lo: tensor<i32>[N], hi: tensor<i32>[N], ab: tensor<i32>[N], narrow: tensor<i8>[N],
            wide: tensor<i64>[N], half: tensor<i16>[N])
    params(BLOCK: i32 = 64) grid(cdiv(N, BLOCK)) {
  let i = program_id(0) * BLOCK + arange(0, BLOCK);
  let x = load(a[i]);
  let y0 = load(b[i]);
  let y = where(y0 == 0 || (y0 == -1 && x == -2147483648), 1, y0);
  store(q[i], x / y);
  store(r[i], x % y);
  store(lo[i], min(x, y0));
  store(hi[i], max(x, y0));
  store(ab[i], abs(x));
  store(narrow[i], cast<i8>(x));
  store(wide[i], cast<i64>(x) * cast<i64>(y0) - 1);
  store(half[i], cast<i16>(x) * cast<i16>(y0));
}
)";
  const std::vector<int32_t> values = {0, 1, -1, 2, -2, 7, -7, 1000, -1000, 255, 256, -129,
                                       0x12345678, INT32_MAX, INT32_MIN, INT32_MIN + 1};
  std::vector<int32_t> as, bs;
  for (int32_t x : values)
    for (int32_t y : values) {
      as.push_back(x);
      bs.push_back(y);
    }
  const int64_t n = as.size();
  for (const char *device : {"cpu", "vulkan"}) {
    Session s(device);
    if (!s.ok()) {
      std::printf("skipping %s: %s\n", device, s.status().message().c_str());
      continue;
    }
    Kernel k = s.compile(source, "ints");
    ASSERT_TRUE(k.ok()) << k.status().message();
    Tensor a = s.upload(as, {n}), b = s.upload(bs, {n}), q = s.empty<int32_t>({n}),
           r = s.empty<int32_t>({n}), lo = s.empty<int32_t>({n}), hi = s.empty<int32_t>({n}),
           ab = s.empty<int32_t>({n}), narrow = s.empty<int8_t>({n}),
           wide = s.empty<int64_t>({n}), half = s.empty<int16_t>({n});
    ASSERT_TRUE(k(a, b, q, r, lo, hi, ab, narrow, wide, half).ok()) << device;
    std::vector<int32_t> qo, ro, loo, hio, abo;
    std::vector<int8_t> no;
    std::vector<int64_t> wo;
    std::vector<int16_t> ho;
    ASSERT_TRUE(q.download(qo).ok() && r.download(ro).ok() && lo.download(loo).ok() &&
                hi.download(hio).ok() && ab.download(abo).ok() && narrow.download(no).ok() &&
                wide.download(wo).ok() && half.download(ho).ok());
    for (int64_t e = 0; e < n; ++e) {
      int32_t x = as[e], y0 = bs[e];
      int32_t y = y0 == 0 || (y0 == -1 && x == INT32_MIN) ? 1 : y0;
      std::string at = std::string(device) + ": " + std::to_string(x) + ", " + std::to_string(y0);
      EXPECT_EQ(qo[e], x / y) << at;
      EXPECT_EQ(ro[e], x % y) << at;
      EXPECT_EQ(loo[e], std::min(x, y0)) << at;
      EXPECT_EQ(hio[e], std::max(x, y0)) << at;
      EXPECT_EQ(abo[e], x == INT32_MIN ? INT32_MIN : std::abs(x)) << at;
      EXPECT_EQ(no[e], static_cast<int8_t>(x)) << at;
      EXPECT_EQ(wo[e], int64_t(x) * int64_t(y0) - 1) << at;
      EXPECT_EQ(ho[e], static_cast<int16_t>(uint16_t(x) * uint16_t(y0))) << at;
    }
  }
}

TEST_F(SessionTest, ArgMaxAndArgMinOnEveryDevice) {
  // The first index of the largest / smallest element; NaN counts as the extreme
  // (as max and min propagate it), ties go to the lowest index. Rows of 1024
  // cover the CPU's chunked reductions; the i32 kernel has no NaN. On Vulkan the
  // f32 and i32 exchanges of the 4 x 1024 tile share one 16 KiB buffer.
  const char *source = R"(
kernel arg(x: tensor<f32>[M, N], rmax: tensor<i32>[M], cmin: tensor<i32>[N],
           flat: tensor<i32>[1], kept: tensor<i32>[M])
    params(BM: i32 = 4, BN: i32 = 1024) grid(1) {
  let r = arange(0, BM);
  let c = arange(0, BN);
  let t = load(x[expand_dims(r, 1), expand_dims(c, 0)], other = -inf);
  store(rmax[r], argmax(t, axis = 1));
  store(cmin[c], argmin(t, axis = -2));
  store(flat[0], argmax(t));
  let k = argmin(t, axis = 1, keepdims = true);
  store(kept[expand_dims(r, 1)], k);
}
kernel iarg(x: tensor<i32>[N], out: tensor<i32>[2]) params(B: i32 = 64) grid(1) {
  let v = load(x[arange(0, B)], other = 0);
  store(out[0], argmax(v));
  store(out[1], argmin(v, axis = 0));
}
)";
  const int64_t m = 4, n = 1024;
  std::vector<float> x(m * n);
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> small(-50, 50);
  for (float &v : x)
    v = float(small(rng)); // many ties
  x[1 * n + 700] = NAN;    // row 1: NaN wins argmax and argmin
  x[1 * n + 900] = NAN;
  x[0 * n + 5] = 1000;     // row 0: a clear maximum
  x[0 * n + 6] = 1000;     // tied later: index 5 wins
  auto first = [&](int64_t count, auto at, bool isMax) {
    int64_t best = 0;
    for (int64_t i = 0; i < count; ++i) {
      float v = at(i), b = at(best);
      if (std::isnan(b))
        break;
      if (std::isnan(v) || (isMax ? v > b : v < b))
        best = i;
    }
    return int32_t(best);
  };
  std::vector<int32_t> xi(50);
  for (size_t i = 0; i < xi.size(); ++i)
    xi[i] = (int32_t(i) * 7919) % 61 - 30;
  for (const char *device : {"cpu", "vulkan"}) {
    Session s(device);
    if (!s.ok()) {
      std::printf("skipping %s: %s\n", device, s.status().message().c_str());
      continue;
    }
    Kernel k = s.compile(source, "arg"), ki = s.compile(source, "iarg");
    ASSERT_TRUE(k.ok()) << k.status().message();
    ASSERT_TRUE(ki.ok()) << ki.status().message();
    Tensor tx = s.upload(x, {m, n}), rmax = s.empty<int32_t>({m}), cmin = s.empty<int32_t>({n}),
           flat = s.empty<int32_t>({1}), kept = s.empty<int32_t>({m});
    ASSERT_TRUE(k(tx, rmax, cmin, flat, kept).ok()) << device;
    std::vector<int32_t> ro, co, fo, ko;
    ASSERT_TRUE(rmax.download(ro).ok() && cmin.download(co).ok() && flat.download(fo).ok() &&
                kept.download(ko).ok());
    for (int64_t i = 0; i < m; ++i) {
      auto row = [&](int64_t j) { return x[i * n + j]; };
      EXPECT_EQ(ro[i], first(n, row, true)) << device << " row " << i;
      EXPECT_EQ(ko[i], first(n, row, false)) << device << " row " << i;
    }
    EXPECT_EQ(ro[1], 700) << device;
    EXPECT_EQ(ro[0], 5) << device;
    for (int64_t j = 0; j < n; ++j)
      EXPECT_EQ(co[j], first(m, [&](int64_t i) { return x[i * n + j]; }, false))
          << device << " column " << j;
    EXPECT_EQ(fo[0], first(m * n, [&](int64_t e) { return x[e]; }, true)) << device;
    EXPECT_EQ(fo[0], 1 * n + 700) << device;

    Tensor ti = s.upload(xi, {int64_t(xi.size())}), out = s.empty<int32_t>({2});
    ASSERT_TRUE(ki(ti, out).ok()) << device;
    std::vector<int32_t> io;
    ASSERT_TRUE(out.download(io).ok());
    // Lanes past the 50 loaded read 0, which neither wins nor ties first.
    auto lane = [&](int64_t i) { return float(i < 50 ? xi[i] : 0); };
    EXPECT_EQ(io[0], first(64, lane, true)) << device;
    EXPECT_EQ(io[1], first(64, lane, false)) << device;
  }
}

TEST_F(SessionTest, F8ConversionsAgreeOnEveryDevice) {
  // Every code of both fp8 formats decodes, and f32 values around every code
  // (ties, neighbours, overflow, subnormals, NaN) encode, to the same bits on
  // the CPU and on Vulkan (where fp8 values are bytes) as the host reference.
  const char *source = R"(
kernel decode(a: tensor<f8e4m3>[N], b: tensor<f8e5m2>[N], x: tensor<f32>[N], y: tensor<f32>[N])
    params(B: i32 = 256) grid(cdiv(N, B)) {
  let i = program_id(0) * B + arange(0, B);
  store(x[i], cast<f32>(load(a[i])));
  store(y[i], cast<f32>(load(b[i])));
}
kernel encode(v: tensor<f32>[N], a: tensor<f8e4m3>[N], b: tensor<f8e5m2>[N])
    params(B: i32 = 256) grid(cdiv(N, B)) {
  let i = program_id(0) * B + arange(0, B);
  let f = load(v[i]);
  store(a[i], cast<f8e4m3>(f));
  store(b[i], cast<f8e5m2>(f));
}
kernel scale(v: tensor<f32>[N], s: f8e5m2) grid(N) {
  let i = program_id(0);
  store(v[i], load(v[i]) * cast<f32>(s));
}
)";
  std::vector<uint8_t> codes(256);
  for (int c = 0; c < 256; ++c)
    codes[c] = uint8_t(c);
  std::vector<float> values;
  for (DType dt : {DType::F8E4M3, DType::F8E5M2})
    for (int c = 0; c < 256; ++c) {
      float v = f8BitsToFloat(uint8_t(c), dt);
      float next = f8BitsToFloat(uint8_t(c + 1), dt);
      values.push_back(v);
      values.push_back(std::nextafter(v, INFINITY));
      if (std::isfinite(v) && std::isfinite(next) && (c & 0x7f) != 0x7f)
        values.push_back((v + next) / 2); // the tie
    }
  for (float v : {1e9f, -1e9f, INFINITY, -INFINITY, 1e-30f, -1e-30f, 0.0f, -0.0f})
    values.push_back(v);
  const int64_t n = codes.size(), m = values.size();
  for (const char *device : {"cpu", "vulkan"}) {
    Session s(device);
    if (!s.ok()) {
      std::printf("skipping %s: %s\n", device, s.status().message().c_str());
      continue;
    }
    Kernel dec = s.compile(source, "decode"), enc = s.compile(source, "encode");
    ASSERT_TRUE(dec.ok()) << dec.status().message();
    ASSERT_TRUE(enc.ok()) << enc.status().message();
    Tensor a = s.upload(codes.data(), DType::F8E4M3, {n}),
           b = s.upload(codes.data(), DType::F8E5M2, {n}), x = s.empty<float>({n}),
           y = s.empty<float>({n});
    ASSERT_TRUE(dec(a, b, x, y).ok()) << device;
    std::vector<float> xo, yo;
    ASSERT_TRUE(x.download(xo).ok() && y.download(yo).ok());
    for (int c = 0; c < 256; ++c) {
      float wantA = f8BitsToFloat(uint8_t(c), DType::F8E4M3);
      float wantB = f8BitsToFloat(uint8_t(c), DType::F8E5M2);
      EXPECT_TRUE(std::isnan(wantA) ? std::isnan(xo[c]) : xo[c] == wantA &&
                  std::signbit(xo[c]) == std::signbit(wantA)) << device << " e4m3 " << c;
      EXPECT_TRUE(std::isnan(wantB) ? std::isnan(yo[c]) : yo[c] == wantB &&
                  std::signbit(yo[c]) == std::signbit(wantB)) << device << " e5m2 " << c;
    }
    Tensor v = s.upload(values, {m}), qa = s.empty(DType::F8E4M3, {m}),
           qb = s.empty(DType::F8E5M2, {m});
    ASSERT_TRUE(enc(v, qa, qb).ok()) << device;
    std::vector<uint8_t> ao(m), bo(m);
    ASSERT_TRUE(qa.download(ao.data()).ok() && qb.download(bo.data()).ok());
    for (int64_t i = 0; i < m; ++i) {
      EXPECT_EQ(ao[i], floatToF8Bits(values[i], DType::F8E4M3)) << device << " e4m3 of " << values[i];
      // e5m2 has several NaN codes; any NaN will do.
      if (std::isnan(values[i]))
        EXPECT_TRUE(std::isnan(f8BitsToFloat(bo[i], DType::F8E5M2))) << device;
      else
        EXPECT_EQ(bo[i], floatToF8Bits(values[i], DType::F8E5M2)) << device << " e5m2 of " << values[i];
    }
    // An fp8 scalar argument (a push-constant byte on Vulkan): -1.5 is exact.
    Kernel sc = s.compile(source, "scale");
    ASSERT_TRUE(sc.ok()) << sc.status().message();
    Tensor t = s.upload(std::vector<float>{2.0f, -4.0f, 0.25f}, {3});
    ASSERT_TRUE(sc(t, rt::Arg::floating(-1.5, DType::F8E5M2)).ok()) << device;
    std::vector<float> to;
    ASSERT_TRUE(t.download(to).ok());
    EXPECT_EQ(to, (std::vector<float>{-3.0f, 6.0f, -0.375f})) << device;
  }
}

using reference::philox;

TEST_F(SessionTest, RandomNumbersMatchPhiloxOnEveryDevice) {
  // rand/randint/randn are Triton's: Philox-4x32-10 on (offset, offset >> 32, 0, 0)
  // with the seed as key, the first word as bits, [0, 1) by complement and
  // 2^-31 scaling, Box-Muller on the first two words for randn.
  // Random123's known answer for a zero key and counter:
  EXPECT_EQ(philox({0, 0, 0, 0}, 0, 0), (std::array<uint32_t, 4>{0x6627e8d5, 0xe169c58d,
                                                                  0xbc57ac4c, 0x9b00dbd8}));
  const char *source = R"(
kernel r(bits: tensor<i32>[N], u: tensor<f32>[N], g: tensor<f32>[N], wide: tensor<i32>[N],
         seed: i64) params(B: i32 = 64) grid(cdiv(N, B)) {
  let i = program_id(0) * B + arange(0, B);
  store(bits[i], randint(seed, i));
  store(u[i], rand(seed, i));
  store(g[i], randn(seed, i));
  store(wide[i], randint(-7, cast<i64>(i) * 0x1_0000_0001));
}
)";
  const int64_t n = 1000, seed = 0x123456789abLL;
  auto uniform = [](uint32_t bits) {
    int32_t x = int32_t(bits);
    return float(x < 0 ? ~x : x) * 4.6566127342e-10f;
  };
  for (const char *device : {"cpu", "vulkan"}) {
    Session s(device);
    if (!s.ok()) {
      std::printf("skipping %s: %s\n", device, s.status().message().c_str());
      continue;
    }
    Kernel k = s.compile(source, "r");
    ASSERT_TRUE(k.ok()) << k.status().message();
    Tensor bits = s.empty<int32_t>({n}), u = s.empty<float>({n}), g = s.empty<float>({n}),
           wide = s.empty<int32_t>({n});
    ASSERT_TRUE(k(bits, u, g, wide, rt::Arg::integer(seed, DType::I64)).ok()) << device;
    std::vector<int32_t> bo, wo;
    std::vector<float> uo, go;
    ASSERT_TRUE(bits.download(bo).ok() && u.download(uo).ok() && g.download(go).ok() &&
                wide.download(wo).ok());
    double mean = 0;
    for (int64_t i = 0; i < n; ++i) {
      auto c = philox({uint32_t(i), 0, 0, 0}, uint32_t(seed), uint32_t(seed >> 32));
      EXPECT_EQ(uint32_t(bo[i]), c[0]) << device << " " << i;
      EXPECT_EQ(uo[i], uniform(c[0])) << device << " " << i;
      EXPECT_TRUE(uo[i] >= 0 && uo[i] < 1) << uo[i];
      float u1 = std::max(1.0e-7f, uniform(c[0])), th = 6.283185307179586f * uniform(c[1]);
      float want = std::sqrt(-2.0f * std::log(u1)) * std::cos(th);
      EXPECT_NEAR(go[i], want, 2e-5 * (1 + std::abs(want))) << device << " " << i;
      mean += uo[i] / n;
      uint64_t o = uint64_t(i) * 0x100000001ull;
      auto w = philox({uint32_t(o), uint32_t(o >> 32), 0, 0}, uint32_t(-7), uint32_t(-1));
      EXPECT_EQ(uint32_t(wo[i]), w[0]) << device << " " << i;
    }
    EXPECT_NEAR(mean, 0.5, 0.05) << device;
  }
}

TEST_F(SessionTest, AutotuneCPUStoresItsChoice) { tuneMatmul("cpu", dir); }
TEST_F(SessionTest, AutotuneVulkanStoresItsChoice) { tuneMatmul("vulkan", dir); }

TEST_F(SessionTest, AutotuneOverDeclaredValues) {
  // matmul.kiln declares BM, BN in {32, 64, 128} and BK in {32, 64}: 18 candidates.
  const std::string source = matmulSource();
  int64_t m = 64, n = 64, k = 64;
  Session s("cpu");
  ASSERT_TRUE(s.ok());
  Tensor a = s.upload(test::randomVector(m * k, 1), {m, k}),
         b = s.upload(test::randomVector(k * n, 2), {k, n}), c = s.empty<float>({m, n});
  TuneOptions options;
  options.repeats = 1;
  options.progress = 0;
  TuneResult r = s.autotune(source, "matmul", {a.arg(), b.arg(), c.arg()}, options);
  ASSERT_TRUE(r.kernel.ok()) << r.kernel.status().message();
  EXPECT_EQ(r.trials.size(), 18u);
  EXPECT_EQ(r.params.size(), 3u);
  // A kernel that declares nothing is told so.
  TuneResult none = s.autotune(kSoftmax, "softmax", {}, options);
  EXPECT_FALSE(none.kernel.ok());
  EXPECT_NE(none.kernel.status().message().find("declares no tune values"), std::string::npos);
}

TEST_F(SessionTest, AutotuneTimesIdenticalBinariesOnce) {
  // matmul_f16 declares STAGES in {2, 3, 4}, which only NVIDIA's pipelining
  // reads: on the CPU the three builds of each tile shape are one binary, timed
  // once and reported as the same code.
  const std::string source = matmulSource();
  int64_t m = 64, n = 64, k = 32;
  Session s("cpu");
  ASSERT_TRUE(s.ok());
  std::vector<uint16_t> ones(std::max(m, n) * k, 0x3C00); // f16 1.0
  Tensor a = s.upload(ones.data(), DType::F16, {m, k}),
         b = s.upload(ones.data(), DType::F16, {k, n}), c = s.empty<float>({m, n});
  TuneOptions options;
  options.repeats = 1;
  options.progress = 0;
  TuneResult r = s.autotune(source, "matmul_f16", {a.arg(), b.arg(), c.arg()}, options);
  ASSERT_TRUE(r.kernel.ok()) << r.kernel.status().message();
  ASSERT_EQ(r.trials.size(), 24u);
  int timed = 0;
  for (const TuneTrial &t : r.trials) {
    if (t.sameCodeAs < 0) {
      ++timed;
      continue;
    }
    const TuneTrial &twin = r.trials.at(t.sameCodeAs);
    EXPECT_EQ(twin.sameCodeAs, -1);
    EXPECT_EQ(t.milliseconds, twin.milliseconds);
    for (const char *name : {"BM", "BN"}) // only ignored params may differ
      EXPECT_EQ(t.params.at(name), twin.params.at(name));
  }
  EXPECT_LE(timed, 8); // at most BM x BN x NUM_WARPS distinct builds
  EXPECT_GE(timed, 4); // the tile shapes do differ
}

TEST(Autotune, CombinationsAreTheCartesianProduct) {
  auto c = Session::combinations({{"A", {"1", "2", "3"}}, {"B", {"x", "y"}}});
  ASSERT_EQ(c.size(), 6u);
  EXPECT_EQ(c.front(), (ParamSet{{"A", "1"}, {"B", "x"}}));
  EXPECT_EQ(c.back(), (ParamSet{{"A", "3"}, {"B", "y"}}));
  EXPECT_EQ(Session::combinations({}).size(), 1u); // the defaults alone
}

TEST_F(SessionTest, ErrorsAreValues) {
  Session s("cpu");
  Kernel bad = s.compile("kernel k(x: tensor<f32>[N]) { store(x[0], y); }", "k", {}, "bad.kiln");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("bad.kiln:1:43: error: unknown name 'y'"),
            std::string::npos)
      << bad.status().message();
  EXPECT_EQ(bad(1.0f).message(), bad.status().message());
  Session none("tpu");
  EXPECT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("unknown device kind 'tpu'"), std::string::npos);
  EXPECT_FALSE(none.compile(kSoftmax, "softmax").ok());
}

} // namespace
