//===- ExamplesTest.cpp - run examples/*.kiln on the CPU ------------------===//
//
// Each kernel runs at sizes that are not multiples of its tile (1, 7, 1000, 4097)
// and on a non-contiguous strided view, against a plain C++ reference in double.

#include "examples/reference/References.h"
#include "test/e2e/Harness.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>

using namespace kiln;
using namespace kiln::test;

namespace {

//===----------------------------------------------------------------------===//
// vector_add
//===----------------------------------------------------------------------===//

class VectorAdd : public ::testing::TestWithParam<int64_t> {};

TEST_P(VectorAdd, MatchesReference) {
  int64_t n = GetParam();
  auto exe = compileExample("vector_add.kiln", "vector_add");
  ASSERT_TRUE(exe);
  auto x = randomVector(n, 1), y = randomVector(n, 2);
  std::vector<float> z(n, NAN);
  launchOrFail(*exe, "vector_add",
               {KernelArg::of(TensorRef::contiguous(x.data(), DType::F32, {n})),
                KernelArg::of(TensorRef::contiguous(y.data(), DType::F32, {n})),
                KernelArg::of(TensorRef::contiguous(z.data(), DType::F32, {n}))});
  EXPECT_TRUE(allClose(z, reference::vectorAdd(x.data(), y.data(), n)));
}

INSTANTIATE_TEST_SUITE_P(Sizes, VectorAdd, ::testing::Values(1, 7, 1000, 4097));

TEST(VectorAddStrided, ReadsEveryOtherElement) {
  // x is a view of every second element of a buffer; z is written with stride 3.
  int64_t n = 1000;
  auto exe = compileExample("vector_add.kiln", "vector_add", {{"BLOCK", "128"}});
  ASSERT_TRUE(exe);
  auto xs = randomVector(2 * n, 3), y = randomVector(n, 4);
  std::vector<float> zs(3 * n, -7.0f);
  TensorRef x{xs.data(), DType::F32, {n}, {2}};
  TensorRef z{zs.data(), DType::F32, {n}, {3}};
  launchOrFail(*exe, "vector_add",
               {KernelArg::of(x), KernelArg::of(TensorRef::contiguous(y.data(), DType::F32, {n})),
                KernelArg::of(z)});
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_FLOAT_EQ(zs[3 * i], xs[2 * i] + y[i]) << "at " << i;
    ASSERT_EQ(zs[3 * i + 1], -7.0f) << "wrote between strided elements at " << i;
  }
}

//===----------------------------------------------------------------------===//
// softmax
//===----------------------------------------------------------------------===//

struct Shape2 {
  int64_t m, n;
};

class Softmax : public ::testing::TestWithParam<Shape2> {};

TEST_P(Softmax, MatchesReference) {
  auto [m, n] = GetParam();
  // Like Triton's tutorial: the row fits one tile, BLOCK = next power of two >= N.
  int64_t block = 1;
  while (block < n)
    block *= 2;
  auto exe = compileExample("softmax.kiln", "softmax", {{"BLOCK", std::to_string(block)}});
  ASSERT_TRUE(exe);
  auto x = randomVector(m * n, 5, -4, 4);
  std::vector<float> y(m * n, NAN);
  launchOrFail(*exe, "softmax",
               {KernelArg::of(TensorRef::contiguous(x.data(), DType::F32, {m, n})),
                KernelArg::of(TensorRef::contiguous(y.data(), DType::F32, {m, n}))});
  EXPECT_TRUE(allClose(y, reference::softmax(x.data(), m, n, n), 1e-5, 1e-7));
}

INSTANTIATE_TEST_SUITE_P(Sizes, Softmax,
                         ::testing::Values(Shape2{1, 1}, Shape2{7, 7}, Shape2{1000, 7},
                                           Shape2{3, 1000}, Shape2{2, 4097}));

TEST(SoftmaxStrided, RowsOfAWiderBuffer) {
  // A [m, n] view whose rows are 50 elements apart.
  int64_t m = 7, n = 33, stride = 50;
  auto exe = compileExample("softmax.kiln", "softmax", {{"BLOCK", "64"}});
  ASSERT_TRUE(exe);
  auto buf = randomVector(m * stride, 6, -3, 3);
  std::vector<float> y(m * n, NAN);
  launchOrFail(*exe, "softmax",
               {KernelArg::of(TensorRef{buf.data(), DType::F32, {m, n}, {stride, 1}}),
                KernelArg::of(TensorRef::contiguous(y.data(), DType::F32, {m, n}))});
  EXPECT_TRUE(allClose(y, reference::softmax(buf.data(), m, n, stride), 1e-5, 1e-7));
}

//===----------------------------------------------------------------------===//
// layernorm
//===----------------------------------------------------------------------===//

class LayerNorm : public ::testing::TestWithParam<Shape2> {};

TEST_P(LayerNorm, MatchesReference) {
  auto [m, n] = GetParam();
  auto exe = compileExample("layernorm.kiln", "layernorm");
  ASSERT_TRUE(exe);
  auto x = randomVector(m * n, 7, -2, 3), w = randomVector(n, 8), b = randomVector(n, 9);
  std::vector<float> y(m * n, NAN);
  float eps = 1e-5f;
  launchOrFail(*exe, "layernorm",
               {KernelArg::of(TensorRef::contiguous(x.data(), DType::F32, {m, n})),
                KernelArg::of(TensorRef::contiguous(w.data(), DType::F32, {n})),
                KernelArg::of(TensorRef::contiguous(b.data(), DType::F32, {n})),
                KernelArg::of(TensorRef::contiguous(y.data(), DType::F32, {m, n})),
                KernelArg::ofFloat(eps)});
  EXPECT_TRUE(allClose(y, reference::layernorm(x.data(), w.data(), b.data(), m, n, eps),
                       1e-4, 1e-4));
}

