//===- DeviceAgreementFloatsTest.cpp - narrow floats and conversions on every device ===//
//
// fp8 and bf16 conversions and moves, narrow-float rounding of every operation,
// saturating float-to-integer casts, and constant folds that must agree with
// what the devices compute.
//
// Each kernel runs through kiln::Session on the CPU and on Vulkan (lavapipe here),
// against a C++ reference.
//
//===----------------------------------------------------------------------===//

#include "kiln/kiln.h"
#include "lib/Support/Half.h"
#include "test/session/FreshCache.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

using namespace kiln;

namespace {

using DeviceAgreement = test::FreshCacheTest;
using test::forEachDevice;

TEST_F(DeviceAgreement, F8ConversionsAgreeOnEveryDevice) {
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
  forEachDevice([&](Session &s, const std::string &device) {
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
  });
}

TEST_F(DeviceAgreement, BFloat16AgreesOnEveryDevice) {
  // bf16 memory, arithmetic in f32 with each result rounded back (nearest
  // even), and math: the same bits on the CPU and on Vulkan (where bf16 values
  // are i16) as the host.
  const char *source = R"(
kernel k(x: tensor<f32>[N], y: tensor<bf16>[N], z: tensor<bf16>[N], w: tensor<f32>[N], s: bf16)
    params(B: i32 = 64) grid(cdiv(N, B)) {
  let i = program_id(0) * B + arange(0, B);
  let v = cast<bf16>(load(x[i]));
  store(y[i], v);
  store(z[i], v * s + 1.0);
  store(w[i], exp(cast<f32>(v) * 0.01));
}
)";
  std::vector<float> xs = {0.0f, -0.0f, 1.0f, 1.00390625f, 1.01171875f, 3.14159265f, -2.5e-3f,
                           3.0e38f, -3.4e38f, 1e-40f, INFINITY, -INFINITY, NAN};
  for (int i = 0; i < 200; ++i)
    xs.push_back(std::ldexp(float(i * 7919 % 1000) - 500.0f, i % 40 - 20));
  const int64_t n = xs.size();
  forEachDevice([&](Session &s, const std::string &device) {
    Kernel k = s.compile(source, "k");
    ASSERT_TRUE(k.ok()) << k.status().message();
    Tensor x = s.upload(xs, {n}), y = s.empty(DType::BF16, {n}), z = s.empty(DType::BF16, {n}),
           w = s.empty<float>({n});
    ASSERT_TRUE(k(x, y, z, w, rt::Arg::floating(-1.5, DType::BF16)).ok()) << device;
    std::vector<uint16_t> yo(n), zo(n);
    std::vector<float> wo;
    ASSERT_TRUE(y.download(yo.data()).ok() && z.download(zo.data()).ok() && w.download(wo).ok());
    for (int64_t i = 0; i < n; ++i) {
      uint16_t v = floatToBF16Bits(xs[i]);
      float vf = bf16BitsToFloat(v);
      if (std::isnan(xs[i])) {
        EXPECT_TRUE(std::isnan(bf16BitsToFloat(yo[i]))) << device;
        continue;
      }
      EXPECT_EQ(yo[i], v) << device << " " << xs[i];
      // Each operation rounds to bf16: the product, then the sum.
      float product = bf16BitsToFloat(floatToBF16Bits(vf * -1.5f));
      EXPECT_EQ(zo[i], floatToBF16Bits(product + 1.0f)) << device << " " << xs[i];
      float e = std::exp(vf * 0.01f);
      if (std::isinf(e))
        EXPECT_EQ(wo[i], e) << device << " " << xs[i];
      else // GLSL's Exp may be off by 3 + 2|x| ulp (docs/targets.md)
        EXPECT_NEAR(wo[i], e, (device == "cpu" ? 4e-6 : 1e-4) * std::abs(e))
            << device << " " << xs[i];
    }
  });
}

TEST_F(DeviceAgreement, BFloat16MovesKeepEveryBitOnEveryDevice) {
  // Loading, storing, selecting and reordering bf16 values moves their bits:
  // subnormals included. (LLVM's x86 backend moved bf16 through float
  // registers and narrowed them back with AVX512_BF16's vcvtneps2bf16, which
  // flushes subnormals: a copy lost them on such CPUs; kiln::cpu::moveBF16AsBits.)
  // Arithmetic keeps them too: `a` rounds |v| * 1 back to bf16, which LLVM did
  // with that instruction until kiln::cpu::keepSubnormals turned it off.
  // Negation flips the sign bit of every code, NaNs included (it went through
  // f32, whose narrowing quieted -NaN to +NaN).
  const char *source = R"(
kernel moves(x: tensor<bf16>[N], y: tensor<bf16>[N], z: tensor<bf16>[N], r: tensor<bf16>[N],
             a: tensor<bf16>[N], g: tensor<bf16>[N])
    params(B: i32 = 4) grid(cdiv(N, B)) {
  let i = program_id(0) * B + arange(0, B);
  let v = load(x[i]);
  store(y[i], v);
  store(z[i], where(i % 3 == 0, v, load(x[i], other = 0.0)));
  store(r[i], flip(v, 0));
  store(a[i], abs(v) * 1.0);
  store(g[i], -v);
}
)";
  std::vector<uint16_t> codes = {0x7fc0, 0x4000}; // a NaN, 2
  for (uint16_t c = 1; c < 0x80; ++c) { // every subnormal, both signs
    codes.push_back(c);
    codes.push_back(0x8000 | c);
  }
  for (uint16_t c : {0x0000, 0x8000, 0x0080, 0x3f80, 0xc2f7, 0x7f7f, 0x7f80, 0xff80})
    codes.push_back(c);
  codes.push_back(0x3c00); // 265 values: the last program's block is partly masked
  const int64_t n = codes.size();
  for (int64_t block : {4, 32, 128}) {
    forEachDevice([&](Session &s, const std::string &device) {
      Kernel k = s.compile(source, "moves", {{"B", std::to_string(block)}});
      ASSERT_TRUE(k.ok()) << k.status().message();
      Tensor x = s.upload(codes.data(), DType::BF16, {n}), y = s.empty(DType::BF16, {n}),
             z = s.empty(DType::BF16, {n}), r = s.empty(DType::BF16, {n}),
             a = s.empty(DType::BF16, {n}), g = s.empty(DType::BF16, {n});
      ASSERT_TRUE(k(x, y, z, r, a, g).ok()) << device;
      std::vector<uint16_t> yo(n), zo(n), ro(n), ao(n), go(n);
      ASSERT_TRUE(y.download(yo.data()).ok() && z.download(zo.data()).ok() &&
                  r.download(ro.data()).ok() && a.download(ao.data()).ok() &&
                  g.download(go.data()).ok());
      for (int64_t i = 0; i < n; ++i) {
        ASSERT_EQ(yo[i], codes[i]) << device << " B=" << block << " copy at " << i;
        ASSERT_EQ(go[i], codes[i] ^ 0x8000) << device << " B=" << block << " -v at " << i;
        if (i > 0) { // the NaN's |v| * 1 is some NaN
          ASSERT_EQ(ao[i], codes[i] & 0x7fff) << device << " B=" << block << " |v| * 1 at " << i;
        }
        ASSERT_EQ(zo[i], codes[i]) << device << " B=" << block << " select at " << i;
        int64_t start = i / block * block, mirrored = start + block - 1 - (i - start);
        ASSERT_EQ(ro[i], mirrored < n ? codes[mirrored] : 0)
            << device << " B=" << block << " flip at " << i;
      }
    });
  }
}

