//===- RuntimeTest.cpp - every example through kiln-rt on each device -----===//
//
// Links only kiln-rt (no LLVM): the kernels were compiled by kilnc at build time
// into KILN_KERNELS_DIR as <example>.<target>.{so,spv} plus metadata. Each device
// kind runs when this machine has it and is skipped, with the reason, otherwise.
//
//===----------------------------------------------------------------------===//

#include "examples/reference/References.h"
#include "cpp_names.h" // kilnc --header of test/kilnc/aot-header-names.test.kiln
#include "kiln/Runtime.h"
#include "lib/Support/Half.h"
#include "runtime/Bundle.h"
#include "lib/Support/GridRule.h"
#include "runtime/Metadata.h"
#include "test/Common/Compare.h"
#include "test/Common/ReadFile.h"

#include <gtest/gtest.h>

#include <atomic>
#include <csignal>
#include <cmath>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <thread>

#include <unistd.h>

using namespace kiln;
using namespace kiln::rt;

namespace {

/// Where kilnc put the test kernels; KILN_KERNELS_DIR overrides the build path, so
/// the binary can run on a machine that only received a copy (scripts/gpu-check.sh).
std::string kernelsDir() {
  const char *env = std::getenv("KILN_KERNELS_DIR");
  return env ? env : KILN_KERNELS_DIR;
}

using test::allClose;
using test::readFile;
using test::randomVector;

/// A device of one kind, with helpers to move float vectors in and out.
class OnDevice : public ::testing::TestWithParam<std::string> {
protected:
  void SetUp() override {
    auto d = Device::open(GetParam());
    if (!d)
      GTEST_SKIP() << "no " << GetParam() << " device: " << d.status().message();
    device = *d;
  }

  Module load(const std::string &name) {
    static const std::map<std::string, std::string> ext = {
        {"cpu", "so"}, {"vulkan", "spv"}, {"cuda", "ptx"}, {"hip", "hsaco"}};
    std::string base = kernelsDir() + "/" + name + "." + GetParam() + "." + ext.at(GetParam());
    auto m = device->load(readFile(base), readFile(base + ".json"));
    EXPECT_TRUE(m.ok()) << m.status().message();
    return m.ok() ? *m : Module();
  }
  Buffer upload(const std::vector<float> &v) {
    auto b = device->allocate(v.size() * sizeof(float));
    EXPECT_TRUE(b.ok()) << b.status().message();
    EXPECT_TRUE(device->write(*b, v.data(), v.size() * sizeof(float)).ok());
    return *b;
  }
  /// Rounds `v` to f16 in place (so references see what the kernel sees) and
  /// uploads the f16 bits.
  Buffer uploadHalf(std::vector<float> &v) {
    std::vector<uint16_t> bits(v.size());
    for (size_t i = 0; i < v.size(); ++i)
      v[i] = halfBitsToFloat(bits[i] = floatToHalfBits(v[i]));
    auto b = device->allocate(bits.size() * 2);
    EXPECT_TRUE(b.ok()) << b.status().message();
    EXPECT_TRUE(device->write(*b, bits.data(), bits.size() * 2).ok());
    return *b;
  }
  Buffer uploadBytes(const std::vector<uint8_t> &v) {
    auto b = device->allocate(v.size());
    EXPECT_TRUE(b.ok()) << b.status().message();
    EXPECT_TRUE(device->write(*b, v.data(), v.size()).ok());
    return *b;
  }
  /// Downloads `n` f16 values as floats.
  std::vector<float> downloadHalf(const Buffer &b, size_t n) {
    std::vector<uint16_t> bits(n);
    Status s = device->read(b, bits.data(), n * 2);
    EXPECT_TRUE(s.ok()) << s.message();
    std::vector<float> v(n);
    for (size_t i = 0; i < n; ++i)
      v[i] = halfBitsToFloat(bits[i]);
    return v;
  }
  std::vector<float> download(const Buffer &b, size_t n) {
    std::vector<float> v(n);
    Status s = device->read(b, v.data(), n * sizeof(float));
    EXPECT_TRUE(s.ok()) << s.message();
    return v;
  }
  void run(const Module &m, const std::string &kernel, const std::vector<Arg> &args) {
    Status s = device->launch(m, kernel, args);
    ASSERT_TRUE(s.ok()) << s.message();
  }
  /// Runs `m`'s matmul_f16 (f16 a: M x K, b: K x N, f32 c) and checks it against
  /// the f64 reference on the f16-rounded inputs.
  void expectMatmulF16(const Module &m, int64_t M, int64_t N, int64_t K, unsigned seed) {
    auto a = randomVector(M * K, seed), b = randomVector(K * N, seed + 1);
    Buffer ba = uploadHalf(a), bb = uploadHalf(b), bc = upload(std::vector<float>(M * N, NAN));
    run(m, "matmul_f16", {Arg::tensor(ba, DType::F16, {M, K}), Arg::tensor(bb, DType::F16, {K, N}),
                          Arg::tensor(bc, DType::F32, {M, N})});
    EXPECT_TRUE(allClose(download(bc, M * N),
                         reference::matmul(a.data(), b.data(), M, N, K, K, 1), 1e-4, 1e-4))
        << M << "x" << N << "x" << K;
  }

  std::shared_ptr<Device> device;
};

TEST_P(OnDevice, VectorAdd) {
  Module m = load("vector_add");
  for (int64_t n : {1, 7, 1000, 4097}) {
    auto x = randomVector(n, 1), y = randomVector(n, 2);
    Buffer bx = upload(x), by = upload(y), bz = upload(std::vector<float>(n, NAN));
    run(m, "vector_add", {Arg::tensor(bx, DType::F32, {n}), Arg::tensor(by, DType::F32, {n}),
                          Arg::tensor(bz, DType::F32, {n})});
    EXPECT_TRUE(allClose(download(bz, n), reference::vectorAdd(x.data(), y.data(), n), 0, 1e-6))
        << "n = " << n;
  }
}

TEST_P(OnDevice, VectorAddStrided) {
  Module m = load("vector_add");
  int64_t n = 1000;
  auto xs = randomVector(2 * n, 3), y = randomVector(n, 4);
  Buffer bx = upload(xs), by = upload(y), bz = upload(std::vector<float>(3 * n, -7));
  run(m, "vector_add", {Arg::strided(bx, DType::F32, {n}, {2}), Arg::tensor(by, DType::F32, {n}),
                        Arg::strided(bz, DType::F32, {n}, {3})});
  std::vector<float> z = download(bz, 3 * n);
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_FLOAT_EQ(z[3 * i], xs[2 * i] + y[i]) << i;
    ASSERT_EQ(z[3 * i + 1], -7.0f) << i;
  }
}

TEST_P(OnDevice, Softmax) {
  Module m = load("softmax");
  Module wide = load("softmax_8192");
  struct Shape {
    int64_t m, n;
  };
  for (Shape s : {Shape{1, 1}, Shape{7, 7}, Shape{1000, 7}, Shape{3, 1000}, Shape{2, 4097}}) {
    auto x = randomVector(s.m * s.n, 5, -4, 4);
    Buffer bx = upload(x), by = upload(std::vector<float>(s.m * s.n, NAN));
    run(s.n > 1024 ? wide : m, "softmax",
        {Arg::tensor(bx, DType::F32, {s.m, s.n}), Arg::tensor(by, DType::F32, {s.m, s.n})});
    EXPECT_TRUE(allClose(download(by, s.m * s.n), reference::softmax(x.data(), s.m, s.n, s.n),
                         1e-4, 1e-6))
        << s.m << "x" << s.n;
  }
}

TEST_P(OnDevice, SoftmaxStridedRows) {
  Module m = load("softmax");
  int64_t rows = 7, cols = 33, ld = 50;
  auto buf = randomVector(rows * ld, 6, -3, 3);
  Buffer bx = upload(buf), by = upload(std::vector<float>(rows * cols, NAN));
  run(m, "softmax", {Arg::strided(bx, DType::F32, {rows, cols}, {ld, 1}),
                     Arg::tensor(by, DType::F32, {rows, cols})});
  EXPECT_TRUE(allClose(download(by, rows * cols), reference::softmax(buf.data(), rows, cols, ld),
                       1e-4, 1e-6));
}

TEST_P(OnDevice, LayerNorm) {
  Module m = load("layernorm");
  struct Shape {
    int64_t m, n;
  };
  for (Shape s : {Shape{1, 1}, Shape{7, 7}, Shape{1000, 7}, Shape{5, 1000}, Shape{3, 4097}}) {
    auto x = randomVector(s.m * s.n, 7, -2, 3), w = randomVector(s.n, 8), b = randomVector(s.n, 9);
    Buffer bx = upload(x), bw = upload(w), bb = upload(b),
           by = upload(std::vector<float>(s.m * s.n, NAN));
    run(m, "layernorm",
        {Arg::tensor(bx, DType::F32, {s.m, s.n}), Arg::tensor(bw, DType::F32, {s.n}),
         Arg::tensor(bb, DType::F32, {s.n}), Arg::tensor(by, DType::F32, {s.m, s.n}),
         Arg::f32(1e-5)});
    EXPECT_TRUE(allClose(download(by, s.m * s.n),
                         reference::layernorm(x.data(), w.data(), b.data(), s.m, s.n, 1e-5), 1e-3,
                         1e-3))
        << s.m << "x" << s.n;
  }
}

TEST_P(OnDevice, LayerNormBackwardUnderSpinLocks) {
  // 300 rows take turns on 8 locks (compare-and-swap in a while loop, released
  // with an exchange) to accumulate dw and db: a lost update would show in them.
  Module m = load("layernorm_backward");
  int64_t rows = 300, n = 300, groups = 8;
  auto x = randomVector(rows * n, 47, -2, 3), w = randomVector(n, 48),
       dy = randomVector(rows * n, 49);
  Buffer bx = upload(x), bw = upload(w), bdy = upload(dy),
         bdx = upload(std::vector<float>(rows * n, NAN)),
         dwPartial = upload(std::vector<float>(groups * n, 0.0f)),
         dbPartial = upload(std::vector<float>(groups * n, 0.0f)),
         dw = upload(std::vector<float>(n, NAN)), db = upload(std::vector<float>(n, NAN));
  auto locks = device->allocate(groups * sizeof(int32_t));
  ASSERT_TRUE(locks.ok());
  std::vector<int32_t> unlocked(groups, 0);
  ASSERT_TRUE(device->write(*locks, unlocked.data(), groups * sizeof(int32_t)).ok());
  run(m, "layernorm_backward",
      {Arg::tensor(bx, DType::F32, {rows, n}), Arg::tensor(bw, DType::F32, {n}),
       Arg::tensor(bdy, DType::F32, {rows, n}), Arg::tensor(bdx, DType::F32, {rows, n}),
       Arg::tensor(dwPartial, DType::F32, {groups, n}),
       Arg::tensor(dbPartial, DType::F32, {groups, n}), Arg::tensor(*locks, DType::I32, {groups}),
       Arg::f32(1e-5)});
  run(m, "layernorm_backward_dwdb",
      {Arg::tensor(dwPartial, DType::F32, {groups, n}),
       Arg::tensor(dbPartial, DType::F32, {groups, n}), Arg::tensor(dw, DType::F32, {n}),
       Arg::tensor(db, DType::F32, {n})});
  auto want = reference::layernormBackward(x.data(), w.data(), dy.data(), rows, n, 1e-5);
  EXPECT_TRUE(allClose(download(bdx, rows * n), want.dx, 1e-3, 1e-3));
  EXPECT_TRUE(allClose(download(dw, n), want.dw, 1e-3, 1e-3));
  EXPECT_TRUE(allClose(download(db, n), want.db, 1e-3, 1e-3));
}

