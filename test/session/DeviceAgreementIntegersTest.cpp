//===- DeviceAgreementIntegersTest.cpp - integer and bit operations on every device ===//
//
// Shifts past the width, division and remainder at INT_MIN and by zero, umulhi
// and bit counts: where LLVM and SPIR-V leave a case undefined, Kiln defines it
// once and these tests hold both targets to it.
//
// Each kernel runs through kiln::Session on the CPU and on Vulkan (lavapipe here),
// against a C++ reference.
//
//===----------------------------------------------------------------------===//

#include "kiln/kiln.h"
#include "test/session/FreshCache.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <type_traits>

using namespace kiln;

namespace {

using DeviceAgreement = test::FreshCacheTest;
using test::forEachDevice;

TEST_F(DeviceAgreement, ShiftsAndBitwiseOperatorsOnEveryDevice) {
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
  forEachDevice([&](Session &s, const std::string &device) {
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
  });
}

TEST_F(DeviceAgreement, IntegerEdgeCasesAgreeOnEveryDevice) {
  // Division, remainder, min/max/abs, wrapping casts and 64-bit products at the
  // extremes, on the CPU and on Vulkan, against C++. Kiln defines the divisions
  // C leaves undefined, as RISC-V does: x / 0 = -1, x % 0 = x, MIN / -1 = MIN,
  // MIN % -1 = 0 (in i32 and i64; the CPU's divide instruction would trap).
  const char *source = R"(
kernel ints(a: tensor<i32>[N], b: tensor<i32>[N], q: tensor<i32>[N], r: tensor<i32>[N],
            lo: tensor<i32>[N], hi: tensor<i32>[N], ab: tensor<i32>[N], narrow: tensor<i8>[N],
            wide: tensor<i64>[N], half: tensor<i16>[N], q64: tensor<i64>[N], r64: tensor<i64>[N])
    params(BLOCK: i32 = 64) grid(cdiv(N, BLOCK)) {
  let i = program_id(0) * BLOCK + arange(0, BLOCK);
  let x = load(a[i]);
  let y0 = load(b[i]);
  store(q[i], x / y0);
  store(r[i], x % y0);
  let x64 = cast<i64>(x) * 4294967296;
  store(q64[i], x64 / cast<i64>(y0));
  store(r64[i], x64 % cast<i64>(y0));
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
  forEachDevice([&](Session &s, const std::string &device) {
    Kernel k = s.compile(source, "ints");
    ASSERT_TRUE(k.ok()) << k.status().message();
    Tensor a = s.upload(as, {n}), b = s.upload(bs, {n}), q = s.empty<int32_t>({n}),
           r = s.empty<int32_t>({n}), lo = s.empty<int32_t>({n}), hi = s.empty<int32_t>({n}),
           ab = s.empty<int32_t>({n}), narrow = s.empty<int8_t>({n}),
           wide = s.empty<int64_t>({n}), half = s.empty<int16_t>({n}),
           q64 = s.empty<int64_t>({n}), r64 = s.empty<int64_t>({n});
    ASSERT_TRUE(k(a, b, q, r, lo, hi, ab, narrow, wide, half, q64, r64).ok()) << device;
    std::vector<int32_t> qo, ro, loo, hio, abo;
    std::vector<int8_t> no;
    std::vector<int64_t> wo, q64o, r64o;
    std::vector<int16_t> ho;
    ASSERT_TRUE(q.download(qo).ok() && r.download(ro).ok() && lo.download(loo).ok() &&
                hi.download(hio).ok() && ab.download(abo).ok() && narrow.download(no).ok() &&
                wide.download(wo).ok() && half.download(ho).ok() && q64.download(q64o).ok() &&
                r64.download(r64o).ok());
    // Kiln's division: defined for every divisor.
    auto quotient = [](auto x, auto y) -> decltype(x) {
      using T = decltype(x);
      if (y == 0)
        return T(-1);
      if (y == -1) // -x, wrapping (MIN / -1 is MIN)
        return T(std::make_unsigned_t<T>(0) - std::make_unsigned_t<T>(x));
      return x / y;
    };
    auto remainder = [](auto x, auto y) -> decltype(x) {
      using T = decltype(x);
      if (y == 0)
        return x;
      return y == -1 ? T(0) : x % y;
    };
    for (int64_t e = 0; e < n; ++e) {
      int32_t x = as[e], y0 = bs[e];
      int64_t x64 = int64_t(x) * 4294967296;
      std::string at = std::string(device) + ": " + std::to_string(x) + ", " + std::to_string(y0);
      EXPECT_EQ(qo[e], quotient(x, y0)) << at;
      EXPECT_EQ(ro[e], remainder(x, y0)) << at;
      EXPECT_EQ(q64o[e], quotient(x64, int64_t(y0))) << at;
      EXPECT_EQ(r64o[e], remainder(x64, int64_t(y0))) << at;
      EXPECT_EQ(loo[e], std::min(x, y0)) << at;
      EXPECT_EQ(hio[e], std::max(x, y0)) << at;
      EXPECT_EQ(abo[e], x == INT32_MIN ? INT32_MIN : std::abs(x)) << at;
      EXPECT_EQ(no[e], static_cast<int8_t>(x)) << at;
      EXPECT_EQ(wo[e], int64_t(x) * int64_t(y0) - 1) << at;
      EXPECT_EQ(ho[e], static_cast<int16_t>(uint16_t(x) * uint16_t(y0))) << at;
    }
  });
}

TEST_F(DeviceAgreement, UmulhiOnEveryDevice) {
  // umulhi (Triton's tl.umulhi): the high 32 bits of the unsigned 64-bit product,
  // negative i32 values taken as their unsigned bits; a scalar broadcasts.
  const char *source = R"(
kernel hi(a: tensor<i32>[N], b: tensor<i32>[N], y: tensor<i32>[N], z: tensor<i32>[N])
    params(BLOCK: i32 = 64) grid(cdiv(N, BLOCK)) {
  let o = program_id(0) * BLOCK + arange(0, BLOCK);
  store(y[o], umulhi(load(a[o]), load(b[o])));
  store(z[o], umulhi(load(a[o]), -1));
}
)";
  std::vector<int32_t> a = {0, 1, -1, -1, 2147483647, int32_t(0x80000000), 123456789, -987654321,
                            65536, 65536, 3, -2};
  std::vector<int32_t> b = {5, -1, -1, 2, 2147483647, int32_t(0x80000000), 987654321, 5,
                            65536, 65535, -3, -2};
  int64_t n = int64_t(a.size());
  auto umulhi = [](int32_t x, int32_t y) {
    return int32_t(uint32_t((uint64_t(uint32_t(x)) * uint64_t(uint32_t(y))) >> 32));
  };
  forEachDevice([&](Session &s, const std::string &device) {
    Kernel k = s.compile(source, "hi");
    ASSERT_TRUE(k.ok()) << device << ": " << k.status().message();
    Tensor ta = s.upload(a, {n}), tb = s.upload(b, {n}), y = s.empty<int32_t>({n}),
           z = s.empty<int32_t>({n});
    ASSERT_TRUE(k(ta, tb, y, z).ok()) << device;
    std::vector<int32_t> got, gotZ;
    ASSERT_TRUE(y.download(got).ok() && z.download(gotZ).ok());
    for (int64_t i = 0; i < n; ++i) {
      EXPECT_EQ(got[i], umulhi(a[i], b[i])) << device << " " << a[i] << " * " << b[i];
      EXPECT_EQ(gotZ[i], umulhi(a[i], -1)) << device << " " << a[i] << " * -1";
    }
  });
}

TEST_F(DeviceAgreement, UmulhiOfTwoDimensionalTilesOnEveryDevice) {
  // On the CPU a 2-D tile's umulhi became a 2-D vector op, which MLIR's
  // arith-to-llvm does not lower ("LLVM Translation failed"); 32 and 64 bits.
  const char *source = R"(
kernel hi(a: tensor<i32>[M, N], b: tensor<i64>[M, N], y: tensor<i32>[M, N], z: tensor<i64>[M, N])
    grid(1) {
  let r = arange(0, 2)[:, None];
  let c = arange(0, 4)[None, :];
  let x = load(a[r, c]);
  let w = load(b[r, c]);
  store(y[r, c], umulhi(x, x));
  store(z[r, c], umulhi(w, w));
}
)";
  std::vector<int32_t> a = {0, 1, -1, 65536, 2147483647, int32_t(0x80000000), 123456789, -3};
  std::vector<int64_t> b = {0, -1, INT64_MAX, INT64_MIN, 4294967296, 123456789012345, -5, 7};
  auto hi32 = [](int32_t x) {
    return int32_t(uint32_t((uint64_t(uint32_t(x)) * uint64_t(uint32_t(x))) >> 32));
  };
  auto hi64 = [](int64_t x) {
    unsigned __int128 p = (unsigned __int128)uint64_t(x) * uint64_t(x);
    return int64_t(uint64_t(p >> 64));
  };
  forEachDevice([&](Session &s, const std::string &device) {
    Kernel k = s.compile(source, "hi");
    ASSERT_TRUE(k.ok()) << device << ": " << k.status().message();
    Tensor ta = s.upload(a, {2, 4}), tb = s.upload(b, {2, 4}), y = s.empty<int32_t>({2, 4}),
           z = s.empty<int64_t>({2, 4});
    ASSERT_TRUE(k(ta, tb, y, z).ok()) << device;
    std::vector<int32_t> got;
    std::vector<int64_t> gotWide;
    ASSERT_TRUE(y.download(got).ok() && z.download(gotWide).ok());
    for (size_t i = 0; i < a.size(); ++i) {
      EXPECT_EQ(got[i], hi32(a[i])) << device << " " << a[i];
      EXPECT_EQ(gotWide[i], hi64(b[i])) << device << " " << b[i];
    }
  });
}