/// The 16-bit float nearest to `x`, ties to the even code, found from the
/// definition (not by rounding to float first, the double rounding the tests
/// look for): `decode` reads a code, `infinity` is the code of +inf, which
/// stands where the next finite value, `beyond`, would be, and `nan` a NaN's.
uint16_t doubleToNarrowBits(double x, float (*decode)(uint16_t), uint16_t infinity,
                            double beyond, uint16_t nan) {
  uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  if (std::isnan(x))
    return sign | nan;
  // Codes 0 ... infinity are ordered like their values.
  auto value = [&](uint16_t code) { return code == infinity ? beyond : double(decode(code)); };
  double a = std::fabs(x);
  if (a >= value(infinity))
    return sign | infinity;
  uint16_t lo = 0, hi = infinity;
  while (hi - lo > 1) {
    uint16_t mid = uint16_t((lo + hi) / 2);
    (value(mid) <= a ? lo : hi) = mid;
  }
  double mid = (value(lo) + value(hi)) / 2;
  bool up = a > mid || (a == mid && (lo & 1));
  return sign | (up ? hi : lo);
}

uint16_t doubleToBF16Bits(double x) {
  return doubleToNarrowBits(x, bf16BitsToFloat, 0x7f80, std::ldexp(1.0, 128), 0x7fc0);
}

uint16_t doubleToHalfBits(double x) {
  return doubleToNarrowBits(x, halfBitsToFloat, 0x7c00, 65536.0, 0x7e00);
}

TEST_F(DeviceAgreement, NarrowFloatsRoundEveryOperationOnEveryDevice) {
  // bf16 computes in f32 on the CPU and on Vulkan, and f16 on the CPU; each
  // operation's result still rounds to its type. The f32 emulation's
  // rounding used to fold away (kiln-keep-float-roundings): cast<bf16>(257)
  // compared equal to no bf16, and (v + 1) - v kept the bit the sum loses.
  const char *source = R"(
kernel k(x: tensor<i32>[N], bx: tensor<bf16>[N], same: tensor<i32>[N], b: tensor<bf16>[N],
         h: tensor<f16>[N]) params(B: i32 = 64) grid(cdiv(N, B)) {
  let i = program_id(0) * B + arange(0, B);
  let v = load(x[i]);
  store(same[i], cast<i32>(cast<bf16>(v) == load(bx[i])));
  let vb = cast<bf16>(v);
  store(b[i], (vb + cast<bf16>(1)) - vb);
  let vh = cast<f16>(v);
  store(h[i], (vh + cast<f16>(1)) - vh);
}
)";
  std::vector<int32_t> xs = {0, 1, 7, 16, 17, 100, 255, 256, 257, 258, 259, 1000, 2047, 2048,
                             2049, 4095, 65504, -3, -17, -257, -2049};
  for (int32_t v = 200; v < 600; v += 13)
    xs.push_back(v);
  const int64_t n = xs.size();
  std::vector<uint16_t> bxs;
  for (int32_t v : xs)
    bxs.push_back(floatToBF16Bits(float(v)));
  forEachDevice([&](Session &s, const std::string &device) {
    Kernel k = s.compile(source, "k");
    ASSERT_TRUE(k.ok()) << k.status().message();
    Tensor x = s.upload(xs, {n}), bx = s.upload(bxs.data(), DType::BF16, {n}),
           same = s.empty<int32_t>({n}), b = s.empty(DType::BF16, {n}),
           h = s.empty(DType::F16, {n});
    ASSERT_TRUE(k(x, bx, same, b, h).ok()) << device;
    std::vector<int32_t> sameOut;
    std::vector<uint16_t> bOut(n), hOut(n);
    ASSERT_TRUE(same.download(sameOut).ok() && b.download(bOut.data()).ok() &&
                h.download(hOut.data()).ok());
    for (int64_t i = 0; i < n; ++i) {
      EXPECT_EQ(sameOut[i], 1) << device << ": cast<bf16>(" << xs[i] << ")";
      float vb = bf16BitsToFloat(floatToBF16Bits(float(xs[i])));
      float sumB = bf16BitsToFloat(floatToBF16Bits(vb + 1.0f));
      EXPECT_EQ(bOut[i], floatToBF16Bits(sumB - vb)) << device << ": bf16 " << xs[i];
      // Vulkan has f16 arithmetic and leaves its rounding to the driver: lavapipe
      // computes (v + 1) - v on f16 values in f32 (docs/targets.md).
      if (device == "vulkan")
        continue;
      float vh = halfBitsToFloat(floatToHalfBits(float(xs[i])));
      float sumH = halfBitsToFloat(floatToHalfBits(vh + 1.0f));
      EXPECT_EQ(hOut[i], floatToHalfBits(sumH - vh)) << device << ": f16 " << xs[i];
    }
  });
}