TEST_P(OnDevice, TotalSumTakesTicketsInOneLaunch) {
  // reduce.kiln's total_sum: 1024 programs store partials and take acq_rel
  // tickets; the last adds the partials. The same bits every launch, and the
  // counter back at zero.
  Module m = load("reduce");
  int64_t n = 2048 * 1023 + 5, p = 1024;
  auto x = randomVector(n, 13);
  double want = 0;
  for (float v : x)
    want += v;
  Buffer bx = upload(x), partials = upload(std::vector<float>(p, NAN)),
         total = upload(std::vector<float>{NAN});
  auto tickets = device->allocate(sizeof(int32_t));
  ASSERT_TRUE(tickets.ok());
  int32_t zero = 0;
  ASSERT_TRUE(device->write(*tickets, &zero, sizeof zero).ok());
  std::vector<float> first;
  for (int launch = 0; launch < 3; ++launch) {
    run(m, "total_sum", {Arg::tensor(bx, DType::F32, {n}), Arg::tensor(partials, DType::F32, {p}),
                         Arg::tensor(*tickets, DType::I32, {1}),
                         Arg::tensor(total, DType::F32, {1})});
    std::vector<float> got = download(total, 1);
    int32_t counter = -1;
    ASSERT_TRUE(device->read(*tickets, &counter, sizeof counter).ok());
    EXPECT_EQ(counter, 0);
    EXPECT_TRUE(allClose(got, {want}, 1e-5, 1e-4));
    if (launch == 0)
      first = got;
    EXPECT_EQ(std::memcmp(got.data(), first.data(), sizeof(float)), 0) << "launch " << launch;
  }
}

TEST_P(OnDevice, Reductions) {
  Module m = load("reduce");
  struct Shape {
    int64_t m, n;
  };
  for (Shape s : {Shape{1, 1}, Shape{7, 7}, Shape{1000, 7}, Shape{7, 1000}, Shape{3, 4097}}) {
    auto x = randomVector(s.m * s.n, 10);
    Buffer bx = upload(x), rows = upload(std::vector<float>(s.m, NAN)),
           cols = upload(std::vector<float>(s.n, NAN));
    run(m, "row_sum", {Arg::tensor(bx, DType::F32, {s.m, s.n}), Arg::tensor(rows, DType::F32, {s.m})});
    run(m, "col_sum", {Arg::tensor(bx, DType::F32, {s.m, s.n}), Arg::tensor(cols, DType::F32, {s.n})});
    EXPECT_TRUE(allClose(download(rows, s.m), reference::sum2d(x.data(), s.m, s.n, s.n, 1, true),
                         1e-4, 1e-4))
        << s.m << "x" << s.n;
    EXPECT_TRUE(allClose(download(cols, s.n), reference::sum2d(x.data(), s.m, s.n, s.n, 1, false),
                         1e-4, 1e-4))
        << s.m << "x" << s.n;
  }
}

TEST_P(OnDevice, Matmul) {
  Module m = load("matmul");
  struct Shape {
    int64_t m, n, k;
  };
  for (Shape s : {Shape{1, 1, 1}, Shape{7, 7, 7}, Shape{100, 7, 33}, Shape{65, 129, 70}}) {
    auto a = randomVector(s.m * s.k, 12), b = randomVector(s.k * s.n, 13);
    Buffer ba = upload(a), bb = upload(b), bc = upload(std::vector<float>(s.m * s.n, NAN));
    run(m, "matmul", {Arg::tensor(ba, DType::F32, {s.m, s.k}), Arg::tensor(bb, DType::F32, {s.k, s.n}),
                      Arg::tensor(bc, DType::F32, {s.m, s.n})});
    EXPECT_TRUE(allClose(download(bc, s.m * s.n),
                         reference::matmul(a.data(), b.data(), s.m, s.n, s.k, s.k, 1), 1e-4, 1e-4))
        << s.m << "x" << s.n << "x" << s.k;
  }
}

TEST_P(OnDevice, MatmulOfTransposedOffsetAndPaddedViews) {
  // a is the transpose of a K x M row-major array (strides {1, M}); b starts
  // `off` elements into its buffer (256 bytes, which Vulkan's offset alignment
  // allows on every device), rows `ldb` apart; c's rows are `ldc` apart, and the
  // padding between them must stay untouched. Block views read and write
  // through the strides, including on the ragged edges.
  Module m = load("matmul");
  struct Shape {
    int64_t m, n, k;
  };
  for (Shape s : {Shape{1, 1, 1}, Shape{7, 5, 3}, Shape{65, 129, 70}, Shape{100, 33, 64}}) {
    const int64_t off = 64, ldb = s.n + 3, ldc = s.n + 5;
    auto at = randomVector(s.k * s.m, 30), bstore = randomVector(off + s.k * ldb, 31);
    Buffer ba = upload(at), bb = upload(bstore), bc = upload(std::vector<float>(s.m * ldc, -7));
    run(m, "matmul", {Arg::strided(ba, DType::F32, {s.m, s.k}, {1, s.m}),
                      Arg::strided(bb, DType::F32, {s.k, s.n}, {ldb, 1}, off),
                      Arg::strided(bc, DType::F32, {s.m, s.n}, {ldc, 1})});
    std::vector<float> b(s.k * s.n);
    for (int64_t p = 0; p < s.k; ++p)
      for (int64_t j = 0; j < s.n; ++j)
        b[p * s.n + j] = bstore[off + p * ldb + j];
    std::vector<double> want = reference::matmul(at.data(), b.data(), s.m, s.n, s.k, 1, s.m);
    std::vector<float> c = download(bc, s.m * ldc), got(s.m * s.n);
    for (int64_t i = 0; i < s.m; ++i) {
      for (int64_t j = 0; j < s.n; ++j)
        got[i * s.n + j] = c[i * ldc + j];
      for (int64_t j = s.n; j < ldc; ++j)
        ASSERT_EQ(c[i * ldc + j], -7.0f) << "padding of row " << i << " written";
    }
    EXPECT_TRUE(allClose(got, want, 1e-4, 1e-4)) << s.m << "x" << s.n << "x" << s.k;
  }
}

TEST_P(OnDevice, ViewsThatCannotBeLaunchedAreErrorsNamingTheArgument) {
  Module m = load("vector_add");
  int64_t n = 100;
  Buffer bx = upload(std::vector<float>(2 * n, 1.0f)), bz = upload(std::vector<float>(2 * n));
  Status negative =
      device->launch(m, "vector_add",
                     {Arg::strided(bx, DType::F32, {n}, {-1}, n - 1),
                      Arg::tensor(bx, DType::F32, {n}), Arg::tensor(bz, DType::F32, {n})});
  ASSERT_FALSE(negative.ok());
  EXPECT_NE(negative.message().find("'x' has a negative stride"), std::string::npos)
      << negative.message();
  // A view one element into its buffer: 4 bytes, below every Vulkan device's
  // offset alignment; the other devices take it.
  Status shifted = device->launch(m, "vector_add",
                                  {Arg::tensor(bx, DType::F32, {n}),
                                   Arg::strided(bx, DType::F32, {n}, {1}, 1),
                                   Arg::tensor(bz, DType::F32, {n})});
  if (GetParam() != "vulkan") {
    EXPECT_TRUE(shifted.ok()) << shifted.message();
    return;
  }
  ASSERT_FALSE(shifted.ok());
  EXPECT_NE(shifted.message().find("argument 'y' starts 4 bytes into its buffer"),
            std::string::npos)
      << shifted.message();
}

TEST_P(OnDevice, VectorAddOfABroadcastView) {
  // A stride of 0 repeats one element: y is a single value seen n times.
  Module m = load("vector_add");
  int64_t n = 1000;
  auto x = randomVector(n, 32);
  Buffer bx = upload(x), by = upload(std::vector<float>{-1.0f, 2.5f}),
         bz = upload(std::vector<float>(n, NAN));
  run(m, "vector_add", {Arg::tensor(bx, DType::F32, {n}), Arg::strided(by, DType::F32, {n}, {0}),
                        Arg::tensor(bz, DType::F32, {n})});
  std::vector<float> z = download(bz, n);
  for (int64_t i = 0; i < n; ++i)
    ASSERT_EQ(z[i], x[i] + -1.0f) << i;
}

TEST_P(OnDevice, PersistentMatmulRunsAProgramPerProcessor) {
  Module m = load("matmul");
  ASSERT_GE(device->processors(), 1);
  struct Shape {
    int64_t m, n, k;
  };
  // 1 tile; 20 tiles of 64 x 64 with ragged edges; 4 x 3 tiles.
  for (Shape s : {Shape{5, 9, 3}, Shape{300, 260, 70}, Shape{256, 129, 64}}) {
    auto a = randomVector(s.m * s.k, 21), b = randomVector(s.k * s.n, 22);
    Buffer ba = upload(a), bb = upload(b), bc = upload(std::vector<float>(s.m * s.n, NAN));
    std::vector<Arg> args = {Arg::tensor(ba, DType::F32, {s.m, s.k}),
                             Arg::tensor(bb, DType::F32, {s.k, s.n}),
                             Arg::tensor(bc, DType::F32, {s.m, s.n})};
    auto grid = device->grid(m, "matmul_persistent", args);
    ASSERT_TRUE(grid.ok()) << grid.status().message();
    int64_t tiles = ((s.m + 63) / 64) * ((s.n + 63) / 64);
    EXPECT_EQ((*grid)[0], std::min(tiles, device->processors()));
    run(m, "matmul_persistent", args);
    EXPECT_TRUE(allClose(download(bc, s.m * s.n),
                         reference::matmul(a.data(), b.data(), s.m, s.n, s.k, s.k, 1), 1e-4, 1e-4))
        << s.m << "x" << s.n << "x" << s.k;
  }
}

TEST_P(OnDevice, MoeMatmulFindsEachProgramsExpert) {
  Module m = load("moe");
  const int64_t t = 300, k = 70, n = 90, e = 5;
  auto x = randomVector(t * k, 43), w = randomVector(e * k * n, 44);
  Buffer bx = uploadHalf(x), bw = uploadHalf(w);
  // Sorted with an empty expert and a short last one; unsorted and out of range.
  for (std::vector<int32_t> ends : {std::vector<int32_t>{64, 64, 150, 299, 300},
                                    std::vector<int32_t>{-3, 200, 90, 260, 400}}) {
    auto bends = device->allocate(ends.size() * sizeof(int32_t));
    ASSERT_TRUE(bends.ok()) << bends.status().message();
    ASSERT_TRUE(device->write(*bends, ends.data(), ends.size() * sizeof(int32_t)).ok());
    Buffer by = upload(std::vector<float>(t * n, NAN));
    run(m, "moe_matmul",
        {Arg::tensor(bx, DType::F16, {t, k}), Arg::tensor(bw, DType::F16, {e, k, n}),
         Arg::tensor(*bends, DType::I32, {e}), Arg::tensor(by, DType::F32, {t, n})});
    std::vector<double> want(t * n, NAN);
    reference::moeMatmul(x.data(), w.data(), ends.data(), t, k, n, e, want);
    EXPECT_TRUE(allClose(download(by, t * n), want, 1e-4, 1e-4)) << "ends " << ends[1];
  }
}

