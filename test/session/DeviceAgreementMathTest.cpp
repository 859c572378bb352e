//===- DeviceAgreementMathTest.cpp - math functions on every device -------===//
//
// The math library against libm (in ulps), small arguments and subnormals,
// exact float remainders, and Philox random numbers against the reference.
//
// Each kernel runs through kiln::Session on the CPU and on Vulkan (lavapipe here),
// against a C++ reference.
//
//===----------------------------------------------------------------------===//

#include "examples/reference/References.h"
#include "kiln/kiln.h"
#include "lib/Support/Half.h"
#include "test/session/FreshCache.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <iomanip>
#include <limits>
#include <random>
#include <regex>
#include <sstream>
#include <type_traits>

using namespace kiln;

namespace {

using DeviceAgreement = test::FreshCacheTest;
using test::forEachDevice;
using reference::philox;

TEST_F(DeviceAgreement, MoreMathOnEveryDevice) {
  // The functions beyond exp/log/sin/cos against the C library in double:
  // ordinary values, then the cases C defines specially (atan2 of signed zeros
  // and infinities in every quadrant, pow of negative bases, halves for round,
  // hypot of an infinity and a NaN, signed zeros through asinh, atanh, cbrt and
  // copysign, the classification of NaN and infinities).
  const char *source = R"(
kernel k(x: tensor<f32>[N], y: tensor<f32>[N], out: tensor<f32>[F, N], flags: tensor<i32>[3, N])
    params(B: i32 = 64) grid(1) {
  let o = arange(0, B);
  let v = load(x[o]);
  let w = load(y[o]);
  store(out[0, o], tan(v));
  store(out[1, o], asin(v));
  store(out[2, o], acos(v));
  store(out[3, o], atan(v));
  store(out[4, o], sinh(v));
  store(out[5, o], cosh(v));
  store(out[6, o], log1p(v));
  store(out[7, o], expm1(v));
  store(out[8, o], log10(v));
  store(out[9, o], trunc(v * 10.0));
  store(out[10, o], round(v * 10.0));
  store(out[11, o], pow(v, w));
  store(out[12, o], atan2(v, w));
  store(out[13, o], clamp(v, -0.5, 0.5));
  store(out[14, o], asinh(v * 4.0));
  store(out[15, o], acosh(w));
  store(out[16, o], atanh(v));
  store(out[17, o], cbrt(w));
  store(out[18, o], copysign(v, w));
  store(out[19, o], hypot(v, w));
  store(flags[0, o], cast<i32>(isnan(v)));
  store(flags[1, o], cast<i32>(isinf(v)));
  store(flags[2, o], cast<i32>(isfinite(v)));
}
)";
  const int64_t n = 64, f = 20;
  std::vector<float> x(n), y(n);
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> unit(-0.95f, 0.95f), any(-3.0f, 3.0f);
  for (int64_t i = 0; i < 32; ++i)
    x[i] = unit(rng), y[i] = any(rng);
  // atan2's special cases, pow of negative bases, halves, NaN and infinities.
  const float inf = INFINITY;
  std::vector<std::pair<float, float>> special = {
      {0.0f, 0.0f},  {-0.0f, 0.0f}, {0.0f, -0.0f}, {-0.0f, -0.0f}, {1.0f, 0.0f},
      {1.0f, -0.0f}, {-1.0f, -0.0f}, {0.0f, -2.0f}, {-0.0f, -2.0f}, {inf, inf},
      {inf, -inf},   {-inf, inf},   {-inf, -inf}, {2.0f, -inf},  {-2.0f, inf},
      {-2.0f, 3.0f}, {-2.0f, 2.0f}, {-8.0f, 0.5f}, {0.25f, -1.5f}, {0.05f, 0.0f},
      {0.15f, 1.0f}, {-0.25f, 2.0f}, {-0.35f, 1.0f}, {NAN, 1.0f},  {1.0f, NAN},
      {0.5f, 0.5f},  {-0.5f, -0.5f}, {0.7f, -0.3f}, {-0.6f, -0.2f}, {0.45f, 3.0f},
      {-0.45f, -3.0f}, {0.0f, 1.0f}};
  for (size_t i = 0; i < special.size(); ++i)
    std::tie(x[32 + i], y[32 + i]) = special[i];
  // What each row computes, in double.
  std::vector<std::function<double(double, double)>> fns = {
      [](double a, double) { return std::tan(a); },
      [](double a, double) { return std::asin(a); },
      [](double a, double) { return std::acos(a); },
      [](double a, double) { return std::atan(a); },
      [](double a, double) { return std::sinh(a); },
      [](double a, double) { return std::cosh(a); },
      [](double a, double) { return std::log1p(a); },
      [](double a, double) { return std::expm1(a); },
      [](double a, double) { return std::log10(a); },
      [](double a, double) { return std::trunc(float(a * 10.0f)); },
      [](double a, double) { return std::nearbyint(float(a * 10.0f)); }, // half to even
      [](double a, double b) { return std::pow(a, b); },
      [](double a, double b) { return std::atan2(a, b); },
      [](double a, double) { return std::isnan(a) ? a : std::min(std::max(a, -0.5), 0.5); },
      [](double a, double) { return std::asinh(float(a * 4.0f)); },
      [](double, double b) { return std::acosh(b); },
      [](double a, double) { return std::atanh(a); },
      [](double, double b) { return std::cbrt(b); },
      [](double a, double b) { return std::copysign(a, b); },
      [](double a, double b) { return std::hypot(a, b); }};
  forEachDevice([&](Session &s, const std::string &device) {
    Kernel k = s.compile(source, "k");
    ASSERT_TRUE(k.ok()) << k.status().message();
    Tensor tx = s.upload(x, {n}), ty = s.upload(y, {n}), out = s.empty<float>({f, n}),
           flags = s.empty<int32_t>({3, n});
    ASSERT_TRUE(k(tx, ty, out, flags).ok()) << device;
    std::vector<float> got;
    std::vector<int32_t> gotFlags;
    ASSERT_TRUE(out.download(got).ok() && flags.download(gotFlags).ok());
    for (int64_t r = 0; r < f; ++r)
      for (int64_t i = 0; i < n; ++i) {
        double want = fns[r](x[i], y[i]), g = got[r * n + i];
        std::string what = device + " row " + std::to_string(r) + " x = " +
                           std::to_string(x[i]) + " y = " + std::to_string(y[i]);
        if (std::isnan(want)) {
          EXPECT_TRUE(std::isnan(g)) << what << ": got " << g;
          continue;
        }
        if (std::isinf(want) || want == 0) { // exact, and zeros keep their signs
          EXPECT_EQ(g, want) << what;
          if (r == 9 || r == 10 || r == 12 || r == 14 || r == 16 || r == 17 || r == 18) {
            EXPECT_EQ(std::signbit(g), std::signbit(want)) << what;
          }
          continue;
        }
        // asin, acos and atan2 at zeros and infinities are multiples of pi/4,
        // correctly rounded (Vulkan's atan2(1, -0) was an ulp below pi/2).
        bool specialArguments = x[i] == 0 || y[i] == 0 || std::isinf(x[i]) || std::isinf(y[i]) ||
                                std::abs(x[i]) == 1;
        if ((r == 1 || r == 2 || r == 12) && i >= 32 && specialArguments) {
          EXPECT_EQ(g, float(want)) << what;
          continue;
        }
        EXPECT_NEAR(g, want, 2e-6 + 2e-6 * std::abs(want)) << what;
      }
    for (int64_t i = 0; i < n; ++i) {
      EXPECT_EQ(gotFlags[i], std::isnan(x[i]) ? 1 : 0) << device << " isnan " << x[i];
      EXPECT_EQ(gotFlags[n + i], std::isinf(x[i]) ? 1 : 0) << device << " isinf " << x[i];
      EXPECT_EQ(gotFlags[2 * n + i], std::isfinite(x[i]) ? 1 : 0) << device << " isfinite " << x[i];
    }
  });
}

