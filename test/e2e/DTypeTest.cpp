//===- DTypeTest.cpp - every element type and scans, run on the CPU -------===//

#include "lib/Support/Half.h"
#include "test/e2e/Harness.h"

#include <cstring>

using namespace kiln;
using namespace kiln::test;

namespace {

TEST(DTypes, HalfInHalfOut) {
  // f16 loads, an f16 scalar argument, f16 arithmetic (done in f32 and rounded).
  auto exe = compileSource(R"(
    kernel k(x: tensor<f16>[N], y: tensor<f16>[N], s: f16) params(B: i32 = 64) grid(cdiv(N, B)) {
      let i = program_id(0) * B + arange(0, B);
      store(y[i], load(x[i]) * s + 1.0);
    })", "k");
  ASSERT_TRUE(exe);
  const int64_t n = 100;
  std::vector<uint16_t> x(n), y(n, 0xffff);
  for (int64_t i = 0; i < n; ++i)
    x[i] = floatToHalfBits(0.25f * i);
  launchOrFail(*exe, "k",
               {KernelArg::of(TensorRef::contiguous(x.data(), DType::F16, {n})),
                KernelArg::of(TensorRef::contiguous(y.data(), DType::F16, {n})),
                KernelArg::ofFloat(-0.5, DType::F16)});
  for (int64_t i = 0; i < n; ++i)
    ASSERT_EQ(halfBitsToFloat(y[i]), halfBitsToFloat(floatToHalfBits(0.25f * i * -0.5f + 1.0f)))
        << "at " << i;
}

TEST(DTypes, BFloat16AndDouble) {
  auto exe = compileSource(R"(
    kernel k(x: tensor<bf16>[N], y: tensor<bf16>[N], d: tensor<f64>[N]) grid(N) {
      let i = program_id(0);
      let v = load(x[i]);
      store(y[i], v * v);
      store(d[i], exp(cast<f64>(v)));
    })", "k");
  ASSERT_TRUE(exe);
  const int64_t n = 9;
  std::vector<uint16_t> x(n), y(n);
  std::vector<double> d(n);
  for (int64_t i = 0; i < n; ++i)
    x[i] = floatToBF16Bits(1.5f * i - 4);
  launchOrFail(*exe, "k",
               {KernelArg::of(TensorRef::contiguous(x.data(), DType::BF16, {n})),
                KernelArg::of(TensorRef::contiguous(y.data(), DType::BF16, {n})),
                KernelArg::of(TensorRef::contiguous(d.data(), DType::F64, {n}))});
  for (int64_t i = 0; i < n; ++i) {
    float v = bf16BitsToFloat(x[i]);
    ASSERT_EQ(bf16BitsToFloat(y[i]), bf16BitsToFloat(floatToBF16Bits(v * v))) << i;
    ASSERT_NEAR(d[i], std::exp(double(v)), 1e-12 * std::exp(double(v))) << i;
  }
}

TEST(DTypes, IntegersAndBools) {
  auto exe = compileSource(R"(
    kernel k(a: tensor<i8>[N], b: tensor<i16>[N], keep: tensor<i1>[N], out: tensor<i64>[N])
        params(B: i32 = 16) grid(cdiv(N, B)) {
      let i = program_id(0) * B + arange(0, B);
      let wide = cast<i64>(load(a[i])) * 1000000000 + cast<i64>(load(b[i]));
      store(out[i], wide, mask = load(keep[i]));
    })", "k");
  ASSERT_TRUE(exe);
  const int64_t n = 37;
  std::vector<int8_t> a(n);
  std::vector<int16_t> b(n);
  std::vector<uint8_t> keep(n);
  std::vector<int64_t> out(n, -1);
  for (int64_t i = 0; i < n; ++i) {
    a[i] = static_cast<int8_t>(i * 7 - 128);
    b[i] = static_cast<int16_t>(i * 1000 - 30000);
    keep[i] = i % 3 != 0;
  }
  launchOrFail(*exe, "k",
               {KernelArg::of(TensorRef::contiguous(a.data(), DType::I8, {n})),
                KernelArg::of(TensorRef::contiguous(b.data(), DType::I16, {n})),
                KernelArg::of(TensorRef::contiguous(keep.data(), DType::I1, {n})),
                KernelArg::of(TensorRef::contiguous(out.data(), DType::I64, {n}))});
  for (int64_t i = 0; i < n; ++i)
    ASSERT_EQ(out[i], keep[i] ? int64_t(a[i]) * 1000000000 + b[i] : -1) << i;
}

TEST(Scans, PrefixSumsAndMaxima) {
  auto exe = compileSource(R"(
    kernel k(x: tensor<f32>[M, N], s: tensor<f32>[M, N], m: tensor<f32>[M, N]) {
      let r = expand_dims(arange(0, 4), 1);
      let c = expand_dims(arange(0, 8), 0);
      let t = load(x[r, c]);
      store(s[r, c], cumsum(t, axis = 1));
      store(m[r, c], cummax(t, axis = 0));
    })", "k");
  ASSERT_TRUE(exe);
  const int64_t rows = 3, cols = 6; // smaller than the tile: masked lanes must not leak
  auto x = randomVector(rows * cols, 21);
  std::vector<float> s(rows * cols), m(rows * cols);
  launchOrFail(*exe, "k",
               {KernelArg::of(TensorRef::contiguous(x.data(), DType::F32, {rows, cols})),
                KernelArg::of(TensorRef::contiguous(s.data(), DType::F32, {rows, cols})),
                KernelArg::of(TensorRef::contiguous(m.data(), DType::F32, {rows, cols}))});
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      double sum = 0;
      for (int64_t k = 0; k <= c; ++k)
        sum += x[r * cols + k];
      // Masked lanes load 0, so the column maximum includes 0 only past the rows.
      float mx = -INFINITY;
      for (int64_t k = 0; k <= r; ++k)
        mx = std::max(mx, x[k * cols + c]);
      ASSERT_NEAR(s[r * cols + c], sum, 1e-5) << r << "," << c;
      ASSERT_EQ(m[r * cols + c], mx) << r << "," << c;
    }
}