TEST_P(OnDevice, QuantizedMatmulUnpacksInt4Weights) {
  // examples/quant_matmul.kiln (GROUP = 128): 4-bit codes two to a u8 byte, a
  // scale and a zero point per group of rows; K odd (the last byte's high
  // nibble is padding) and past one group.
  Module m = load("quant_matmul");
  const int64_t group = 128;
  struct Shape {
    int64_t m, n, k;
  };
  for (Shape s : {Shape{1, 1, 1}, Shape{7, 9, 40}, Shape{65, 70, 301}}) {
    int64_t kp = (s.k + 1) / 2, g = (s.k + group - 1) / group;
    std::mt19937 gen(60);
    std::uniform_int_distribution<int> byte(0, 255), nibble(0, 15);
    std::uniform_real_distribution<float> scale(0.01f, 0.1f);
    std::vector<uint8_t> qw(kp * s.n), zeros(g * s.n);
    for (uint8_t &b : qw)
      b = uint8_t(byte(gen));
    for (uint8_t &z : zeros)
      z = uint8_t(nibble(gen));
    std::vector<float> scales(g * s.n);
    for (float &v : scales)
      v = scale(gen);
    auto a = randomVector(s.m * s.k, 61);
    Buffer ba = uploadHalf(a), bs = uploadHalf(scales), bq = uploadBytes(qw),
           bz = uploadBytes(zeros), bc = upload(std::vector<float>(s.m * s.n, NAN));
    run(m, "matmul_int4",
        {Arg::tensor(ba, DType::F16, {s.m, s.k}), Arg::tensor(bq, DType::U8, {kp, s.n}),
         Arg::tensor(bs, DType::F16, {g, s.n}), Arg::tensor(bz, DType::U8, {g, s.n}),
         Arg::tensor(bc, DType::F32, {s.m, s.n})});
    EXPECT_TRUE(allClose(download(bc, s.m * s.n),
                         reference::quantMatmul(a.data(), qw.data(), scales.data(), zeros.data(),
                                                s.m, s.n, s.k, group),
                         1e-4, 1e-4))
        << s.m << "x" << s.n << "x" << s.k;
  }
}

TEST_P(OnDevice, MatmulW8A8) {
  // examples/quant_matmul.kiln's int8 GEMM: s8 operands summed exactly in i32
  // (on CUDA sm_80+ mma.sync.m16n8k32.s8, elsewhere the FMA loop), scaled per
  // row and column and stored as f16. Shapes: one K step, ragged edges, and
  // many K steps (every pipeline stage reused).
  Module m = load("quant_matmul");
  for (auto [M, N, K] : {std::array<int64_t, 3>{64, 64, 32}, {70, 45, 130}, {128, 64, 2048}}) {
    std::mt19937 gen(62);
    std::uniform_int_distribution<int> byte(-128, 127);
    std::vector<int8_t> a(M * K), w(K * N);
    for (int8_t &v : a)
      v = int8_t(byte(gen));
    for (int8_t &v : w)
      v = int8_t(byte(gen));
    auto scales = randomVector(M + N, 63, 0.0001f, 0.001f);
    std::vector<float> sa(scales.begin(), scales.begin() + M), sw(scales.begin() + M, scales.end());
    auto bytes = [&](const std::vector<int8_t> &v) {
      return uploadBytes(std::vector<uint8_t>(v.begin(), v.end()));
    };
    Buffer ba = bytes(a), bw = bytes(w), bsa = upload(sa), bsw = upload(sw);
    std::vector<float> nan(M * N, NAN);
    Buffer bc = uploadHalf(nan);
    run(m, "matmul_w8a8",
        {Arg::tensor(ba, DType::I8, {M, K}), Arg::tensor(bw, DType::I8, {K, N}),
         Arg::tensor(bsa, DType::F32, {M}), Arg::tensor(bsw, DType::F32, {N}),
         Arg::tensor(bc, DType::F16, {M, N})});
    EXPECT_TRUE(allClose(downloadHalf(bc, M * N),
                         reference::matmulW8A8(a.data(), w.data(), sa.data(), sw.data(), M, N, K),
                         1e-3, 1e-3))
        << M << " x " << N << " x " << K;
  }
}

TEST_P(OnDevice, MatmulF16EightWarps) {
  // NUM_WARPS=8: 256-thread programs (two wgmma warpgroups on sm_90, where a
  // 64 x 64 tile leaves the second one idle; the FMA loop on Vulkan).
  Module m = load("matmul_w8");
  if (GetParam() != "cpu") {
    EXPECT_EQ(m.find("matmul_f16")->threadsPerBlock, 8 * (GetParam() == "hip" ? 64 : 32));
  }
  for (auto [M, N, K] : {std::array<int64_t, 3>{64, 64, 32}, {130, 70, 96}})
    expectMatmulF16(m, M, N, K, 34);
}

TEST_P(OnDevice, MatmulTF32) {
  // matmul with TF32=1: operands rounded to TensorFloat-32 on every device (NVIDIA
  // sm_80+ on mma.sync.m16n8k8.tf32, elsewhere rounded in registers), so all of
  // them match a reference on rounded inputs, and differ from full f32.
  Module m = load("matmul_tf32");
  int64_t M = 70, N = 65, K = 96;
  auto a = randomVector(M * K, 32), b = randomVector(K * N, 33);
  Buffer ba = upload(a), bb = upload(b), bc = upload(std::vector<float>(M * N, NAN));
  run(m, "matmul", {Arg::tensor(ba, DType::F32, {M, K}), Arg::tensor(bb, DType::F32, {K, N}),
                    Arg::tensor(bc, DType::F32, {M, N})});
  std::vector<float> ra(a), rb(b);
  for (float &x : ra)
    x = reference::tf32(x);
  for (float &x : rb)
    x = reference::tf32(x);
  std::vector<float> got = download(bc, M * N);
  EXPECT_TRUE(allClose(got, reference::matmul(ra.data(), rb.data(), M, N, K, K, 1), 1e-5, 1e-5));
  EXPECT_FALSE(allClose(got, reference::matmul(a.data(), b.data(), M, N, K, K, 1), 1e-6, 1e-6))
      << "the result is full f32: the operands were not rounded";
}

TEST_P(OnDevice, MatmulF16) {
  // f16 inputs, f32 accumulation: on CUDA sm_90 wgmma, on sm_80+ mma.sync, both
  // fed by cp.async and pipelined three stages deep; on AMD CDNA v_mfma, on
  // Vulkan and the CPU the FMA loop and the micro-kernel. The shapes cover one
  // K step, fewer steps than stages, ragged and unaligned rows (the element
  // fallback of cp.async) and many steps (every stage reused several times).
  Module m = load("matmul");
  for (auto [M, N, K] : {std::array<int64_t, 3>{64, 64, 32}, {128, 192, 96}, {100, 70, 50},
                         {64, 128, 512}})
    expectMatmulF16(m, M, N, K, 30);
}

TEST_P(OnDevice, MatmulF8) {
  // e4m3 operands, f32 accumulation, scaled and stored as bf16: on CUDA sm_90
  // mma.sync.m16n8k32.e4m3, elsewhere the FMA loop (CPU micro-kernel) on the
  // decoded values; on Vulkan the operands are bytes and the result 16-bit words
  // (SPIR-V has neither 8-bit floats nor bf16). The reference sums the decoded
  // operands in double.
  Module m = load("matmul_f8");
  for (auto [M, N, K] : {std::array<int64_t, 3>{64, 64, 64}, {70, 65, 96}, {128, 64, 320}}) {
    auto a = randomVector(M * K, 40, -2, 2), b = randomVector(K * N, 41, -2, 2);
    auto quantize = [&](std::vector<float> &v) {
      std::vector<uint8_t> bits(v.size());
      for (size_t i = 0; i < v.size(); ++i)
        v[i] = f8BitsToFloat(bits[i] = floatToF8Bits(v[i], DType::F8E4M3), DType::F8E4M3);
      auto buffer = device->allocate(bits.size());
      EXPECT_TRUE(buffer.ok() && device->write(*buffer, bits.data(), bits.size()).ok());
      return *buffer;
    };
    Buffer ba = quantize(a), bb = quantize(b);
    auto bc = device->allocate(M * N * 2);
    ASSERT_TRUE(bc.ok());
    run(m, "matmul_f8",
        {Arg::tensor(ba, DType::F8E4M3, {M, K}), Arg::tensor(bb, DType::F8E4M3, {K, N}),
         Arg::tensor(*bc, DType::BF16, {M, N}), Arg::f32(0.25)});
    std::vector<uint16_t> bits(M * N);
    ASSERT_TRUE(device->read(*bc, bits.data(), bits.size() * 2).ok());
    std::vector<float> got(M * N);
    std::vector<double> want = reference::matmul(a.data(), b.data(), M, N, K, K, 1);
    for (int64_t i = 0; i < M * N; ++i) {
      got[i] = bf16BitsToFloat(bits[i]);
      want[i] *= 0.25f;
    }
    EXPECT_TRUE(allClose(got, want, 1e-2, 1e-2)) << M << " x " << N << " x " << K;
  }
}

TEST_P(OnDevice, MatmulBiasRelu) {
  Module m = load("matmul");
  int64_t M = 65, N = 33, K = 70;
  auto a = randomVector(M * K, 18), b = randomVector(K * N, 19), bias = randomVector(N, 20);
  Buffer ba = upload(a), bb = upload(b), bbias = upload(bias),
         bc = upload(std::vector<float>(M * N, NAN));
  run(m, "matmul_bias_act",
      {Arg::tensor(ba, DType::F32, {M, K}), Arg::tensor(bb, DType::F32, {K, N}),
       Arg::tensor(bbias, DType::F32, {N}), Arg::tensor(bc, DType::F32, {M, N}), Arg::f32(0.5)});
  EXPECT_TRUE(allClose(download(bc, M * N),
                       reference::matmulBiasAct(a.data(), b.data(), bias.data(), M, N, K, 0.5, 1),
                       1e-4, 1e-4));
}

TEST_P(OnDevice, BatchedMatmul) {
  Module m = load("bmm");
  int64_t Z = 3, M = 33, N = 70, K = 65;
  auto a = randomVector(Z * M * K, 21), b = randomVector(Z * K * N, 22);
  Buffer ba = upload(a), bb = upload(b), bc = upload(std::vector<float>(Z * M * N, NAN));
  run(m, "bmm", {Arg::tensor(ba, DType::F32, {Z, M, K}), Arg::tensor(bb, DType::F32, {Z, K, N}),
                 Arg::tensor(bc, DType::F32, {Z, M, N})});
  EXPECT_TRUE(allClose(download(bc, Z * M * N), reference::bmm(a.data(), b.data(), Z, M, N, K),
                       1e-4, 1e-4));
}

TEST_P(OnDevice, RmsNorm) {
  Module m = load("rmsnorm");
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{7, 7}, {5, 1000}, {3, 4097}}) {
    auto x = randomVector(rows * cols, 23, -2, 3), w = randomVector(cols, 24);
    Buffer bx = upload(x), bw = upload(w), by = upload(std::vector<float>(rows * cols, NAN));
    run(m, "rmsnorm", {Arg::tensor(bx, DType::F32, {rows, cols}), Arg::tensor(bw, DType::F32, {cols}),
                       Arg::tensor(by, DType::F32, {rows, cols}), Arg::f32(1e-6)});
    EXPECT_TRUE(allClose(download(by, rows * cols),
                         reference::rmsnorm(x.data(), w.data(), rows, cols, 1e-6), 1e-4, 1e-5))
        << rows << "x" << cols;
  }
}

TEST_P(OnDevice, FlashAttentionF16) {
  // attention_f16: f16 q, k, v, o; probabilities rounded to f16 before the
  // second product. Against the f64 reference on the f16 inputs, with a tolerance
  // for those two roundings (a few f16 ulps); causal and not.
  for (bool causal : {false, true}) {
    Module m = load(causal ? "attention_causal" : "attention");
    int64_t batch = 2, seq = 70, head = 64, n = batch * seq * head;
    auto q = randomVector(n, 36, -2, 2), k = randomVector(n, 37, -2, 2), v = randomVector(n, 38);
    Buffer bq = uploadHalf(q), bk = uploadHalf(k), bv = uploadHalf(v);
    auto out = device->allocate(n * 2);
    ASSERT_TRUE(out.ok()) << out.status().message();
    std::vector<int64_t> shape{batch, seq, head};
    double scale = 1.0 / std::sqrt(double(head));
    run(m, "attention_f16",
        {Arg::tensor(bq, DType::F16, shape), Arg::tensor(bk, DType::F16, shape),
         Arg::tensor(bv, DType::F16, shape), Arg::tensor(*out, DType::F16, shape),
         Arg::f32(scale)});
    EXPECT_TRUE(allClose(downloadHalf(*out, n),
                         reference::attention(q.data(), k.data(), v.data(), batch, seq, head,
                                              scale, causal),
                         1e-2, 2e-3))
        << (causal ? "causal" : "not causal");
  }
}