TEST_F(DeviceAgreement, DoubleNarrowsToBF16AndF8RoundingOnce) {
  // f64 -> bf16 and fp8 go through f32 on every target (Vulkan and AMD emulate
  // those types from f32 only), and so does f64 -> f16 (lavapipe converts
  // through f32); rounding to odd on the way makes the two steps one
  // rounding. Values a hair off the ties of each format catch a double
  // rounding through round-to-nearest: f32 would land on the tie itself.
  const char *source = R"(
kernel narrow(x: tensor<f64>[N], h: tensor<bf16>[N], a: tensor<f8e4m3>[N], b: tensor<f8e5m2>[N],
              w: tensor<f64>[N], q: tensor<f16>[N]) params(B: i32 = 64) grid(cdiv(N, B)) {
  let i = program_id(0) * B + arange(0, B);
  let m = i < N;
  let v = load(x[i], mask=m);
  let hv = cast<bf16>(v);
  store(h[i], hv, mask=m);
  store(q[i], cast<f16>(v), mask=m);
  store(a[i], cast<f8e4m3>(v), mask=m);
  store(b[i], cast<f8e5m2>(v), mask=m);
  store(w[i], cast<f64>(hv) + cast<f64>(cast<f8e5m2>(v)), mask=m);
}
)";
  std::vector<double> xs = {0.0, -0.0, 1.0, -1.5, 1e300, -1e300, 1e-300, -1e-300, 3.3961e38,
                            3.3963e38, INFINITY, -INFINITY, NAN};
  auto aroundTie = [&](double low, double high) {
    double tie = (low + high) / 2, hair = std::ldexp(std::fabs(tie), -40);
    for (double v : {tie, tie + hair, tie - hair})
      xs.insert(xs.end(), {v, -v});
  };
  for (int code = 0; code < 0x7f7f; code += 37)
    aroundTie(bf16BitsToFloat(uint16_t(code)), bf16BitsToFloat(uint16_t(code + 1)));
  for (DType dt : {DType::F8E4M3, DType::F8E5M2})
    for (int code = 0; code < (dt == DType::F8E4M3 ? 0x7e : 0x7b); ++code)
      aroundTie(f8BitsToFloat(uint8_t(code), dt), f8BitsToFloat(uint8_t(code + 1), dt));
  for (int code = 0; code < 0x7bff; code += 41)
    aroundTie(halfBitsToFloat(uint16_t(code)), halfBitsToFloat(uint16_t(code + 1)));
  aroundTie(65504.0, 65536.0); // the largest half and where infinity begins
  const int64_t n = xs.size();
  forEachDevice([&](Session &s, const std::string &device) {
    Kernel k = s.compile(source, "narrow");
    ASSERT_TRUE(k.ok()) << k.status().message();
    Tensor x = s.upload(xs, {n}), h = s.empty(DType::BF16, {n}), a = s.empty(DType::F8E4M3, {n}),
           b = s.empty(DType::F8E5M2, {n}), w = s.empty<double>({n}), q = s.empty(DType::F16, {n});
    ASSERT_TRUE(k(x, h, a, b, w, q).ok()) << device;
    std::vector<uint16_t> ho(n), qo(n);
    std::vector<uint8_t> ao(n), bo(n);
    std::vector<double> wo;
    ASSERT_TRUE(h.download(ho.data()).ok() && a.download(ao.data()).ok() &&
                b.download(bo.data()).ok() && w.download(wo).ok() && q.download(qo.data()).ok());
    for (int64_t i = 0; i < n; ++i) {
      double v = xs[i];
      if (std::isnan(v)) {
        EXPECT_TRUE(std::isnan(bf16BitsToFloat(ho[i])) && std::isnan(wo[i])) << device;
        continue;
      }
      EXPECT_EQ(ho[i], doubleToBF16Bits(v)) << device << " bf16 of " << v;
      EXPECT_EQ(qo[i], doubleToHalfBits(v)) << device << " f16 of " << v;
      EXPECT_EQ(ao[i], floatToF8Bits(v, DType::F8E4M3)) << device << " e4m3 of " << v;
      EXPECT_EQ(bo[i], floatToF8Bits(v, DType::F8E5M2)) << device << " e5m2 of " << v;
      double want = double(bf16BitsToFloat(doubleToBF16Bits(v))) +
                    double(f8BitsToFloat(floatToF8Bits(v, DType::F8E5M2), DType::F8E5M2));
      EXPECT_TRUE(std::isnan(want) ? std::isnan(wo[i]) : wo[i] == want)
          << device << " widened " << v << ": " << wo[i] << " vs " << want;
    }
  });
}

/// `x` converted as Kiln converts a float to an integer type: toward zero,
/// saturating at the type's ends, NaN to 0.
template <typename T> T saturatingCast(double x) {
  if (std::isnan(x))
    return 0;
  if (x >= std::ldexp(1.0, std::numeric_limits<T>::digits))
    return std::numeric_limits<T>::max();
  if (x < double(std::numeric_limits<T>::min()))
    return std::numeric_limits<T>::min();
  return T(std::trunc(x));
}