INSTANTIATE_TEST_SUITE_P(Sizes, LayerNorm,
                         ::testing::Values(Shape2{1, 1}, Shape2{7, 7}, Shape2{1000, 7},
                                           Shape2{5, 1000}, Shape2{3, 4097}));

//===----------------------------------------------------------------------===//
// reductions
//===----------------------------------------------------------------------===//

class Reductions : public ::testing::TestWithParam<Shape2> {};

TEST_P(Reductions, RowAndColumnSums) {
  auto [m, n] = GetParam();
  auto rowExe = compileExample("reduce.kiln", "row_sum");
  auto colExe = compileExample("reduce.kiln", "col_sum");
  ASSERT_TRUE(rowExe && colExe);
  auto x = randomVector(m * n, 10);
  std::vector<float> rows(m, NAN), cols(n, NAN);
  auto xt = TensorRef::contiguous(x.data(), DType::F32, {m, n});
  launchOrFail(*rowExe, "row_sum",
               {KernelArg::of(xt), KernelArg::of(TensorRef::contiguous(rows.data(), DType::F32, {m}))});
  launchOrFail(*colExe, "col_sum",
               {KernelArg::of(xt), KernelArg::of(TensorRef::contiguous(cols.data(), DType::F32, {n}))});
  EXPECT_TRUE(allClose(rows, reference::sum2d(x.data(), m, n, n, 1, true), 1e-4, 1e-4));
  EXPECT_TRUE(allClose(cols, reference::sum2d(x.data(), m, n, n, 1, false), 1e-4, 1e-4));
}

INSTANTIATE_TEST_SUITE_P(Sizes, Reductions,
                         ::testing::Values(Shape2{1, 1}, Shape2{7, 7}, Shape2{1000, 7},
                                           Shape2{7, 1000}, Shape2{3, 4097}, Shape2{4097, 3}));

TEST(ReductionsStrided, ColumnSumOfATransposedView) {
  // x^T viewed through strides: element (i, j) of the view is buf[j * m + i].
  int64_t m = 33, n = 70;
  auto exe = compileExample("reduce.kiln", "col_sum");
  ASSERT_TRUE(exe);
  auto buf = randomVector(m * n, 11);
  std::vector<float> cols(n, NAN);
  launchOrFail(*exe, "col_sum",
               {KernelArg::of(TensorRef{buf.data(), DType::F32, {m, n}, {1, m}}),
                KernelArg::of(TensorRef::contiguous(cols.data(), DType::F32, {n}))});
  EXPECT_TRUE(allClose(cols, reference::sum2d(buf.data(), m, n, 1, m, false), 1e-4, 1e-4));
}

TEST(TotalSum, OneLaunchTheSameBitsEveryRun) {
  // One program (N < BLOCK), an exact number of blocks, and over a thousand
  // programs (more partials than one STEP of the last program's loop); each size
  // launched three times on one counter, which the last program resets.
  auto exe = compileExample("reduce.kiln", "total_sum");
  ASSERT_TRUE(exe);
  for (int64_t n : {int64_t(7), int64_t(4096), int64_t(2300001)}) {
    auto x = randomVector(n, 12);
    double want = 0;
    for (float v : x)
      want += v;
    int64_t p = (n + 2047) / 2048;
    std::vector<float> partials(p, NAN), first;
    std::vector<int32_t> tickets{0};
    for (int run = 0; run < 3; ++run) {
      std::vector<float> total{NAN};
      launchOrFail(*exe, "total_sum",
                   {KernelArg::of(TensorRef::contiguous(x.data(), DType::F32, {n})),
                    KernelArg::of(TensorRef::contiguous(partials.data(), DType::F32, {p})),
                    KernelArg::of(TensorRef::contiguous(tickets.data(), DType::I32, {1})),
                    KernelArg::of(TensorRef::contiguous(total.data(), DType::F32, {1}))});
      EXPECT_EQ(tickets[0], 0) << "n = " << n;
      EXPECT_TRUE(allClose(total, {want}, 1e-5, 1e-4)) << "n = " << n;
      if (run == 0)
        first = total;
      EXPECT_EQ(std::memcmp(total.data(), first.data(), sizeof(float)), 0) << "n = " << n;
    }
  }
}

//===----------------------------------------------------------------------===//
// matmul
//===----------------------------------------------------------------------===//

struct Shape3 {
  int64_t m, n, k;
};

class Matmul : public ::testing::TestWithParam<Shape3> {};

TEST_P(Matmul, MatchesReference) {
  auto [m, n, k] = GetParam();
  auto exe = compileExample("matmul.kiln", "matmul");
  ASSERT_TRUE(exe);
  auto a = randomVector(m * k, 12), b = randomVector(k * n, 13);
  std::vector<float> c(m * n, NAN);
  launchOrFail(*exe, "matmul",
               {KernelArg::of(TensorRef::contiguous(a.data(), DType::F32, {m, k})),
                KernelArg::of(TensorRef::contiguous(b.data(), DType::F32, {k, n})),
                KernelArg::of(TensorRef::contiguous(c.data(), DType::F32, {m, n}))});
  EXPECT_TRUE(allClose(c, reference::matmul(a.data(), b.data(), m, n, k, k, 1), 1e-4, 1e-4));
}