TEST_P(OnDevice, FlashAttention) {
  // Head dim 64 (not causal) and 128 (causal), at sequence lengths that leave
  // ragged blocks.
  struct Case {
    const char *module;
    int64_t batch, seq, head;
    bool causal;
  };
  for (Case c : {Case{"attention", 2, 100, 64, false}, Case{"attention_h128_causal", 3, 33, 128, true}}) {
    Module m = load(c.module);
    int64_t n = c.batch * c.seq * c.head;
    auto q = randomVector(n, 25, -2, 2), k = randomVector(n, 26, -2, 2), v = randomVector(n, 27);
    Buffer bq = upload(q), bk = upload(k), bv = upload(v), bo = upload(std::vector<float>(n, NAN));
    std::vector<int64_t> shape{c.batch, c.seq, c.head};
    double scale = 1.0 / std::sqrt(double(c.head));
    run(m, "attention", {Arg::tensor(bq, DType::F32, shape), Arg::tensor(bk, DType::F32, shape),
                         Arg::tensor(bv, DType::F32, shape), Arg::tensor(bo, DType::F32, shape),
                         Arg::f32(scale)});
    EXPECT_TRUE(allClose(download(bo, n),
                         reference::attention(q.data(), k.data(), v.data(), c.batch, c.seq,
                                              c.head, scale, c.causal),
                         1e-4, 1e-5))
        << c.module;
  }
  // The head dim is a launcher-checked size: a tensor of another width is rejected.
  Module m = load("attention");
  Buffer small = upload(std::vector<float>(7 * 32));
  std::vector<int64_t> shape{1, 7, 32};
  Status s = device->launch(m, "attention",
                            {Arg::tensor(small, DType::F32, shape), Arg::tensor(small, DType::F32, shape),
                             Arg::tensor(small, DType::F32, shape), Arg::tensor(small, DType::F32, shape),
                             Arg::f32(0.125)});
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("'q'"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("64"), std::string::npos) << s.message();
}

TEST_P(OnDevice, HistogramWithAtomics) {
  // Many programs add into the same 256 counters; every value must be counted
  // exactly once, so the counts equal a sequential histogram.
  Module m = load("histogram");
  for (int64_t n : {1, 1000, 100003}) {
    auto x = randomVector(n, 28, -1.2f, 1.2f);
    if (n > 10) {
      x[3] = NAN;      // not counted
      x[4] = 1.0f;     // hi is exclusive
      x[5] = -1.0f;    // lo is inclusive
    }
    std::vector<int32_t> want(256, 0);
    for (float v : x)
      if (v >= -1.0f && v < 1.0f)
        ++want[std::min<int32_t>(int32_t((v + 1.0f) * (256 / 2.0f)), 255)];
    Buffer bx = upload(x);
    auto counts = device->allocate(256 * sizeof(int32_t));
    ASSERT_TRUE(counts.ok());
    std::vector<int32_t> got(256, 0);
    ASSERT_TRUE(device->write(*counts, got.data(), 256 * sizeof(int32_t)).ok());
    run(m, "histogram", {Arg::tensor(bx, DType::F32, {n}), Arg::tensor(*counts, DType::I32, {256}),
                         Arg::f32(-1.0), Arg::f32(1.0)});
    ASSERT_TRUE(device->read(*counts, got.data(), 256 * sizeof(int32_t)).ok());
    EXPECT_EQ(got, want) << "n = " << n;
  }
}

TEST_P(OnDevice, DropoutMaskIsTheSameEverywhere) {
  // rand(seed, offset) is a function of its arguments only: every device keeps
  // exactly the elements the host's Philox reference keeps.
  Module m = load("dropout");
  int64_t n = 100003;
  auto x = randomVector(n, 30);
  Buffer bx = upload(x), by = upload(std::vector<float>(n, NAN));
  run(m, "dropout", {Arg::tensor(bx, DType::F32, {n}), Arg::tensor(by, DType::F32, {n}),
                     Arg::f32(0.3), Arg::integer(1234567890123, DType::I64)});
  EXPECT_TRUE(allClose(download(by, n), reference::dropout(x.data(), n, 0.3f, 1234567890123),
                       1e-6, 1e-6));
}

TEST_P(OnDevice, FloatsForIntegerScalarsMustHaveAnIntegerOfTheType) {
  // A float given for an integer argument converts toward zero, as in C++; one
  // with no integer of the type (NaN, past i64) was saturated to INT64_MAX.
  Module m = load("dropout");
  Buffer bx = upload({1, 2}), by = upload({0, 0});
  auto launchWithSeed = [&](const Arg &seed) {
    return device->launch(m, "dropout", {Arg::tensor(bx, DType::F32, {2}),
                                         Arg::tensor(by, DType::F32, {2}), Arg::f32(0), seed})
        .message();
  };
  EXPECT_EQ(launchWithSeed(Arg::floating(-0x1p63, DType::I64)), "");
  EXPECT_EQ(launchWithSeed(Arg::floating(0x1p63, DType::I64)),
            "kernel 'dropout': argument 'seed' is 9.223372036854776e+18, which does not fit "
            "in i64");
  EXPECT_EQ(launchWithSeed(Arg::floating(NAN, DType::I64)),
            "kernel 'dropout': argument 'seed' is nan, which does not fit in i64");
  EXPECT_EQ(launchWithSeed(Arg::floating(-INFINITY, DType::I64)),
            "kernel 'dropout': argument 'seed' is -inf, which does not fit in i64");
  // u64 takes [0, 2^64): 1e19 is past i64 but an exact u64; -5 is none.
  Arg big = Arg::floating(1e19, DType::U64), negative = Arg::floating(-5, DType::U64);
  EXPECT_FALSE(big.unrepresentable.has_value());
  EXPECT_EQ(uint64_t(big.scalar.i), 10000000000000000000ull);
  EXPECT_EQ(negative.unrepresentable, "-5");
  // A fraction is never rounded away: 2.5 and -0.5 are errors for integers.
  EXPECT_EQ(Arg::floating(-0.5, DType::U64).unrepresentable, "-0.5");
  EXPECT_EQ(launchWithSeed(Arg::floating(2.7, DType::I64)),
            "kernel 'dropout': argument 'seed' is 2.7, which does not fit in i64");
  EXPECT_FALSE(Arg::floating(-3.0, DType::I64).unrepresentable.has_value());
  EXPECT_TRUE(Arg::floating(0x1p64, DType::U64).unrepresentable.has_value());
}

TEST_P(OnDevice, SearchSortedBisectsInAWhileLoop) {
  // Each block loops until all of its lanes have converged: a trip count that
  // depends on the data, with a reduction in the condition.
  Module m = load("searchsorted");
  int64_t n = 100000, q = 20011;
  auto sorted = randomVector(n, 32);
  std::sort(sorted.begin(), sorted.end());
  auto queries = randomVector(q, 33);
  queries[0] = sorted[n / 2];
  queries[1] = 5.0f;
  Buffer bs = upload(sorted), bq = upload(queries);
  auto out = device->allocate(q * sizeof(int32_t));
  ASSERT_TRUE(out.ok());
  run(m, "searchsorted", {Arg::tensor(bs, DType::F32, {n}), Arg::tensor(bq, DType::F32, {q}),
                          Arg::tensor(*out, DType::I32, {q})});
  std::vector<int32_t> got(q);
  ASSERT_TRUE(device->read(*out, got.data(), q * sizeof(int32_t)).ok());
  EXPECT_EQ(got, reference::searchsorted(sorted.data(), n, queries.data(), q));
}

TEST_P(OnDevice, CrossEntropyForwardAndBackward) {
  // examples/cross_entropy.kiln: rows longer than BLOCK (the online logsumexp
  // carries across chunks), large logits, and ignored rows (-100).
  Module m = load("cross_entropy");
  int64_t rows = 9, n = 3001;
  auto x = randomVector(rows * n, 41, -20, 20);
  x[5 * n + 17] = 80; // one dominant logit: exp overflows without the running max
  auto dloss = randomVector(rows, 42);
  std::vector<int64_t> target = {0, 3000, 1024, -100, 7, 17, -100, 2999, 1};
  Buffer bx = upload(x), bd = upload(dloss);
  auto bt = device->allocate(rows * sizeof(int64_t));
  auto loss = device->allocate(rows * sizeof(float)), lse = device->allocate(rows * sizeof(float));
  auto dx = device->allocate(rows * n * sizeof(float));
  ASSERT_TRUE(bt.ok() && loss.ok() && lse.ok() && dx.ok());
  ASSERT_TRUE(device->write(*bt, target.data(), rows * sizeof(int64_t)).ok());
  Arg tx = Arg::tensor(bx, DType::F32, {rows, n}), tt = Arg::tensor(*bt, DType::I64, {rows}),
      tlse = Arg::tensor(*lse, DType::F32, {rows});
  run(m, "cross_entropy", {tx, tt, Arg::tensor(*loss, DType::F32, {rows}), tlse});
  run(m, "cross_entropy_backward", {tx, tt, tlse, Arg::tensor(bd, DType::F32, {rows}),
                                    Arg::tensor(*dx, DType::F32, {rows, n})});
  auto want = reference::crossEntropy(x.data(), target.data(), dloss.data(), rows, n);
  EXPECT_TRUE(allClose(download(*loss, rows), want.loss, 1e-5, 1e-5));
  EXPECT_TRUE(allClose(download(*lse, rows), want.lse, 1e-5, 1e-5));
  EXPECT_TRUE(allClose(download(*dx, rows * n), want.dx, 1e-5, 1e-6));
}

TEST_P(OnDevice, LinearRecurrenceScansAcrossChunks) {
  // associative_scan with a combine function that does not commute, carried
  // across 7 chunks of 16 steps, in 2 programs of 128 channels (the second
  // mostly past D).
  Module m = load("linear_recurrence");
  int64_t t = 100, d = 130;
  auto a = randomVector(t * d, 40), x = randomVector(t * d, 41), h0 = randomVector(d, 42);
  Buffer ba = upload(a), bx = upload(x), bh0 = upload(h0),
         bh = upload(std::vector<float>(t * d, NAN)), last = upload(std::vector<float>(d, NAN));
  run(m, "linear_recurrence",
      {Arg::tensor(ba, DType::F32, {t, d}), Arg::tensor(bx, DType::F32, {t, d}),
       Arg::tensor(bh0, DType::F32, {d}), Arg::tensor(bh, DType::F32, {t, d}),
       Arg::tensor(last, DType::F32, {d})});
  auto got = download(bh, t * d), gotLast = download(last, d);
  got.insert(got.end(), gotLast.begin(), gotLast.end());
  EXPECT_TRUE(allClose(got, reference::linearRecurrence(a.data(), x.data(), h0.data(), t, d),
                       1e-5, 1e-5));
}

TEST_P(OnDevice, RopeRotatesPairsAndHalves) {
  // split and join of a [16, 32, 2] tile (rope), slices of a [16, 64] tile
  // (rope_half); tables read at each row's position.
  Module m = load("rope");
  int64_t rows = 70, head = 64, positions = 40;
  auto x = randomVector(rows * head, 50), c = randomVector(positions * head / 2, 51),
       s = randomVector(positions * head / 2, 52);
  std::vector<int32_t> pos(rows);
  for (int64_t r = 0; r < rows; ++r)
    pos[r] = int32_t((r * 7) % positions);
  Buffer bx = upload(x), bc = upload(c), bs = upload(s);
  auto bpos = device->allocate(rows * sizeof(int32_t));
  ASSERT_TRUE(bpos.ok());
  ASSERT_TRUE(device->write(*bpos, pos.data(), rows * sizeof(int32_t)).ok());
  for (bool halves : {false, true}) {
    Buffer by = upload(std::vector<float>(rows * head, NAN));
    run(m, halves ? "rope_half" : "rope",
        {Arg::tensor(bx, DType::F32, {rows, head}), Arg::tensor(*bpos, DType::I32, {rows}),
         Arg::tensor(bc, DType::F32, {positions, head / 2}),
         Arg::tensor(bs, DType::F32, {positions, head / 2}),
         Arg::tensor(by, DType::F32, {rows, head})});
    auto want = halves ? reference::ropeHalf : reference::rope;
    EXPECT_TRUE(allClose(download(by, rows * head),
                         want(x.data(), pos.data(), c.data(), s.data(), rows, head), 1e-5, 1e-5))
        << (halves ? "rope_half" : "rope");
  }
}