TEST_F(DeviceAgreement, MathKeepsSmallArgumentsAndSubnormalsOnEveryDevice) {
  // Relative accuracy where an absolute tolerance would hide everything:
  // GLSL's tanh and sinh cancelled near 0 (tanh(1e-10) came out 3e-8 on
  // lavapipe), its log lost the digits of log(1 + 1e-7) and misread
  // subnormals (log(1e-40) was -88.0), and cbrt and log2 build on log.
  // log1p (and asinh, built on it) gave 0 for the smallest subnormal: its
  // series divided x by 2 + x.
  const char *source = R"(
kernel k(x: tensor<f32>[N], out: tensor<f32>[7, N]) params(B: i32 = 16) grid(cdiv(N, B)) {
  let o = program_id(0) * B + arange(0, B);
  let v = load(x[o], mask = o < N);
  store(out[0, o], tanh(v), mask = o < N);
  store(out[1, o], sinh(v), mask = o < N);
  store(out[2, o], log(v), mask = o < N);
  store(out[3, o], log2(v), mask = o < N);
  store(out[4, o], cbrt(v), mask = o < N);
  store(out[5, o], log1p(v), mask = o < N);
  store(out[6, o], asinh(v), mask = o < N);
}
)";
  std::vector<float> x = {1e-30f, 1e-10f, -1e-6f, 3e-4f, -0.01f, 0.3f, 0.75f,
                          0.99999988f, 1.0000001f, 1.5f, 1e-40f, 5e-39f, 0x1p-140f, 20.0f,
                          88.5f, -89.2f, 0x1p-149f, -0x1p-149f};
  const int64_t n = x.size();
  std::vector<std::function<double(double)>> fns = {
      [](double a) { return std::tanh(a); }, [](double a) { return std::sinh(a); },
      [](double a) { return std::log(a); },  [](double a) { return std::log2(a); },
      [](double a) { return std::cbrt(a); }, [](double a) { return std::log1p(a); },
      [](double a) { return std::asinh(a); }};
  forEachDevice([&](Session &s, const std::string &device) {
    Kernel k = s.compile(source, "k");
    ASSERT_TRUE(k.ok()) << k.status().message();
    Tensor tx = s.upload(x, {n}), out = s.empty<float>({7, n});
    ASSERT_TRUE(k(tx, out).ok()) << device;
    std::vector<float> got;
    ASSERT_TRUE(out.download(got).ok());
    for (size_t r = 0; r < fns.size(); ++r)
      for (int64_t i = 0; i < n; ++i) {
        double want = fns[r](x[i]), g = got[r * n + i];
        std::string what = device + " row " + std::to_string(r) + " of " + std::to_string(x[i]);
        if (std::isnan(want))
          EXPECT_TRUE(std::isnan(g)) << what << ": got " << g;
        else if (std::abs(want) > FLT_MAX)
          EXPECT_EQ(g, float(want)) << what;
        else
          EXPECT_NEAR(g, want, 1e-5 * std::abs(want)) << what;
      }
  });
}