TEST(Helpers, InlinedAndSpecialized) {
  auto exe = compileSource(R"(
    fn relu(v) { return max(v, 0.0); }
    fn affine(v, a, b) { return v * a + b; }
    kernel k(x: tensor<f32>[N], y: tensor<f32>[N]) params(B: i32 = 32) grid(cdiv(N, B)) {
      let i = program_id(0) * B + arange(0, B);
      store(y[i], relu(affine(load(x[i]), 2.0, -1.0)));
    })", "k");
  ASSERT_TRUE(exe);
  const int64_t n = 50;
  auto x = randomVector(n, 22);
  std::vector<float> y(n, NAN);
  launchOrFail(*exe, "k", {KernelArg::of(TensorRef::contiguous(x.data(), DType::F32, {n})),
                           KernelArg::of(TensorRef::contiguous(y.data(), DType::F32, {n}))});
  for (int64_t i = 0; i < n; ++i)
    ASSERT_FLOAT_EQ(y[i], std::max(x[i] * 2.0f - 1.0f, 0.0f)) << i;
}

} // namespace

namespace {

const char *kReductions = R"(
kernel reduce(x: tensor<f32>[N], out: tensor<f32>[4]) params(B: i32 = 64) {
  let i = arange(0, B);
  let v = load(x[i]);                       // masked lanes read 0
  let m = load(x[i], other = -inf);         // masked lanes read -inf
  store(out[0], sum(v));
  store(out[1], max(m));
  store(out[2], min(load(x[i], other = inf)));
  store(out[3], prod(load(x[i], other = 1.0)));
})";

std::vector<float> reduceOnCPU(std::vector<float> x) {
  GenOptions options;
  auto exe = compileForCPU(kReductions, "reduce.kiln", options);
  if (!exe) {
    ADD_FAILURE() << llvm::toString(exe.takeError());
    return {};
  }
  std::vector<float> out(4, -123.0f);
  int64_t n = static_cast<int64_t>(x.size());
  if (x.empty())
    x.push_back(0); // a valid pointer; the tensor still has size 0
  launchOrFail(**exe, "reduce",
               {KernelArg::of(TensorRef::contiguous(x.data(), DType::F32, {n})),
                KernelArg::of(TensorRef::contiguous(out.data(), DType::F32, {4}))});
  return out;
}

TEST(Numerics, NaNAndInfPropagate) {
  // IEEE: NaN poisons sums, products and (NaN-propagating) max/min; inf - inf is NaN.
  auto r = reduceOnCPU({1.0f, NAN, 2.0f});
  ASSERT_EQ(r.size(), 4u);
  for (float v : r)
    EXPECT_TRUE(std::isnan(v)) << v;
  auto inf = reduceOnCPU({INFINITY, 1.0f});
  EXPECT_EQ(inf[0], INFINITY);
  EXPECT_EQ(inf[1], INFINITY);
  EXPECT_EQ(inf[2], 1.0f);
  auto cancel = reduceOnCPU({INFINITY, -INFINITY});
  EXPECT_TRUE(std::isnan(cancel[0]));
  EXPECT_EQ(cancel[1], INFINITY);
  EXPECT_EQ(cancel[2], -INFINITY);
}