// kilnc --header on kernels named `delete`, `status` and `typeof` with arguments `new`,
// `this`, `new_`, `device_`, `module_`, `linux`, `alloca`, `__int128` and `_Pragma`:
// each name C++ or the header takes gets a trailing `_` (until it is free), a
// reserved one becomes `k_...`, and each method launches its kernel's own name.
// The Kernels object holds its device: it launches after the last other handle went.
TEST_P(OnDevice, AOTHeaderRenamesWhatCppTakes) {
  int64_t n = 100;
  auto x = randomVector(n, 11);
  Buffer in = upload(x), out = upload(std::vector<float>(n, NAN));
  kiln_aot::cpp_names::Kernels k(*device);
  ASSERT_TRUE(k.status().ok()) << k.status().message();
  std::weak_ptr<Device> weak = device;
  device.reset();
  ASSERT_FALSE(weak.expired());
  Status s = k.delete_(Arg::tensor(in, DType::F32, {n}), Arg::tensor(out, DType::F32, {n}),
                       2.0f, 3);
  ASSERT_TRUE(s.ok()) << s.message();
  s = k.status__(Arg::tensor(out, DType::F32, {n}), -1);
  ASSERT_TRUE(s.ok()) << s.message();
  // GNU's typeof, glibc's alloca, the reserved __int128 and _Pragma.
  s = k.typeof_(Arg::tensor(out, DType::F32, {n}), -2, 0.5);
  ASSERT_TRUE(s.ok()) << s.message();
  device = weak.lock();
  std::vector<float> y = download(out, n);
  for (int64_t i = 0; i < n; ++i)
    ASSERT_FLOAT_EQ(y[i], (x[i] * 2.0f + 3.0f - 1.0f) * 0.5f - 2.0f) << i;
  // Scalars reach the launch as given, which checks them (an int8_t parameter
  // made 300 into 44, a float one 1e39 into infinity).
  EXPECT_EQ(k.typeof_(Arg::tensor(out, DType::F32, {n}), 300, 1.0).message(),
            "kernel 'typeof': argument '__int128' is 300, which does not fit in i8");
  EXPECT_EQ(k.typeof_(Arg::tensor(out, DType::F32, {n}), 0, 1e39).message(),
            "kernel 'typeof': argument '_Pragma' is 1e+39, beyond f32's finite values");
  // Unsigned: the number given, not its bits as an int64_t (was -9223372036854775803).
  EXPECT_EQ(k.add_u16(Arg::tensor(out, DType::F32, {n}), (uint64_t(1) << 63) + 5).message(),
            "kernel 'add_u16': argument 'step' is 9223372036854775813, which does not fit "
            "in u16");
  s = k.add_u16(Arg::tensor(out, DType::F32, {n}), 65535);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_FLOAT_EQ(download(out, n)[0], (x[0] * 2.0f + 3.0f - 1.0f) * 0.5f - 2.0f + 65535.0f);
}

TEST_P(OnDevice, LaunchRejectsBadArguments) {
  Module m = load("vector_add");
  Buffer small = upload(std::vector<float>(4));
  Buffer big = upload(std::vector<float>(16));
  auto err = [&](const std::vector<Arg> &args) {
    return device->launch(m, "vector_add", args).message();
  };
  EXPECT_EQ(err({Arg::tensor(big, DType::F32, {16})}),
            "kernel 'vector_add': takes 3 arguments, got 1");
  EXPECT_EQ(err({Arg::tensor(big, DType::F16, {16}), Arg::tensor(big, DType::F32, {16}),
                 Arg::tensor(big, DType::F32, {16})}),
            "kernel 'vector_add': argument 'x' has dtype f16 but the kernel expects f32");
  EXPECT_EQ(err({Arg::tensor(big, DType::F32, {16}), Arg::tensor(big, DType::F32, {16}),
                 Arg::tensor(small, DType::F32, {16})}),
            "kernel 'vector_add': argument 'z' needs 64 bytes but its buffer has 16");
  EXPECT_EQ(err({Arg::tensor(big, DType::F32, {16}), Arg::tensor(big, DType::F32, {8}),
                 Arg::tensor(big, DType::F32, {16})}),
            "kernel 'vector_add': argument 'y' dimension 0 (N) is 8 but argument 'x' has N = 16");
  EXPECT_EQ(err({Arg::tensor(Buffer(), DType::F32, {16}), Arg::tensor(big, DType::F32, {16}),
                 Arg::tensor(big, DType::F32, {16})}),
            "kernel 'vector_add': argument 'x' has no data (null pointer)");
  EXPECT_EQ(device->launch(m, "nope", {}).message(), "no kernel named 'nope' in this module");
  // A stride whose reach in bytes passes 2^64 (it wrapped to a few bytes, and
  // the CPU read far outside the buffer).
  EXPECT_EQ(err({Arg::strided(small, DType::F32, {3}, {int64_t(1) << 61}),
                 Arg::tensor(small, DType::F32, {3}), Arg::tensor(small, DType::F32, {3})}),
            "kernel 'vector_add': argument 'x' has an offset or strides that overflow");
  // GPU kernels index with i32: a view reaching element 2^31 is refused (its
  // stride was cut to 32 bits); the CPU's indices are 64-bit.
  std::string far = err({Arg::strided(small, DType::F32, {2}, {int64_t(1) << 31}),
                         Arg::tensor(small, DType::F32, {2}), Arg::tensor(small, DType::F32, {2})});
  if (GetParam() == "cpu")
    EXPECT_EQ(far, "kernel 'vector_add': argument 'x' needs 8589934596 bytes but its buffer has "
                   "16");
  else
    EXPECT_NE(far.find("argument 'x' reaches element 2147483648 past its offset; "),
              std::string::npos)
        << far;
}

TEST(Devices, SpecsNeedADecimalIndex) {
  for (const char *spec : {"cpu:", "cpu: 0", "cpu:-1", "cpu:+0", "cpu:4294967296", "cpu:0x1"}) {
    auto d = Device::open(spec);
    ASSERT_FALSE(d.ok()) << spec;
    EXPECT_EQ(d.status().message(),
              "bad device index in '" + std::string(spec) + "' (expected KIND:N, N from 0)");
  }
  EXPECT_TRUE(Device::open("cpu:0").ok());
}

// The default device is the fastest present: a Vulkan device that runs on the CPU
// (lavapipe, target "vulkan:1.x:cpu...") comes after the CPU backend, which every
// machine has; `vulkan` alone takes the fastest Vulkan device.
TEST(Devices, DefaultIsTheFastestPresent) {
  std::string saved = std::getenv("KILN_DEVICE") ? std::getenv("KILN_DEVICE") : "";
  unsetenv("KILN_DEVICE");
  auto chosen = Device::open();
  if (!saved.empty())
    setenv("KILN_DEVICE", saved.c_str(), 1);
  ASSERT_TRUE(chosen.ok()) << chosen.status().message();
  auto onHost = [](const Device &d) {
    std::string t = d.target(); // vulkan:1.x[:cpu][:...]
    size_t second = t.find(':', t.find(':') + 1);
    return d.backend() == Backend::Vulkan && second != std::string::npos &&
           t.compare(second + 1, 3, "cpu") == 0;
  };
  EXPECT_FALSE(onHost(**chosen)) << (*chosen)->name() << " (" << (*chosen)->target() << ")";
  auto vulkan = Device::open("vulkan");
  if (!vulkan.ok())
    GTEST_SKIP() << "no Vulkan device: " << vulkan.status().message();
  auto first = Device::open("vulkan:0");
  ASSERT_TRUE(first.ok()) << first.status().message();
  // With one Vulkan device (this machine: lavapipe) both are it; with several, the
  // default is not on the host unless the first listed is.
  if (!onHost(**first)) {
    EXPECT_FALSE(onHost(**vulkan)) << (*vulkan)->target();
  }
}

TEST_P(OnDevice, RejectsOtherTargetsAndCorruptBundles) {
  std::string other = GetParam() == "cpu" ? "vector_add.vulkan.spv" : "vector_add.cpu.so";
  std::string base = kernelsDir() + "/" + other;
  auto wrong = device->load(readFile(base), readFile(base + ".json"));
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("module was compiled for"), std::string::npos)
      << wrong.status().message();
  auto badJson = device->load("x", "{\"target\": ");
  ASSERT_FALSE(badJson.ok());
  EXPECT_NE(badJson.status().message().find("invalid JSON"), std::string::npos);
  if (GetParam() == "cpu") {
    // A shared object cut short (its bundle's checksum recomputed) is refused
    // before the loader maps it: touching the missing pages was a bus error.
    std::string so = kernelsDir() + "/vector_add.cpu.so", binary = readFile(so);
    for (size_t keep : {binary.size() / 2, size_t(64), binary.size() - 1}) {
      auto cut = device->load(binary.substr(0, keep), readFile(so + ".json"));
      ASSERT_FALSE(cut.ok()) << keep << " bytes";
      EXPECT_NE(cut.status().message().find("truncated"), std::string::npos)
          << cut.status().message();
    }
  }
}

/// kilnc's metadata without its "checksum" line, as metadata written by hand,
/// by another tool or by an older Kiln is.
static std::string withoutChecksum(std::string json) {
  size_t at = json.find("\"checksum\"");
  if (at != std::string::npos)
    json.erase(at, json.find('\n', at) + 1 - at);
  return json;
}

TEST_P(OnDevice, RejectsDamagedBinariesBeforeTheDriverReadsThem) {
  // A flipped bit in a shared object crashed ld.so (SIGSEGV in _dl_setup_hash,
  // SIGILL, an assertion), and truncated SPIR-V crashed lavapipe's compiler:
  // kilnc's metadata carries the binary's checksum, and SPIR-V's structure is
  // checked even without one.
  if (GetParam() == "cuda" || GetParam() == "hip")
    GTEST_SKIP() << "checked on the CPU and Vulkan";
  std::string base = kernelsDir() + "/vector_add." + GetParam() +
                     (GetParam() == "cpu" ? ".so" : ".spv");
  std::string binary = readFile(base), json = readFile(base + ".json");
  ASSERT_TRUE(device->load(binary, json).ok());
  for (size_t at : {size_t(16220), binary.size() / 2, binary.size() - 1}) {
    std::string flipped = binary;
    flipped[at % binary.size()] ^= 0x40;
    auto damaged = device->load(flipped, json);
    ASSERT_FALSE(damaged.ok()) << "byte " << at;
    EXPECT_EQ(damaged.status().message().rfind(
                  "the binary does not match the checksum in its metadata (fnv1a64:", 0),
              0u)
        << damaged.status().message();
  }
  if (GetParam() != "vulkan")
    return;
  // Without a checksum (metadata written by hand or by another tool), every
  // truncation of the SPIR-V is still an error, and none reaches the driver.
  std::string unchecked = withoutChecksum(json);
  ASSERT_NE(unchecked, json);
  for (size_t bytes = 20; bytes < binary.size(); bytes += 4) {
    auto cut = device->load(binary.substr(0, bytes), unchecked);
    ASSERT_FALSE(cut.ok()) << bytes << " bytes";
    ASSERT_EQ(cut.status().message().rfind("not a valid SPIR-V module: ", 0), 0u)
        << bytes << " bytes: " << cut.status().message();
  }
}