INSTANTIATE_TEST_SUITE_P(Sizes, Matmul,
                         ::testing::Values(Shape3{1, 1, 1}, Shape3{7, 7, 7},
                                           Shape3{1000, 7, 33}, Shape3{7, 1000, 70},
                                           Shape3{65, 4097, 3}, Shape3{129, 97, 300},
                                           Shape3{128, 64, 96}));

class SplitKMatmul : public ::testing::TestWithParam<Shape3> {};

TEST_P(SplitKMatmul, MatchesReference) {
  // Slices that end past K, and (K = 33) slices with nothing to add; c starts
  // at zero and every program adds its 2-D block with atomic_add.
  auto [m, n, k] = GetParam();
  auto exe = compileExample("matmul.kiln", "matmul_splitk");
  ASSERT_TRUE(exe);
  auto a = randomVector(m * k, 14), b = randomVector(k * n, 15);
  std::vector<float> c(m * n, 0.0f);
  launchOrFail(*exe, "matmul_splitk",
               {KernelArg::of(TensorRef::contiguous(a.data(), DType::F32, {m, k})),
                KernelArg::of(TensorRef::contiguous(b.data(), DType::F32, {k, n})),
                KernelArg::of(TensorRef::contiguous(c.data(), DType::F32, {m, n}))});
  EXPECT_TRUE(allClose(c, reference::matmul(a.data(), b.data(), m, n, k, k, 1), 1e-4, 1e-4));
}

INSTANTIATE_TEST_SUITE_P(Sizes, SplitKMatmul,
                         ::testing::Values(Shape3{7, 7, 33}, Shape3{65, 33, 700},
                                           Shape3{32, 64, 4096}));

TEST(MatmulBlocking, EveryTileShapeAgrees) {
  // The CPU micro-kernel blocks by 8 x 32 (AVX-512) or 4 x 16 (AVX2); other tile
  // shapes take narrower blockings or the plain loops. All must agree.
  int64_t m = 300, n = 290, k = 100; // whole 128-blocks and ragged edges
  auto a = randomVector(m * k, 16), b = randomVector(k * n, 17);
  auto want = reference::matmul(a.data(), b.data(), m, n, k, k, 1);
  for (auto [bm, bn, bk] : {std::tuple{64, 64, 64}, {128, 128, 32}, {16, 48, 8}, {8, 8, 8}, {3, 5, 7}}) {
    auto exe = compileExample("matmul.kiln", "matmul",
                              {{"BM", std::to_string(bm)}, {"BN", std::to_string(bn)},
                               {"BK", std::to_string(bk)}});
    ASSERT_TRUE(exe);
    std::vector<float> c(m * n, NAN);
    launchOrFail(*exe, "matmul",
                 {KernelArg::of(TensorRef::contiguous(a.data(), DType::F32, {m, k})),
                  KernelArg::of(TensorRef::contiguous(b.data(), DType::F32, {k, n})),
                  KernelArg::of(TensorRef::contiguous(c.data(), DType::F32, {m, n}))});
    EXPECT_TRUE(allClose(c, want, 1e-4, 1e-4)) << bm << "x" << bn << "x" << bk;
  }
}

TEST(MatmulStrided, TransposedA) {
  // a is given as the transpose view of a [k, m] buffer.
  int64_t m = 50, n = 40, k = 37;
  auto exe = compileExample("matmul.kiln", "matmul", {{"BK", "16"}});
  ASSERT_TRUE(exe);
  auto at = randomVector(k * m, 14), b = randomVector(k * n, 15);
  std::vector<float> c(m * n, NAN);
  launchOrFail(*exe, "matmul",
               {KernelArg::of(TensorRef{at.data(), DType::F32, {m, k}, {1, m}}),
                KernelArg::of(TensorRef::contiguous(b.data(), DType::F32, {k, n})),
                KernelArg::of(TensorRef::contiguous(c.data(), DType::F32, {m, n}))});
  EXPECT_TRUE(allClose(c, reference::matmul(at.data(), b.data(), m, n, k, 1, m), 1e-4, 1e-4));
}

TEST(QuantizedMatmul, GroupsAndTileShapes) {
  // examples/quant_matmul.kiln with 32-row groups (32 of them, the last partial),
  // K odd, and K steps of a whole group or half of one.
  int64_t m = 33, n = 45, k = 999, group = 32, kp = (k + 1) / 2, g = (k + group - 1) / group;
  std::vector<uint16_t> a(m * k), scales(g * n);
  std::vector<float> af(m * k), scalesf(g * n);
  std::vector<uint8_t> qw(kp * n), zeros(g * n);
  auto ra = randomVector(m * k, 21), rs = randomVector(g * n, 22, 0.01f, 0.1f);
  for (int64_t i = 0; i < m * k; ++i)
    af[i] = halfBitsToFloat(a[i] = floatToHalfBits(ra[i]));
  for (int64_t i = 0; i < g * n; ++i) {
    scalesf[i] = halfBitsToFloat(scales[i] = floatToHalfBits(rs[i]));
    zeros[i] = uint8_t(i * 7 % 16);
  }
  for (int64_t i = 0; i < kp * n; ++i)
    qw[i] = uint8_t(i * 37 + i / 5);
  auto want = reference::quantMatmul(af.data(), qw.data(), scalesf.data(), zeros.data(), m, n, k,
                                     group);
  for (const char *bk : {"32", "16"}) {
    auto exe = compileExample("quant_matmul.kiln", "matmul_int4",
                              {{"GROUP", std::to_string(group)}, {"BK", bk}});
    ASSERT_TRUE(exe);
    std::vector<float> c(m * n, NAN);
    launchOrFail(*exe, "matmul_int4",
                 {KernelArg::of(TensorRef::contiguous(a.data(), DType::F16, {m, k})),
                  KernelArg::of(TensorRef::contiguous(qw.data(), DType::U8, {kp, n})),
                  KernelArg::of(TensorRef::contiguous(scales.data(), DType::F16, {g, n})),
                  KernelArg::of(TensorRef::contiguous(zeros.data(), DType::U8, {g, n})),
                  KernelArg::of(TensorRef::contiguous(c.data(), DType::F32, {m, n}))});
    EXPECT_TRUE(allClose(c, want, 1e-4, 1e-4)) << "BK = " << bk;
  }
}

