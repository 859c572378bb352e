//===- UnsignedTest.cpp - u8, u16, u32, u64 and bitcasts on every device -------===//
//
// Unsigned integers share MLIR's signless types with the signed ones; what
// differs is the operations the frontend picks (divui, shrui, cmpi ult, maxui,
// uitofp, zero extension) and the kinds of reductions, scans and atomics. These
// kernels use values past the signed range, where every one of those choices
// shows, against C++ references on the CPU and on Vulkan.
//
//===----------------------------------------------------------------------===//

#include "kiln/kiln.h"
#include "lib/Support/Half.h"
#include "test/session/FreshCache.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

using namespace kiln;

namespace {

using Unsigned = test::FreshCacheTest;
using test::forEachDevice;

const std::vector<uint32_t> kA = {0,          1,          7,          0x7FFFFFFF, 0x80000000,
                                  0xFFFFFFFF, 0xDEADBEEF, 3000000000, 12345,      0x80000001,
                                  65535,      4000000000, 5,          0xFFFFFFFE, 2,
                                  100};
const std::vector<uint32_t> kB = {1,          3,          0xFFFFFFFF, 2,          0x7FFFFFFF,
                                  16,         7,          1000000000, 0x80000000, 0x80000001,
                                  255,        4000000001, 0,          3,          0xFFFFFFFF,
                                  9};

TEST_F(Unsigned, ArithmeticOnEveryDevice) {
  // Division (by zero too), remainder, shifts (amounts past the width give 0), comparisons,
  // max/min, conversions to and from f32, zero extension, a literal past 2^31
  // multiplied with wrap-around, and C's promotion (i32 with u32 is u32).
  const char *source = R"(
kernel ops(a: tensor<u32>[N], b: tensor<u32>[N], q: tensor<u32>[N], r: tensor<u32>[N],
           sh: tensor<u32>[N], cmp: tensor<i32>[N], hi: tensor<u32>[N], lo: tensor<u32>[N],
           f: tensor<f32>[N], back: tensor<u32>[N], wide: tensor<u64>[N],
           hash: tensor<u32>[N], mixed: tensor<u32>[N], bytes: tensor<u8>[N])
    params(BLOCK: i32 = 16) grid(cdiv(N, BLOCK)) {
  let o = program_id(0) * BLOCK + arange(0, BLOCK);
  let x = load(a[o]);
  let y = load(b[o]);
  store(q[o], x / y);
  store(r[o], x % y);
  store(sh[o], (x >> 28) | (x >> (y & 63)));
  store(cmp[o], cast<i32>(x < y) + 2 * cast<i32>(x >= y) + 4 * cast<i32>(x > 2147483648));
  store(hi[o], max(x, y));
  store(lo[o], clamp(x, 100, 3000000000));
  store(f[o], cast<f32>(x));
  store(back[o], cast<u32>(cast<f32>(y) * 0.5));
  store(wide[o], cast<u64>(x) * 4294967296 + cast<u64>(y));
  store(hash[o], x * 0x9E3779B9);
  store(mixed[o], cast<i32>(x) + y);
  store(bytes[o], cast<u8>(x) + cast<u8>(200));
}
)";
  int64_t n = int64_t(kA.size());
  forEachDevice([&](Session &s, const std::string &device) {
    Kernel k = s.compile(source, "ops");
    ASSERT_TRUE(k.ok()) << device << ": " << k.status().message();
    Tensor a = s.upload(kA, {n}), b = s.upload(kB, {n}), q = s.empty<uint32_t>({n}),
           r = s.empty<uint32_t>({n}), sh = s.empty<uint32_t>({n}), cmp = s.empty<int32_t>({n}),
           hi = s.empty<uint32_t>({n}), lo = s.empty<uint32_t>({n}), f = s.empty<float>({n}),
           back = s.empty<uint32_t>({n}), wide = s.empty<uint64_t>({n}),
           hash = s.empty<uint32_t>({n}), mixed = s.empty<uint32_t>({n}),
           bytes = s.empty<uint8_t>({n});
    ASSERT_TRUE(k(a, b, q, r, sh, cmp, hi, lo, f, back, wide, hash, mixed, bytes).ok()) << device;
    std::vector<uint32_t> gq, gr, gsh, ghi, glo, gback, ghash, gmixed;
    std::vector<int32_t> gcmp;
    std::vector<float> gf;
    std::vector<uint64_t> gwide;
    std::vector<uint8_t> gbytes;
    ASSERT_TRUE(q.download(gq).ok() && r.download(gr).ok() && sh.download(gsh).ok() &&
                cmp.download(gcmp).ok() && hi.download(ghi).ok() && lo.download(glo).ok() &&
                f.download(gf).ok() && back.download(gback).ok() && wide.download(gwide).ok() &&
                hash.download(ghash).ok() && mixed.download(gmixed).ok() &&
                bytes.download(gbytes).ok());
    for (int64_t i = 0; i < n; ++i) {
      uint32_t x = kA[i], y = kB[i];
      std::string at = device + " " + std::to_string(x) + ", " + std::to_string(y);
      // Division by zero is defined: the largest value, and x itself.
      EXPECT_EQ(gq[i], y ? x / y : 0xFFFFFFFFu) << at;
      EXPECT_EQ(gr[i], y ? x % y : x) << at;
      uint32_t amount = y & 63;
      EXPECT_EQ(gsh[i], (x >> 28) | (amount < 32 ? x >> amount : 0)) << at;
      EXPECT_EQ(gcmp[i], int(x < y) + 2 * int(x >= y) + 4 * int(x > 2147483648u)) << at;
      EXPECT_EQ(ghi[i], std::max(x, y)) << at;
      EXPECT_EQ(glo[i], std::clamp(x, 100u, 3000000000u)) << at;
      EXPECT_EQ(gf[i], float(x)) << at;
      EXPECT_EQ(gback[i], uint32_t(float(y) * 0.5f)) << at;
      EXPECT_EQ(gwide[i], uint64_t(x) * 4294967296u + y) << at;
      EXPECT_EQ(ghash[i], x * 0x9E3779B9u) << at;
      EXPECT_EQ(gmixed[i], x + y) << at;
      EXPECT_EQ(gbytes[i], uint8_t(uint8_t(x) + 200)) << at;
    }
  });
}