TEST_P(OnDevice, ModulesLoadedOneAfterAnotherAreEachTheirOwn) {
  // The CPU driver dlopens a shared object from an anonymous memory file,
  // /proc/self/fd/N. dlopen knows objects by name, so a descriptor number
  // reused while an earlier module is still loaded would hand back that module
  // (here: no entry point for the kernel); nothing is written to $TMPDIR.
  if (GetParam() != "cpu")
    GTEST_SKIP() << "checks how the CPU driver opens shared objects";
  char tmp[] = "/tmp/kiln-tmpdir-XXXXXX";
  ASSERT_NE(mkdtemp(tmp), nullptr);
  // TMPDIR points at the empty folder until the end of the block, whichever
  // way the block is left.
  struct TmpDir {
    const char *old = std::getenv("TMPDIR");
    std::string saved = old ? old : "";
    explicit TmpDir(const char *dir) { setenv("TMPDIR", dir, 1); }
    ~TmpDir() { old ? setenv("TMPDIR", saved.c_str(), 1) : unsetenv("TMPDIR"); }
  };
  {
    TmpDir scoped(tmp);
    Module kept = load("softmax");
    for (int round = 0; round < 4; ++round) {
      Module m = load(round % 2 ? "vector_add" : "layernorm");
      ASSERT_NE(m.find(round % 2 ? "vector_add" : "layernorm"), nullptr) << "round " << round;
    }
    Module m = load("vector_add");
    int64_t n = 100;
    auto x = randomVector(n, 5), y = randomVector(n, 6);
    Buffer bx = upload(x), by = upload(y), bz = upload(std::vector<float>(n, NAN));
    run(m, "vector_add", {Arg::tensor(bx, DType::F32, {n}), Arg::tensor(by, DType::F32, {n}),
                          Arg::tensor(bz, DType::F32, {n})});
    EXPECT_TRUE(allClose(download(bz, n), reference::vectorAdd(x.data(), y.data(), n), 0, 1e-6));
    ASSERT_NE(kept.find("softmax"), nullptr);
  }
  EXPECT_EQ(rmdir(tmp), 0) << "files were left in " << tmp; // only an empty folder goes
}

TEST_P(OnDevice, RejectsMetadataOfAnotherBinary) {
  // kilnc records each kernel's abiSignature in the binary; loading it with
  // metadata that describes other arguments is an error, not a wrong launch.
  if (GetParam() == "cuda" || GetParam() == "hip")
    GTEST_SKIP() << "CUDA and HIP binaries carry no ABI record";
  std::string base = kernelsDir() + "/vector_add." + GetParam() +
                     (GetParam() == "cpu" ? ".so" : ".spv");
  std::string binary = readFile(base), json = readFile(base + ".json");
  ASSERT_TRUE(device->load(binary, json).ok());
  std::string f32 = "\"dtype\": \"f32\"";
  size_t at = json.find(f32);
  ASSERT_NE(at, std::string::npos);
  std::string halved = json;
  halved.replace(at, f32.size(), "\"dtype\": \"f16\"");
  auto wrong = device->load(binary, halved);
  ASSERT_FALSE(wrong.ok());
  std::string message = wrong.status().message();
  EXPECT_EQ(message.rfind("kernel 'vector_add': the binary was built as 'kiln-abi 1 "
                          "vector_add(f32[1], f32[1], f32[1]) grid(cdiv(N, 1024), 1, 1) threads ",
                          0),
            0u)
      << message;
  EXPECT_NE(message.find("but the metadata describes 'kiln-abi 1 vector_add(f16[1], f32[1], "
                         "f32[1]) grid("),
            std::string::npos)
      << message;
  // A stale .json from another -D: the grid rule differs.
  std::string stale = json;
  for (auto [from, to] : {std::pair<std::string, std::string>{"\"BLOCK\": 1024", "\"BLOCK\": 256"},
                          {"cdiv(N, 1024)", "cdiv(N, 256)"}}) {
    size_t where = stale.find(from);
    ASSERT_NE(where, std::string::npos) << from;
    stale.replace(where, from.size(), to);
  }
  auto other = device->load(binary, stale);
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.status().message().find("the metadata describes 'kiln-abi 1 vector_add(f32[1], "
                                          "f32[1], f32[1]) grid(cdiv(N, 256), 1, 1)"),
            std::string::npos)
      << other.status().message();
  if (GetParam() != "vulkan")
    return;
  // SPIR-V without the record (a Kiln before ABI records, whose push
  // constants had no grid words) is refused too.
  std::vector<uint32_t> words(binary.size() / 4), kept(words.begin(), words.begin());
  std::memcpy(words.data(), binary.data(), binary.size());
  for (size_t i = 0; i < words.size();) {
    size_t n = i < 5 ? 1 : words[i] >> 16;
    bool record = i >= 5 && (words[i] & 0xffff) == 7 &&
                  std::strncmp(reinterpret_cast<const char *>(&words[i + 2]), "kiln-abi", 8) == 0;
    if (!record)
      kept.insert(kept.end(), words.begin() + i, words.begin() + i + n);
    i += n;
  }
  ASSERT_LT(kept.size(), words.size());
  // Such a Kiln wrote no checksum into the metadata either.
  std::string unchecked = withoutChecksum(json);
  ASSERT_NE(unchecked, json);
  auto old = device->load(std::string(reinterpret_cast<const char *>(kept.data()),
                                      kept.size() * 4),
                          unchecked);
  ASSERT_FALSE(old.ok());
  EXPECT_NE(old.status().message().find("the binary has no record of the kernel"),
            std::string::npos)
      << old.status().message();
}

TEST_P(OnDevice, OutOfMemoryIsAnErrorAndTheDeviceStaysUsable) {
  // SIZE_MAX - 2 wrapped to 0 when Vulkan rounded it up to whole words.
  for (size_t bytes : {size_t(1) << 50, SIZE_MAX - 2, SIZE_MAX}) {
    auto huge = device->allocate(bytes);
    ASSERT_FALSE(huge.ok()) << bytes;
    EXPECT_NE(huge.status().message().find("cannot allocate"), std::string::npos)
        << huge.status().message();
  }
  Module m = load("vector_add");
  int64_t n = 100;
  Buffer bx = upload(std::vector<float>(n, 2)), bz = upload(std::vector<float>(n, 0));
  run(m, "vector_add", {Arg::tensor(bx, DType::F32, {n}), Arg::tensor(bx, DType::F32, {n}),
                        Arg::tensor(bz, DType::F32, {n})});
  EXPECT_EQ(download(bz, n)[n - 1], 4.0f);
}

TEST_P(OnDevice, ViewsPastWhatTheDeviceBindsAreRefusedOrRight) {
  // x's three elements lie 2^25 apart: the view spans 256 MiB, more than some
  // Vulkan devices bind to one argument (lavapipe: 128 MiB, where the kernel
  // read zeros). Either the launch is refused, naming x, or the sum is right.
  Module m = load("vector_add");
  const int64_t stride = int64_t(1) << 25, n = 3;
  auto bx = device->allocate(size_t((n - 1) * stride + 1) * sizeof(float));
  ASSERT_TRUE(bx.ok()) << bx.status().message();
  for (int64_t i = 0; i < n; ++i) {
    float v = float(i + 1);
    ASSERT_TRUE(device->write(*bx, &v, sizeof v, size_t(i * stride) * sizeof(float)).ok());
  }
  Buffer by = upload({1, 2, 3}), bz = upload({0, 0, 0});
  Status s = device->launch(m, "vector_add",
                            {Arg::strided(*bx, DType::F32, {n}, {stride}),
                             Arg::tensor(by, DType::F32, {n}), Arg::tensor(bz, DType::F32, {n})});
  if (!s.ok()) {
    EXPECT_NE(s.message().find("argument 'x' spans"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("maxStorageBufferRange"), std::string::npos) << s.message();
    return;
  }
  EXPECT_EQ(download(bz, n), (std::vector<float>{2, 4, 6}));
}

TEST_P(OnDevice, CopiesCheckTheirRangeAndHostPointer) {
  Buffer b = upload(std::vector<float>(4, 1));
  float host[8] = {};
  Status over = device->write(b, host, sizeof host);
  ASSERT_FALSE(over.ok());
  EXPECT_NE(over.message().find("exceeds the buffer's 16 bytes"), std::string::npos) << over.message();
  Status null = device->read(b, nullptr, 4);
  ASSERT_FALSE(null.ok());
  EXPECT_NE(null.message().find("null host pointer"), std::string::npos) << null.message();
  // An empty copy is fine, whatever its pointer.
  EXPECT_TRUE(device->write(b, nullptr, 0).ok());
  EXPECT_TRUE(device->read(b, nullptr, 0).ok());
  // A buffer of another device (another open of the same one, even) is an
  // error; the Vulkan driver wrote through the other device's mapping.
  auto other = Device::open(GetParam());
  ASSERT_TRUE(other.ok()) << other.status().message();
  auto theirs = (*other)->allocate(16);
  ASSERT_TRUE(theirs.ok());
  EXPECT_EQ(device->write(*theirs, host, 16).message(),
            "the buffer was allocated on another device");
  EXPECT_EQ(device->read(*theirs, host, 16).message(),
            "the buffer was allocated on another device");
  EXPECT_TRUE((*other)->write(*theirs, host, 16).ok());
}

TEST_P(OnDevice, AnEmptyModuleHasNoKernels) {
  Module empty;
  EXPECT_TRUE(empty.kernels().empty());
  EXPECT_EQ(empty.target(), "");
  EXPECT_EQ(empty.find("vector_add"), nullptr);
  EXPECT_EQ(device->launch(empty, "vector_add", {}).message(), "the module is empty (not loaded)");
}

TEST_P(OnDevice, DeviceAssertStopsTheKernel) {
  // test/Frontend/device-assert.kiln: every i < limit, so limit = 100 holds and the
  // kernel runs; with limit = 5 element 5 fails. The CPU prints the element and
  // aborts the process, CUDA reports a device-side assert (its context is lost),
  // HIP traps (a launch failure): each in a child process. A Vulkan kernel writes
  // the failure to its report buffer: the launch (or a stream's synchronize)
  // returns it as an error and the device stays usable.
  Module m = load("bounded");
  auto y = device->allocate(8 * sizeof(int32_t));
  ASSERT_TRUE(y.ok()) << y.status().message();
  run(m, "bounded", {Arg::tensor(*y, DType::I32, {8}), Arg::i32(100)});
  std::vector<int32_t> got(8);
  ASSERT_TRUE(device->read(*y, got.data(), got.size() * sizeof(int32_t)).ok());
  for (int32_t i = 0; i < 8; ++i)
    EXPECT_EQ(got[i], i);
  if (GetParam() == "vulkan") {
    const std::string failure =
        "kernel 'bounded' failed a device_assert: pid (0, 0, 0) idx (";
    const std::string where =
        "device-assert.kiln:18:3: device_assert failed: index below the limit "
        "(3 failures in this launch)";
    Status s = device->launch(m, "bounded", {Arg::tensor(*y, DType::I32, {8}), Arg::i32(5)});
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.message().rfind(failure, 0), 0u) << s.message();
    EXPECT_NE(s.message().find(where), std::string::npos) << s.message();
    auto stream = device->createStream();
    ASSERT_TRUE(stream.ok()) << stream.status().message();
    ASSERT_TRUE(stream->launch(m, "bounded", {Arg::tensor(*y, DType::I32, {8}), Arg::i32(6)}).ok());
    Status synced = stream->synchronize();
    ASSERT_FALSE(synced.ok());
    EXPECT_NE(synced.message().find("(2 failures in this launch)"), std::string::npos)
        << synced.message();
    // Each launch starts from a clean report.
    run(m, "bounded", {Arg::tensor(*y, DType::I32, {8}), Arg::i32(100)});
    return;
  }
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  auto stopped = [](int status) {
    return (WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT) ||
           (WIFEXITED(status) && WEXITSTATUS(status) == 3);
  };
  EXPECT_EXIT(
      {
        Status s = device->launch(m, "bounded", {Arg::tensor(*y, DType::I32, {8}), Arg::i32(5)});
        if (s.ok())
          s = device->synchronize();
        if (!s.ok()) {
          std::fprintf(stderr, "launch failed: %s\n", s.message().c_str());
          std::_Exit(3);
        }
        std::_Exit(0);
      },
      stopped, GetParam() == "cpu" ? "device_assert failed: index below the limit"
                                   : "assert|fail|fault|illegal|trap");
}