/// The distance from `got` to the exact `want` in units of the last place of
/// the T nearest `want` (subnormals' ulp is the smallest subnormal).
template <typename T> double ulpsFrom(T got, long double want) {
  T rounded = T(want), mag = std::abs(rounded);
  T ulp = mag == std::numeric_limits<T>::max()
              ? std::ldexp(T(1), std::numeric_limits<T>::max_exponent -
                                     std::numeric_limits<T>::digits)
              : std::nextafter(mag, T(INFINITY)) - mag;
  return double(std::abs((long double)got - want) / ulp);
}

/// A math function for MathAgreesWithLibm: its call in Kiln (of A, and B for
/// two-argument functions), its long double reference, the ulps it may be
/// off on every device, and the range of its typical arguments.
struct LibmFunction {
  const char *call;
  std::function<long double(long double, long double)> reference;
  double maxUlps;
  double lo, hi; // typical arguments, besides every magnitude
};

/// Runs each of `functions` on every device, in T (f64 or f32), on random
/// arguments of every magnitude its domain has, exact points (integers and
/// halves) and `special` values, and expects each result within the function's
/// ulps of the reference (NaN, infinities and zeros exactly, with their sign).
/// Prints the largest distance per function and device. `cpuSkips` are
/// arguments the CPU's C library gets wrong (the CPU calls it).
template <typename T>
void expectMathAgreesWithLibm(const std::vector<LibmFunction> &functions,
                              const std::vector<T> &special, const std::vector<T> &cpuSkips) {
  const char *dtype = std::is_same_v<T, double> ? "f64" : "f32";
  const int maxExponent = std::is_same_v<T, double> ? 60 : 7;
  const int64_t f = functions.size(), n = 1200;
  std::string source = "kernel k(x: tensor<" + std::string(dtype) + ">[F, N], y: tensor<" +
                       dtype + ">[F, N], out: tensor<" + dtype +
                       ">[F, N]) grid(cdiv(N, 64)) {\n"
                       "  let o = program_id(0) * 64 + arange(0, 64);\n"
                       "  let m = o < N;\n";
  for (int64_t r = 0; r < f; ++r) { // row r: a call of A = x[r, o] and B = y[r, o]
    std::string row = std::to_string(r), call = functions[r].call;
    call = std::regex_replace(call, std::regex("A"), "x[" + row + ", o]");
    call = std::regex_replace(call, std::regex("B"), "y[" + row + ", o]");
    call = std::regex_replace(call, std::regex("(x|y)\\[[0-9]+, o\\]"), "load($&, mask=m)");
    source += "  store(out[" + row + ", o], " + call + ", mask=m);\n";
  }
  source += "}\n";

  std::mt19937_64 rng(17);
  std::vector<T> xs(f * n), ys(f * n);
  for (int64_t r = 0; r < f; ++r) {
    std::uniform_real_distribution<double> typical(functions[r].lo, functions[r].hi);
    std::uniform_real_distribution<double> exponent(-maxExponent, maxExponent);
    for (int64_t i = 0; i < n; ++i) {
      T &x = xs[r * n + i], &y = ys[r * n + i];
      y = T((i % 4 == 0) ? typical(rng) : (i % 4 == 1) ? std::round(typical(rng))
                                                       : typical(rng) / 4);
      if (i < int64_t(special.size()))
        x = special[i], y = special[(i * 7) % special.size()];
      else if (i % 3 == 0) // every magnitude: a random significand and exponent
        x = T(std::ldexp(std::uniform_real_distribution<double>(-1, 1)(rng),
                         int(std::ldexp(exponent(rng), i % 2 ? 4 : 0) / 16 * 17)));
      else if (i % 7 == 1) // integers and halves (exp2, pow, cbrt of cubes)
        x = T(std::round(typical(rng) * 2) / 2);
      else
        x = T(typical(rng));
    }
  }
  forEachDevice([&](Session &s, const std::string &device) {
    Kernel k = s.compile(source, "k");
    ASSERT_TRUE(k.ok()) << k.status().message();
    Tensor tx = s.upload(xs, {f, n}), ty = s.upload(ys, {f, n}), out = s.empty<T>({f, n});
    ASSERT_TRUE(k(tx, ty, out).ok()) << device;
    std::vector<T> got;
    ASSERT_TRUE(out.download(got).ok());
    for (int64_t r = 0; r < f; ++r) {
      double worst = 0;
      int failures = 0;
      for (int64_t i = 0; i < n; ++i) {
        T x = xs[r * n + i], y = ys[r * n + i], g = got[r * n + i];
        if (device == "cpu" && std::count(cpuSkips.begin(), cpuSkips.end(), x))
          continue;
        long double want = functions[r].reference(x, y);
        T rounded = T(want);
        std::ostringstream what;
        what << device << ": " << dtype << " " << functions[r].call << " of A = "
             << std::setprecision(17) << x << ", B = " << y << " is " << g << ", want "
             << rounded;
        bool ok;
        if (std::isnan(rounded))
          ok = std::isnan(g);
        else if (std::isinf(rounded) || rounded == 0)
          ok = g == rounded && std::signbit(g) == std::signbit(rounded);
        else {
          double ulps = ulpsFrom(g, want);
          worst = std::max(worst, ulps);
          ok = ulps <= functions[r].maxUlps;
          what << " (" << ulps << " ulps)";
        }
        if (!ok && ++failures <= 5)
          ADD_FAILURE() << what.str();
      }
      std::printf("%s: %s %s within %.2f ulps\n", device.c_str(), dtype, functions[r].call,
                  worst);
    }
  });
}