TEST(QuantizedMatmul, W8A8SumsExactlyAndScales) {
  // examples/quant_matmul.kiln's matmul_w8a8: ragged M, N and K (the masked
  // loads pad with zeros) and the full int8 range, -128 * -128 included.
  const int64_t m = 70, n = 45, k = 130;
  std::vector<int8_t> a(m * k), w(k * n);
  std::vector<float> sa(m), sw(n);
  for (int64_t i = 0; i < m * k; ++i)
    a[i] = int8_t(i * 89 % 256 - 128);
  for (int64_t i = 0; i < k * n; ++i)
    w[i] = int8_t((i * 53 + i / 7) % 256 - 128);
  auto rs = randomVector(m + n, 51, 0.001f, 0.01f);
  std::copy(rs.begin(), rs.begin() + m, sa.begin());
  std::copy(rs.begin() + m, rs.end(), sw.begin());
  auto want = reference::matmulW8A8(a.data(), w.data(), sa.data(), sw.data(), m, n, k);
  for (const char *bk : {"32", "64"}) {
    auto exe = compileExample("quant_matmul.kiln", "matmul_w8a8", {{"BK", bk}});
    ASSERT_TRUE(exe);
    std::vector<uint16_t> c(m * n, 0x7E00); // NaN until written
    launchOrFail(*exe, "matmul_w8a8",
                 {KernelArg::of(TensorRef::contiguous(a.data(), DType::I8, {m, k})),
                  KernelArg::of(TensorRef::contiguous(w.data(), DType::I8, {k, n})),
                  KernelArg::of(TensorRef::contiguous(sa.data(), DType::F32, {m})),
                  KernelArg::of(TensorRef::contiguous(sw.data(), DType::F32, {n})),
                  KernelArg::of(TensorRef::contiguous(c.data(), DType::F16, {m, n}))});
    std::vector<float> got(m * n);
    for (int64_t i = 0; i < m * n; ++i)
      got[i] = halfBitsToFloat(c[i]);
    // f16 rounding of the scaled result (2^-11 relative), nothing else.
    EXPECT_TRUE(allClose(got, want, 1e-3, 1e-3)) << "BK = " << bk;
  }
}

TEST(MoeMatmul, EachExpertMultipliesItsRows) {
  // examples/moe.kiln: 4 experts over 300 rows; ends sorted with an empty expert,
  // unsorted and out of range, and short of the last row (rows past it keep y).
  const int64_t t = 300, k = 70, n = 90, e = 4;
  std::vector<uint16_t> x(t * k), w(e * k * n);
  std::vector<float> xf(t * k), wf(e * k * n);
  auto rx = randomVector(t * k, 41), rw = randomVector(e * k * n, 42);
  for (int64_t i = 0; i < t * k; ++i)
    xf[i] = halfBitsToFloat(x[i] = floatToHalfBits(rx[i]));
  for (int64_t i = 0; i < e * k * n; ++i)
    wf[i] = halfBitsToFloat(w[i] = floatToHalfBits(rw[i]));
  auto exe = compileExample("moe.kiln", "moe_matmul");
  ASSERT_TRUE(exe);
  for (std::vector<int32_t> ends : {std::vector<int32_t>{70, 70, 201, 300},
                                    std::vector<int32_t>{130, 20, -5, 500},
                                    std::vector<int32_t>{40, 100, 100, 250}}) {
    std::vector<float> y(t * n, 7.0f);
    std::vector<double> want(t * n, 7.0);
    reference::moeMatmul(xf.data(), wf.data(), ends.data(), t, k, n, e, want);
    launchOrFail(*exe, "moe_matmul",
                 {KernelArg::of(TensorRef::contiguous(x.data(), DType::F16, {t, k})),
                  KernelArg::of(TensorRef::contiguous(w.data(), DType::F16, {e, k, n})),
                  KernelArg::of(TensorRef::contiguous(ends.data(), DType::I32, {e})),
                  KernelArg::of(TensorRef::contiguous(y.data(), DType::F32, {t, n}))});
    EXPECT_TRUE(allClose(y, want, 1e-4, 1e-4)) << "ends " << ends[0] << " " << ends[1] << " "
                                                << ends[2] << " " << ends[3];
  }
}

//===----------------------------------------------------------------------===//
// matmul with a fused epilogue, batched matmul
//===----------------------------------------------------------------------===//