TEST_P(OnDevice, EventsMeasureWork) {
  // Events read the device's clock (Vulkan: timestamp queries) after queued work;
  // later events never read earlier times. No speed is asserted.
  Module m = load("vector_add");
  int64_t n = 1 << 16;
  Buffer bx = upload(std::vector<float>(n, 1)), bz = upload(std::vector<float>(n, 0));
  auto a = device->record();
  ASSERT_TRUE(a.ok()) << a.status().message();
  run(m, "vector_add", {Arg::tensor(bx, DType::F32, {n}), Arg::tensor(bx, DType::F32, {n}),
                        Arg::tensor(bz, DType::F32, {n})});
  auto b = device->record();
  auto c = device->record();
  ASSERT_TRUE(b.ok() && c.ok());
  EXPECT_GE(b->since(*a), 0.0);
  EXPECT_GE(c->since(*b), 0.0);
  EXPECT_EQ(download(bz, 1)[0], 2.0f);
}

TEST_P(OnDevice, ThreadsLaunchOnOneDeviceAtOnce) {
  // Six threads, each with its own buffers, launch on one device: three through
  // their own streams, three through Device::launch, with timestamps between.
  // Vulkan's command pool and queue are shared; unguarded, about one run in
  // four crashed.
  Module m = load("vector_add");
  const int64_t n = 4096;
  std::atomic<int> failures{0};
  auto work = [&](int t) {
    std::vector<float> x(n);
    for (int64_t i = 0; i < n; ++i)
      x[i] = float(i + t);
    auto bx = device->allocate(n * 4), bz = device->allocate(n * 4);
    if (!bx.ok() || !bz.ok() || !device->write(*bx, x.data(), n * 4).ok()) {
      ++failures;
      return;
    }
    std::vector<Arg> args = {Arg::tensor(*bx, DType::F32, {n}), Arg::tensor(*bx, DType::F32, {n}),
                             Arg::tensor(*bz, DType::F32, {n})};
    auto stream = t % 2 ? device->createStream() : Result<Stream>(Status::failure("none"));
    for (int i = 0; i < 100; ++i) {
      Status s = stream.ok() ? stream->launch(m, "vector_add", args)
                             : device->launch(m, "vector_add", args);
      failures += !s.ok();
      if (i % 25 == 0)
        failures += !(stream.ok() ? stream->record() : device->record()).ok();
    }
    if (stream.ok())
      failures += !stream->synchronize().ok();
    std::vector<float> z(n);
    failures += !device->read(*bz, z.data(), n * 4).ok();
    for (int64_t i = 0; i < n; ++i)
      failures += z[i] != 2 * x[i];
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t)
    threads.emplace_back(work, t);
  for (std::thread &t : threads)
    t.join();
  EXPECT_EQ(failures.load(), 0);
}

TEST_P(OnDevice, StreamRunsLaunchesInOrder) {
  // Twenty dependent launches z = x + z queued on a stream without waiting: each
  // must see the previous one's result. The buffers' handles are dropped before
  // the work ran; the stream keeps them alive.
  Module m = load("vector_add");
  auto stream = device->createStream();
  ASSERT_TRUE(stream.ok()) << stream.status().message();
  int64_t n = 100003;
  auto x = randomVector(n, 32);
  std::vector<float> want(n, 1.0f);
  Buffer result;
  auto start = stream->record();
  ASSERT_TRUE(start.ok()) << start.status().message();
  {
    Buffer bx = upload(x), bz = upload(std::vector<float>(n, 1.0f));
    result = bz;
    for (int i = 0; i < 20; ++i) {
      rt::Status s = stream->launch(m, "vector_add",
                                    {Arg::tensor(bx, DType::F32, {n}), Arg::tensor(bz, DType::F32, {n}),
                                     Arg::tensor(bz, DType::F32, {n})});
      ASSERT_TRUE(s.ok()) << s.message();
      for (int64_t e = 0; e < n; ++e)
        want[e] += x[e];
    }
  }
  auto end = stream->record(); // waits for the stream
  ASSERT_TRUE(end.ok()) << end.status().message();
  EXPECT_GE(end->since(*start), 0.0);
  ASSERT_TRUE(stream->synchronize().ok());
  std::vector<float> got = download(result, n);
  for (int64_t e = 0; e < n; e += 997)
    ASSERT_NEAR(got[e], want[e], 1e-4f * (1 + std::abs(want[e]))) << "at " << e;

  // Arguments are still checked when the launch is queued.
  Buffer small = upload(std::vector<float>(4));
  rt::Status bad = stream->launch(m, "vector_add", {Arg::tensor(small, DType::F32, {8}),
                                                    Arg::tensor(small, DType::F32, {8}),
                                                    Arg::tensor(small, DType::F32, {8})});
  EXPECT_FALSE(bad.ok());
  EXPECT_TRUE(stream->synchronize().ok());
  EXPECT_FALSE(Stream().launch(m, "vector_add", {}).ok()); // an empty stream is an error
}

TEST_P(OnDevice, HandlesOutliveTheirDevice) {
  // Buffers, modules and streams share the device's driver: with the last Device
  // handle dropped first, a stream still launches, and each frees its part
  // later (the sanitizer build would report a use of a freed driver).
  Module m = load("vector_add");
  int64_t n = 1000;
  Buffer bx = upload(randomVector(n, 40)), bz = upload(std::vector<float>(n, 0.0f));
  auto stream = device->createStream();
  ASSERT_TRUE(stream.ok()) << stream.status().message();
  std::weak_ptr<Device> weak = device;
  device.reset();
  ASSERT_FALSE(weak.expired()); // the stream holds it
  for (int i = 0; i < 3; ++i) {
    rt::Status s = stream->launch(m, "vector_add", {Arg::tensor(bx, DType::F32, {n}),
                                                    Arg::tensor(bz, DType::F32, {n}),
                                                    Arg::tensor(bz, DType::F32, {n})});
    ASSERT_TRUE(s.ok()) << s.message();
  }
  *stream = Stream(); // drains its queue, then lets the Device go
  EXPECT_TRUE(weak.expired());
  EXPECT_EQ(bz.size(), n * sizeof(float));
}

INSTANTIATE_TEST_SUITE_P(Devices, OnDevice, ::testing::Values("cpu", "vulkan", "cuda", "hip"),
                         [](const auto &info) { return info.param; });

TEST(Metadata, KernelNamesAreUnique) {
  // A launch by name must find one kernel, not the first of two.
  const char *kernel = R"({"name": "k", "args": [], "grid": ["1", "1", "1"]})";
  std::string json = std::string(R"({"target": "cpu", "kernels": [)") + kernel + ", " + kernel +
                     "]}";
  ModuleMetadata meta;
  std::string error;
  EXPECT_FALSE(parseMetadata(json, meta, error));
  EXPECT_NE(error.find("two kernels named 'k'"), std::string::npos) << error;
}

TEST(Metadata, NamesAreIdentifiersAndArgumentNamesUnique) {
  // Tools name files after arguments (kiln-run --save DIR writes DIR/NAME.npy):
  // a bundle's "../escaped" wrote outside DIR, two "x" wrote one file twice.
  auto parse = [](const std::string &kernelName, const std::string &argNames) {
    std::string args;
    std::stringstream names(argNames + ",");
    for (std::string name; std::getline(names, name, ',');)
      args += std::string(args.empty() ? "" : ", ") + R"({"name": ")" + name +
              R"(", "kind": "tensor", "dtype": "f32", "dims": ["N"]})";
    std::string json = R"({"target": "cpu", "kernels": [{"name": ")" + kernelName +
                       R"(", "args": [)" + args + R"(], "grid": ["1", "1", "1"]}]})";
    ModuleMetadata meta;
    std::string error;
    return parseMetadata(json, meta, error) ? std::string() : error;
  };
  EXPECT_EQ(parse("k", "x,y_2,_z"), "");
  EXPECT_NE(parse("k", "x,../escaped").find("argument name '../escaped' of 'k' is not an "
                                            "identifier"),
            std::string::npos);
  EXPECT_NE(parse("k", "x,x").find("two arguments of 'k' named 'x'"), std::string::npos);
  EXPECT_NE(parse("k", "x,").find("argument name '' of 'k'"), std::string::npos);
  EXPECT_NE(parse("k/../j", "x").find("kernel name 'k/../j' is not an identifier"),
            std::string::npos);
}

TEST(Metadata, NonFiniteParamsRoundTrip) {
  // JSON has no inf or NaN: kilnc writes those params as strings (it wrote a
  // bare inf, which no reader took).
  std::string json = R"({"target": "cpu", "kernels": [{"name": "k", "args": [],
      "grid": ["1", "1", "1"], "params": {"A": "inf", "B": "-inf", "C": "nan", "D": 2.5}}]})";
  ModuleMetadata meta;
  std::string error;
  ASSERT_TRUE(parseMetadata(json, meta, error)) << error;
  const auto &params = meta.kernels.at(0).params;
  ASSERT_EQ(params.size(), 4u);
  EXPECT_EQ(params[0].value, INFINITY);
  EXPECT_EQ(params[1].value, -INFINITY);
  EXPECT_TRUE(std::isnan(params[2].value));
  EXPECT_EQ(params[3].value, 2.5);
  std::string wrong = json;
  wrong.replace(wrong.find("\"nan\""), 5, "\"big\"");
  EXPECT_FALSE(parseMetadata(wrong, meta, error));
  EXPECT_NE(error.find("param 'C' is 'big', not a number"), std::string::npos) << error;
}

TEST(Metadata, AssertReports) {
  // A Vulkan kernel's asserts come from its metadata; the report's flat index
  // reads back as coordinates in the tile (row-major).
  std::string json = readFile(std::string(KILN_KERNELS_DIR) + "/bounded.vulkan.spv.json");
  ModuleMetadata meta;
  std::string error;
  ASSERT_TRUE(parseMetadata(json, meta, error)) << error;
  KernelInfo kernel = meta.kernels.at(0);
  ASSERT_EQ(kernel.asserts.size(), 2u);
  EXPECT_TRUE(kernel.asserts[0].shape.empty());
  EXPECT_EQ(kernel.asserts[1].shape, std::vector<int64_t>{8});
  int32_t clean[kAssertReportWords] = {};
  EXPECT_EQ(assertFailure(kernel, clean), "");
  kernel.asserts.push_back({"f.kiln:3:5: device_assert failed", {4, 3, 5}});
  int32_t report[kAssertReportWords] = {1, 2, 7, 1, 0, 2 * 15 + 1 * 5 + 4};
  EXPECT_EQ(assertFailure(kernel, report), "kernel 'bounded' failed a device_assert: pid (7, 1, 0) "
                                           "idx (2, 1, 4) f.kiln:3:5: device_assert failed");
  report[1] = 3;
  EXPECT_NE(assertFailure(kernel, report).find("assert #3, which its metadata does not list"),
            std::string::npos);
  for (const char *bad : {"\"asserts\": 1", "\"asserts\": [{\"message\": 1}]",
                          "\"asserts\": [{\"message\": \"m\", \"shape\": [-1]}]"}) {
    std::string broken = json;
    size_t at = broken.find("\"asserts\"");
    ASSERT_NE(at, std::string::npos);
    broken.replace(at, broken.find("\"dynamic_shared_memory\"") - at, std::string(bad) + ", ");
    ModuleMetadata out;
    EXPECT_FALSE(parseMetadata(broken, out, error)) << bad;
    EXPECT_NE(error.find("assert"), std::string::npos) << error;
  }
}