TEST_F(DeviceAgreement, RoundingToIntegersOnEveryDevice) {
  // round (halves to even), floor, ceil and trunc of f64 and f32, bit for bit:
  // halves of both parities and signs, values past 2^24 (lavapipe's f64
  // RoundEven rounded 3.5 to 3 and left 26452196.1 as it was, which broke sin
  // and cos there), the last fractions below 2^52 and 2^23, signed zeros, NaN
  // and infinities.
  const char *source = R"(
kernel k(x: tensor<f64>[N], d: tensor<f64>[4, N], f: tensor<f32>[4, N]) grid(1) {
  let o = arange(0, 32);
  let v = load(x[o], mask = o < N);
  let w = cast<f32>(v);
  store(d[0, o], round(v), mask = o < N);
  store(d[1, o], floor(v), mask = o < N);
  store(d[2, o], ceil(v), mask = o < N);
  store(d[3, o], trunc(v), mask = o < N);
  store(f[0, o], round(w), mask = o < N);
  store(f[1, o], floor(w), mask = o < N);
  store(f[2, o], ceil(w), mask = o < N);
  store(f[3, o], trunc(w), mask = o < N);
}
)";
  const std::vector<double> x = {0.5,   1.5,    2.5,    3.5,     -0.5,     -1.5,  -2.5,
                                 -3.5,  0.49,   -0.51,  2.51,    -0.0,     0.0,   1e-300,
                                 -1e-300, 26452196.1, -27879225.75, 16777216.5, 0x1p52 - 0.5,
                                 -0x1p52 + 1.5, 0x1p53, 4503599627370497.0, 8388607.5,
                                 -8388606.5, 1e300, INFINITY, -INFINITY, NAN};
  const int64_t n = int64_t(x.size());
  auto sameBits = [](auto a, auto b) {
    return std::isnan(a) ? std::isnan(b) : std::memcmp(&a, &b, sizeof(a)) == 0;
  };
  forEachDevice([&](Session &s, const std::string &device) {
    Kernel k = s.compile(source, "k");
    ASSERT_TRUE(k.ok()) << k.status().message();
    Tensor tx = s.upload(x, {n}), td = s.empty<double>({4, n}), tf = s.empty<float>({4, n});
    ASSERT_TRUE(k(tx, td, tf).ok()) << device;
    std::vector<double> d;
    std::vector<float> f;
    ASSERT_TRUE(td.download(d).ok() && tf.download(f).ok());
    const char *names[4] = {"round", "floor", "ceil", "trunc"};
    for (int64_t i = 0; i < n; ++i) {
      double v = x[i];
      float w = float(v);
      double wantD[4] = {std::nearbyint(v), std::floor(v), std::ceil(v), std::trunc(v)};
      float wantF[4] = {std::nearbyint(w), std::floor(w), std::ceil(w), std::trunc(w)};
      for (int r = 0; r < 4; ++r) {
        EXPECT_TRUE(sameBits(d[r * n + i], wantD[r]))
            << device << " f64 " << names[r] << "(" << std::setprecision(17) << v
            << ") = " << d[r * n + i] << ", want " << wantD[r];
        EXPECT_TRUE(sameBits(f[r * n + i], wantF[r]))
            << device << " f32 " << names[r] << "(" << std::setprecision(9) << w
            << ") = " << f[r * n + i] << ", want " << wantF[r];
      }
    }
  });
}