TEST(MatmulBiasAct, EveryActivation) {
  int64_t m = 65, n = 33, k = 70;
  auto a = randomVector(m * k, 18), b = randomVector(k * n, 19), bias = randomVector(n, 20);
  for (int act : {0, 1, 2}) {
    auto exe = compileExample("matmul.kiln", "matmul_bias_act", {{"ACT", std::to_string(act)}});
    ASSERT_TRUE(exe);
    std::vector<float> c(m * n, NAN);
    launchOrFail(*exe, "matmul_bias_act",
                 {KernelArg::of(TensorRef::contiguous(a.data(), DType::F32, {m, k})),
                  KernelArg::of(TensorRef::contiguous(b.data(), DType::F32, {k, n})),
                  KernelArg::of(TensorRef::contiguous(bias.data(), DType::F32, {n})),
                  KernelArg::of(TensorRef::contiguous(c.data(), DType::F32, {m, n})),
                  KernelArg::ofFloat(0.5f)});
    EXPECT_TRUE(allClose(c, reference::matmulBiasAct(a.data(), b.data(), bias.data(), m, n, k,
                                                     0.5, act),
                         1e-4, 1e-4))
        << "ACT=" << act;
  }
}

TEST(Bmm, MatchesReference) {
  auto exe = compileExample("bmm.kiln", "bmm");
  ASSERT_TRUE(exe);
  for (Shape3 s : {Shape3{1, 1, 1}, Shape3{33, 70, 65}, Shape3{64, 32, 96}}) {
    int64_t batch = 3;
    auto a = randomVector(batch * s.m * s.k, 21), b = randomVector(batch * s.k * s.n, 22);
    std::vector<float> c(batch * s.m * s.n, NAN);
    launchOrFail(*exe, "bmm",
                 {KernelArg::of(TensorRef::contiguous(a.data(), DType::F32, {batch, s.m, s.k})),
                  KernelArg::of(TensorRef::contiguous(b.data(), DType::F32, {batch, s.k, s.n})),
                  KernelArg::of(TensorRef::contiguous(c.data(), DType::F32, {batch, s.m, s.n}))});
    EXPECT_TRUE(allClose(c, reference::bmm(a.data(), b.data(), batch, s.m, s.n, s.k), 1e-4,
                         1e-4))
        << s.m << "x" << s.n << "x" << s.k;
  }
}

//===----------------------------------------------------------------------===//
// rmsnorm
//===----------------------------------------------------------------------===//

class RmsNorm : public ::testing::TestWithParam<Shape2> {};

TEST_P(RmsNorm, MatchesReference) {
  auto [m, n] = GetParam();
  auto exe = compileExample("rmsnorm.kiln", "rmsnorm");
  ASSERT_TRUE(exe);
  auto x = randomVector(m * n, 23, -2, 3), w = randomVector(n, 24);
  std::vector<float> y(m * n, NAN);
  float eps = 1e-6f;
  launchOrFail(*exe, "rmsnorm",
               {KernelArg::of(TensorRef::contiguous(x.data(), DType::F32, {m, n})),
                KernelArg::of(TensorRef::contiguous(w.data(), DType::F32, {n})),
                KernelArg::of(TensorRef::contiguous(y.data(), DType::F32, {m, n})),
                KernelArg::ofFloat(eps)});
  EXPECT_TRUE(allClose(y, reference::rmsnorm(x.data(), w.data(), m, n, eps), 1e-5, 1e-5));
}

INSTANTIATE_TEST_SUITE_P(Sizes, RmsNorm,
                         ::testing::Values(Shape2{1, 1}, Shape2{7, 7}, Shape2{5, 1000},
                                           Shape2{3, 4097}));

//===----------------------------------------------------------------------===//
// flash attention
//===----------------------------------------------------------------------===//

struct AttentionCase {
  int64_t batch, seq, head;
  bool causal;
};

class Attention : public ::testing::TestWithParam<AttentionCase> {};

TEST_P(Attention, MatchesReference) {
  auto [batch, seq, head, causal] = GetParam();
  auto exe = compileExample("attention.kiln", "attention",
                            {{"HEAD", std::to_string(head)}, {"CAUSAL", causal ? "1" : "0"}});
  ASSERT_TRUE(exe);
  int64_t n = batch * seq * head;
  auto q = randomVector(n, 25, -2, 2), k = randomVector(n, 26, -2, 2), v = randomVector(n, 27);
  std::vector<float> o(n, NAN);
  float scale = 1.0f / std::sqrt(float(head));
  auto t = [&](float *p) { return KernelArg::of(TensorRef::contiguous(p, DType::F32, {batch, seq, head})); };
  launchOrFail(*exe, "attention",
               {t(q.data()), t(k.data()), t(v.data()), t(o.data()), KernelArg::ofFloat(scale)});
  EXPECT_TRUE(allClose(o, reference::attention(q.data(), k.data(), v.data(), batch, seq, head,
                                               scale, causal),
                       1e-4, 1e-5));
}

INSTANTIATE_TEST_SUITE_P(Shapes, Attention,
                         ::testing::Values(AttentionCase{2, 100, 64, false},
                                           AttentionCase{2, 100, 64, true},
                                           AttentionCase{1, 7, 128, false},
                                           AttentionCase{3, 33, 128, true},
                                           AttentionCase{1, 1, 64, true}));

//===----------------------------------------------------------------------===//
// dropout (random numbers)
//===----------------------------------------------------------------------===//

