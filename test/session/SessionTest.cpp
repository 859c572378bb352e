//===- SessionTest.cpp - the C++ JIT API and its kernel cache -------------===//

#include "examples/reference/References.h"
#include "kiln/kiln.h"
#include "test/Common/Compare.h"
#include "test/session/FreshCache.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <csignal>
#include <sys/resource.h>
#include <sys/stat.h>
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


/// A fresh cache folder per test, and helpers for the cache tests.
class SessionTest : public test::FreshCacheTest {
protected:
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

TEST_F(SessionTest, UploadsCheckTheHostDataAndTakeBools) {
  // A vector that does not fill the shape is an error, not a read past its end;
  // std::vector<bool> (bits, no data()) goes up and comes down as i1 bytes.
  Session s("cpu");
  ASSERT_TRUE(s.ok()) << s.status().message();
  Tensor short_ = s.upload(std::vector<float>(10), {4, 4});
  EXPECT_FALSE(short_.ok());
  EXPECT_NE(short_.status().message().find("holds 10 elements but the shape needs 16"),
            std::string::npos)
      << short_.status().message();
  Kernel k = s.compile(R"(
kernel flip(m: tensor<i1>[N], out: tensor<i1>[N]) grid(1) {
  let o = arange(0, 8);
  store(out[o], !load(m[o]), mask = o < N);
}
)", "flip");
  ASSERT_TRUE(k.ok()) << k.status().message();
  std::vector<bool> mask = {true, false, false, true, true};
  Tensor m = s.upload(mask, {5}), out = s.empty<bool>({5});
  EXPECT_EQ(m.dtype(), DType::I1);
  ASSERT_TRUE(k(m, out).ok());
  std::vector<bool> flipped;
  ASSERT_TRUE(out.download(flipped).ok());
  EXPECT_EQ(flipped, (std::vector<bool>{false, true, true, false, false}));
  // A bool scalar is an i1 argument (it was passed as an i32, a type error).
  Kernel pick = s.compile(R"(
kernel pick(out: tensor<i32>[N], flag: i1) grid(1) {
  store(out[0], where(flag, 7, 3));
}
)", "pick");
  ASSERT_TRUE(pick.ok()) << pick.status().message();
  Tensor picked = s.empty<int32_t>({1});
  for (bool flag : {true, false}) {
    ASSERT_TRUE(pick(picked, flag).ok()) << pick(picked, flag).message();
    std::vector<int32_t> value;
    ASSERT_TRUE(picked.download(value).ok());
    EXPECT_EQ(value.at(0), flag ? 7 : 3);
  }
  // Downloads into elements of another type are errors, neither overruns nor
  // floats read as integers; unsigned integers of the size give the bits.
  std::vector<bool> notBools;
  Tensor ints = s.empty<int32_t>({4});
  rt::Status wrongBools = ints.download(notBools);
  EXPECT_FALSE(wrongBools.ok());
  EXPECT_NE(wrongBools.message().find("cannot download a tensor of i32 into a vector of bools"),
            std::string::npos)
      << wrongBools.message();
  std::vector<double> wide;
  EXPECT_FALSE(ints.download(wide).ok());
  Tensor floats = s.upload(std::vector<float>{1.5f}, {1});
  std::vector<int32_t> notFloats;
  EXPECT_EQ(floats.download(notFloats).message(),
            "cannot download a tensor of f32 into a vector of i32 (use its element type, or "
            "unsigned integers of 4 bytes for its bits)");
  std::vector<uint32_t> bits;
  ASSERT_TRUE(floats.download(bits).ok());
  EXPECT_EQ(bits, (std::vector<uint32_t>{0x3fc00000u}));
  EXPECT_FALSE(s.empty<float>({int64_t(1) << 40, int64_t(1) << 40}).ok()); // size overflows
  EXPECT_EQ(s.empty(static_cast<DType>(99), {4}).status().message(), "not a dtype: 99");
}

TEST_F(SessionTest, EveryKeyPartMisses) {
  Session s("cpu");
  ASSERT_TRUE(s.compile(kSoftmax, "softmax").ok());
  ASSERT_TRUE(s.compile(kSoftmax, "softmax", {{"BLOCK", "128"}}).ok()); // params
  ASSERT_TRUE(s.compile(std::string(kSoftmax) + "\n// edited\n", "softmax").ok()); // source
  // The file name: print and device_assert messages carry it (the same text from
  // a second file named the first).
  ASSERT_TRUE(s.compile(kSoftmax, "softmax", {}, "other/softmax.kiln").ok());
  EXPECT_EQ(s.cacheStats().compiles, 4);
  EXPECT_EQ(cacheFiles().size(), 4u);
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

TEST_F(SessionTest, AnEntryUnderAnotherKeysNameIsRecompiled) {
  // The BLOCK=8 softmax's entry copied over the BLOCK=64 one's file loaded as
  // BLOCK=64 and cut every row at 8 columns. Entries record their key.
  std::string narrow, wide;
  {
    Session s("cpu");
    ASSERT_TRUE(s.compile(kSoftmax, "softmax", {{"BLOCK", "8"}}).ok());
    narrow = cacheFiles().at(0);
    ASSERT_TRUE(s.compile(kSoftmax, "softmax").ok());
    for (const std::string &f : cacheFiles())
      if (f != narrow)
        wide = f;
  }
  ASSERT_FALSE(wide.empty());
  std::ifstream in(narrow, std::ios::binary);
  std::ofstream(wide, std::ios::binary) << in.rdbuf();
  Session s("cpu");
  Kernel k = s.compile(kSoftmax, "softmax");
  ASSERT_TRUE(k.ok()) << k.status().message();
  EXPECT_EQ(s.cacheStats().damagedEntries, 1);
  EXPECT_EQ(s.cacheStats().compiles, 1);
  EXPECT_TRUE(runSoftmax(s, k));
}

TEST_F(SessionTest, EntriesThatAreNotFilesAreRecompiled) {
  // A pipe in an entry's place blocked the reader; a link to /dev/zero read
  // until memory ran out. Both are damaged entries: compiled afresh, replaced.
  std::string entry;
  {
    Session s("cpu");
    ASSERT_TRUE(s.compile(kSoftmax, "softmax").ok());
    entry = cacheFiles().at(0);
  }
  // A folder (with a file in it) was never replaced: the rename onto it failed,
  // and every session compiled again without counting the damage.
  // An empty file was recompiled but not counted as damage.
  for (const char *kind : {"pipe", "link", "folder", "empty"}) {
    std::string what = kind;
    std::remove(entry.c_str());
    if (what == "empty")
      std::ofstream(entry.c_str()).flush();
    else
      ASSERT_EQ(what == "pipe"   ? mkfifo(entry.c_str(), 0600)
                : what == "link" ? symlink("/dev/zero", entry.c_str())
                                 : mkdir(entry.c_str(), 0700),
                0);
    if (what == "folder")
      std::ofstream(entry + "/inside") << "x";
    Session s("cpu");
    Kernel k = s.compile(kSoftmax, "softmax");
    ASSERT_TRUE(k.ok()) << k.status().message();
    EXPECT_EQ(s.cacheStats().compiles, 1) << kind;
    EXPECT_EQ(s.cacheStats().damagedEntries, 1) << kind;
    EXPECT_TRUE(runSoftmax(s, k));
    struct stat st;
    ASSERT_EQ(lstat(entry.c_str(), &st), 0);
    EXPECT_TRUE(S_ISREG(st.st_mode)) << "the entry is a file again";
  }
}

TEST_F(SessionTest, LoadsBundlesWithoutCompiling) {
  // A cache entry is a .kbin bundle: the one the JIT wrote loads through
  // Session::load, by name or as the first kernel, and runs.
  {
    Session s("cpu");
    ASSERT_TRUE(s.compile(kSoftmax, "softmax").ok());
  }
  auto files = cacheFiles();
  ASSERT_EQ(files.size(), 1u);
  std::ifstream in(files[0], std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();

  Session s("cpu");
  for (const char *name : {"softmax", ""}) {
    Kernel k = s.load(bytes.str(), name);
    ASSERT_TRUE(k.ok()) << k.status().message();
    EXPECT_EQ(k.info()->name, "softmax");
    EXPECT_TRUE(runSoftmax(s, k));
  }
  EXPECT_EQ(s.cacheStats().compiles, 0);

  Kernel missing = s.load(bytes.str(), "layernorm");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().message(), "the bundle has no kernel 'layernorm' (it has softmax)");
  std::string damaged = bytes.str();
  damaged[damaged.size() / 2] ^= 0x5a;
  Kernel bad = s.load(damaged);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("checksum mismatch"), std::string::npos)
      << bad.status().message();
  Session vulkan("vulkan");
  if (vulkan.ok()) { // the bundle holds only the CPU's code
    Kernel other = vulkan.load(bytes.str());
    ASSERT_FALSE(other.ok());
    EXPECT_NE(other.status().message().find("the bundle has no code for vulkan"),
              std::string::npos)
        << other.status().message();
  }
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

TEST_F(SessionTest, TheCacheKeepsUnderItsSizeLimitByDroppingTheLeastRecentlyUsed) {
  // Three binaries of one kernel; the limit holds two and a half of them.
  auto compileBlock = [](Session &s, int block) {
    return s.compile(kSoftmax, "softmax", {{"BLOCK", std::to_string(block)}}).ok();
  };
  auto sizeOf = [](const std::string &path) { return std::filesystem::file_size(path); };
  std::string a, b;
  {
    Session s("cpu");
    ASSERT_TRUE(compileBlock(s, 64));
    a = cacheFiles().at(0);
    ASSERT_TRUE(compileBlock(s, 128));
    for (const std::string &f : cacheFiles())
      if (f != a)
        b = f;
  }
  ASSERT_FALSE(b.empty());
  // Files that are not Kiln's stay, however old or large: the folder may be shared.
  std::string foreign = dir + "/model.kbin", stale = dir + "/notes.tmp.1";
  std::ofstream(foreign) << std::string(1 << 20, 'x');
  std::ofstream(stale) << "x";
  uint64_t limit = sizeOf(a) + sizeOf(b) + std::min(sizeOf(a), sizeOf(b)) / 2;
  setenv("KILN_CACHE_MAX_SIZE", std::to_string(limit).c_str(), 1);
  // Make `a` the older entry on disk, then use it: a disk hit makes it the newer.
  auto old = std::filesystem::file_time_type::clock::now() - std::chrono::hours(2);
  std::filesystem::last_write_time(foreign, old - std::chrono::hours(1));
  std::filesystem::last_write_time(stale, old - std::chrono::hours(1));
  std::filesystem::last_write_time(a, old);
  std::filesystem::last_write_time(b, old + std::chrono::minutes(1));
  Session s("cpu");
  ASSERT_TRUE(compileBlock(s, 64));
  EXPECT_EQ(s.cacheStats().diskHits, 1);
  ASSERT_TRUE(compileBlock(s, 256)); // past the limit: `b` goes
  unsetenv("KILN_CACHE_MAX_SIZE");
  EXPECT_EQ(s.cacheStats().evictedEntries, 1);
  EXPECT_TRUE(std::filesystem::exists(foreign) && std::filesystem::exists(stale));
  std::filesystem::remove(foreign);
  std::filesystem::remove(stale);
  auto files = cacheFiles();
  EXPECT_EQ(files.size(), 2u);
  EXPECT_TRUE(std::filesystem::exists(a)) << "the entry just used was removed";
  EXPECT_FALSE(std::filesystem::exists(b)) << "the least recently used entry stayed";
  uint64_t total = 0;
  for (const std::string &f : files)
    total += sizeOf(f);
  EXPECT_LE(total, limit);
  // A removed entry is only a miss.
  Session t("cpu");
  ASSERT_TRUE(compileBlock(t, 128));
  EXPECT_EQ(t.cacheStats().compiles, 1);
  EXPECT_EQ(t.cacheStats().damagedEntries, 0);
}

TEST_F(SessionTest, NoCacheSizeLimitKeepsEverything) {
  setenv("KILN_CACHE_MAX_SIZE", "0", 1);
  Session s("cpu");
  for (int block : {64, 128, 256})
    ASSERT_TRUE(s.compile(kSoftmax, "softmax", {{"BLOCK", std::to_string(block)}}).ok());
  unsetenv("KILN_CACHE_MAX_SIZE");
  EXPECT_EQ(s.cacheStats().evictedEntries, 0);
  EXPECT_EQ(cacheFiles().size(), 3u);
}

TEST_F(SessionTest, ACacheSizeKilnCannotReadIsSaidAndTheDefaultHolds) {
  setenv("KILN_CACHE_MAX_SIZE", "2TB", 1);
  testing::internal::CaptureStderr();
  Session s("cpu");
  std::string said = testing::internal::GetCapturedStderr();
  unsetenv("KILN_CACHE_MAX_SIZE");
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_NE(said.find("KILN_CACHE_MAX_SIZE='2TB' is not a size"), std::string::npos) << said;
  ASSERT_TRUE(s.compile(kSoftmax, "softmax").ok());
  EXPECT_EQ(cacheFiles().size(), 1u);
}

TEST_F(SessionTest, ATensorPassesAsAStridedView) {
  // x.view(...) hands a kernel the tensor's memory with other sizes and strides,
  // as torch's as_strided: here a [2, 3] tensor read as its [3, 2] transpose.
  test::forEachDevice([](Session &s, const std::string &device) {
    Kernel k = s.compile(R"(
kernel scale(x: tensor<f32>[M, N], y: tensor<f32>[M, N]) grid(M) {
  let r = program_id(0);
  let c = arange(0, 4);
  store(y[r, c], 2.0 * load(x[r, c], mask = c < N), mask = c < N);
})", "scale");
    ASSERT_TRUE(k.ok()) << k.status().message();
    Tensor x = s.upload(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3});
    Tensor y = s.empty<float>({3, 2});
    ASSERT_TRUE(k(x.view({3, 2}, {1, 3}), y).ok()) << device;
    std::vector<float> out;
    ASSERT_TRUE(y.download(out).ok());
    EXPECT_EQ(out, (std::vector<float>{2, 8, 4, 10, 6, 12})) << device;
    // A view past the tensor's end is refused, naming the argument.
    rt::Status past = k(x.view({3, 2}, {2, 1}, 1), y);
    EXPECT_FALSE(past.ok()) << device;
    EXPECT_NE(past.message().find("'x'"), std::string::npos) << past.message();
  });
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

  // So is one that names a param twice, even where the last value would make a
  // candidate (the file names BM, then BN: an extra BM goes in front).
  cmd = "for f in '" + cacheDir + "'/*.tune; do { printf 'BM=7\\n'; cat \"$f\"; } > \"$f.new\" " +
        "&& mv \"$f.new\" \"$f\"; done";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  Session fourth(device);
  run(fourth, false);
  EXPECT_EQ(fourth.cacheStats().tuneRuns, 1);
  EXPECT_EQ(fourth.cacheStats().tuneHits, 0);
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
  // No kernel name: the first one, matmul (every candidate failed to launch, as
  // "no kernel named ''").
  TuneResult r = s.autotune(source, "", {a.arg(), b.arg(), c.arg()}, options);
  ASSERT_TRUE(r.kernel.ok()) << r.kernel.status().message();
  EXPECT_EQ(r.trials.size(), 18u);
  EXPECT_EQ(r.params.size(), 3u);
  // A kernel that declares nothing is told so.
  TuneResult none = s.autotune(kSoftmax, "softmax", {}, options);
  EXPECT_FALSE(none.kernel.ok());
  EXPECT_NE(none.kernel.status().message().find("declares no tune values"), std::string::npos);
  // Timing over no launches is an error, not one launch said to be none.
  TuneOptions untimed = options;
  untimed.repeats = 0;
  TuneResult zero = s.autotune(source, "", {a.arg(), b.arg(), c.arg()}, untimed);
  EXPECT_FALSE(zero.kernel.ok());
  EXPECT_NE(zero.kernel.status().message().find("got repeats 0 and warmup 1"), std::string::npos)
      << zero.kernel.status().message();
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

/// Compiles softmax and makes its tensors in a Session that is gone before they
/// are used, as a factory function returning them would.
void softmaxOutlivesItsSession(const std::string &device) {
  int64_t m = 3, n = 40;
  auto host = test::randomVector(m * n, 7, -3, 3);
  Kernel k;
  Tensor x, y;
  {
    Session s(device);
    if (!s.ok())
      GTEST_SKIP() << "no " << device << " device: " << s.status().message();
    k = s.compile(kSoftmax, "softmax");
    x = s.upload(host, {m, n});
    y = s.empty<float>({m, n});
  }
  ASSERT_TRUE(k.ok() && x.ok() && y.ok()) << k.status().message();
  rt::Status launched = k(x, y);
  ASSERT_TRUE(launched.ok()) << launched.message();
  std::vector<float> out;
  ASSERT_TRUE(y.download(out).ok());
  EXPECT_TRUE(test::allClose(out, reference::softmax(host.data(), m, n, n), 1e-5, 1e-5));
}

TEST_F(SessionTest, KernelsAndTensorsOutliveTheirSessionOnTheCPU) {
  softmaxOutlivesItsSession("cpu");
}
TEST_F(SessionTest, KernelsAndTensorsOutliveTheirSessionOnVulkan) {
  softmaxOutlivesItsSession("vulkan");
}

TEST_F(SessionTest, ObjectsNoSessionMadeAreErrors) {
  Kernel kernel;
  Tensor tensor;
  EXPECT_FALSE(kernel.ok());
  EXPECT_EQ(kernel.info(), nullptr);
  EXPECT_EQ(kernel(tensor).message(), "the kernel is empty (not compiled by a Session)");
  EXPECT_FALSE(tensor.ok());
  std::vector<float> host;
  EXPECT_EQ(tensor.download(host).message(), "the tensor is empty (not made by a Session)");
  Session s("cpu");
  Kernel k = s.compile(kSoftmax, "softmax");
  ASSERT_TRUE(k.ok()) << k.status().message();
  Tensor y = s.empty<float>({2, 2});
  EXPECT_EQ(k(tensor, y).message(),
            "kernel 'softmax': argument 'x': the tensor is empty (not made by a Session)");
  // A tensor whose upload failed holds no data: launching on it is that error.
  Tensor unread = s.upload(nullptr, DType::F32, {2, 2});
  ASSERT_FALSE(unread.ok());
  EXPECT_EQ(k(unread, y).message(),
            "kernel 'softmax': argument 'x': copy of 16 bytes with a null host pointer");
}

TEST_F(SessionTest, MovedFromObjectsAreErrors) {
  // Moving left the source with a success status and no device: ok() said yes,
  // then download, empty and compile dereferenced null.
  Session s("cpu");
  ASSERT_TRUE(s.ok()) << s.status().message();
  Tensor x = s.upload(std::vector<float>(4, 1.0f), {4});
  Tensor moved = std::move(x);
  EXPECT_TRUE(moved.ok());
  EXPECT_FALSE(x.ok());
  std::vector<float> host;
  EXPECT_EQ(x.download(host).message(), "the tensor is empty (not made by a Session)");
  Kernel k = s.compile(kSoftmax, "softmax");
  Kernel k2;
  k2 = std::move(k);
  EXPECT_TRUE(k2.ok());
  EXPECT_FALSE(k.ok());
  EXPECT_EQ(k(moved).message(), "the kernel is empty (not compiled by a Session)");

  Session t = std::move(s);
  EXPECT_TRUE(t.ok());
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.status().message(), "the session was moved from");
  EXPECT_EQ(s.empty<float>({4}).status().message(), "the session was moved from");
  EXPECT_EQ(s.compile(kSoftmax, "softmax").status().message(), "the session was moved from");
  EXPECT_TRUE(runSoftmax(t, k2)) << "the moved-to session works";
}

TEST_F(SessionTest, AnEmptyKernelNameIsTheFirstKernelAndCaches) {
  // An empty name never matched its own disk entry: each session counted it as
  // damaged and compiled again. Now it is the first kernel's name, key included.
  {
    Session s("cpu");
    Kernel k = s.compile(kSoftmax, "");
    ASSERT_TRUE(k.ok()) << k.status().message();
    ASSERT_NE(k.info(), nullptr);
    EXPECT_EQ(k.info()->name, "softmax");
  }
  Session t("cpu");
  Kernel k = t.compile(kSoftmax, "");
  ASSERT_TRUE(k.ok()) << k.status().message();
  EXPECT_EQ(t.cacheStats().diskHits, 1);
  EXPECT_EQ(t.cacheStats().damagedEntries, 0);
  EXPECT_EQ(t.cacheStats().compiles, 0);
  EXPECT_TRUE(t.compile(kSoftmax, "softmax").ok());
  EXPECT_EQ(t.cacheStats().memoryHits, 1) << "the same entry as the named kernel";
  EXPECT_TRUE(runSoftmax(t, k));
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