TEST_F(DeviceAgreement, FloatsToIntegersSaturateOnEveryDevice) {
  // Float to integer is defined everywhere: out-of-range values and infinities
  // give the type's minimum or maximum, NaN gives 0 (fptosi and fptoui alone are
  // undefined there: cast<u8>(-2.5) printed 65534 on the CPU and 254 on Vulkan).
  // One kernel per integer type; row 0 of its output converts the f32 input,
  // row 1 the f64 one, row 2 the f16 one.
  auto source = [](const std::string &type) {
    return "kernel to_int(x: tensor<f32>[N], d: tensor<f64>[N], h: tensor<f16>[N], o: tensor<" +
           type + ">[3, N]) params(B: i32 = 64) grid(cdiv(N, B)) {\n"
           "  let i = program_id(0) * B + arange(0, B);\n"
           "  store(o[0, i], cast<" + type + ">(load(x[i])));\n"
           "  store(o[1, i], cast<" + type + ">(load(d[i])));\n"
           "  store(o[2, i], cast<" + type + ">(load(h[i])));\n"
           "}\n";
  };
  std::vector<double> ds = {NAN, INFINITY, -INFINITY, 0.0, -0.0, 0.5, -0.5, -0.99, 1.5, -2.5,
                            127.0, 127.9, 128.0, -128.0, -128.9, -129.0, 255.5, 256.0, -256.0,
                            32767.5, 32768.0, -32768.5, -32769.0, 65504.0, 65535.9, 65536.0,
                            2147483520.0, 2147483647.5, 2147483648.0, -2147483648.0,
                            -2147483904.0, 4294967040.0, 4294967295.5, 4294967296.0, 9.2e18,
                            9.3e18, -9.3e18, 1.8e19, 1.9e19, 1e30, -1e30};
  for (int i = 0; i < 40; ++i) // random values of every magnitude and sign
    ds.push_back(std::ldexp(double(i * 7919 % 1000) - 500.0, i * 37 % 70 - 10));
  const int64_t n = ds.size();
  std::vector<float> xs;
  std::vector<uint16_t> hs;
  for (double v : ds) {
    xs.push_back(float(v));
    hs.push_back(floatToHalfBits(float(v)));
  }
  forEachDevice([&](Session &s, const std::string &device) {
    Tensor x = s.upload(xs, {n}), d = s.upload(ds, {n}), h = s.upload(hs.data(), DType::F16, {n});
    // The three inputs as the kernel sees them: f32, f64 and f16 values.
    auto input = [&](int row, int64_t i) {
      return row == 0 ? double(xs[i]) : row == 1 ? ds[i] : double(halfBitsToFloat(hs[i]));
    };
    auto expect = [&](auto type, DType dtype) {
      using T = decltype(type);
      Kernel k = s.compile(source(dtypeName(dtype)), "to_int");
      ASSERT_TRUE(k.ok()) << k.status().message();
      Tensor o = s.empty(dtype, {3, n});
      ASSERT_TRUE(k(x, d, h, o).ok()) << device;
      std::vector<T> got(3 * n);
      ASSERT_TRUE(o.download(got.data()).ok());
      for (int row = 0; row < 3; ++row)
        for (int64_t i = 0; i < n; ++i)
          EXPECT_EQ(got[row * n + i], saturatingCast<T>(input(row, i)))
              << device << ": " << dtypeName(dtype) << " of " << input(row, i) << " (input row "
              << row << ")";
    };
    expect(int8_t(), DType::I8);
    expect(int16_t(), DType::I16);
    expect(int32_t(), DType::I32);
    expect(int64_t(), DType::I64);
    expect(uint8_t(), DType::U8);
    expect(uint16_t(), DType::U16);
    expect(uint32_t(), DType::U32);
    expect(uint64_t(), DType::U64);
  });
}

TEST_F(DeviceAgreement, ConstantCastsFoldAsTheDevicesConvert) {
  // The front end folds casts of constants; the folded value must be what every
  // device computes from the same value at run time. cast<f32>(cast<f16>(2049.0))
  // folded to 2049 (the f16 rounding to 2048 was lost) and cast<u8>(300.0) to 44
  // (wrapped; devices saturate to 255). One kernel per float type FROM: row t of `c`
  // holds cast<f64>(cast<TO_t>(cast<FROM>(literal))) folded, row t of `r` the same
  // casts of the literal's value loaded from `d`.
  const std::vector<std::string> literals = {
      "nan", "inf", "-inf", "0.0", "-0.0", "0.5", "-0.5", "1.5", "-2.5", "0.1", "257.0",
      "300.0", "-300.0", "448.0", "470.0", "1000.0", "2049.0", "57344.0", "65504.0",
      "65520.0", "70000.0", "-1e10", "16777217.0", "2147483647.5", "2147483648.0",
      "4294967296.0", "9.3e18", "1.9e19", "3e38", "1e39", "1e-8", "1e-40", "1e-300",
      "3.14159265358979"};
  const std::vector<std::string> froms = {"f64", "f32", "f16", "bf16", "f8e4m3", "f8e5m2"};
  const std::vector<std::string> tos = {"i1", "i8", "i16", "i32", "i64", "u8", "u16", "u32",
                                        "u64", "f16", "bf16", "f32", "f64", "f8e4m3", "f8e5m2"};
  const int64_t n = literals.size(), rows = tos.size();
  std::vector<double> values;
  for (const std::string &l : literals)
    values.push_back(std::strtod(l.c_str(), nullptr));
  auto source = [&](const std::string &from) {
    std::string src = "kernel k(d: tensor<f64>[N], c: tensor<f64>[T, N], r: tensor<f64>[T, N])"
                      " grid(1) {\n  let i = arange(0, 64);\n  let m = i < N;\n"
                      "  let x = load(d[i], mask = m);\n";
    for (size_t t = 0; t < tos.size(); ++t) {
      auto casts = [&](const std::string &v) {
        return "cast<f64>(cast<" + tos[t] + ">(cast<" + from + ">(" + v + ")))";
      };
      src += "  store(r[" + std::to_string(t) + ", i], " + casts("x") + ", mask = m);\n";
      for (size_t j = 0; j < literals.size(); ++j)
        src += "  store(c[" + std::to_string(t) + ", " + std::to_string(j) + "], " +
               casts(literals[j]) + ");\n";
    }
    return src + "}\n";
  };
  auto same = [](double a, double b) {
    return std::memcmp(&a, &b, sizeof a) == 0 || (std::isnan(a) && std::isnan(b));
  };
  forEachDevice([&](Session &s, const std::string &device) {
    Tensor d = s.upload(values, {n});
    for (const std::string &from : froms) {
      Kernel k = s.compile(source(from), "k");
      ASSERT_TRUE(k.ok()) << k.status().message();
      Tensor c = s.empty<double>({rows, n}), r = s.empty<double>({rows, n});
      ASSERT_TRUE(k(d, c, r).ok()) << device;
      std::vector<double> folded(rows * n), computed(rows * n);
      ASSERT_TRUE(c.download(folded).ok());
      ASSERT_TRUE(r.download(computed).ok());
      for (int64_t t = 0; t < rows; ++t)
        for (int64_t j = 0; j < n; ++j)
          EXPECT_TRUE(same(folded[t * n + j], computed[t * n + j]))
              << device << ": cast<" << tos[t] << ">(cast<" << from << ">(" << literals[j]
              << ")) folds to " << folded[t * n + j] << ", the device computes "
              << computed[t * n + j];
    }
  });
}