TEST(Numerics, EmptyAndSingleElementExtents) {
  // Over an empty extent every lane is masked: each reduction gives its identity
  // through `other` (sum 0, max -inf, min +inf, prod 1).
  auto empty = reduceOnCPU({});
  EXPECT_EQ(empty[0], 0.0f);
  EXPECT_EQ(empty[1], -INFINITY);
  EXPECT_EQ(empty[2], INFINITY);
  EXPECT_EQ(empty[3], 1.0f);
  auto one = reduceOnCPU({-2.5f});
  EXPECT_EQ(one[0], -2.5f);
  EXPECT_EQ(one[1], -2.5f);
  EXPECT_EQ(one[2], -2.5f);
  EXPECT_EQ(one[3], -2.5f);
}

} // namespace

namespace {

TEST(Reductions, ArangeInsideAWideReduction) {
  // `arange` fused into a 1024-element reduction (an argmax idiom and a prefix
  // mask): the CPU's chunked reductions must see each element's own index.
  auto exe = compileSource(R"(
    kernel k(x: tensor<f32>[N], out: tensor<f32>[2]) grid(1) {
      let v = load(x.tile([1024], [0]));
      store(out[0], cast<f32>(max(where(v == max(v), arange(0, 1024), -1))));
      store(out[1], sum(where(arange(0, 1024) < 100, v, 0.0)));
    })", "k");
  ASSERT_TRUE(exe);
  const int64_t n = 1024;
  std::vector<float> x(n), out(2, -5.0f);
  for (int64_t i = 0; i < n; ++i)
    x[i] = static_cast<float>(i);
  launchOrFail(*exe, "k",
               {KernelArg::of(TensorRef::contiguous(x.data(), DType::F32, {n})),
                KernelArg::of(TensorRef::contiguous(out.data(), DType::F32, {2}))});
  EXPECT_EQ(out[0], 1023.0f);
  EXPECT_EQ(out[1], 4950.0f);
}

} // namespace

namespace {

TEST(VectorMath, ExpAndLogCoverTheSubnormalRange) {
  // Tile exp/log are polynomial vector code on the CPU (kiln-cpu-vector-math);
  // results and arguments in the subnormal range must not be flushed, so the
  // tile lanes agree with libm (which the scalar lanes call).
  auto exe = compileSource(R"(
    kernel k(x: tensor<f32>[N], e: tensor<f32>[N], l: tensor<f32>[N]) grid(1) {
      let i = arange(0, 256);
      let v = load(x[i], mask=i < N, other=1.0);
      store(e[i], exp(v), mask=i < N);
      store(l[i], log(v), mask=i < N);
    })", "k");
  ASSERT_TRUE(exe);
  std::vector<float> x;
  for (int i = 0; i < 100; ++i)
    x.push_back(-110.0f + 0.25f * i); // exp from 0 through subnormal into normal
  for (int i = 0; i < 100; ++i)
    x.push_back(std::ldexp(1.0f, -149 + i)); // log over subnormal and small normal
  x.insert(x.end(), {0.0f, -0.0f, 1.0f, 88.0f, 89.0f, -1.0f, INFINITY, -INFINITY, NAN});
  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<float> e(n), l(n);
  launchOrFail(*exe, "k",
               {KernelArg::of(TensorRef::contiguous(x.data(), DType::F32, {n})),
                KernelArg::of(TensorRef::contiguous(e.data(), DType::F32, {n})),
                KernelArg::of(TensorRef::contiguous(l.data(), DType::F32, {n}))});
  auto close = [](float got, float want) {
    if (std::isnan(want))
      return std::isnan(got);
    if (std::isinf(want))
      return got == want;
    // 4 ulp relative, or two subnormal steps absolute.
    return std::fabs(got - want) <= 4.8e-7f * std::fabs(want) + 2.9e-45f;
  };
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_TRUE(close(e[i], std::exp(x[i]))) << "exp(" << x[i] << ") = " << e[i];
    EXPECT_TRUE(close(l[i], std::log(x[i]))) << "log(" << x[i] << ") = " << l[i];
  }
}

} // namespace