TEST_F(DeviceAgreement, DoubleMathAgreesWithLibmOnEveryDevice) {
  // f64 math on Vulkan is Kiln's own (GLSL.std.450 computes exp, log, sin, pow
  // and the rest in 32-bit floats at most): each function against long double
  // references, in ulps, on random arguments of every magnitude its domain
  // has, exact points (powers of 2, integers) and the special values C
  // defines (NaN, infinities, signed zeros, subnormals, overflow).
  using L = long double;
  const std::vector<LibmFunction> functions = {
      {"exp(A)", [](L a, L) { return expl(a); }, 1.5, -745, 710},
      {"exp2(A)", [](L a, L) { return exp2l(a); }, 1.5, -1075, 1024},
      {"expm1(A)", [](L a, L) { return expm1l(a); }, 2, -3, 3},
      {"log(A)", [](L a, L) { return logl(a); }, 1.5, 0, 4},
      {"log2(A)", [](L a, L) { return log2l(a); }, 1.5, 0, 4},
      {"log10(A)", [](L a, L) { return log10l(a); }, 1.5, 0, 4},
      {"log1p(A)", [](L a, L) { return log1pl(a); }, 2, -1, 2},
      {"pow(A, B)", [](L a, L b) { return powl(a, b); }, 1.5, -4, 4},
      {"sin(A)", [](L a, L) { return sinl(a); }, 1, -10, 10},
      {"cos(A)", [](L a, L) { return cosl(a); }, 1, -10, 10},
      {"tan(A)", [](L a, L) { return tanl(a); }, 1.5, -10, 10},
      {"atan(A)", [](L a, L) { return atanl(a); }, 1.5, -4, 4},
      {"asin(A)", [](L a, L) { return asinl(a); }, 2, -1, 1},
      {"acos(A)", [](L a, L) { return acosl(a); }, 2, -1, 1},
      {"atan2(A, B)", [](L a, L b) { return atan2l(a, b); }, 2, -4, 4},
      {"sinh(A)", [](L a, L) { return sinhl(a); }, 2, -30, 30},
      {"cosh(A)", [](L a, L) { return coshl(a); }, 2, -30, 30},
      {"tanh(A)", [](L a, L) { return tanhl(a); }, 2, -5, 5},
      {"asinh(A)", [](L a, L) { return asinhl(a); }, 2.5, -4, 4},
      {"acosh(A)", [](L a, L) { return acoshl(a); }, 4, 1, 5},
      {"atanh(A)", [](L a, L) { return atanhl(a); }, 2.5, -1, 1},
      {"cbrt(A)", [](L a, L) { return cbrtl(a); }, 3, -8, 8},
      {"erf(A)", [](L a, L) { return erfl(a); }, 1.5, -6.5, 6.5},
      {"sigmoid(A)", [](L a, L) { return 1 / (1 + expl(-a)); }, 2.5, -40, 40},
  };
  const double inf = INFINITY, denormMin = std::numeric_limits<double>::denorm_min();
  // Of all doubles the closest to a multiple of pi/2 (Muller's table): its
  // remainder is 2^-61 of it. The CPU calls the C library, and glibc 2.36's
  // cos and tan there are 8 and 14 ulps off; Kiln's own (Vulkan) within 1 and 2.
  const double kClosestToHalfPiMultiple = 0x1.6ac5b262ca1ffp+849;
  const std::vector<double> special = {0.0, -0.0, inf, -inf, NAN, denormMin, -denormMin,
                                       0x1p-1022, 1e-300, -1e-300, 1.0, -1.0, 0.5, -0.5,
                                       2.0, 8.0, 1024.0, 1e300, -1e300, 709.7, 709.79, 710.5,
                                       -745.2, -744.5, 3.0, 1e-10, -1e-10, 0x1p-30, 100.0,
                                       // sin and cos: near multiples of pi/2, the
                                       // closest to one of all doubles, the largest
                                       1.5707963267948966, 3.141592653589793, 1e22,
                                       kClosestToHalfPiMultiple, 1.7976931348623157e308,
                                       // acosh just above 1: 3.7 ulps on Vulkan
                                       1.000474286024139};
  expectMathAgreesWithLibm<double>(functions, special, {kClosestToHalfPiMultiple});
}