/// Is the element at `p`, of float type `dt`, a NaN?
bool isNaNBits(const unsigned char *p, DType dt) {
  uint64_t bits = 0;
  std::memcpy(&bits, p, dtypeBytes(dt));
  switch (dt) {
  case DType::F16: return (bits & 0x7fff) > 0x7c00;
  case DType::BF16: return (bits & 0x7fff) > 0x7f80;
  case DType::F32: return (bits & 0x7fffffff) > 0x7f800000;
  default: return (bits & ~(uint64_t(1) << 63)) > 0x7ff0000000000000;
  }
}

/// Is the element at `p`, of float type `dt`, +0 or -0?
bool isZeroBits(const unsigned char *p, DType dt) {
  uint64_t bits = 0;
  std::memcpy(&bits, p, dtypeBytes(dt));
  return (bits << (65 - 8 * dtypeBytes(dt))) == 0; // all but the sign bit
}

/// The value of a literal from ConstantFoldsAgreeWithTheDevices on the host: an
/// integer's bits (which the kernel wraps to its type, as casts of constants do) or
/// a float. `MAX - 1` spells a signed minimum.
int64_t integerLiteral(const std::string &l) {
  bool minus1 = l.size() > 4 && l.compare(l.size() - 4, 4, " - 1") == 0;
  uint64_t u = std::strtoull(l.c_str() + (l[0] == '-'), nullptr, 10);
  return int64_t((l[0] == '-' ? 0 - u : u) - minus1);
}

TEST_F(DeviceAgreement, ConstantFoldsAgreeWithTheDevices) {
  // Operators on constants fold in the front end; each folded result must be what
  // the devices compute from the same operands at run time (float min/max with a
  // NaN folded as std::min/std::max, to the other operand, where the devices
  // propagate the NaN). One kernel per type: row o of `c` holds `A op_o B`
  // folded for every pair (A, B) of the type's edge values, row o of `r` the same
  // operation on the values loaded from `a` and `b` (i64 or f64 on the host, cast
  // to the type in the kernel as the constants are).
  struct Case {
    const char *type;
    std::vector<std::string> literals;
  };
  const std::vector<Case> cases = {
      {"i8", {"0", "1", "-1", "7", "-128", "127", "100"}},
      {"i16", {"0", "3", "-1", "-32768", "32767", "300"}},
      {"i32", {"0", "5", "-7", "-2147483647 - 1", "2147483647", "65536"}},
      {"i64", {"0", "9", "-1", "-9223372036854775807 - 1", "9223372036854775807", "4294967296"}},
      {"u8", {"0", "1", "7", "255", "128", "200"}},
      {"u32", {"0", "3", "4294967295", "2147483648", "65536", "31"}},
      {"u64", {"0", "5", "18446744073709551615", "9223372036854775808", "63", "4294967296"}},
      {"f16", {"0.0", "-0.0", "1.5", "-2.5", "inf", "nan", "65504.0", "0.1"}},
      {"bf16", {"0.0", "-0.0", "3.0", "-7.0", "-inf", "nan", "3e38", "0.1"}},
      {"f32", {"0.0", "-0.0", "1.5", "-2.5", "inf", "nan", "3e38", "0.1"}},
      {"f64", {"0.0", "-0.0", "1.5", "-2.5", "-inf", "nan", "1e300", "0.1"}}};
  const std::vector<std::string> intOps = {"+", "-", "*", "/", "%", "&", "|", "^",
                                           "<<", ">>", "==", "<", ">=", "min", "max",
                                           "neg", "~"};
  const std::vector<std::string> floatOps = {"+", "-", "*", "/", "%", "==", "!=",
                                             "<", "<=", "min", "max", "neg"};
  forEachDevice([&](Session &s, const std::string &device) {
    for (const Case &c : cases) {
      const std::string type = c.type;
      const DType dt = *parseDType(type);
      const bool floats = isFloat(dt);
      const auto &ops = floats ? floatOps : intOps;
      const int64_t pairs = c.literals.size() * c.literals.size(), rows = ops.size();
      auto typed = [&](const std::string &v) { return "cast<" + type + ">(" + v + ")"; };
      auto apply = [&](const std::string &op, const std::string &x, const std::string &y) {
        if (op == "neg" || op == "~") // unary: of A only
          return typed("(" + (op == "neg" ? std::string("-") : op) + x + ")");
        return typed(op == "min" || op == "max" ? op + "(" + x + ", " + y + ")"
                                                : "(" + x + " " + op + " " + y + ")");
      };
      std::string host = floats ? "f64" : "i64";
      std::string src = "kernel k(a: tensor<" + host + ">[N], b: tensor<" + host + ">[N], c: " +
                        "tensor<" + type + ">[R, N], r: tensor<" + type + ">[R, N]) grid(1) {\n" +
                        "  let i = arange(0, 64);\n  let m = i < N;\n" +
                        "  let x = " + typed("load(a[i], mask = m)") + ";\n" +
                        "  let y = " + typed("load(b[i], mask = m)") + ";\n" +
                        "  let zero = y == " + typed("0") + ";\n";
      for (size_t o = 0; o < ops.size(); ++o) {
        // Integer division by zero is undefined at run time and an error when
        // folded: those lanes store 0 on both sides.
        bool guard = !floats && (ops[o] == "/" || ops[o] == "%");
        std::string row = std::to_string(o);
        std::string computed = guard ? "where(zero, " + typed("0") + ", " +
                                           apply(ops[o], "x", "where(zero, " + typed("1") +
                                                                  ", y)") + ")"
                                     : apply(ops[o], "x", "y");
        src += "  store(r[" + row + ", i], " + computed + ", mask = m);\n";
        int64_t j = 0;
        for (const std::string &x : c.literals)
          for (const std::string &y : c.literals) {
            bool byZero = guard && integerLiteral(y) == 0;
            src += "  store(c[" + row + ", " + std::to_string(j++) + "], " +
                   (byZero ? typed("0") : apply(ops[o], typed(x), typed(y))) + ");\n";
          }
      }
      src += "}\n";
      std::vector<int64_t> ai, bi;
      std::vector<double> af, bf;
      for (const std::string &x : c.literals)
        for (const std::string &y : c.literals) {
          if (floats) {
            af.push_back(std::strtod(x.c_str(), nullptr));
            bf.push_back(std::strtod(y.c_str(), nullptr));
          } else {
            ai.push_back(integerLiteral(x));
            bi.push_back(integerLiteral(y));
          }
        }
      Kernel k = s.compile(src, "k");
      ASSERT_TRUE(k.ok()) << type << ": " << k.status().message();
      Tensor a = floats ? s.upload(af, {pairs}) : s.upload(ai, {pairs});
      Tensor b = floats ? s.upload(bf, {pairs}) : s.upload(bi, {pairs});
      Tensor folded = s.empty(dt, {rows, pairs}), computed = s.empty(dt, {rows, pairs});
      ASSERT_TRUE(k(a, b, folded, computed).ok()) << device;
      const size_t width = dtypeBytes(dt);
      std::vector<unsigned char> f(rows * pairs * width), r(rows * pairs * width);
      ASSERT_TRUE(folded.download(f.data()).ok());
      ASSERT_TRUE(computed.download(r.data()).ok());
      for (int64_t o = 0; o < rows; ++o) {
        // Vulkan's f64 `%` is OpFRem, not exact (docs/targets.md, "Float % on Vulkan").
        if (device == "vulkan" && type == "f64" && ops[o] == "%")
          continue;
        for (int64_t j = 0; j < pairs; ++j) {
          const unsigned char *x = &f[(o * pairs + j) * width], *y = &r[(o * pairs + j) * width];
          // Float min/max of -0 and +0 may give either zero (docs/language.md).
          bool zeros = floats && (ops[o] == "min" || ops[o] == "max") &&
                       std::strtod(c.literals[j / c.literals.size()].c_str(), nullptr) == 0 &&
                       std::strtod(c.literals[j % c.literals.size()].c_str(), nullptr) == 0;
          bool same = std::memcmp(x, y, width) == 0 ||
                      (floats && isNaNBits(x, dt) && isNaNBits(y, dt)) ||
                      (zeros && isZeroBits(x, dt) && isZeroBits(y, dt));
          EXPECT_TRUE(same) << device << ": " << type << " "
                            << c.literals[j / c.literals.size()] << " " << ops[o] << " "
                            << c.literals[j % c.literals.size()] << ": folded and computed differ";
        }
      }
    }
  });
}