TEST_F(DeviceAgreement, WidenedI32KeepsItsSignOnEveryDevice) {
  // An i32 widened to i64 compares, shifts and divides as the negative value it
  // is: lavapipe read an OpSConvert from i32 as non-negative in comparisons and
  // shifts (`cast<i64>(x) < 0` false for -10, `x % y` of an i64 y the remainder
  // of 2^64 - 10), so SPIR-V sign-extends with integer arithmetic instead.
  const char *source = R"(
kernel widen(x: tensor<i32>[N], y: tensor<i64>[N], flags: tensor<i64>[N], top: tensor<i64>[N],
             rem: tensor<i64>[N], quo: tensor<i64>[N]) params(B: i32 = 16) grid(1) {
  let o = arange(0, B);
  let v = load(x[o]);
  let w = cast<i64>(v);
  let d = load(y[o]);
  store(flags[o], cast<i64>(where(w < 0, 1, 0) + where(w < -5, 10, 0) + where(w > -1, 100, 0) +
                            where(w <= 0, 1000, 0) + where(w >= 3, 10000, 0)));
  store(top[o], w >> 63);
  store(rem[o], v % d);
  store(quo[o], v / d);
}
)";
  std::vector<int32_t> x = {-10, -10, 10, -10, -7, 5, -1, -128, 0, 3, INT32_MIN, INT32_MAX,
                            -1, -2147483647, 100, -100};
  std::vector<int64_t> y = {127, 3, 7, 100, 3, -3, 2, 3, 5, -7, 1000, -1000, INT64_MIN, 10,
                            -9, 9};
  const int64_t n = int64_t(x.size());
  forEachDevice([&](Session &s, const std::string &device) {
    Kernel k = s.compile(source, "widen");
    ASSERT_TRUE(k.ok()) << device << ": " << k.status().message();
    Tensor tx = s.upload(x, {n}), ty = s.upload(y, {n}), flags = s.empty<int64_t>({n}),
           top = s.empty<int64_t>({n}), rem = s.empty<int64_t>({n}), quo = s.empty<int64_t>({n});
    ASSERT_TRUE(k(tx, ty, flags, top, rem, quo).ok()) << device;
    std::vector<int64_t> f, t, r, q;
    ASSERT_TRUE(flags.download(f).ok() && top.download(t).ok() && rem.download(r).ok() &&
                quo.download(q).ok());
    for (int64_t i = 0; i < n; ++i) {
      int64_t w = x[i];
      int64_t expected = (w < 0) + 10 * (w < -5) + 100 * (w > -1) + 1000 * (w <= 0) +
                         10000 * (w >= 3);
      std::string at = device + ": " + std::to_string(w) + ", " + std::to_string(y[i]);
      EXPECT_EQ(f[i], expected) << at;
      EXPECT_EQ(t[i], w < 0 ? -1 : 0) << at;
      EXPECT_EQ(r[i], w % y[i]) << at;
      EXPECT_EQ(q[i], w / y[i]) << at;
    }
  });
}