TEST_F(DeviceAgreement, FloatMathAgreesWithLibmOnEveryDevice) {
  // f32 math: the CPU's (LLVM's and the C library's) and Vulkan's, where Kiln
  // computes exp, exp2, cosh, sin, cos, tan, atan and pow itself, as for f64:
  // lavapipe's sin(1e9) was 1.0 (reduced in f32), pow(0.99999988, 16777215)
  // 31% off, exp(25) 50 ulps (GLSL allows 3 + 2|x|) and exp(-90) 0, and
  // expm1, sinh, tanh and sigmoid inherited exp's error. sigmoid(-100) was 0
  // everywhere (exp(100) overflowed), and Vulkan's erf(-0.0) +0.0.
  using L = long double;
  const std::vector<LibmFunction> functions = {
      {"exp(A)", [](L a, L) { return expl(a); }, 1.5, -104, 89},
      {"exp2(A)", [](L a, L) { return exp2l(a); }, 1.5, -150, 128},
      {"expm1(A)", [](L a, L) { return expm1l(a); }, 2, -3, 3},
      {"log(A)", [](L a, L) { return logl(a); }, 3, 0, 4},
      {"log2(A)", [](L a, L) { return log2l(a); }, 4, 0, 4},
      {"log10(A)", [](L a, L) { return log10l(a); }, 4, 0, 4},
      {"log1p(A)", [](L a, L) { return log1pl(a); }, 3, -1, 2},
      {"pow(A, B)", [](L a, L b) { return powl(a, b); }, 1.5, -4, 4},
      {"sin(A)", [](L a, L) { return sinl(a); }, 1, -10, 10},
      {"cos(A)", [](L a, L) { return cosl(a); }, 1, -10, 10},
      {"tan(A)", [](L a, L) { return tanl(a); }, 1.5, -10, 10},
      {"atan(A)", [](L a, L) { return atanl(a); }, 1.5, -4, 4},
      {"asin(A)", [](L a, L) { return asinl(a); }, 2, -1, 1},
      {"acos(A)", [](L a, L) { return acosl(a); }, 2, -1, 1},
      {"atan2(A, B)", [](L a, L b) { return atan2l(a, b); }, 2, -4, 4},
      {"sinh(A)", [](L a, L) { return sinhl(a); }, 2, -30, 30},
      {"cosh(A)", [](L a, L) { return coshl(a); }, 1.5, -30, 30},
      {"tanh(A)", [](L a, L) { return tanhl(a); }, 2.5, -5, 5},
      {"asinh(A)", [](L a, L) { return asinhl(a); }, 3, -4, 4},
      {"acosh(A)", [](L a, L) { return acoshl(a); }, 3.5, 1, 5},
      {"atanh(A)", [](L a, L) { return atanhl(a); }, 3, -1, 1},
      {"cbrt(A)", [](L a, L) { return cbrtl(a); }, 2, -8, 8},
      {"erf(A)", [](L a, L) { return erfl(a); }, 4.5, -4, 4},
      {"sigmoid(A)", [](L a, L) { return 1 / (1 + expl(-a)); }, 2.5, -20, 20},
      // Bases near 1 to a large power (y log x large with log x small).
      {"pow(A, 16777215.0)", [](L a, L) { return powl(a, 16777215); }, 1.5, 0.999999, 1.000001},
  };
  const float inf = INFINITY, denormMin = std::numeric_limits<float>::denorm_min();
  const std::vector<float> special = {0.0f, -0.0f, inf, -inf, NAN, denormMin, -denormMin,
                                      0x1p-126f, 1e-30f, -1e-30f, 1.0f, -1.0f, 0.5f, -0.5f,
                                      2.0f, 8.0f, 1024.0f, 1e30f, -1e30f, 88.7f, 88.72f, 89.5f,
                                      -103.9f, -103.2f, 3.0f, 1e-10f, -1e-10f, 0x1p-30f, 100.0f,
                                      // sin and cos: near multiples of pi/2, large
                                      // arguments, the largest float, and one within
                                      // 2^-24 of a multiple of pi/2 (|cos| is 1e-8)
                                      1.5707964f, 3.1415927f, 6433.9f, 6434.1f, 1e9f, 1e22f,
                                      FLT_MAX, 0x1.b079cap+111f,
                                      // pow: large exponents of bases near 1
                                      0.99999988f, 1.0000001f, 16777215.0f,
                                      // the largest errors a wider sweep found on
                                      // Vulkan: erf 4.4 ulps, acosh 3.4
                                      1.8647685f, 1.0018867f};
  expectMathAgreesWithLibm<float>(functions, special, {});
}