TEST_F(Unsigned, SixtyFourBitsOnEveryDevice) {
  // u64: a splitmix64 step (a literal past 2^63, logical shifts, wrapping
  // multiplies), division, comparisons, umulhi, u64 to f64, and scalar u32 and
  // u64 arguments past the signed range.
  const char *source = R"(
kernel mix(a: tensor<u64>[N], b: tensor<u64>[N], h: tensor<u64>[N], q: tensor<u64>[N],
           top: tensor<u64>[N], gt: tensor<i32>[N], d: tensor<f64>[N], big: u64, k: u32)
    params(BLOCK: i32 = 16) grid(cdiv(N, BLOCK)) {
  let o = program_id(0) * BLOCK + arange(0, BLOCK);
  let x = load(a[o]);
  let y = load(b[o]);
  var z = x + 0x9E3779B97F4A7C15;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EB;
  store(h[o], (z ^ (z >> 31)) + big + cast<u64>(k));
  store(q[o], x / y);
  store(top[o], umulhi(x, y));
  store(gt[o], cast<i32>(x > y));
  store(d[o], cast<f64>(x));
}
)";
  std::vector<uint64_t> a, b;
  for (uint32_t i = 0; i < 16; ++i) {
    a.push_back(uint64_t(kA[i]) * 0x100000001ull + (uint64_t(i) << 63));
    b.push_back(uint64_t(kB[i]) << (i % 33) | 1);
  }
  int64_t n = int64_t(a.size());
  auto splitmix = [](uint64_t z) {
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  };
  forEachDevice([&](Session &s, const std::string &device) {
    Kernel k = s.compile(source, "mix");
    ASSERT_TRUE(k.ok()) << device << ": " << k.status().message();
    Tensor ta = s.upload(a, {n}), tb = s.upload(b, {n}), h = s.empty<uint64_t>({n}),
           q = s.empty<uint64_t>({n}), top = s.empty<uint64_t>({n}), gt = s.empty<int32_t>({n}),
           d = s.empty<double>({n});
    uint64_t big = 0xF000000000000000ull;
    uint32_t small = 0xFFFFFFF0u;
    ASSERT_TRUE(k(ta, tb, h, q, top, gt, d, big, small).ok()) << device;
    std::vector<uint64_t> gh, gq, gtop;
    std::vector<int32_t> ggt;
    std::vector<double> gd;
    ASSERT_TRUE(h.download(gh).ok() && q.download(gq).ok() && top.download(gtop).ok() &&
                gt.download(ggt).ok() && d.download(gd).ok());
    for (int64_t i = 0; i < n; ++i) {
      uint64_t x = a[i], y = b[i];
      std::string at = device + " " + std::to_string(x) + ", " + std::to_string(y);
      EXPECT_EQ(gh[i], splitmix(x) + big + small) << at;
      EXPECT_EQ(gq[i], x / y) << at;
      EXPECT_EQ(gtop[i], uint64_t((unsigned __int128)x * y >> 64)) << at;
      EXPECT_EQ(ggt[i], int(x > y)) << at;
      EXPECT_EQ(gd[i], double(x)) << at;
    }
  });
}