TEST(Dropout, KeepsAndScalesByTheSeededMask) {
  auto exe = compileExample("dropout.kiln", "dropout");
  ASSERT_TRUE(exe);
  int64_t n = 5000;
  auto x = randomVector(n, 29);
  for (float p : {0.0f, 0.25f, 0.9f}) {
    for (int64_t seed : {int64_t(0), int64_t(42), -(int64_t(1) << 40)}) {
      std::vector<float> y(n, NAN);
      launchOrFail(*exe, "dropout",
                   {KernelArg::of(TensorRef::contiguous(x.data(), DType::F32, {n})),
                    KernelArg::of(TensorRef::contiguous(y.data(), DType::F32, {n})),
                    KernelArg::ofFloat(p), KernelArg::ofInt(seed, DType::I64)});
      auto want = reference::dropout(x.data(), n, p, seed);
      EXPECT_TRUE(allClose(y, want, 1e-6, 1e-6)) << p << " " << seed;
      int64_t kept = std::count_if(y.begin(), y.end(), [](float v) { return v != 0; });
      EXPECT_NEAR(double(kept) / n, 1 - p, 0.03) << p << " " << seed;
    }
  }
}

//===----------------------------------------------------------------------===//
// layernorm_backward (a spin lock per partial row)
//===----------------------------------------------------------------------===//

TEST(LayerNormBackwardReference, AgreesWithFiniteDifferences) {
  // The reference gradients are what the kernel is held to, so check them
  // against the forward reference: L = sum(y * dy), dL/dx by central differences.
  int64_t m = 3, n = 37;
  auto x = randomVector(m * n, 40, -2, 3), w = randomVector(n, 41), b = randomVector(n, 42),
       dy = randomVector(m * n, 43);
  double eps = 1e-5;
  auto g = reference::layernormBackward(x.data(), w.data(), dy.data(), m, n, eps);
  auto loss = [&](const std::vector<float> &xs, const std::vector<float> &ws,
                  const std::vector<float> &bs) {
    auto y = reference::layernorm(xs.data(), ws.data(), bs.data(), m, n, eps);
    double l = 0;
    for (int64_t i = 0; i < m * n; ++i)
      l += y[i] * dy[i];
    return l;
  };
  auto central = [&](std::vector<float> &v, int64_t i) {
    float h = 1.0f / 256, saved = v[i];
    v[i] = saved + h;
    double up = loss(x, w, b);
    v[i] = saved - h;
    double down = loss(x, w, b);
    v[i] = saved;
    return (up - down) / (2 * double(h));
  };
  for (int64_t i : {0, 5, 36, 40, 110})
    EXPECT_NEAR(g.dx[i], central(x, i), 2e-3) << "dx " << i;
  for (int64_t c : {0, 17, 36}) {
    EXPECT_NEAR(g.dw[c], central(w, c), 2e-3) << "dw " << c;
    EXPECT_NEAR(g.db[c], central(b, c), 2e-3) << "db " << c;
  }
}

class LayerNormBackward : public ::testing::TestWithParam<std::tuple<int64_t, int64_t, int64_t>> {};

TEST_P(LayerNormBackward, MatchesReference) {
  // G partial rows: with G < M, rows contend for each lock; G = 1 serializes them all.
  auto [m, n, groups] = GetParam();
  auto exe = compileExample("layernorm_backward.kiln", "layernorm_backward");
  auto dwdb = compileExample("layernorm_backward.kiln", "layernorm_backward_dwdb");
  ASSERT_TRUE(exe && dwdb);
  auto x = randomVector(m * n, 44, -2, 3), w = randomVector(n, 45), dy = randomVector(m * n, 46);
  std::vector<float> dx(m * n, NAN), dwPartial(groups * n, 0.0f), dbPartial(groups * n, 0.0f),
      dw(n, NAN), db(n, NAN);
  std::vector<int32_t> locks(groups, 0);
  float eps = 1e-5f;
  auto f32 = [](std::vector<float> &v, std::vector<int64_t> shape) {
    return KernelArg::of(TensorRef::contiguous(v.data(), DType::F32, std::move(shape)));
  };
  launchOrFail(*exe, "layernorm_backward",
               {f32(x, {m, n}), f32(w, {n}), f32(dy, {m, n}), f32(dx, {m, n}),
                f32(dwPartial, {groups, n}), f32(dbPartial, {groups, n}),
                KernelArg::of(TensorRef::contiguous(locks.data(), DType::I32, {groups})),
                KernelArg::ofFloat(eps)});
  launchOrFail(*dwdb, "layernorm_backward_dwdb",
               {f32(dwPartial, {groups, n}), f32(dbPartial, {groups, n}), f32(dw, {n}),
                f32(db, {n})});
  auto want = reference::layernormBackward(x.data(), w.data(), dy.data(), m, n, eps);
  EXPECT_TRUE(allClose(dx, want.dx, 1e-4, 1e-4));
  EXPECT_TRUE(allClose(dw, want.dw, 1e-4, 1e-4));
  EXPECT_TRUE(allClose(db, want.db, 1e-4, 1e-4));
  EXPECT_EQ(locks, std::vector<int32_t>(groups, 0)); // every lock released
}

INSTANTIATE_TEST_SUITE_P(Sizes, LayerNormBackward,
                         ::testing::Values(std::tuple<int64_t, int64_t, int64_t>{1, 1, 1},
                                           std::tuple<int64_t, int64_t, int64_t>{37, 300, 8},
                                           std::tuple<int64_t, int64_t, int64_t>{200, 1000, 1},
                                           std::tuple<int64_t, int64_t, int64_t>{64, 77, 33}));

//===----------------------------------------------------------------------===//
// cross_entropy (online logsumexp forward, backward from the saved logsumexp)
//===----------------------------------------------------------------------===//