TEST_F(DeviceAgreement, IntegersToHalfRoundOnEveryDevice) {
  // Integers to f16 round to nearest even like any conversion: from 65520 on
  // (halfway from 65504, the largest f16, to 65536) the result is infinity.
  // Every value here is exact in f32, so f32 -> f16 rounding is the reference.
  const char *source = R"(
kernel k(a: tensor<i32>[N], b: tensor<u16>[N], c: tensor<u32>[N], d: tensor<i64>[N],
         e: tensor<u64>[N], h: tensor<f16>[5, N]) params(B: i32 = 64) grid(cdiv(N, B)) {
  let i = program_id(0) * B + arange(0, B);
  let m = i < N;
  store(h[0, i], cast<f16>(load(a[i], mask=m)), mask=m);
  store(h[1, i], cast<f16>(load(b[i], mask=m)), mask=m);
  store(h[2, i], cast<f16>(load(c[i], mask=m)), mask=m);
  store(h[3, i], cast<f16>(load(d[i], mask=m)), mask=m);
  store(h[4, i], cast<f16>(load(e[i], mask=m)), mask=m);
}
)";
  std::vector<int64_t> values = {0, 1, 2047, 2049, 2051, 4097, 65503, 65504, 65505, 65519,
                                 65520, 65521, 65535, 65536, 70000, 1 << 20, (1 << 24) - 1};
  for (int64_t v = 65400; v < 65536; v += 7)
    values.push_back(v);
  const int64_t n = values.size();
  std::vector<int32_t> a;
  std::vector<uint16_t> b;
  std::vector<uint32_t> c;
  std::vector<int64_t> d;
  std::vector<uint64_t> e;
  for (int64_t v : values) {
    a.push_back(int32_t(v % 2 ? -v : v));
    b.push_back(uint16_t(std::min<int64_t>(v, 65535)));
    c.push_back(uint32_t(v));
    d.push_back(v % 2 ? v : -v);
    e.push_back(uint64_t(v));
  }
  forEachDevice([&](Session &s, const std::string &device) {
    Kernel k = s.compile(source, "k");
    ASSERT_TRUE(k.ok()) << k.status().message();
    Tensor ta = s.upload(a, {n}), tb = s.upload(b.data(), DType::U16, {n}),
           tc = s.upload(c.data(), DType::U32, {n}), td = s.upload(d, {n}),
           te = s.upload(e.data(), DType::U64, {n}), th = s.empty(DType::F16, {5, n});
    ASSERT_TRUE(k(ta, tb, tc, td, te, th).ok()) << device;
    std::vector<uint16_t> out(5 * n);
    ASSERT_TRUE(th.download(out.data()).ok());
    for (int64_t i = 0; i < n; ++i) {
      double inputs[] = {double(a[i]), double(b[i]), double(c[i]), double(d[i]), double(e[i])};
      for (int row = 0; row < 5; ++row)
        EXPECT_EQ(out[row * n + i], floatToHalfBits(float(inputs[row])))
            << device << " row " << row << ": f16 of " << inputs[row] << " is "
            << halfBitsToFloat(out[row * n + i]);
    }
  });
}