TEST_F(Unsigned, ReductionsScansSortsAndAtomicsOnEveryDevice) {
  // max/min/argmax, cummax, sort and atomic_max/min order unsigned values:
  // 0xFFFFFFFF is the largest, where a signed order would make it -1.
  const char *source = R"(
kernel order(a: tensor<u32>[N], ext: tensor<u32>[4], arg: tensor<i32>[2],
             run: tensor<u32>[N], sorted: tensor<u32>[N], best: tensor<u32>[2],
             small: tensor<u8>[N], smallMax: tensor<u8>[1])
    params(BLOCK: i32 = 16) grid(1) {
  let o = arange(0, BLOCK);
  let x = load(a[o]);
  store(ext[0], max(x));
  store(ext[1], min(x));
  store(ext[2], min(x + 1));
  store(ext[3], max(x >> 1));
  store(arg[0], argmax(x));
  store(arg[1], argmin(x));
  store(run[o], cummax(x));
  store(sorted[o], sort(x));
  atomic_max(best[o * 0], x);
  atomic_min(best[o * 0 + 1], x);
  let v = load(small[o]);
  store(smallMax[0], max(v));
}
)";
  int64_t n = int64_t(kA.size());
  std::vector<uint8_t> small;
  for (uint32_t v : kA)
    small.push_back(uint8_t(v));
  forEachDevice([&](Session &s, const std::string &device) {
    Kernel k = s.compile(source, "order");
    ASSERT_TRUE(k.ok()) << device << ": " << k.status().message();
    Tensor a = s.upload(kA, {n}), ext = s.empty<uint32_t>({4}), arg = s.empty<int32_t>({2}),
           run = s.empty<uint32_t>({n}), sorted = s.empty<uint32_t>({n}),
           best = s.upload(std::vector<uint32_t>{0x7FFFFFFF, 0x80000000}, {2}),
           ts = s.upload(small, {n}), smallMax = s.empty<uint8_t>({1});
    ASSERT_TRUE(k(a, ext, arg, run, sorted, best, ts, smallMax).ok()) << device;
    std::vector<uint32_t> gext, grun, gsorted, gbest;
    std::vector<int32_t> garg;
    std::vector<uint8_t> gsmall;
    ASSERT_TRUE(ext.download(gext).ok() && arg.download(garg).ok() && run.download(grun).ok() &&
                sorted.download(gsorted).ok() && best.download(gbest).ok() &&
                smallMax.download(gsmall).ok());
    auto [lo, hi] = std::minmax_element(kA.begin(), kA.end());
    uint32_t minPlusOne = 0xFFFFFFFF, maxHalf = 0;
    for (uint32_t v : kA) {
      minPlusOne = std::min(minPlusOne, v + 1);
      maxHalf = std::max(maxHalf, v >> 1);
    }
    EXPECT_EQ(gext, (std::vector<uint32_t>{*hi, *lo, minPlusOne, maxHalf})) << device;
    EXPECT_EQ(garg, (std::vector<int32_t>{int32_t(hi - kA.begin()), int32_t(lo - kA.begin())}))
        << device;
    std::vector<uint32_t> wantRun(kA), wantSorted(kA);
    for (size_t i = 1; i < wantRun.size(); ++i)
      wantRun[i] = std::max(wantRun[i], wantRun[i - 1]);
    std::sort(wantSorted.begin(), wantSorted.end());
    EXPECT_EQ(grun, wantRun) << device;
    EXPECT_EQ(gsorted, wantSorted) << device;
    EXPECT_EQ(gbest, (std::vector<uint32_t>{*hi, *lo})) << device;
    EXPECT_EQ(gsmall[0], *std::max_element(small.begin(), small.end())) << device;
  });
}