TEST(Metadata, PrintRecords) {
  // A Vulkan kernel's print records read back in print's format, each value in
  // the type the record carries; records past the buffer's end are counted.
  KernelInfo kernel;
  kernel.name = "k";
  kernel.prints = {{"row", {2, 3}, true, DType::F32},
                   {"count", {}, true, DType::I64},
                   {"here", {}, false, DType::I32},
                   {"unsigned", {}, true, DType::U32},
                   {"wide", {}, true, DType::U64},
                   {"byte", {}, true, DType::U32, 2},
                   {"bits", {}, true, DType::U64, 16}};
  std::vector<int32_t> buffer(kernel.debugBufferWords());
  auto record = [&](int r, std::vector<int32_t> words) {
    std::copy(words.begin(), words.end(),
              buffer.begin() + kDebugHeaderWords + r * kPrintRecordWords);
  };
  float half = -0.5f;
  int32_t halfBits;
  std::memcpy(&halfBits, &half, 4);
  record(0, {0, 1, 2, 0, 5, halfBits, 0});
  record(1, {1, 0, 0, 0, 0, int32_t(0xFFFFFFFE), -1}); // -2 as i64
  record(2, {2, 3, 0, 0, 0, 0, 0});
  record(3, {7, 0, 0, 0, 0, 0, 0});
  record(4, {3, 0, 0, 0, 0, int32_t(0xFFFFFFFE), 0});
  record(5, {4, 0, 0, 0, 0, int32_t(0xFFFFFFFE), -1});
  record(6, {5, 0, 0, 0, 0, 0x9c, 0});
  record(7, {6, 0, 0, 0, 0, 0x0e00, 0x12});
  buffer[kPrintCountWord] = 8;
  std::string dropped;
  EXPECT_EQ(printedLines(kernel, buffer.data(), dropped),
            "pid (1, 2, 0) idx (1, 2) row: -0.5\n"
            "pid (0, 0, 0) count: -2\n"
            "pid (3, 0, 0) here\n"
            "(print #7, which the kernel's metadata does not list)\n"
            "pid (0, 0, 0) unsigned: 4294967294\n"
            "pid (0, 0, 0) wide: 18446744073709551614\n"
            "pid (0, 0, 0) byte: 0x9c\n"
            "pid (0, 0, 0) bits: 0x0000001200000e00\n");
  EXPECT_EQ(dropped, "");
  buffer[kPrintCountWord] = kPrintRecords + 10;
  printedLines(kernel, buffer.data(), dropped);
  EXPECT_NE(dropped.find("printed 65546 lines; 10 of them were dropped"), std::string::npos)
      << dropped;
}

TEST(Metadata, DynamicSharedMemoryFlag) {
  // Kernels above 48 KiB of shared memory on CUDA carry the flag that makes the
  // driver request their shared memory at launch; anything but a bool is refused.
  std::string json = readFile(std::string(KILN_KERNELS_DIR) + "/vector_add.vulkan.spv.json");
  const std::string flag = "\"dynamic_shared_memory\": false";
  size_t at = json.find(flag);
  ASSERT_NE(at, std::string::npos);
  ModuleMetadata meta;
  std::string error;
  ASSERT_TRUE(parseMetadata(json, meta, error)) << error;
  EXPECT_FALSE(meta.kernels.at(0).dynamicSharedMemory);
  std::string dynamic = json;
  dynamic.replace(at, flag.size(), "\"dynamic_shared_memory\": true");
  ModuleMetadata withFlag;
  ASSERT_TRUE(parseMetadata(dynamic, withFlag, error)) << error;
  EXPECT_TRUE(withFlag.kernels.at(0).dynamicSharedMemory);
  std::string bad = json;
  bad.replace(at, flag.size(), "\"dynamic_shared_memory\": 1");
  ModuleMetadata rejected;
  EXPECT_FALSE(parseMetadata(bad, rejected, error));
  EXPECT_NE(error.find("dynamic_shared_memory must be true or false"), std::string::npos)
      << error;
}

TEST(Metadata, GridRulesReadTheProcessorCount) {
  KernelInfo k;
  ArgInfo x;
  x.name = "x";
  x.isTensor = true;
  x.dims = {"N"};
  k.args = {x};
  KernelArg arg;
  arg.isTensor = true;
  arg.tensor.sizes = {1000};
  const std::array<int64_t, 3> failed = {-1, -1, -1};
  auto evaluate = [&](const std::string &rule, int64_t processors, std::string &error) {
    k.grid = {rule, "num_processors( )", "1"};
    std::array<int64_t, 3> grid = {0, 0, 0};
    bool ok = evaluateGrid(k, {arg}, processors, grid, error);
    return ok ? grid : failed;
  };
  std::string error;
  EXPECT_EQ(evaluate("min(cdiv(N, 64), num_processors())", 132, error),
            (std::array<int64_t, 3>{16, 132, 1}))
      << error;
  EXPECT_EQ(evaluate("min(cdiv(N, 64), num_processors())", 8, error),
            (std::array<int64_t, 3>{8, 8, 1}))
      << error;
  EXPECT_EQ(evaluate("num_processors() * 2", 3, error), (std::array<int64_t, 3>{6, 3, 1}))
      << error;
  // It takes no arguments; an empty call of anything else is unknown.
  EXPECT_EQ(evaluate("num_processors(1)", 4, error), failed);
  EXPECT_NE(error.find("unknown function 'num_processors'"), std::string::npos) << error;
  EXPECT_EQ(evaluate("cdiv()", 4, error), failed);
  EXPECT_NE(error.find("unknown function 'cdiv'"), std::string::npos) << error;
  EXPECT_EQ(evaluate("min(N, num_processors(", 4, error), failed);
  EXPECT_NE(error.find("unexpected end"), std::string::npos) << error;
}

TEST(Bundle, RoundTripAndDamage) {
  Bundle b;
  b.entries.push_back({"vulkan:1.2", std::string("\x03\x02\x23\x07spirv", 9), "{}"});
  b.entries.push_back({"cpu", "ELF", "{\"k\": 1}"});
  std::string bytes = writeBundle(b);
  Bundle back;
  std::string error;
  ASSERT_TRUE(readBundle(bytes, back, error)) << error;
  ASSERT_EQ(back.entries.size(), 2u);
  EXPECT_EQ(back.entries[0].binary, b.entries[0].binary);
  // Two entries for one target: which would run is nobody's guess.
  Bundle twice = b;
  twice.entries.push_back({"cpu", "ELF2", "{}"});
  Bundle ignored;
  EXPECT_FALSE(readBundle(writeBundle(twice), ignored, error));
  EXPECT_EQ(error, "invalid Kiln bundle: two entries for target cpu");
  EXPECT_EQ(back.find("vulkan:1.3")->target, "vulkan:1.2"); // older profiles run on newer
  EXPECT_EQ(back.find("vulkan:1.1"), nullptr);
  // Code tuned for Vulkan on the CPU (lavapipe) and for GPUs runs on either.
  EXPECT_EQ(back.find("vulkan:1.3:cpu")->target, "vulkan:1.2");
  EXPECT_TRUE(targetRuns("vulkan:1.3:cpu", "vulkan:1.3"));
  EXPECT_FALSE(targetRuns("vulkan:1.3:cpu", "vulkan:1.2:cpu"));
  // Code using more than 16 KiB of shared memory needs a device with as much.
  EXPECT_TRUE(targetRuns("vulkan:1.2", "vulkan:1.3:cpu:shared=32768"));
  EXPECT_TRUE(targetRuns("vulkan:1.3:shared=32768", "vulkan:1.3:cpu:shared=32768"));
  EXPECT_TRUE(targetRuns("vulkan:1.2:shared=32768", "vulkan:1.3:shared=49152"));
  EXPECT_FALSE(targetRuns("vulkan:1.3:shared=49152", "vulkan:1.3:cpu:shared=32768"));
  EXPECT_FALSE(targetRuns("vulkan:1.2:shared=32768", "vulkan:1.3"));
  // Vulkan 1.2+ code asks for IEEE special values; a device that cannot keep
  // them runs only code built for it (or for Vulkan 1.1, which does not ask).
  EXPECT_FALSE(targetRuns("vulkan:1.2", "vulkan:1.3:loose-specials"));
  EXPECT_TRUE(targetRuns("vulkan:1.2:loose-specials", "vulkan:1.3:shared=32768:loose-specials"));
  EXPECT_TRUE(targetRuns("vulkan:1.1", "vulkan:1.2:loose-specials"));
  EXPECT_TRUE(targetRuns("vulkan:1.2:loose-specials", "vulkan:1.2"));
  // Code with OpAtomicFAddEXT needs a device that adds floats atomically; code
  // without it runs on one.
  EXPECT_FALSE(targetRuns("vulkan:1.2:float-atomic-add", "vulkan:1.3:cpu:shared=32768"));
  EXPECT_TRUE(targetRuns("vulkan:1.2:float-atomic-add", "vulkan:1.3:cpu:float-atomic-add"));
  EXPECT_TRUE(targetRuns("vulkan:1.2", "vulkan:1.3:cpu:shared=32768:float-atomic-add"));
  // Where both run, the entry with the device's float atomic adds is taken,
  // whatever the order.
  Bundle both;
  both.entries.push_back({"vulkan:1.2", "a", "{}"});
  both.entries.push_back({"vulkan:1.2:float-atomic-add", "b", "{}"});
  EXPECT_EQ(both.find("vulkan:1.3:cpu:shared=32768:float-atomic-add")->binary, "b");
  EXPECT_EQ(both.find("vulkan:1.3:cpu:shared=32768")->binary, "a");
  std::swap(both.entries[0], both.entries[1]);
  EXPECT_EQ(both.find("vulkan:1.3:cpu:float-atomic-add")->binary, "b");
  EXPECT_EQ(both.find("vulkan:1.3")->binary, "a");
  // Code for Vulkan on the CPU (checking lavapipe's loop limit) is taken on
  // lavapipe before GPU code, and GPU code on GPUs, whatever the order.
  Bundle profiles;
  profiles.entries.push_back({"vulkan:1.2", "gpu", "{}"});
  profiles.entries.push_back({"vulkan:1.2:cpu", "cpu", "{}"});
  for (int order = 0; order < 2; ++order) {
    EXPECT_EQ(profiles.find("vulkan:1.3:cpu:shared=32768:float-atomic-add")->binary, "cpu");
    EXPECT_EQ(profiles.find("vulkan:1.3:shared=49152")->binary, "gpu");
    std::swap(profiles.entries[0], profiles.entries[1]);
  }

  // The trailer is standard 64-bit FNV-1a (docs/runtime.md), so other tools can
  // write and check bundles: the known answer for "a" first, then the file's.
  auto fnv1a = [](const std::string &data) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (unsigned char c : data)
      h = (h ^ c) * 0x100000001b3ull;
    return h;
  };
  EXPECT_EQ(fnv1a("a"), 0xaf63dc4c8601ec8cull);
  uint64_t trailer;
  std::memcpy(&trailer, bytes.data() + bytes.size() - 8, 8);
  EXPECT_EQ(trailer, fnv1a(bytes.substr(0, bytes.size() - 8)));

  EXPECT_FALSE(readBundle(bytes.substr(0, bytes.size() - 5), back, error));
  EXPECT_NE(error.find("checksum mismatch"), std::string::npos) << error;
  for (size_t flip : {size_t(20), bytes.size() / 2, bytes.size() - 9}) {
    std::string bad = bytes;
    bad[flip] ^= 0x40;
    EXPECT_FALSE(readBundle(bad, back, error)) << "bit flip at " << flip << " accepted";
  }
  for (uint32_t version : {kBundleVersion + 1, 1u}) { // newer; version 1 (old checksum)
    std::string other = bytes;
    other[8] = char(version);
    EXPECT_FALSE(readBundle(other, back, error));
    EXPECT_NE(error.find("version " + std::to_string(version) + ", but this runtime reads"),
              std::string::npos)
        << error;
  }
  EXPECT_FALSE(readBundle("KILNK", back, error));
  EXPECT_NE(error.find("too short"), std::string::npos) << error;
  EXPECT_FALSE(readBundle(std::string(64, 'x'), back, error));
  EXPECT_NE(error.find("bad magic"), std::string::npos) << error;
}

} // namespace