/// The bf16 bits of the integer `magnitude` (negated when `negative`), rounded
/// once to nearest even.
static uint16_t bf16BitsOfInteger(uint64_t magnitude, bool negative) {
  uint16_t sign = negative ? 0x8000 : 0;
  if (magnitude == 0)
    return sign;
  int e = 63 - __builtin_clzll(magnitude);
  uint64_t mantissa = magnitude;
  if (e > 7) {
    int shift = e - 7;
    uint64_t rest = magnitude & ((uint64_t(1) << shift) - 1), half = uint64_t(1) << (shift - 1);
    mantissa = magnitude >> shift;
    if (rest > half || (rest == half && (mantissa & 1)))
      ++mantissa;
    if (mantissa == 256) { // rounded up to the next power of two
      mantissa = 128;
      ++e;
    }
  } else {
    mantissa <<= 7 - e;
  }
  return uint16_t(sign | ((e + 127) << 7) | (mantissa & 0x7f));
}

TEST_F(DeviceAgreement, IntegersRoundOnceToBF16OnEveryDevice) {
  // Integers wider than f32's 24 bits convert to bf16 with one rounding: the
  // devices went through f32, and 2^24 + 2^16 + 1 (just past a bf16 midpoint)
  // rounded down to the midpoint in f32, then to even, 2^24, in bf16.
  const char *source = R"(
kernel k(a: tensor<i32>[N], b: tensor<u32>[N], c: tensor<i64>[N], d: tensor<u64>[N],
         h: tensor<bf16>[4, N]) params(B: i32 = 64) grid(cdiv(N, B)) {
  let i = program_id(0) * B + arange(0, B);
  let m = i < N;
  store(h[0, i], cast<bf16>(load(a[i], mask=m)), mask=m);
  store(h[1, i], cast<bf16>(load(b[i], mask=m)), mask=m);
  store(h[2, i], cast<bf16>(load(c[i], mask=m)), mask=m);
  store(h[3, i], cast<bf16>(load(d[i], mask=m)), mask=m);
}
)";
  // Magnitudes around bf16 midpoints (2^e plus half a bf16 step, and one
  // either side) at every exponent, and the ends of each type.
  std::vector<uint64_t> magnitudes = {0, 1, 255, 257, 16842753, 33685505};
  for (int e = 9; e < 64; ++e)
    for (uint64_t k : {0, 1, 2, 127})
      for (int64_t d : {-1, 0, 1})
        magnitudes.push_back((uint64_t(1) << e) + k * (uint64_t(1) << (e - 7)) +
                             (uint64_t(1) << (e - 8)) + uint64_t(d));
  std::vector<int32_t> a;
  std::vector<uint32_t> b;
  std::vector<int64_t> c;
  std::vector<uint64_t> d;
  for (size_t i = 0; i < magnitudes.size(); ++i) {
    uint64_t m = magnitudes[i];
    bool negative = i % 2;
    a.push_back(int32_t(negative ? -int64_t(m & 0x7fffffff) : int64_t(m & 0x7fffffff)));
    b.push_back(uint32_t(m));
    c.push_back(negative ? -int64_t(m & INT64_MAX) : int64_t(m & INT64_MAX));
    d.push_back(m);
  }
  a.push_back(INT32_MIN), b.push_back(UINT32_MAX), c.push_back(INT64_MIN), d.push_back(UINT64_MAX);
  const int64_t n = a.size();
  forEachDevice([&](Session &s, const std::string &device) {
    Kernel k = s.compile(source, "k");
    ASSERT_TRUE(k.ok()) << k.status().message();
    Tensor ta = s.upload(a, {n}), tb = s.upload(b.data(), DType::U32, {n}), tc = s.upload(c, {n}),
           td = s.upload(d.data(), DType::U64, {n}), th = s.empty(DType::BF16, {4, n});
    ASSERT_TRUE(k(ta, tb, tc, td, th).ok()) << device;
    std::vector<uint16_t> out(4 * n);
    ASSERT_TRUE(th.download(out.data()).ok());
    for (int64_t i = 0; i < n; ++i) {
      uint16_t want[] = {bf16BitsOfInteger(a[i] < 0 ? 0 - uint64_t(int64_t(a[i])) : a[i], a[i] < 0),
                         bf16BitsOfInteger(b[i], false),
                         bf16BitsOfInteger(c[i] < 0 ? 0 - uint64_t(c[i]) : uint64_t(c[i]), c[i] < 0),
                         bf16BitsOfInteger(d[i], false)};
      std::string given[] = {std::to_string(a[i]), std::to_string(b[i]), std::to_string(c[i]),
                             std::to_string(d[i])};
      for (int row = 0; row < 4; ++row)
        EXPECT_EQ(out[row * n + i], want[row])
            << device << " row " << row << ": bf16 of " << given[row] << " is "
            << bf16BitsToFloat(out[row * n + i]);
    }
  });
}

TEST_F(DeviceAgreement, F8CodesWidenToBF16KeepingNaNSignsOnEveryDevice) {
  // Every fp8 code widens to the bf16 of its value; a negative NaN stays
  // negative (the f32 -> bf16 step made it 0x7FC0 on the CPU and on Vulkan).
  const char *source = R"(
kernel k(a: tensor<f8e4m3>[N], b: tensor<f8e5m2>[N], h: tensor<bf16>[2, N]) grid(1) {
  let i = arange(0, 256);
  store(h[0, i], cast<bf16>(load(a[i])));
  store(h[1, i], cast<bf16>(load(b[i])));
}
)";
  std::vector<uint8_t> codes(256);
  for (int c = 0; c < 256; ++c)
    codes[c] = uint8_t(c);
  const int64_t n = 256;
  forEachDevice([&](Session &s, const std::string &device) {
    Kernel k = s.compile(source, "k");
    ASSERT_TRUE(k.ok()) << k.status().message();
    Tensor ta = s.upload(codes.data(), DType::F8E4M3, {n}),
           tb = s.upload(codes.data(), DType::F8E5M2, {n}), th = s.empty(DType::BF16, {2, n});
    ASSERT_TRUE(k(ta, tb, th).ok()) << device;
    std::vector<uint16_t> out(2 * n);
    ASSERT_TRUE(th.download(out.data()).ok());
    for (int row = 0; row < 2; ++row)
      for (int c = 0; c < 256; ++c) {
        float v = f8BitsToFloat(uint8_t(c), row ? DType::F8E5M2 : DType::F8E4M3);
        uint16_t got = out[row * n + c];
        std::string at = device + (row ? " e5m2 " : " e4m3 ") + std::to_string(c);
        if (std::isnan(v)) {
          EXPECT_TRUE(std::isnan(bf16BitsToFloat(got))) << at;
          EXPECT_EQ(got & 0x8000, c & 0x80 ? 0x8000 : 0) << at << ": " << std::hex << got;
        } else {
          EXPECT_EQ(got, floatToBF16Bits(v)) << at << ": " << bf16BitsToFloat(got);
        }
      }
  });
}

} // namespace