TEST_F(DeviceAgreement, Expm1AndLog1pKeepSmallArgumentsOnEveryDevice) {
  // MLIR lowers expm1 and log1p as exp(x) - 1 and log(1 + x), on the CPU and
  // on Vulkan: both were 0 for 1e-10 in f32 (and in f64 on the CPU). Kiln
  // takes series near 0 (passes/AccurateMath.h); f32 results within 4 ulps.
  // (Past |x| = 1/2 expm1 is exp(x) - 1, as accurate as the device's exp:
  // Vulkan allows 3 + 2|x| ulps, and lavapipe's exp(88) is 28 off.)
  const char *source = R"(
kernel k(x: tensor<f32>[N], e: tensor<f32>[N], l: tensor<f32>[N]) grid(cdiv(N, 64)) {
  let o = program_id(0) * 64 + arange(0, 64);
  let m = o < N;
  let v = load(x[o], mask=m);
  store(e[o], expm1(v), mask=m);
  store(l[o], log1p(v), mask=m);
}
)";
  std::vector<float> xs = {1e-10f, -1e-10f, 3e-8f, -2.5e-7f, 1e-30f, -0.0f, 0.0f, 1e-3f,
                           -1e-3f, 0.4f,    -0.4f, 0.2f,   -20.0f,  -0.2f, -0.999f, 1e30f,
                           std::numeric_limits<float>::denorm_min(), INFINITY, -INFINITY, NAN};
  const int64_t n = xs.size();
  forEachDevice([&](Session &s, const std::string &device) {
    Kernel k = s.compile(source, "k");
    ASSERT_TRUE(k.ok()) << k.status().message();
    Tensor x = s.upload(xs, {n}), e = s.empty<float>({n}), l = s.empty<float>({n});
    ASSERT_TRUE(k(x, e, l).ok()) << device;
    std::vector<float> ge, gl;
    ASSERT_TRUE(e.download(ge).ok() && l.download(gl).ok());
    for (int64_t i = 0; i < n; ++i) {
      for (bool isExpm1 : {true, false}) {
        double want = isExpm1 ? std::expm1(double(xs[i])) : std::log1p(double(xs[i]));
        float got = isExpm1 ? ge[i] : gl[i];
        std::string what = device + (isExpm1 ? " expm1(" : " log1p(") +
                           std::to_string(xs[i]) + ") = " + std::to_string(got);
        if (std::isnan(want)) {
          EXPECT_TRUE(std::isnan(got)) << what;
        } else if (std::isinf(float(want)) || want == 0) {
          EXPECT_EQ(got, float(want)) << what;
          EXPECT_EQ(std::signbit(got), std::signbit(want)) << what;
        } else {
          float w = float(want);
          EXPECT_NEAR(got, want, 4 * (std::nextafter(std::abs(w), INFINITY) - std::abs(w)))
              << what;
        }
      }
    }
  });
}

/// r = x % y elementwise, all three tensors of `dtype`.
std::string remainderKernel(const std::string &dtype) {
  std::string t = "tensor<" + dtype + ">[N]";
  return "kernel k(x: " + t + ", y: " + t + ", r: " + t + ") params(B: i32 = 64)\n"
         "    grid(cdiv(N, B)) {\n"
         "  let i = program_id(0) * B + arange(0, B);\n"
         "  let m = i < N;\n"
         "  store(r[i], load(x[i], mask=m) % load(y[i], mask=m), mask=m);\n"
         "}\n";
}

/// Runs `x % y` on `type` (f32 or f64) tensors on every device and expects C's
/// fmod, bit for bit (a NaN for a NaN); reports the first ten pairs that differ.
template <typename F>
void expectFmodOnEveryDevice(const std::string &type, const std::vector<F> &xs,
                             const std::vector<F> &ys) {
  const std::string source = remainderKernel(type);
  const int64_t n = xs.size();
  forEachDevice([&](Session &s, const std::string &device) {
    Kernel k = s.compile(source, "k");
    ASSERT_TRUE(k.ok()) << k.status().message();
    Tensor x = s.upload(xs, {n}), y = s.upload(ys, {n}), r = s.upload(std::vector<F>(n), {n});
    ASSERT_TRUE(k(x, y, r).ok()) << device;
    std::vector<F> out(n);
    ASSERT_TRUE(r.download(out.data()).ok());
    int mismatches = 0;
    for (int64_t i = 0; i < n; ++i) {
      F want = std::fmod(xs[i], ys[i]);
      bool same = std::isnan(want) ? std::isnan(out[i])
                                   : std::memcmp(&want, &out[i], sizeof(F)) == 0;
      if (!same && ++mismatches <= 10)
        ADD_FAILURE() << device << ": " << xs[i] << " % " << ys[i] << " is " << out[i]
                      << ", fmod gives " << want;
    }
    EXPECT_EQ(mismatches, 0) << device;
  });
}

TEST_F(DeviceAgreement, HalfRemainderIsExactOnEveryDevice) {
  // Float `%` is fmod, whose result is exact in the operands' type. Vulkan's
  // f16 OpFRem is x - y * trunc(x / y) in f16 (lavapipe's differed by 0.02
  // on random inputs), so Kiln takes f16 remainders in f32 everywhere.
  const std::string source = remainderKernel("f16");
  std::vector<uint16_t> xs, ys;
  for (int i = 0; i < 500; ++i) {
    xs.push_back(floatToHalfBits(float(i * 7919 % 2000 - 1000) * 0.37f));
    ys.push_back(floatToHalfBits(float(i % 23 + 1) * (i % 2 ? 0.173f : -0.61f)));
  }
  const int64_t n = xs.size();
  forEachDevice([&](Session &s, const std::string &device) {
    Kernel k = s.compile(source, "k");
    ASSERT_TRUE(k.ok()) << k.status().message();
    Tensor x = s.upload(xs.data(), DType::F16, {n}), y = s.upload(ys.data(), DType::F16, {n}),
           r = s.empty(DType::F16, {n});
    ASSERT_TRUE(k(x, y, r).ok()) << device;
    std::vector<uint16_t> out(n);
    ASSERT_TRUE(r.download(out.data()).ok());
    for (int64_t i = 0; i < n; ++i) {
      float a = halfBitsToFloat(xs[i]), b = halfBitsToFloat(ys[i]);
      EXPECT_EQ(halfBitsToFloat(out[i]), std::fmod(a, b)) << device << ": " << a << " % " << b;
    }
  });
}