TEST_F(Unsigned, DotsOfBytesOnEveryDevice) {
  // dot of u8 tiles (values past 127, which sign extension would make negative)
  // into the default u32 accumulator, and u16 into an explicit u64 one.
  const char *source = R"(
kernel dots(a: tensor<u8>[M, K], b: tensor<u8>[K, N], c: tensor<u32>[M, N],
            a16: tensor<u16>[M, K], b16: tensor<u16>[K, N], c64: tensor<u64>[M, N])
    params(BM: i32 = 16, BN: i32 = 16, BK: i32 = 16) grid(1) {
  store(c.tile([BM, BN], [0, 0]),
        dot(load(a.tile([BM, BK], [0, 0])), load(b.tile([BK, BN], [0, 0]))));
  store(c64.tile([BM, BN], [0, 0]),
        dot(load(a16.tile([BM, BK], [0, 0])), load(b16.tile([BK, BN], [0, 0])),
            zeros<u64>[BM, BN]));
}
)";
  const int64_t m = 16, n = 16, k = 16;
  std::vector<uint8_t> a(m * k), b(k * n);
  std::vector<uint16_t> a16(m * k), b16(k * n);
  for (int64_t i = 0; i < m * k; ++i) {
    a[i] = uint8_t(i * 37 + 200);
    a16[i] = uint16_t(i * 4099 + 60000);
  }
  for (int64_t i = 0; i < k * n; ++i) {
    b[i] = uint8_t(i * 91 + 7);
    b16[i] = uint16_t(i * 7919 + 33000);
  }
  forEachDevice([&](Session &s, const std::string &device) {
    Kernel kern = s.compile(source, "dots");
    ASSERT_TRUE(kern.ok()) << device << ": " << kern.status().message();
    Tensor ta = s.upload(a, {m, k}), tb = s.upload(b, {k, n}), c = s.empty<uint32_t>({m, n}),
           ta16 = s.upload(a16, {m, k}), tb16 = s.upload(b16, {k, n}),
           c64 = s.empty<uint64_t>({m, n});
    ASSERT_TRUE(kern(ta, tb, c, ta16, tb16, c64).ok()) << device;
    std::vector<uint32_t> got;
    std::vector<uint64_t> got64;
    ASSERT_TRUE(c.download(got).ok() && c64.download(got64).ok());
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        uint32_t want = 0;
        uint64_t want64 = 0;
        for (int64_t p = 0; p < k; ++p) {
          want += uint32_t(a[i * k + p]) * b[p * n + j];
          want64 += uint64_t(a16[i * k + p]) * b16[p * n + j];
        }
        EXPECT_EQ(got[i * n + j], want) << device << " at " << i << ", " << j;
        EXPECT_EQ(got64[i * n + j], want64) << device << " at " << i << ", " << j;
      }
  });
}