class CrossEntropy : public ::testing::TestWithParam<Shape2> {};

TEST_P(CrossEntropy, MatchesReference) {
  auto [m, n] = GetParam();
  auto forward = compileExample("cross_entropy.kiln", "cross_entropy", {{"BLOCK", "256"}});
  auto backward =
      compileExample("cross_entropy.kiln", "cross_entropy_backward", {{"BLOCK", "256"}});
  ASSERT_TRUE(forward && backward);
  auto x = randomVector(m * n, 51, -30, 30), dloss = randomVector(m, 52);
  std::vector<int64_t> target(m);
  for (int64_t r = 0; r < m; ++r) // every third row ignored, the others all over the row
    target[r] = r % 3 == 2 ? -100 : (r * 7919) % n;
  // Masked classes: a whole first chunk of -inf (its running maximum is -inf).
  if (n > 300) {
    std::fill(x.begin(), x.begin() + 256, -INFINITY);
    target[0] = 300;
  }
  std::vector<float> loss(m, NAN), lse(m, NAN), dx(m * n, NAN);
  auto tx = KernelArg::of(TensorRef::contiguous(x.data(), DType::F32, {m, n}));
  auto tt = KernelArg::of(TensorRef::contiguous(target.data(), DType::I64, {m}));
  auto tlse = KernelArg::of(TensorRef::contiguous(lse.data(), DType::F32, {m}));
  launchOrFail(*forward, "cross_entropy",
               {tx, tt, KernelArg::of(TensorRef::contiguous(loss.data(), DType::F32, {m})), tlse});
  launchOrFail(*backward, "cross_entropy_backward",
               {tx, tt, tlse, KernelArg::of(TensorRef::contiguous(dloss.data(), DType::F32, {m})),
                KernelArg::of(TensorRef::contiguous(dx.data(), DType::F32, {m, n}))});
  auto want = reference::crossEntropy(x.data(), target.data(), dloss.data(), m, n);
  EXPECT_TRUE(allClose(loss, want.loss, 1e-5, 1e-5));
  EXPECT_TRUE(allClose(lse, want.lse, 1e-5, 1e-5));
  EXPECT_TRUE(allClose(dx, want.dx, 1e-5, 1e-6));
}

INSTANTIATE_TEST_SUITE_P(Sizes, CrossEntropy,
                         ::testing::Values(Shape2{1, 1}, Shape2{7, 255}, Shape2{5, 256},
                                           Shape2{4, 1000}, Shape2{3, 4097}));

//===----------------------------------------------------------------------===//
// searchsorted (a while loop)
//===----------------------------------------------------------------------===//

/// An ascending array of `n` values with runs of duplicates and, when
/// `nans`, NaNs at the end (where torch.sort puts them).
static std::vector<float> sortedWithDuplicates(int64_t n, uint32_t seed, int64_t nans) {
  std::vector<float> v = randomVector(n, seed);
  for (float &x : v)
    x = std::round(x * 8) / 8; // a few dozen distinct values
  std::sort(v.begin(), v.end());
  for (int64_t i = std::max<int64_t>(0, n - nans); i < n; ++i)
    v[i] = NAN;
  return v;
}

TEST(SearchSorted, FindsTheFirstNotLessElement) {
  auto exe = compileExample("searchsorted.kiln", "searchsorted", {{"BLOCK", "128"}});
  ASSERT_TRUE(exe);
  for (int64_t n : {1, 2, 1000, 4097}) {
    for (int64_t nans : {0, 3}) {
      auto sorted = sortedWithDuplicates(n, uint32_t(n), nans);
      // Random queries, every element itself (duplicates: the first of a run),
      // values past both ends, infinities and NaN; not a multiple of BLOCK.
      auto queries = randomVector(777, 31);
      for (float s : sorted)
        queries.push_back(s);
      for (float s : {-2.0f, 2.0f, -INFINITY, INFINITY, NAN})
        queries.push_back(s);
      int64_t q = int64_t(queries.size());
      std::vector<int32_t> out(q, -1);
      launchOrFail(*exe, "searchsorted",
                   {KernelArg::of(TensorRef::contiguous(sorted.data(), DType::F32, {n})),
                    KernelArg::of(TensorRef::contiguous(queries.data(), DType::F32, {q})),
                    KernelArg::of(TensorRef::contiguous(out.data(), DType::I32, {q}))});
      EXPECT_EQ(out, reference::searchsorted(sorted.data(), n, queries.data(), q))
          << "n = " << n << ", nans = " << nans;
    }
  }
}

//===----------------------------------------------------------------------===//
// linear_recurrence (associative_scan with a combine function)
//===----------------------------------------------------------------------===//

/// Runs `kernel` of examples/linear_recurrence.kiln (with `params`) on random
/// [t, d] inputs and checks h and the final state against the sequential loop.
static void checkLinearRecurrence(const char *kernel, int64_t t, int64_t d,
                                  const std::map<std::string, std::string> &params = {}) {
  auto exe = compileExample("linear_recurrence.kiln", kernel, params);
  ASSERT_TRUE(exe);
  auto a = randomVector(t * d, 40), x = randomVector(t * d, 41), h0 = randomVector(d, 42);
  std::vector<float> h(t * d, NAN), last(d, NAN);
  launchOrFail(*exe, kernel,
               {KernelArg::of(TensorRef::contiguous(a.data(), DType::F32, {t, d})),
                KernelArg::of(TensorRef::contiguous(x.data(), DType::F32, {t, d})),
                KernelArg::of(TensorRef::contiguous(h0.data(), DType::F32, {d})),
                KernelArg::of(TensorRef::contiguous(h.data(), DType::F32, {t, d})),
                KernelArg::of(TensorRef::contiguous(last.data(), DType::F32, {d}))});
  auto want = reference::linearRecurrence(a.data(), x.data(), h0.data(), t, d);
  h.insert(h.end(), last.begin(), last.end());
  EXPECT_TRUE(allClose(h, want, 1e-5, 1e-5)) << kernel << " at " << t << " x " << d;
}

