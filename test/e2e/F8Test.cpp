//===- F8Test.cpp - fp8 conversions and dots, run on the CPU --------------===//
//
// The compiler turns fp8 conversions into integer arithmetic (kiln-expand-f8);
// the host's reference (lib/Support/Half.h) is written from the format's
// definition instead. Every code decodes, and a set of values chosen to hit
// each rounding case encodes, to the same bits through both.

#include "lib/Support/Half.h"
#include "test/e2e/Harness.h"

#include <cmath>
#include <cstring>
#include <random>

using namespace kiln;
using namespace kiln::test;

namespace {

/// y = cast<TO>(x) over a 1-D tensor, in 64-element blocks.
std::unique_ptr<cpu::Executable> castKernel(const char *from, const char *to) {
  return compileSource(std::string("kernel k(x: tensor<") + from + ">[N], y: tensor<" + to +
                           ">[N]) grid(cdiv(N, 64)) {\n"
                           "  let i = program_id(0) * 64 + arange(0, 64);\n"
                           "  store(y[i], cast<" + to + ">(load(x[i], mask=i < N)), mask=i < N);\n"
                           "}\n",
                       "k");
}

uint32_t bitsOf(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

float fromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

class F8 : public ::testing::TestWithParam<DType> {};

TEST_P(F8, EveryCodeDecodes) {
  DType dt = GetParam();
  auto exe = castKernel(dtypeName(dt), "f32");
  ASSERT_TRUE(exe);
  const int64_t n = 256;
  std::vector<uint8_t> x(n);
  std::vector<float> y(n, -1.0f);
  for (int64_t i = 0; i < n; ++i)
    x[i] = static_cast<uint8_t>(i);
  launchOrFail(*exe, "k",
               {KernelArg::of(TensorRef::contiguous(x.data(), dt, {n})),
                KernelArg::of(TensorRef::contiguous(y.data(), DType::F32, {n}))});
  for (int64_t i = 0; i < n; ++i) {
    float want = f8BitsToFloat(x[i], dt);
    if (std::isnan(want))
      EXPECT_TRUE(std::isnan(y[i])) << "code 0x" << std::hex << i;
    else // bit equality also tells -0 from +0
      EXPECT_EQ(bitsOf(y[i]), bitsOf(want)) << "code 0x" << std::hex << i << ": " << y[i];
  }
}

TEST_P(F8, EncodingRoundsToNearestEvenAndSaturates) {
  DType dt = GetParam();
  auto exe = castKernel("f32", dtypeName(dt));
  ASSERT_TRUE(exe);
  std::vector<float> x = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, -NAN, 1e30f, -1e30f,
                          fromBits(1), fromBits(0x807fffff), 1e-30f};
  // Every value, the midpoints between neighbours (ties), and values just off them.
  for (int code = 0; code < 0x80; ++code) {
    float v = f8BitsToFloat(static_cast<uint8_t>(code), dt);
    float next = f8BitsToFloat(static_cast<uint8_t>(code + 1), dt);
    if (std::isnan(v) || std::isinf(v))
      continue;
    x.insert(x.end(), {v, -v, std::nextafter(v, 0.0f), std::nextafter(v, INFINITY)});
    float mid = std::isfinite(next) ? v + (next - v) / 2 : v * 1.0625f;
    x.insert(x.end(), {mid, -mid, std::nextafter(mid, 0.0f), std::nextafter(mid, INFINITY)});
  }
  std::mt19937 gen(7);
  std::uniform_real_distribution<float> wide(-1e5f, 1e5f), narrow(-0.1f, 0.1f);
  for (int i = 0; i < 1000; ++i)
    x.insert(x.end(), {wide(gen), narrow(gen)});
  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<uint8_t> y(n, 0x55);
  launchOrFail(*exe, "k",
               {KernelArg::of(TensorRef::contiguous(x.data(), DType::F32, {n})),
                KernelArg::of(TensorRef::contiguous(y.data(), dt, {n}))});
  for (int64_t i = 0; i < n; ++i)
    EXPECT_EQ(int(y[i]), int(floatToF8Bits(x[i], dt)))
        << std::hexfloat << x[i] << " (" << std::defaultfloat << x[i] << ")";
}

TEST_P(F8, HalfPrecisionRoundTrips) {
  // f16 -> fp8 -> f16: widening is exact and narrowing goes through f32.
  DType dt = GetParam();
  auto down = castKernel("f16", dtypeName(dt)), up = castKernel(dtypeName(dt), "f16");
  ASSERT_TRUE(down && up);
  const int64_t n = 2000;
  std::vector<uint16_t> x(n), back(n);
  std::vector<uint8_t> mid(n);
  std::mt19937 gen(3);
  std::uniform_real_distribution<float> real(-600, 600);
  for (int64_t i = 0; i < n; ++i)
    x[i] = floatToHalfBits(real(gen));
  launchOrFail(*down, "k",
               {KernelArg::of(TensorRef::contiguous(x.data(), DType::F16, {n})),
                KernelArg::of(TensorRef::contiguous(mid.data(), dt, {n}))});
  launchOrFail(*up, "k",
               {KernelArg::of(TensorRef::contiguous(mid.data(), dt, {n})),
                KernelArg::of(TensorRef::contiguous(back.data(), DType::F16, {n}))});
  for (int64_t i = 0; i < n; ++i) {
    uint8_t want = floatToF8Bits(halfBitsToFloat(x[i]), dt);
    ASSERT_EQ(int(mid[i]), int(want)) << halfBitsToFloat(x[i]);
    ASSERT_EQ(halfBitsToFloat(back[i]), f8BitsToFloat(want, dt));
  }
}

TEST_P(F8, DoublesRoundOnce) {
  // f64 -> fp8 narrows to f32 with round-to-odd first: a value just past an fp8
  // midpoint that f32 would round onto the midpoint still rounds away from it.
  DType dt = GetParam();
  auto exe = castKernel("f64", dtypeName(dt));
  ASSERT_TRUE(exe);
  std::vector<double> x;
  for (int code = 0; code < 0x7b; ++code) {
    double v = f8BitsToFloat(static_cast<uint8_t>(code), dt);
    double mid = (v + f8BitsToFloat(static_cast<uint8_t>(code + 1), dt)) / 2;
    for (double d : {mid, mid + std::ldexp(mid, -40), mid - std::ldexp(mid, -40)})
      x.insert(x.end(), {d, -d});
  }
  std::mt19937 gen(5);
  std::uniform_real_distribution<double> real(-500, 500);
  for (int i = 0; i < 500; ++i)
    x.push_back(real(gen));
  x.insert(x.end(), {1e300, -1e300, 1e-300, INFINITY, NAN});
  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<uint8_t> y(n, 0x55);
  launchOrFail(*exe, "k",
               {KernelArg::of(TensorRef::contiguous(x.data(), DType::F64, {n})),
                KernelArg::of(TensorRef::contiguous(y.data(), dt, {n}))});
  for (int64_t i = 0; i < n; ++i)
    EXPECT_EQ(int(y[i]), int(floatToF8Bits(x[i], dt))) << std::hexfloat << x[i];
}

INSTANTIATE_TEST_SUITE_P(Formats, F8, ::testing::Values(DType::F8E4M3, DType::F8E5M2),
                         [](const auto &info) { return std::string(dtypeName(info.param)); });

TEST(F8Dot, MatchesAReferenceOnTheDecodedValues) {
  // e4m3 x e4m3 with f32 accumulation, stored as e5m2: the product of decoded
  // values summed in double, then encoded by the host reference.
  auto exe = compileSource(R"(
    kernel k(a: tensor<f8e4m3>[M, K], b: tensor<f8e4m3>[K, N], c: tensor<f8e5m2>[M, N],
             d: tensor<f32>[M, N])
        params(BM: i32 = 16, BN: i32 = 16, BK: i32 = 32) grid(cdiv(M, BM), cdiv(N, BN)) {
      let m0 = program_id(0) * BM;
      let n0 = program_id(1) * BN;
      var acc = zeros<f32>[BM, BN];
      for k in range(0, K, BK) {
        acc = dot(load(a.tile([BM, BK], [m0, k])), load(b.tile([BK, BN], [k, n0])), acc);
      }
      store(c.tile([BM, BN], [m0, n0]), cast<f8e5m2>(acc));
      store(d.tile([BM, BN], [m0, n0]), acc);
    })", "k");
  ASSERT_TRUE(exe);
  const int64_t m = 40, k = 72, n = 24;
  std::vector<uint8_t> a(m * k), b(k * n), c(m * n);
  std::vector<float> d(m * n);
  std::mt19937 gen(11);
  std::uniform_real_distribution<float> real(-2, 2);
  for (auto &v : a)
    v = floatToF8Bits(real(gen), DType::F8E4M3);
  for (auto &v : b)
    v = floatToF8Bits(real(gen), DType::F8E4M3);
  launchOrFail(*exe, "k",
               {KernelArg::of(TensorRef::contiguous(a.data(), DType::F8E4M3, {m, k})),
                KernelArg::of(TensorRef::contiguous(b.data(), DType::F8E4M3, {k, n})),
                KernelArg::of(TensorRef::contiguous(c.data(), DType::F8E5M2, {m, n})),
                KernelArg::of(TensorRef::contiguous(d.data(), DType::F32, {m, n}))});
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0;
      for (int64_t p = 0; p < k; ++p)
        sum += double(f8BitsToFloat(a[i * k + p], DType::F8E4M3)) *
               f8BitsToFloat(b[p * n + j], DType::F8E4M3);
      ASSERT_NEAR(d[i * n + j], sum, 1e-4 * (1 + std::fabs(sum))) << i << ", " << j;
      // The f32 sum is within 1e-4 of the exact one, so it rounds to the same
      // e5m2 code unless it sits on a rounding boundary: allow the neighbour.
      int want = floatToF8Bits(static_cast<float>(sum), DType::F8E5M2);
      EXPECT_LE(std::abs(int(c[i * n + j]) - want), 1) << i << ", " << j;
      EXPECT_EQ(c[i * n + j], floatToF8Bits(d[i * n + j], DType::F8E5M2)) << i << ", " << j;
    }
}

} // namespace