TEST_F(Unsigned, BitcastsKeepTheBitsOnEveryDevice) {
  // bitcast<T>(x) (Triton's x.to(T, bitcast=True)) between types of one width:
  // f32 <-> u32 and i32, f16 and bf16 <-> u16, f64 <-> i64, fp8 <-> u8. The
  // float bits are rebuilt by integer arithmetic and read back as floats.
  const char *source = R"(
kernel bits(x: tensor<f32>[N], u: tensor<u32>[N], back: tensor<f32>[N], h: tensor<u16>[N],
            b: tensor<u16>[N], d: tensor<i64>[N], f8: tensor<u8>[N], neg: tensor<f32>[N])
    params(BLOCK: i32 = 16) grid(cdiv(N, BLOCK)) {
  let o = program_id(0) * BLOCK + arange(0, BLOCK);
  let v = load(x[o]);
  let bits = bitcast<u32>(v);
  store(u[o], bits);
  store(back[o], bitcast<f32>(bits + 1));
  store(h[o], bitcast<u16>(cast<f16>(v)));
  store(b[o], bitcast<u16>(cast<bf16>(v)));
  store(d[o], bitcast<i64>(cast<f64>(v)));
  store(f8[o], bitcast<u8>(cast<f8e4m3>(v)));
  store(neg[o], bitcast<f32>(bitcast<i32>(v) ^ 0x80000000));
}
)";
  std::vector<float> x = {0.0f, -0.0f, 1.0f, -1.5f, 3.14159f, 1e-30f, -65504.0f, 448.0f,
                          0.1f, 2.5e-3f, 1e30f, -7.0f, 0.5f, 100.0f, -0.25f, 12345.678f};
  int64_t n = int64_t(x.size());
  forEachDevice([&](Session &s, const std::string &device) {
    Kernel k = s.compile(source, "bits");
    ASSERT_TRUE(k.ok()) << device << ": " << k.status().message();
    Tensor tx = s.upload(x, {n}), u = s.empty<uint32_t>({n}), back = s.empty<float>({n}),
           h = s.empty<uint16_t>({n}), b = s.empty<uint16_t>({n}), d = s.empty<int64_t>({n}),
           f8 = s.empty<uint8_t>({n}), neg = s.empty<float>({n});
    ASSERT_TRUE(k(tx, u, back, h, b, d, f8, neg).ok()) << device;
    std::vector<uint32_t> gu;
    std::vector<float> gback, gneg;
    std::vector<uint16_t> gh, gb;
    std::vector<int64_t> gd;
    std::vector<uint8_t> gf8;
    ASSERT_TRUE(u.download(gu).ok() && back.download(gback).ok() && h.download(gh).ok() &&
                b.download(gb).ok() && d.download(gd).ok() && f8.download(gf8).ok() &&
                neg.download(gneg).ok());
    for (int64_t i = 0; i < n; ++i) {
      std::string at = device + " " + std::to_string(x[i]);
      uint32_t bits;
      std::memcpy(&bits, &x[i], 4);
      EXPECT_EQ(gu[i], bits) << at;
      float next;
      uint32_t nextBits = bits + 1;
      std::memcpy(&next, &nextBits, 4);
      EXPECT_EQ(std::memcmp(&gback[i], &next, 4), 0) << at;
      EXPECT_EQ(gh[i], floatToHalfBits(x[i])) << at;
      EXPECT_EQ(gb[i], floatToBF16Bits(x[i])) << at;
      double wide = x[i];
      int64_t wideBits;
      std::memcpy(&wideBits, &wide, 8);
      EXPECT_EQ(gd[i], wideBits) << at;
      EXPECT_EQ(gf8[i], floatToF8Bits(x[i], DType::F8E4M3)) << at;
      float flipped = -x[i];
      EXPECT_EQ(std::memcmp(&gneg[i], &flipped, 4), 0) << at;
    }
  });
}

} // namespace