TEST_F(DeviceAgreement, FloatRemainderIsExactOnEveryDevice) {
  // f32 `%` is C's fmodf, exact. SPIR-V's OpFRem is x - y * trunc(x / y): on
  // lavapipe -7.7 % 0.11 was 0 instead of -0.11, and quotients past 2^24 lost
  // every bit. Operands cover quotients from below 1 to 2^276 (the long
  // division's loop), subnormals, signed zeros, infinities and NaN.
  auto bitsToFloat = [](uint32_t bits) {
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  };
  const float inf = std::numeric_limits<float>::infinity(), nan = std::nanf("");
  const float denormMin = std::numeric_limits<float>::denorm_min();
  std::vector<float> xs = {-7.7f, 7.7f, 5.0f, -0.0f, 0.0f, inf, -inf, nan, 3.0f, 1e38f,
                           3.0f * denormMin, 1e-38f, 2.5f, -1e30f, 1.0f};
  std::vector<float> ys = {0.11f, -0.11f, 0.0f, 3.0f, -3.0f, 2.0f, 2.0f, 2.0f, nan, 7e-45f,
                           2.0f * denormMin, 3e-39f, inf, -inf, 1.0f};
  std::mt19937 rng(7);
  std::uniform_int_distribution<uint32_t> bits(0, 0xffffffffu);
  for (int i = 0; i < 3000; ++i) {
    uint32_t a = bits(rng), b = bits(rng);
    if (i % 3 == 0) // exponents within 2^8 of each other: no loop step or one
      b = (b & 0x807fffffu) | ((a & 0x7f800000u) - ((bits(rng) % 9) << 23 & 0x7f800000u));
    xs.push_back(bitsToFloat(a));
    ys.push_back(bitsToFloat(b));
  }
  for (int i = 0; i < 200; ++i) { // the issue's own form: decimal steps
    xs.push_back(-7.7f + 0.37f * float(i));
    ys.push_back(0.11f + 0.013f * float(i % 17));
  }
  expectFmodOnEveryDevice("f32", xs, ys);
}

TEST_F(DeviceAgreement, DoubleRemainderIsExactOnEveryDevice) {
  // f64 `%` is C's fmod, exact. Vulkan's OpFRem (x - y * trunc(x / y)) was off
  // by up to |y| and lost every bit past quotients of 2^53; Kiln takes the
  // f32 remainder's long division on 64-bit significands, 11 bits a step.
  // Quotients reach 2^2046 (the longest loop), with subnormals, signed zeros,
  // infinities and NaN.
  auto bitsToDouble = [](uint64_t bits) {
    double d;
    std::memcpy(&d, &bits, 8);
    return d;
  };
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  const double denormMin = std::numeric_limits<double>::denorm_min();
  const double largest = std::numeric_limits<double>::max();
  std::vector<double> xs = {-7.7, 7.7, 5.0, -0.0, 0.0, inf, -inf, nan, 3.0, largest,
                            3.0 * denormMin, 1e-308, 2.5, -1e300, 1.0, largest, -0.1};
  std::vector<double> ys = {0.11, -0.11, 0.0, 3.0, -3.0, 2.0, 2.0, 2.0, nan, denormMin,
                            2.0 * denormMin, 3e-309, inf, -inf, 1.0, 7.0 * denormMin, 1e-300};
  std::mt19937_64 rng(11);
  for (int i = 0; i < 3000; ++i) {
    uint64_t a = rng(), b = rng();
    if (i % 3 == 0) // exponents within 2^11 of each other: no loop step or one
      b = (b & 0x800fffffffffffffull) |
          ((a & 0x7ff0000000000000ull) - ((rng() % 12) << 52 & 0x7ff0000000000000ull));
    xs.push_back(bitsToDouble(a));
    ys.push_back(bitsToDouble(b));
  }
  for (int i = 0; i < 200; ++i) { // decimal steps, whose quotients round to integers
    xs.push_back(-7.7 + 0.37 * i);
    ys.push_back(0.11 + 0.013 * (i % 17));
  }
  expectFmodOnEveryDevice("f64", xs, ys);
}

TEST_F(DeviceAgreement, RandomNumbersMatchPhiloxOnEveryDevice) {
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
  forEachDevice([&](Session &s, const std::string &device) {
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
  });
}

} // namespace