/// `x` rounded to nearest even at `bits` significant bits, or to a multiple of
/// `quantum` (the type's smallest subnormal) below its normal range.
static double roundToBits(double x, int bits, double quantum = 0) {
  int e = 0;
  double m = std::frexp(x, &e);
  if (std::ldexp(1.0, e - bits) < quantum)
    return std::nearbyint(x / quantum) * quantum;
  return std::ldexp(std::nearbyint(std::ldexp(m, bits)), e - bits);
}

TEST_F(DeviceAgreement, NarrowFmaRoundsOnceOnEveryDevice) {
  // fma on f16 and bf16 is one rounding of the exact a * b + c. The CPU's f16
  // fma was f32's rounded to f16 again, and bf16's on every device too: 1 ulp
  // off where f32's result lands on a midpoint of the narrow type. Operands
  // stay within 2^-12..2^12 so that the reference, double's fma, is exact.
  const char *source = R"(
kernel k(a: tensor<f16>[N], b: tensor<f16>[N], c: tensor<f16>[N], y: tensor<f16>[N],
         ba: tensor<bf16>[N], bb: tensor<bf16>[N], bc: tensor<bf16>[N], by: tensor<bf16>[N])
    params(B: i32 = 256) grid(cdiv(N, B)) {
  let i = program_id(0) * B + arange(0, B);
  store(y[i], fma(load(a[i]), load(b[i]), load(c[i])));
  store(by[i], fma(load(ba[i]), load(bb[i]), load(bc[i])));
}
)";
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> mantissa(1.0, 2.0);
  std::uniform_int_distribution<int> exponent(-12, 12), sign(0, 1), kind(0, 2);
  auto operand = [&](int bits) {
    return roundToBits((sign(rng) ? -1 : 1) * std::ldexp(mantissa(rng), exponent(rng)), bits);
  };
  std::vector<uint16_t> h[3], bh[3], wantH, wantB;
  auto add = [&](double a, double b, double c, double ba, double bb, double bc) {
    const double halves[3] = {a, b, c}, bfloats[3] = {ba, bb, bc};
    double hv[3], bv[3]; // as stored
    for (int i = 0; i < 3; ++i) {
      h[i].push_back(floatToHalfBits(float(halves[i])));
      bh[i].push_back(floatToBF16Bits(float(bfloats[i])));
      hv[i] = halfBitsToFloat(h[i].back());
      bv[i] = bf16BitsToFloat(bh[i].back());
    }
    wantH.push_back(
        floatToHalfBits(float(roundToBits(std::fma(hv[0], hv[1], hv[2]), 11, 0x1p-24))));
    wantB.push_back(floatToBF16Bits(float(roundToBits(std::fma(bv[0], bv[1], bv[2]), 8))));
  };
  // f32's fma lands on a midpoint: 4.517578125 + 2^-24 and 6.046875 - 2^-24.
  add(2.0078125, 2.25, 0x1p-24, 2.015625, 3, -0x1p-24);
  for (int i = 0; i < 4095; ++i) {
    double a = operand(11), b = operand(11), ba = operand(8), bb = operand(8);
    // Besides a random addend, one below f32's last bit of the product (f16's
    // smallest subnormal at least), which decides ties.
    auto addend = [&](double p, int bits, int least) {
      int k = kind(rng);
      return k == 0 ? operand(bits)
                    : std::ldexp(k == 1 ? 1.0 : -1.0, std::max(std::ilogb(p) - 30, least));
    };
    add(a, b, addend(a * b, 11, -24), ba, bb, addend(ba * bb, 8, -126));
  }
  const int64_t n = wantH.size();
  forEachDevice([&](Session &s, const std::string &device) {
    Kernel k = s.compile(source, "k");
    ASSERT_TRUE(k.ok()) << k.status().message();
    auto up = [&](std::vector<uint16_t> &v, DType dt) { return s.upload(v.data(), dt, {n}); };
    Tensor a = up(h[0], DType::F16), b = up(h[1], DType::F16), c = up(h[2], DType::F16),
           ba = up(bh[0], DType::BF16), bb = up(bh[1], DType::BF16),
           bc = up(bh[2], DType::BF16), y = s.empty(DType::F16, {n}),
           by = s.empty(DType::BF16, {n});
    ASSERT_TRUE(k(a, b, c, y, ba, bb, bc, by).ok()) << device;
    std::vector<uint16_t> yOut(n), byOut(n);
    ASSERT_TRUE(y.download(yOut.data()).ok() && by.download(byOut.data()).ok());
    int wrongH = 0, wrongB = 0;
    for (int64_t i = 0; i < n; ++i) {
      // Vulkan leaves an f16 fma's roundings to the driver (lavapipe: two).
      if (device != "vulkan" && yOut[i] != wantH[i] && ++wrongH <= 5)
        ADD_FAILURE() << device << ": f16 fma #" << i << " gave " << yOut[i] << ", want "
                      << wantH[i];
      if (byOut[i] != wantB[i] && ++wrongB <= 5)
        ADD_FAILURE() << device << ": bf16 fma #" << i << " gave " << byOut[i] << ", want "
                      << wantB[i];
    }
    EXPECT_EQ(wrongH + wrongB, 0) << device;
  });
}