class LinearRecurrence : public ::testing::TestWithParam<std::pair<int64_t, int64_t>> {};

TEST_P(LinearRecurrence, MatchesTheSequentialLoop) {
  // Ragged chunks of time and channels; |a| <= 1, so h stays bounded. Both
  // forms: the chunked scan and the loop over time.
  auto [t, d] = GetParam();
  checkLinearRecurrence("linear_recurrence", t, d);
  checkLinearRecurrence("linear_recurrence_loop", t, d);
}

TEST(LinearRecurrenceLongLoop, KeepsItsStack) {
  // 1500 trips of a loop over 2-D tiles: the vector lowering's scratch buffers
  // once reserved new stack on every trip, and overflowed it.
  checkLinearRecurrence("linear_recurrence", 6000, 256, {{"BT", "4"}, {"BD", "256"}});
}

INSTANTIATE_TEST_SUITE_P(Shapes, LinearRecurrence,
                         ::testing::Values(std::pair<int64_t, int64_t>{1, 1},
                                           std::pair<int64_t, int64_t>{16, 64},
                                           std::pair<int64_t, int64_t>{100, 130},
                                           std::pair<int64_t, int64_t>{1000, 7}));

//===----------------------------------------------------------------------===//
// rope (split and join; tile slices)
//===----------------------------------------------------------------------===//

/// cos and sin tables of rotary embeddings: p * 10000^(-2i / head).
static std::pair<std::vector<float>, std::vector<float>> ropeTables(int64_t positions,
                                                                    int64_t head) {
  std::vector<float> c(positions * head / 2), s(positions * head / 2);
  for (int64_t p = 0; p < positions; ++p)
    for (int64_t i = 0; i < head / 2; ++i) {
      double angle = double(p) * std::pow(10000.0, -2.0 * double(i) / double(head));
      c[p * head / 2 + i] = float(std::cos(angle));
      s[p * head / 2 + i] = float(std::sin(angle));
    }
  return {c, s};
}

TEST(Rope, RotatesEveryPair) {
  // Both layouts (interleaved pairs; halves, through tile slices), head sizes
  // 64 and 128; ragged rows; positions out of order, repeated.
  using Reference = std::vector<double> (*)(const float *, const int32_t *, const float *,
                                            const float *, int64_t, int64_t);
  for (auto [kernel, want] : {std::pair<const char *, Reference>{"rope", reference::rope},
                              std::pair<const char *, Reference>{"rope_half",
                                                                 reference::ropeHalf}})
    for (int64_t head : {64, 128}) {
      auto exe = compileExample("rope.kiln", kernel, {{"HEAD", std::to_string(head)}});
      ASSERT_TRUE(exe);
      int64_t rows = 37, positions = 300;
      auto x = randomVector(rows * head, 50);
      std::vector<int32_t> pos(rows);
      for (int64_t r = 0; r < rows; ++r)
        pos[r] = int32_t((r * 97) % positions);
      auto [c, s] = ropeTables(positions, head);
      std::vector<float> y(rows * head, NAN);
      launchOrFail(
          *exe, kernel,
          {KernelArg::of(TensorRef::contiguous(x.data(), DType::F32, {rows, head})),
           KernelArg::of(TensorRef::contiguous(pos.data(), DType::I32, {rows})),
           KernelArg::of(TensorRef::contiguous(c.data(), DType::F32, {positions, head / 2})),
           KernelArg::of(TensorRef::contiguous(s.data(), DType::F32, {positions, head / 2})),
           KernelArg::of(TensorRef::contiguous(y.data(), DType::F32, {rows, head}))});
      EXPECT_TRUE(allClose(y, want(x.data(), pos.data(), c.data(), s.data(), rows, head),
                           1e-6, 1e-6))
          << kernel << " head " << head;
    }
}

//===----------------------------------------------------------------------===//
// histogram (atomics)
//===----------------------------------------------------------------------===//

TEST(Histogram, CountsEveryValueOnce) {
  auto exe = compileExample("histogram.kiln", "histogram", {{"BLOCK", "128"}, {"BINS", "10"}});
  ASSERT_TRUE(exe);
  int64_t n = 5000;
  auto x = randomVector(n, 28, -1.2f, 1.2f);
  x[3] = NAN;
  x[4] = 1.0f;
  x[5] = -1.0f;
  std::vector<int32_t> want(10, 0), got(10, 0);
  for (float v : x)
    if (v >= -1.0f && v < 1.0f)
      ++want[std::min<int32_t>(int32_t((v + 1.0f) * (10 / 2.0f)), 9)];
  launchOrFail(*exe, "histogram",
               {KernelArg::of(TensorRef::contiguous(x.data(), DType::F32, {n})),
                KernelArg::of(TensorRef::contiguous(got.data(), DType::I32, {10})),
                KernelArg::ofFloat(-1.0f), KernelArg::ofFloat(1.0f)});
  EXPECT_EQ(got, want);
}

} // namespace