TEST_F(DeviceAgreement, BitCountsOnEveryDevice) {
  // popcount and clz of i32 and i64 values as stored (two's complement), zero
  // and negative values included, against the compiler's builtins.
  const char *source = R"(
kernel k(x: tensor<i32>[N], y: tensor<i64>[N], out: tensor<i32>[2, N], wide: tensor<i64>[2, N])
    params(B: i32 = 32) grid(1) {
  let o = arange(0, B);
  let v = load(x[o]);
  let w = load(y[o]);
  store(out[0, o], popcount(v));
  store(out[1, o], clz(v));
  store(wide[0, o], popcount(w));
  store(wide[1, o], clz(w));
}
)";
  const int64_t n = 32;
  std::vector<int32_t> x(n);
  std::vector<int64_t> y(n);
  std::mt19937_64 rng(5);
  for (int64_t i = 0; i < n; ++i) {
    x[i] = static_cast<int32_t>(rng() >> (rng() % 32));
    y[i] = static_cast<int64_t>(rng() >> (rng() % 64));
  }
  x[0] = 0, x[1] = -1, x[2] = INT32_MIN, x[3] = 1, x[4] = -2;
  y[0] = 0, y[1] = -1, y[2] = INT64_MIN, y[3] = 1, y[4] = int64_t(1) << 40;
  auto clz32 = [](uint32_t u) { return u ? __builtin_clz(u) : 32; };
  auto clz64 = [](uint64_t u) { return u ? __builtin_clzll(u) : 64; };
  forEachDevice([&](Session &s, const std::string &device) {
    Kernel k = s.compile(source, "k");
    ASSERT_TRUE(k.ok()) << k.status().message();
    Tensor tx = s.upload(x, {n}), ty = s.upload(y, {n}), out = s.empty<int32_t>({2, n}),
           wide = s.empty<int64_t>({2, n});
    ASSERT_TRUE(k(tx, ty, out, wide).ok()) << device;
    std::vector<int32_t> got;
    std::vector<int64_t> gotWide;
    ASSERT_TRUE(out.download(got).ok() && wide.download(gotWide).ok());
    for (int64_t i = 0; i < n; ++i) {
      auto u = static_cast<uint32_t>(x[i]);
      auto w = static_cast<uint64_t>(y[i]);
      EXPECT_EQ(got[i], __builtin_popcount(u)) << device << " popcount " << x[i];
      EXPECT_EQ(got[n + i], clz32(u)) << device << " clz " << x[i];
      EXPECT_EQ(gotWide[i], __builtin_popcountll(w)) << device << " popcount " << y[i];
      EXPECT_EQ(gotWide[n + i], clz64(w)) << device << " clz " << y[i];
    }
  });
}

} // namespace
