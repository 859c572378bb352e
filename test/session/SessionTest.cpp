//===- SessionTest.cpp - the C++ JIT API and its kernel cache -------------===//

#include "examples/reference/References.h"
#include "kiln/kiln.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
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

std::vector<float> randomVector(size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-3, 3);
  std::vector<float> v(n);
  for (float &x : v)
    x = dist(gen);
  return v;
}

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
    auto host = randomVector(m * n, 1);
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
