//===- DeviceAgreementTest.cpp - the language gives the same answers everywhere ===//
//
// Kernels through kiln::Session on the CPU and on Vulkan (lavapipe here), against
// C++ references: integer edge cases, shifts, argmax, gather, sort, custom
// reductions and scans, join/split/cat, tuples, while loops, atomics, fp8
// conversions, random numbers, and the FMA dot's register blockings. Where LLVM
// and SPIR-V define an operation differently (or MLIR lowers it wrongly), Kiln
// defines it once and these tests hold both targets to it.
//
//===----------------------------------------------------------------------===//

#include "examples/reference/References.h"
#include "kiln/kiln.h"
#include "lib/Support/Half.h"
#include "test/Common/Compare.h"
#include "test/session/FreshCache.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cfloat>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <iomanip>
#include <limits>
#include <map>
#include <numeric>
#include <random>
#include <regex>
#include <sstream>
#include <type_traits>

using namespace kiln;

namespace {

using DeviceAgreement = test::FreshCacheTest;
using test::forEachDevice;
using reference::philox;

/// A 16 x 32 by 32 x 16 dot of i32 tensors cast to `operand`, into a zero
/// accumulator of type `acc`, stored back as i32.
std::string dotKernel(const std::string &operand, const std::string &acc) {
  return R"(
kernel k(a: tensor<i32>[M, K], b: tensor<i32>[K, N], c: tensor<i32>[M, N]) grid(1) {
  let x = cast<)" + operand + R"(>(load(a.tile([16, 32], [0, 0])));
  let y = cast<)" + operand + R"(>(load(b.tile([32, 16], [0, 0])));
  store(c.tile([16, 16], [0, 0]), cast<i32>(dot(x, y, zeros<)" + acc + R"(>[16, 16])));
}
)";
}

/// Each lane `i` but the masked ones added `step` to bin `bins[i]` atomically
/// and got the total before: the lanes of a bin saw start, start + step, start +
/// 2 step, ... once each (a lost update would repeat one), and the bin ends
/// after its last one. Masked lanes got 0.
template <typename T>
void expectEveryAddSeen(const std::vector<T> &olds, const std::vector<T> &finals,
                        const std::vector<int32_t> &bins,
                        const std::function<bool(int64_t)> &masked, T start, T step,
                        const std::string &where) {
  std::vector<std::vector<T>> seen(finals.size());
  for (size_t i = 0; i < olds.size(); ++i) {
    if (masked(int64_t(i)))
      EXPECT_EQ(olds[i], T(0)) << where << " masked lane " << i;
    else
      seen[bins[i]].push_back(olds[i]);
  }
  for (size_t b = 0; b < finals.size(); ++b) {
    std::sort(seen[b].begin(), seen[b].end());
    EXPECT_EQ(finals[b], start + T(seen[b].size()) * step) << where << " bin " << b;
    for (size_t j = 0; j < seen[b].size(); ++j)
      ASSERT_EQ(seen[b][j], start + T(j) * step) << where << " bin " << b;
  }
}


/// examples/matmul.kiln.
std::string matmulSource() {
  std::ifstream in(std::string(KILN_EXAMPLES_DIR) + "/matmul.kiln");
  std::stringstream source;
  source << in.rdbuf();
  return source.str();
}

TEST_F(DeviceAgreement, VulkanDotEveryTileShapeAgrees) {
  // The FMA dot reads one A value per distinct row and one B value per distinct
  // column of a thread's registers when the layout repeats evenly: 32 x 32 (rows
  // repeat within a span of threads x 4 elements), 1 x 1024 (columns do). Other
  // shapes read per register: 64 x 48 (48 divides no span), 3 x 5 x 7 (ragged),
  // 16 x 16 on the generic Vulkan target (its 512-element span leaves threads
  // past the tile; the 32 threads of vulkan:*:cpu do not). All must agree.
  Session s("vulkan");
  if (!s.ok())
    GTEST_SKIP() << "no Vulkan device: " << s.status().message();
  const std::string source = matmulSource();
  int64_t m = 70, n = 530, k = 45;
  auto ha = test::randomVector(m * k, 3), hb = test::randomVector(k * n, 4);
  auto want = reference::matmul(ha.data(), hb.data(), m, n, k, k, 1);
  Tensor a = s.upload(ha, {m, k}), b = s.upload(hb, {k, n});
  for (auto [bm, bn, bk] : {std::tuple{32, 32, 32}, {1, 1024, 2}, {16, 16, 16}, {64, 48, 16},
                            {3, 5, 7}}) {
    Kernel kernel = s.compile(source, "matmul",
                              {{"BM", std::to_string(bm)}, {"BN", std::to_string(bn)},
                               {"BK", std::to_string(bk)}},
                              "matmul.kiln");
    ASSERT_TRUE(kernel.ok()) << kernel.status().message();
    Tensor c = s.upload(std::vector<float>(m * n, NAN), {m, n});
    ASSERT_TRUE(kernel(a, b, c).ok());
    std::vector<float> out;
    ASSERT_TRUE(c.download(out).ok());
    EXPECT_TRUE(test::allClose(out, want, 1e-4, 1e-4)) << bm << "x" << bn << "x" << bk;
  }
}

TEST_F(DeviceAgreement, IntegerDotsAtTheirExtremes) {
  // 8- and 16-bit integer dots into 32 bits over each type's whole range
  // (-128 * -128, 255 * 255, -32768 * -32768 included): every device must give
  // the exact sum wrapped to 32 bits. The CPU takes K in pairs through x86's
  // pmaddwd where it has it, whose pair sums wrap too; Vulkan runs the FMA loop.
  struct Case {
    const char *operand, *acc;
    int32_t lo, hi;
  };
  const Case cases[] = {{"i8", "i32", -128, 127}, {"u8", "u32", 0, 255},
                        {"i16", "i32", -32768, 32767}, {"u16", "u32", 0, 65535}};
  const int64_t m = 16, n = 16, k = 32;
  forEachDevice([&](Session &s, const std::string &device) {
    for (const Case &c : cases) {
      Kernel kernel = s.compile(dotKernel(c.operand, c.acc), "k");
      ASSERT_TRUE(kernel.ok()) << device << " " << c.operand << ": " << kernel.status().message();
      // Mostly the extremes, some values in between; both elements of a K pair
      // alike where the class repeats, so some pairs are lo * lo + lo * lo
      // (for i16, pmaddwd's one wrapping case: 2^31).
      auto value = [&](int64_t cls, int64_t i) {
        return cls == 0 ? c.lo : cls == 1 ? c.hi : c.lo + int32_t(i * 37 % (c.hi - c.lo));
      };
      std::vector<int32_t> a(m * k), b(k * n);
      for (int64_t i = 0; i < m; ++i)
        for (int64_t l = 0; l < k; ++l)
          a[i * k + l] = value((i + l / 2) % 3, i * k + l);
      for (int64_t l = 0; l < k; ++l)
        for (int64_t j = 0; j < n; ++j)
          b[l * n + j] = value((l / 2 + j) % 4 % 3, l * n + j);
      Tensor ta = s.upload(a, {m, k}), tb = s.upload(b, {k, n}), tc = s.empty(DType::I32, {m, n});
      ASSERT_TRUE(kernel(ta, tb, tc).ok()) << device;
      std::vector<int32_t> out(m * n);
      ASSERT_TRUE(tc.download(out.data()).ok());
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          uint32_t want = 0;
          for (int64_t l = 0; l < k; ++l)
            want += uint32_t(int64_t(a[i * k + l]) * b[l * n + j]);
          ASSERT_EQ(uint32_t(out[i * n + j]), want)
              << device << " " << c.operand << " at " << i << ", " << j;
        }
    }
  });
}

TEST_F(DeviceAgreement, DotAccumulatorsOfOtherTypesOnEveryDevice) {
  // An accumulator may be narrower than the operands, the other 16-bit float
  // format, or f64 under bf16 or fp8 operands; the products are taken in its
  // type. Each pair was an internal error on some target (f32 operands into f16
  // on Vulkan: 'arith.extf' ... cast incompatible; bf16 into f16 on the CPU;
  // any operands into bf16 on Vulkan: math.fma on bf16). Small integers keep
  // every sum exact in every type, so results must equal the integer product.
  const std::vector<std::pair<const char *, const char *>> pairs = {
      {"f32", "f16"},  {"bf16", "f16"}, {"f16", "bf16"}, {"f32", "bf16"}, {"bf16", "f64"},
      {"f8e4m3", "f64"}, {"f64", "bf16"}, {"f64", "f32"}, {"i32", "i16"}, {"i16", "i8"},
      {"u16", "u8"},  {"i8", "i64"},  {"u8", "u64"},  {"u8", "i16"},  {"i64", "i32"}};
  const int64_t m = 16, n = 16, k = 24;
  std::vector<int32_t> ha(m * k), hb(k * n);
  for (int64_t i = 0; i < m * k; ++i)
    ha[i] = int32_t(i * 7 % 5) - 2;
  for (int64_t i = 0; i < k * n; ++i)
    hb[i] = int32_t(i * 3 % 5) - 2;
  forEachDevice([&](Session &s, const std::string &device) {
    for (auto [operand, acc] : pairs) {
      bool isUnsigned = operand[0] == 'u';
      Kernel kernel = s.compile(dotKernel(operand, acc), "k");
      ASSERT_TRUE(kernel.ok()) << device << " " << operand << " -> " << acc << ": "
                               << kernel.status().message();
      std::vector<int32_t> xa = ha, xb = hb;
      if (isUnsigned) // 0 ... 4
        for (auto *v : {&xa, &xb})
          for (int32_t &e : *v)
            e += 2;
      Tensor a = s.upload(xa, {m, k}), b = s.upload(xb, {k, n}), c = s.empty(DType::I32, {m, n});
      ASSERT_TRUE(kernel(a, b, c).ok()) << device;
      std::vector<int32_t> out(m * n);
      ASSERT_TRUE(c.download(out.data()).ok());
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          int32_t want = 0;
          for (int64_t l = 0; l < k; ++l)
            want += xa[i * k + l] * xb[l * n + j];
          if (std::string(acc) == "i8" || std::string(acc) == "u8")
            want = std::string(acc) == "i8" ? int32_t(int8_t(want)) : int32_t(uint8_t(want));
          ASSERT_EQ(out[i * n + j], want)
              << device << " " << operand << " -> " << acc << " at " << i << ", " << j;
        }
    }
  });
}

TEST_F(DeviceAgreement, BatchedDotOnEveryDevice) {
  // dot of 3-D tiles: one product per index of the leading (batch) dimension,
  // with or without an accumulator, for several operand types. Blocks over
  // batch, rows and columns with masked edges (5 x 40 x 20 with K = 50 in
  // 2 x 16 x 8 blocks, BK = 8); small integers keep every sum exact. (Small
  // blocks: lavapipe takes seconds to compile a 4 x 16 x 16 one.)
  const char *source = R"(
kernel bmm(a: tensor<i32>[B, M, K], b: tensor<i32>[B, K, N], c: tensor<i32>[B, M, N])
    params(BB: i32 = 2, BM: i32 = 16, BN: i32 = 8, BK: i32 = 8)
    grid(cdiv(B, BB), cdiv(M, BM), cdiv(N, BN)) {
  let z = program_id(0) * BB + arange(0, BB);
  let m = program_id(1) * BM + arange(0, BM);
  let n = program_id(2) * BN + arange(0, BN);
  var acc = zeros<A>[BB, BM, BN];
  for k0 in range(0, K, BK) {
    let k = k0 + arange(0, BK);
    let x = cast<T>(load(a[z[:, None, None], m[None, :, None], k[None, None, :]], other = 0));
    let y = cast<T>(load(b[z[:, None, None], k[None, :, None], n[None, None, :]], other = 0));
    acc = ACC;
  }
  store(c[z[:, None, None], m[None, :, None], n[None, None, :]], cast<i32>(acc));
}
)";
  struct Case {
    const char *operand, *acc, *update;
  };
  const Case cases[] = {{"f32", "f32", "dot(x, y, acc)"},
                        {"f16", "f32", "dot(x, y, acc)"},
                        {"bf16", "f32", "acc + dot(x, y)"},
                        {"i8", "i32", "dot(x, y, acc)"},
                        {"f64", "f64", "acc + dot(x, y)"}};
  const int64_t batch = 5, m = 40, n = 20, k = 50;
  std::vector<int32_t> ha(batch * m * k), hb(batch * k * n);
  for (size_t i = 0; i < ha.size(); ++i)
    ha[i] = int32_t(i * 7 % 9) - 4;
  for (size_t i = 0; i < hb.size(); ++i)
    hb[i] = int32_t(i * 5 % 7) - 3;
  std::vector<int32_t> want(batch * m * n, 0);
  for (int64_t z = 0; z < batch; ++z)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j)
        for (int64_t l = 0; l < k; ++l)
          want[(z * m + i) * n + j] += ha[(z * m + i) * k + l] * hb[(z * k + l) * n + j];
  forEachDevice([&](Session &s, const std::string &device) {
    for (const Case &c : cases) {
      std::string text =
          std::regex_replace(source, std::regex("<T>"), std::string("<") + c.operand + ">");
      text = std::regex_replace(text, std::regex("<A>"), std::string("<") + c.acc + ">");
      text = std::regex_replace(text, std::regex("ACC"), c.update);
      Kernel kernel = s.compile(text, "bmm");
      ASSERT_TRUE(kernel.ok()) << device << " " << c.operand << ": " << kernel.status().message();
      Tensor a = s.upload(ha, {batch, m, k}), b = s.upload(hb, {batch, k, n}),
             out = s.empty(DType::I32, {batch, m, n});
      ASSERT_TRUE(kernel(a, b, out).ok()) << device << " " << c.operand;
      std::vector<int32_t> got;
      ASSERT_TRUE(out.download(got).ok());
      for (size_t i = 0; i < want.size(); ++i)
        ASSERT_EQ(got[i], want[i]) << device << " " << c.operand << " at " << i;
      if (&c != &cases[0])
        continue;
      // A batch of one is a reshape, not a slice.
      Kernel single = s.compile(text, "bmm", {{"BB", "1"}});
      ASSERT_TRUE(single.ok()) << device << ": " << single.status().message();
      Tensor out1 = s.empty(DType::I32, {batch, m, n});
      ASSERT_TRUE(single(a, b, out1).ok()) << device;
      ASSERT_TRUE(out1.download(got).ok());
      EXPECT_EQ(got, want) << device << " with BB = 1";
    }
  });
}

TEST_F(DeviceAgreement, VulkanUsesTheDevicesSharedMemory) {
  // The device's profile carries its maxComputeSharedMemorySize beyond Vulkan's
  // 16 KiB (lavapipe: 32 KiB), so a 64 x 64 matmul with 48-wide K slices (24 KiB
  // of operands in shared memory) compiles for it and runs.
  Session s("vulkan");
  if (!s.ok())
    GTEST_SKIP() << "no Vulkan device: " << s.status().message();
  std::string target = s.device().target();
  size_t at = target.find(":shared=");
  if (at == std::string::npos || std::atoll(target.c_str() + at + 8) < 24576)
    GTEST_SKIP() << target << " has less than 24 KiB of shared memory";
  int64_t m = 100, n = 70, k = 130;
  auto ha = test::randomVector(m * k, 5), hb = test::randomVector(k * n, 6);
  Kernel kernel =
      s.compile(matmulSource(), "matmul", {{"BM", "64"}, {"BN", "64"}, {"BK", "48"}}, "matmul.kiln");
  ASSERT_TRUE(kernel.ok()) << kernel.status().message();
  EXPECT_EQ(kernel.info()->sharedMemoryBytes, 24576);
  Tensor a = s.upload(ha, {m, k}), b = s.upload(hb, {k, n}),
         c = s.upload(std::vector<float>(m * n, NAN), {m, n});
  ASSERT_TRUE(kernel(a, b, c).ok());
  std::vector<float> got;
  ASSERT_TRUE(c.download(got).ok());
  EXPECT_TRUE(test::allClose(got, reference::matmul(ha.data(), hb.data(), m, n, k, k, 1), 1e-4,
                             1e-4));
}

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

TEST_F(DeviceAgreement, ArgMaxAndArgMinOnEveryDevice) {
  // The first index of the largest / smallest element; NaN counts as the extreme
  // (as max and min propagate it), ties go to the lowest index. Rows of 1024
  // cover the CPU's chunked reductions; the i32 kernel has no NaN. On Vulkan the
  // f32 and i32 exchanges of the 4 x 1024 tile share one 16 KiB buffer.
  const char *source = R"(
kernel arg(x: tensor<f32>[M, N], rmax: tensor<i32>[M], cmin: tensor<i32>[N],
           flat: tensor<i32>[1], kept: tensor<i32>[M])
    params(BM: i32 = 4, BN: i32 = 1024) grid(1) {
  let r = arange(0, BM);
  let c = arange(0, BN);
  let t = load(x[expand_dims(r, 1), expand_dims(c, 0)], other = -inf);
  store(rmax[r], argmax(t, axis = 1));
  store(cmin[c], argmin(t, axis = -2));
  store(flat[0], argmax(t));
  let k = argmin(t, axis = 1, keepdims = true);
  store(kept[expand_dims(r, 1)], k);
}
kernel iarg(x: tensor<i32>[N], out: tensor<i32>[2]) params(B: i32 = 64) grid(1) {
  let v = load(x[arange(0, B)], other = 0);
  store(out[0], argmax(v));
  store(out[1], argmin(v, axis = 0));
}
)";
  const int64_t m = 4, n = 1024;
  std::vector<float> x(m * n);
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> small(-50, 50);
  for (float &v : x)
    v = float(small(rng)); // many ties
  x[1 * n + 700] = NAN;    // row 1: NaN wins argmax and argmin
  x[1 * n + 900] = NAN;
  x[0 * n + 5] = 1000;     // row 0: a clear maximum
  x[0 * n + 6] = 1000;     // tied later: index 5 wins
  auto first = [&](int64_t count, auto at, bool isMax) {
    int64_t best = 0;
    for (int64_t i = 0; i < count; ++i) {
      float v = at(i), b = at(best);
      if (std::isnan(b))
        break;
      if (std::isnan(v) || (isMax ? v > b : v < b))
        best = i;
    }
    return int32_t(best);
  };
  std::vector<int32_t> xi(50);
  for (size_t i = 0; i < xi.size(); ++i)
    xi[i] = (int32_t(i) * 7919) % 61 - 30;
  forEachDevice([&](Session &s, const std::string &device) {
    Kernel k = s.compile(source, "arg"), ki = s.compile(source, "iarg");
    ASSERT_TRUE(k.ok()) << k.status().message();
    ASSERT_TRUE(ki.ok()) << ki.status().message();
    Tensor tx = s.upload(x, {m, n}), rmax = s.empty<int32_t>({m}), cmin = s.empty<int32_t>({n}),
           flat = s.empty<int32_t>({1}), kept = s.empty<int32_t>({m});
    ASSERT_TRUE(k(tx, rmax, cmin, flat, kept).ok()) << device;
    std::vector<int32_t> ro, co, fo, ko;
    ASSERT_TRUE(rmax.download(ro).ok() && cmin.download(co).ok() && flat.download(fo).ok() &&
                kept.download(ko).ok());
    for (int64_t i = 0; i < m; ++i) {
      auto row = [&](int64_t j) { return x[i * n + j]; };
      EXPECT_EQ(ro[i], first(n, row, true)) << device << " row " << i;
      EXPECT_EQ(ko[i], first(n, row, false)) << device << " row " << i;
    }
    EXPECT_EQ(ro[1], 700) << device;
    EXPECT_EQ(ro[0], 5) << device;
    for (int64_t j = 0; j < n; ++j)
      EXPECT_EQ(co[j], first(m, [&](int64_t i) { return x[i * n + j]; }, false))
          << device << " column " << j;
    EXPECT_EQ(fo[0], first(m * n, [&](int64_t e) { return x[e]; }, true)) << device;
    EXPECT_EQ(fo[0], 1 * n + 700) << device;

    Tensor ti = s.upload(xi, {int64_t(xi.size())}), out = s.empty<int32_t>({2});
    ASSERT_TRUE(ki(ti, out).ok()) << device;
    std::vector<int32_t> io;
    ASSERT_TRUE(out.download(io).ok());
    // Lanes past the 50 loaded read 0, which neither wins nor ties first.
    auto lane = [&](int64_t i) { return float(i < 50 ? xi[i] : 0); };
    EXPECT_EQ(io[0], first(64, lane, true)) << device;
    EXPECT_EQ(io[1], first(64, lane, false)) << device;
  });
}

TEST_F(DeviceAgreement, WhileLoopsOnEveryDevice) {
  // Per-lane Collatz walks until every lane of the block is done (a reduction
  // in the condition, a trip count that differs per block), a scalar loop, one
  // that never runs at run time, and whiles nested in a for with a fresh
  // variable per trip.
  const char *source = R"(
kernel loops(x: tensor<i32>[N], steps: tensor<i32>[N], out: tensor<i32>[3], n: i32)
    params(B: i32 = 64) grid(cdiv(N, B)) {
  let offs = program_id(0) * B + arange(0, B);
  var v = load(x[offs], other = 1);
  var count = zeros<i32>[B];
  while max(v) > 1 {
    let active = v > 1;
    v = where(active, where((v & 1) == 1, 3 * v + 1, v >> 1), v);
    count += cast<i32>(active);
  }
  store(steps[offs], count);
  if program_id(0) == 0 {
    var p = 1;
    while p < n {
      p *= 2;
    }
    var z = 7;
    while n < 0 {
      z = 0;
    }
    var total = 0;
    for i in range(0, 5) {
      var j = 0;
      while j < i {
        j += 1;
        total += j * 10 + i;
      }
    }
    store(out[0], p);
    store(out[1], z);
    store(out[2], total);
  }
}
)";
  const int64_t n = 1000;
  std::vector<int32_t> x(n);
  for (int64_t i = 0; i < n; ++i)
    x[i] = int32_t(i % 2 ? i : n - i); // 1000, 1, 998, 3, ...: ragged trip counts
  std::vector<int32_t> want(n);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t v = x[i]; v > 1; v = v % 2 ? 3 * v + 1 : v / 2)
      ++want[i];
  int32_t total = 0;
  for (int32_t i = 0; i < 5; ++i)
    for (int32_t j = 1; j <= i; ++j)
      total += j * 10 + i;
  forEachDevice([&](Session &s, const std::string &device) {
    Kernel k = s.compile(source, "loops");
    ASSERT_TRUE(k.ok()) << k.status().message();
    Tensor tx = s.upload(x, {n}), steps = s.empty<int32_t>({n}), out = s.empty<int32_t>({3});
    ASSERT_TRUE(k(tx, steps, out, int32_t(n)).ok()) << device;
    std::vector<int32_t> got, scalars;
    ASSERT_TRUE(steps.download(got).ok() && out.download(scalars).ok());
    EXPECT_EQ(got, want) << device;
    EXPECT_EQ(scalars, (std::vector<int32_t>{1024, 7, total})) << device;
  });
}

TEST_F(DeviceAgreement, AtomicsReturnOldValuesOnEveryDevice) {
  // Tickets: every program takes one from a scalar counter, so they are a
  // permutation of 0 .. P-1. Slots: colliding tile lanes each see a distinct
  // earlier count. Exchange returns what was there. A compare-and-swap spin
  // lock guards a read-modify-write of a whole tile by every program (and a
  // plain counter): a lost update would show in either.
  const char *source = R"(
kernel tickets(counter: tensor<i32>[1], out: tensor<i32>[P]) grid(P) {
  store(out[program_id(0)], atomic_add(counter[0], 1));
}
kernel slots(h: tensor<i64>[B], x: tensor<i32>[N], old: tensor<i64>[N])
    params(BLOCK: i32 = 128) grid(cdiv(N, BLOCK)) {
  let offs = program_id(0) * BLOCK + arange(0, BLOCK);
  store(old[offs], atomic_add(h[load(x[offs])], 1, mask = offs < N && offs % 7 != 3));
}
kernel swap(x: tensor<i32>[N], y: tensor<i32>[N]) params(BLOCK: i32 = 128) grid(cdiv(N, BLOCK)) {
  let offs = program_id(0) * BLOCK + arange(0, BLOCK);
  store(y[offs], atomic_xchg(x[offs], offs * 2));
}
kernel locked(x: tensor<f32>[N], acc: tensor<f32>[BLOCK], lock: tensor<i32>[1],
              count: tensor<i32>[1]) params(BLOCK: i32 = 64) grid(cdiv(N, BLOCK)) {
  let v = load(x[program_id(0) * BLOCK + arange(0, BLOCK)]);
  while atomic_cas(lock[0], 0, 1) == 1 {
  }
  let c = arange(0, BLOCK);
  store(acc[c], load(acc[c]) + v);
  store(count[0], load(count[0]) + 1);
  atomic_xchg(lock[0], 0);
}
)";
  const int64_t programs = 300, n = 5000, bins = 10;
  std::vector<int32_t> x(n);
  for (int64_t i = 0; i < n; ++i)
    x[i] = int32_t((i * 7919) % bins);
  std::vector<float> values(n);
  for (int64_t i = 0; i < n; ++i)
    values[i] = float(i % 61); // integers: the sums are exact in any order
  forEachDevice([&](Session &s, const std::string &device) {
    Kernel tickets = s.compile(source, "tickets"), slots = s.compile(source, "slots"),
           swap = s.compile(source, "swap"), locked = s.compile(source, "locked");
    for (Kernel *k : {&tickets, &slots, &swap, &locked})
      ASSERT_TRUE(k->ok()) << device << ": " << k->status().message();

    Tensor counter = s.upload(std::vector<int32_t>{0}, {1}),
           out = s.empty<int32_t>({programs});
    ASSERT_TRUE(tickets(counter, out).ok()) << device;
    std::vector<int32_t> got;
    ASSERT_TRUE(out.download(got).ok());
    std::sort(got.begin(), got.end());
    for (int64_t i = 0; i < programs; ++i)
      ASSERT_EQ(got[i], i) << device;

    Tensor h = s.upload(std::vector<int64_t>(bins, 100), {bins}), tx = s.upload(x, {n}),
           old = s.empty<int64_t>({n});
    ASSERT_TRUE(slots(h, tx, old).ok()) << device;
    std::vector<int64_t> olds, counts;
    ASSERT_TRUE(old.download(olds).ok() && h.download(counts).ok());
    expectEveryAddSeen<int64_t>(olds, counts, x, [](int64_t i) { return i % 7 == 3; }, 100, 1,
                                device);

    std::vector<int32_t> before(n);
    for (int64_t i = 0; i < n; ++i)
      before[i] = int32_t(i * 3 + 1);
    Tensor sx = s.upload(before, {n}), sy = s.empty<int32_t>({n});
    ASSERT_TRUE(swap(sx, sy).ok()) << device;
    std::vector<int32_t> after, returned;
    ASSERT_TRUE(sx.download(after).ok() && sy.download(returned).ok());
    EXPECT_EQ(returned, before) << device;
    for (int64_t i = 0; i < n; ++i)
      ASSERT_EQ(after[i], i * 2) << device;

    Tensor lx = s.upload(values, {n}), acc = s.upload(std::vector<float>(64, 0.0f), {64}),
           lock = s.upload(std::vector<int32_t>{0}, {1}),
           count = s.upload(std::vector<int32_t>{0}, {1});
    ASSERT_TRUE(locked(lx, acc, lock, count).ok()) << device;
    std::vector<float> sums;
    std::vector<int32_t> finalCount, finalLock;
    ASSERT_TRUE(acc.download(sums).ok() && count.download(finalCount).ok() &&
                lock.download(finalLock).ok());
    int64_t blocks = (n + 63) / 64;
    EXPECT_EQ(finalCount[0], blocks) << device;
    EXPECT_EQ(finalLock[0], 0) << device;
    for (int64_t c = 0; c < 64; ++c) {
      double want = 0;
      for (int64_t i = c; i < n; i += 64)
        want += values[i];
      ASSERT_EQ(sums[c], float(want)) << device << " column " << c;
    }
  });
}

TEST_F(DeviceAgreement, FloatExchangeAndCompareAndSwapOnEveryDevice) {
  // f32 atomic_xchg returns what each element held; atomic_cas compares bits:
  // -0.0 is not 0.0, and a NaN matches the same NaN. `count` adds 1.0 per
  // program to one float through a compare-and-swap loop under contention: a
  // lost update (a swap that succeeded on stale bits) would show in the total.
  const char *source = R"(
kernel swaps(x: tensor<f32>[N], old: tensor<f32>[N]) grid(cdiv(N, 64)) {
  let o = program_id(0) * 64 + arange(0, 64);
  store(old[o], atomic_xchg(x[o], cast<f32>(o) * 0.5, mask = o < N), mask = o < N);
}

kernel bits(x: tensor<f32>[3], seen: tensor<f32>[3]) grid(1) {
  store(seen[0], atomic_cas(x[0], 0.0, 5.0));
  store(seen[1], atomic_cas(x[1], nan, 7.0));
  store(seen[2], atomic_cas(x[2], 2.5, 9.0));
}

kernel count(total: tensor<f32>[1], tries: tensor<i32>[P]) grid(P) {
  // An atomic read: every thread of the program gets the same value (a plain
  // load of an element other programs update may differ between threads).
  var current = atomic_add(total[0], 0.0);
  var n = 1;
  while true {
    let seen = atomic_cas(total[0], current, current + 1.0);
    if seen == current {
      break;
    }
    current = seen;
    n = n + 1;
  }
  store(tries[program_id(0)], n);
}
)";
  forEachDevice([&](Session &s, const std::string &device) {
    const int64_t n = 150;
    std::vector<float> x(n);
    for (int64_t i = 0; i < n; ++i)
      x[i] = float(i) * -3.0f;
    Kernel swaps = s.compile(source, "swaps");
    ASSERT_TRUE(swaps.ok()) << swaps.status().message();
    Tensor tx = s.upload(x, {n}), old = s.empty<float>({n});
    ASSERT_TRUE(swaps(tx, old).ok()) << device;
    std::vector<float> gotX, gotOld;
    ASSERT_TRUE(tx.download(gotX).ok());
    ASSERT_TRUE(old.download(gotOld).ok());
    for (int64_t i = 0; i < n; ++i) {
      EXPECT_EQ(gotOld[i], x[i]) << device << " element " << i;
      EXPECT_EQ(gotX[i], float(i) * 0.5f) << device << " element " << i;
    }

    Kernel bits = s.compile(source, "bits");
    ASSERT_TRUE(bits.ok()) << bits.status().message();
    const float nan = std::numeric_limits<float>::quiet_NaN();
    Tensor b = s.upload(std::vector<float>{-0.0f, nan, 2.5f}, {3}), seen = s.empty<float>({3});
    ASSERT_TRUE(bits(b, seen).ok()) << device;
    std::vector<float> after, was;
    ASSERT_TRUE(b.download(after).ok());
    ASSERT_TRUE(seen.download(was).ok());
    EXPECT_TRUE(after[0] == 0.0f && std::signbit(after[0])) << device << ": -0.0 matched 0.0";
    EXPECT_TRUE(was[0] == 0.0f && std::signbit(was[0])) << device;
    EXPECT_EQ(after[1], 7.0f) << device << ": the same NaN did not match";
    EXPECT_TRUE(std::isnan(was[1])) << device;
    EXPECT_EQ(after[2], 9.0f) << device;
    EXPECT_EQ(was[2], 2.5f) << device;

    const int64_t programs = 300;
    Kernel count = s.compile(source, "count");
    ASSERT_TRUE(count.ok()) << count.status().message();
    Tensor total = s.upload(std::vector<float>{0.0f}, {1});
    Tensor tries = s.empty<int32_t>({programs});
    ASSERT_TRUE(count(total, tries).ok()) << device;
    std::vector<float> sum;
    std::vector<int32_t> attempts;
    ASSERT_TRUE(total.download(sum).ok());
    ASSERT_TRUE(tries.download(attempts).ok());
    EXPECT_EQ(sum[0], float(programs)) << device;
    EXPECT_GE(*std::min_element(attempts.begin(), attempts.end()), 1) << device;
  });
}

TEST_F(DeviceAgreement, FloatAtomicsOnEveryDevice) {
  // f32 atomics: native on the CPU, CUDA and HIP; on Vulkan the tensor is held
  // as i32 and each update is a compare-and-swap loop. Colliding lanes adding 1
  // each see a distinct earlier count (a lost update would repeat one); sums of
  // integers are exact in any order. `mixed` also loads and stores the tensor
  // that it updates atomically.
  const char *source = R"(
kernel counts(h: tensor<f32>[B], x: tensor<i32>[N], old: tensor<f32>[N])
    params(BLOCK: i32 = 128) grid(cdiv(N, BLOCK)) {
  let offs = program_id(0) * BLOCK + arange(0, BLOCK);
  store(old[offs], atomic_add(h[load(x[offs])], 1.0, mask = offs < N && offs % 5 != 2));
}
kernel totals(x: tensor<f32>[N], t: tensor<f32>[3]) params(BLOCK: i32 = 128) grid(cdiv(N, BLOCK)) {
  let offs = program_id(0) * BLOCK + arange(0, BLOCK);
  let v = load(x[offs], mask = offs < N, other = 0.0);
  atomic_add(t[0], sum(v));
  atomic_max(t[1], max(v));
  atomic_min(t[2], min(load(x[offs], mask = offs < N, other = 1e30)));
}
kernel mixed(h: tensor<f32>[M], y: tensor<f32>[K]) params(K: i32 = 64) grid(1) {
  let c = arange(0, K);
  let old = atomic_add(h[c], 1.5);
  store(y[c], load(h[c]) - old);
  store(h[c + K], old * 2.0);
}
kernel tickets(count: tensor<f32>[2], out: tensor<f32>[N]) grid(N) {
  // No tiles at all: the program's threads still share the swap loop's flags
  // and thread 0's old value through shared memory.
  store(out[program_id(0)], atomic_add(count[0], 1.0));
  atomic_max(count[1], cast<f32>(program_id(0)));
}
kernel extremes(x: tensor<f32>[N], m: tensor<f32>[4]) grid(N) {
  // Float atomic max/min propagate NaN as elementwise max/min do, whether the
  // NaN arrives or is already there (LLVM's atomicrmw fmax ignores it).
  let v = load(x[program_id(0)]);
  atomic_max(m[0], v);
  atomic_min(m[1], v);
  atomic_max(m[2], 1.0);
  atomic_min(m[3], 1.0);
}
)";
  const int64_t n = 5000, bins = 10;
  std::vector<int32_t> x(n);
  std::vector<float> values(n);
  for (int64_t i = 0; i < n; ++i) {
    x[i] = int32_t((i * 7919) % bins);
    values[i] = float((i * 37) % 101) - 50.0f;
  }
  forEachDevice([&](Session &s, const std::string &device) {
    Kernel counts = s.compile(source, "counts"), totals = s.compile(source, "totals"),
           mixed = s.compile(source, "mixed"), tickets = s.compile(source, "tickets");
    for (Kernel *k : {&counts, &totals, &mixed, &tickets})
      ASSERT_TRUE(k->ok()) << device << ": " << k->status().message();

    Tensor h = s.upload(std::vector<float>(bins, 100.0f), {bins}), tx = s.upload(x, {n}),
           old = s.empty<float>({n});
    ASSERT_TRUE(counts(h, tx, old).ok()) << device;
    std::vector<float> olds, finals;
    ASSERT_TRUE(old.download(olds).ok() && h.download(finals).ok());
    expectEveryAddSeen<float>(olds, finals, x, [](int64_t i) { return i % 5 == 2; }, 100.0f,
                              1.0f, device);

    Tensor tv = s.upload(values, {n}), t = s.upload(std::vector<float>{0.5f, -1e30f, 1e30f}, {3});
    ASSERT_TRUE(totals(tv, t).ok()) << device;
    std::vector<float> got;
    ASSERT_TRUE(t.download(got).ok());
    double sum = 0.5;
    for (float v : values)
      sum += v;
    EXPECT_EQ(got, (std::vector<float>{float(sum), 50.0f, -50.0f})) << device;

    std::vector<float> start(128);
    for (int64_t i = 0; i < 128; ++i)
      start[i] = float(i) * 0.25f;
    Tensor mh = s.upload(start, {128}), my = s.empty<float>({64});
    ASSERT_TRUE(mixed(mh, my).ok()) << device;
    std::vector<float> after, diffs;
    ASSERT_TRUE(mh.download(after).ok() && my.download(diffs).ok());
    for (int64_t i = 0; i < 64; ++i) {
      ASSERT_EQ(diffs[i], 1.5f) << device << " at " << i;
      ASSERT_EQ(after[i], start[i] + 1.5f) << device << " at " << i;
      ASSERT_EQ(after[64 + i], start[i] * 2.0f) << device << " at " << i;
    }

    const int64_t programs = 300;
    Tensor count = s.upload(std::vector<float>{0.0f, -1.0f}, {2}),
           tickets_out = s.empty<float>({programs});
    ASSERT_TRUE(tickets(count, tickets_out).ok()) << device;
    std::vector<float> counted, issued;
    ASSERT_TRUE(count.download(counted).ok() && tickets_out.download(issued).ok());
    EXPECT_EQ(counted, (std::vector<float>{float(programs), float(programs - 1)})) << device;
    std::sort(issued.begin(), issued.end());
    for (int64_t i = 0; i < programs; ++i)
      ASSERT_EQ(issued[i], float(i)) << device << ": every program gets its own ticket";

    Kernel extremes = s.compile(source, "extremes");
    ASSERT_TRUE(extremes.ok()) << device << ": " << extremes.status().message();
    const float nan = std::numeric_limits<float>::quiet_NaN();
    Tensor ex = s.upload(std::vector<float>{1.0f, nan, 3.0f, -2.0f}, {4}),
           em = s.upload(std::vector<float>{0.0f, 0.0f, nan, nan}, {4});
    ASSERT_TRUE(extremes(ex, em).ok()) << device;
    std::vector<float> m;
    ASSERT_TRUE(em.download(m).ok());
    for (int i = 0; i < 4; ++i)
      EXPECT_TRUE(std::isnan(m[i])) << device << ": element " << i << " is " << m[i];
  });
}

TEST_F(DeviceAgreement, FloatAtomicsOfEveryWidthOnEveryDevice) {
  // atomic_add, max, min, xchg and cas on f16, bf16 and f64 tensors. On the CPU,
  // CUDA and HIP they are LLVM's atomics (compare-and-swap loops where the
  // target has no such instruction); on Vulkan f64 is held as i64 and 16-bit
  // floats two to a 32-bit word, each update (and store) a compare-and-swap of
  // the word, so neighbours in `h` (an odd count: the last word is half used)
  // contend for their words as well as colliding lanes for their elements. Each
  // lane adding `step` sees a distinct earlier total (a lost update would repeat
  // one); the totals are exact in any order. `mixed` also loads and stores the
  // tensor it updates.
  const char *source = R"(
kernel counts(h: tensor<T>[B], x: tensor<i32>[N], old: tensor<f64>[N])
    params(BLOCK: i32 = 128) grid(cdiv(N, BLOCK)) {
  let offs = program_id(0) * BLOCK + arange(0, BLOCK);
  let bin = load(x[offs], mask = offs < N, other = 0);
  let was = atomic_add(h[bin], STEP, mask = offs < N && offs % 5 != 2);
  store(old[offs], cast<f64>(was), mask = offs < N);
}
kernel extremes(h: tensor<T>[8], v: tensor<f32>[N]) params(BLOCK: i32 = 64) grid(cdiv(N, BLOCK)) {
  let offs = program_id(0) * BLOCK + arange(0, BLOCK);
  let x = cast<T>(load(v[offs], mask = offs < N, other = 0.0));
  atomic_max(h[offs % 2], x, mask = offs < N);
  atomic_min(h[2 + offs % 2], x, mask = offs < N);
}
kernel mixed(h: tensor<T>[M], y: tensor<f64>[K]) params(K: i32 = 64) grid(1) {
  // Even elements are updated atomically, odd ones (their word's other half on
  // Vulkan) stored, and both loaded.
  let c = arange(0, K);
  let old = atomic_add(h[2 * c], 1.5);
  store(h[2 * c + 1], old * 2.0);
  store(y[c], cast<f64>(load(h[2 * c]) - old + load(h[2 * c + 1])));
}
kernel swaps(h: tensor<T>[8], seen: tensor<f64>[4]) grid(1) {
  store(seen[0], cast<f64>(atomic_cas(h[4], 0.0, 5.0)));
  store(seen[1], cast<f64>(atomic_cas(h[5], nan, 7.0)));
  store(seen[2], cast<f64>(atomic_cas(h[6], 2.5, 9.0)));
  store(seen[3], cast<f64>(atomic_xchg(h[7], -4.0)));
}
)";
  struct Width {
    DType dtype;
    const char *name, *step; // f64: 1 + 2^-30, which f32 cannot hold
    double stepValue;
  };
  const Width widths[] = {{DType::F16, "f16", "1.0", 1.0},
                          {DType::BF16, "bf16", "1.0", 1.0},
                          {DType::F64, "f64", "1.000000000931322574615478515625",
                           1.0 + std::ldexp(1.0, -30)}};
  auto toBits = [](DType dtype, const std::vector<double> &values) {
    std::vector<uint8_t> bytes(values.size() * dtypeBytes(dtype));
    for (size_t i = 0; i < values.size(); ++i) {
      if (dtype == DType::F64) {
        std::memcpy(&bytes[i * 8], &values[i], 8);
        continue;
      }
      uint16_t b = dtype == DType::F16 ? floatToHalfBits(float(values[i]))
                                       : floatToBF16Bits(float(values[i]));
      std::memcpy(&bytes[i * 2], &b, 2);
    }
    return bytes;
  };
  auto fromBits = [](DType dtype, const std::vector<uint8_t> &bytes) {
    std::vector<double> values(bytes.size() / dtypeBytes(dtype));
    for (size_t i = 0; i < values.size(); ++i) {
      if (dtype == DType::F64) {
        std::memcpy(&values[i], &bytes[i * 8], 8);
        continue;
      }
      uint16_t b;
      std::memcpy(&b, &bytes[i * 2], 2);
      values[i] = dtype == DType::F16 ? halfBitsToFloat(b) : bf16BitsToFloat(b);
    }
    return values;
  };
  const int64_t n = 900, bins = 7;
  std::vector<int32_t> x(n);
  std::vector<float> values(n);
  for (int64_t i = 0; i < n; ++i) {
    x[i] = int32_t((i * 7919) % bins);
    values[i] = float((i * 37) % 101) - 50.0f; // small integers: exact in bf16
  }
  const double inf = INFINITY, nan = NAN;
  forEachDevice([&](Session &s, const std::string &device) {
    for (const Width &w : widths) {
      std::string text = std::regex_replace(source, std::regex("\\bT\\b"), w.name);
      text = std::regex_replace(text, std::regex("STEP"), w.step);
      std::string where = device + " " + w.name;
      Kernel counts = s.compile(text, "counts"), extremes = s.compile(text, "extremes"),
             swaps = s.compile(text, "swaps"), mixed = s.compile(text, "mixed");
      for (Kernel *k : {&counts, &extremes, &swaps, &mixed})
        ASSERT_TRUE(k->ok()) << where << ": " << k->status().message();

      std::vector<uint8_t> zeros = toBits(w.dtype, std::vector<double>(bins, 0.0));
      Tensor h = s.upload(zeros.data(), w.dtype, {bins}), tx = s.upload(x, {n}),
             old = s.empty<double>({n});
      ASSERT_TRUE(counts(h, tx, old).ok()) << where;
      std::vector<double> olds;
      std::vector<uint8_t> finalBits(zeros.size());
      ASSERT_TRUE(old.download(olds).ok() && h.download(finalBits.data()).ok()) << where;
      expectEveryAddSeen<double>(olds, fromBits(w.dtype, finalBits), x,
                                 [](int64_t i) { return i % 5 == 2; }, 0.0, w.stepValue, where);

      std::vector<uint8_t> start = toBits(w.dtype, {-inf, -inf, inf, inf, -0.0, nan, 2.5, 1.0});
      Tensor hx = s.upload(start.data(), w.dtype, {8}), tv = s.upload(values, {n}),
             tseen = s.empty<double>({4});
      ASSERT_TRUE(extremes(hx, tv).ok()) << where;
      ASSERT_TRUE(swaps(hx, tseen).ok()) << where;
      std::vector<uint8_t> afterBits(start.size());
      std::vector<double> was;
      ASSERT_TRUE(hx.download(afterBits.data()).ok() && tseen.download(was).ok()) << where;
      std::vector<double> after = fromBits(w.dtype, afterBits);
      double most[2] = {-inf, -inf}, least[2] = {inf, inf};
      for (int64_t i = 0; i < n; ++i) {
        most[i % 2] = std::max(most[i % 2], double(values[i]));
        least[i % 2] = std::min(least[i % 2], double(values[i]));
      }
      EXPECT_EQ(after[0], most[0]) << where;
      EXPECT_EQ(after[1], most[1]) << where;
      EXPECT_EQ(after[2], least[0]) << where;
      EXPECT_EQ(after[3], least[1]) << where;
      // atomic_cas compares bits: -0.0 is not 0.0, the same NaN matches.
      EXPECT_TRUE(after[4] == 0.0 && std::signbit(after[4])) << where << ": -0.0 matched 0.0";
      EXPECT_TRUE(was[0] == 0.0 && std::signbit(was[0])) << where;
      EXPECT_EQ(after[5], 7.0) << where << ": the same NaN did not match";
      EXPECT_TRUE(std::isnan(was[1])) << where;
      EXPECT_EQ(after[6], 9.0) << where;
      EXPECT_EQ(was[2], 2.5) << where;
      EXPECT_EQ(after[7], -4.0) << where;
      EXPECT_EQ(was[3], 1.0) << where;

      std::vector<double> quarters(128);
      for (int64_t i = 0; i < 128; ++i)
        quarters[i] = double(i) * 0.25; // exact in bf16, as are the sums below
      std::vector<uint8_t> mixedBits = toBits(w.dtype, quarters);
      Tensor mh = s.upload(mixedBits.data(), w.dtype, {128}), my = s.empty<double>({64});
      ASSERT_TRUE(mixed(mh, my).ok()) << where;
      std::vector<double> sums;
      ASSERT_TRUE(mh.download(mixedBits.data()).ok() && my.download(sums).ok()) << where;
      std::vector<double> mixedAfter = fromBits(w.dtype, mixedBits);
      for (int64_t c = 0; c < 64; ++c) {
        double was = quarters[2 * c];
        ASSERT_EQ(mixedAfter[2 * c], was + 1.5) << where << " at " << 2 * c;
        ASSERT_EQ(mixedAfter[2 * c + 1], was * 2.0) << where << " at " << 2 * c + 1;
        ASSERT_EQ(sums[c], 1.5 + was * 2.0) << where << " at " << c;
      }
    }
  });
}

TEST_F(DeviceAgreement, BitwiseReductionsAndAtomicsOnEveryDevice) {
  // xor_sum along each axis and over a whole tile (Triton's tl.xor_sum), and
  // atomic_and/or/xor with colliding lanes: the final words are the and/or/xor
  // of everything each word received; an old value of `or` holds a subset of
  // the final bits, of `and` a superset.
  const char *source = R"(
kernel xors(x: tensor<i32>[M, N], r: tensor<i32>[M], c: tensor<i32>[N], t: tensor<i64>[1]) grid(1) {
  let rows = arange(0, 8);
  let cols = arange(0, 64);
  let v = load(x[rows[:, None], cols[None, :]]);
  store(r[rows], xor_sum(v, axis = 1));
  store(c[cols], xor_sum(v, axis = 0));
  store(t[0], xor_sum(cast<i64>(v) * 4294967296 + cast<i64>(v)));
}
kernel flags(h: tensor<i32>[B], x: tensor<i32>[N], ao: tensor<i32>[N], oo: tensor<i32>[N],
             g: tensor<i64>[1]) params(BLOCK: i32 = 128) grid(cdiv(N, BLOCK)) {
  let offs = program_id(0) * BLOCK + arange(0, BLOCK);
  let m = offs < N;
  let v = load(x[offs], mask = m, other = 0);
  store(ao[offs], atomic_and(h[offs % 4], v, mask = m), mask = m);
  store(oo[offs], atomic_or(h[offs % 4 + 4], v, mask = m), mask = m);
  atomic_xor(h[offs % 4 + 8], v, mask = m);
  atomic_xor(g[0], cast<i64>(xor_sum(v)) * 3);
}
)";
  std::vector<int32_t> x(8 * 64);
  uint32_t state = 12345;
  for (int32_t &v : x) {
    state = state * 1664525u + 1013904223u;
    v = int32_t(state);
  }
  const int64_t n = 3000;
  std::vector<int32_t> bits(n);
  for (int64_t i = 0; i < n; ++i) {
    state = state * 1664525u + 1013904223u;
    // Mostly-set words for `and`, sparse ones for `or`: both stay informative.
    bits[i] = int32_t(i % 2 ? state | 0x7FFF7FF0u : state & 0x01010101u);
  }
  std::vector<int32_t> start = {-1, -1, -1, -1, 0, 0, 0, 0, 7, 7, 7, 7};
  std::vector<int32_t> want = start;
  int64_t wantG = 0;
  for (int64_t i = 0; i < n; ++i) {
    want[i % 4] &= bits[i];
    want[4 + i % 4] |= bits[i];
    want[8 + i % 4] ^= bits[i];
  }
  for (int64_t p = 0; p < (n + 127) / 128; ++p) {
    int32_t block = 0;
    for (int64_t i = p * 128; i < std::min(n, p * 128 + 128); ++i)
      block ^= bits[i];
    wantG ^= int64_t(block) * 3;
  }
  forEachDevice([&](Session &s, const std::string &device) {
    Kernel xors = s.compile(source, "xors"), flags = s.compile(source, "flags");
    for (Kernel *k : {&xors, &flags})
      ASSERT_TRUE(k->ok()) << device << ": " << k->status().message();

    Tensor tx = s.upload(x, {8, 64}), r = s.empty<int32_t>({8}), c = s.empty<int32_t>({64}),
           t = s.empty<int64_t>({1});
    ASSERT_TRUE(xors(tx, r, c, t).ok()) << device;
    std::vector<int32_t> rows, cols;
    std::vector<int64_t> total;
    ASSERT_TRUE(r.download(rows).ok() && c.download(cols).ok() && t.download(total).ok());
    int64_t wantTotal = 0;
    for (int64_t i = 0; i < 8; ++i) {
      int32_t want = 0;
      for (int64_t j = 0; j < 64; ++j)
        want ^= x[i * 64 + j];
      EXPECT_EQ(rows[i], want) << device << " row " << i;
    }
    for (int64_t j = 0; j < 64; ++j) {
      int32_t want = 0;
      for (int64_t i = 0; i < 8; ++i)
        want ^= x[i * 64 + j];
      EXPECT_EQ(cols[j], want) << device << " column " << j;
    }
    for (int32_t v : x)
      wantTotal ^= int64_t(v) * 4294967296 + int64_t(v);
    EXPECT_EQ(total[0], wantTotal) << device;

    Tensor h = s.upload(start, {12}), tb = s.upload(bits, {n}), ao = s.empty<int32_t>({n}),
           oo = s.empty<int32_t>({n}), g = s.upload(std::vector<int64_t>{0}, {1});
    ASSERT_TRUE(flags(h, tb, ao, oo, g).ok()) << device;
    std::vector<int32_t> words, andOld, orOld;
    std::vector<int64_t> gs;
    ASSERT_TRUE(h.download(words).ok() && ao.download(andOld).ok() && oo.download(orOld).ok() &&
                g.download(gs).ok());
    EXPECT_EQ(words, want) << device;
    EXPECT_EQ(gs[0], wantG) << device;
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(andOld[i] & want[i % 4], want[i % 4]) << device << " and lane " << i;
      ASSERT_EQ(orOld[i] | want[4 + i % 4], want[4 + i % 4]) << device << " or lane " << i;
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

TEST_F(DeviceAgreement, GatherOnEveryDevice) {
  // Along the last axis with a wider index tile than the source, along the first
  // axis, and on a rank-1 i32 tile; indices past either end give 0.
  const char *source = R"(
kernel pick(x: tensor<f32>[M, N], idx: tensor<i32>[M, P], out: tensor<f32>[M, P],
            rows: tensor<f32>[R, N], v: tensor<i32>[N], vout: tensor<i32>[N])
    params(BM: i32 = 4, BN: i32 = 64, BP: i32 = 100, BR: i32 = 3) grid(1) {
  let r = expand_dims(arange(0, BM), 1);
  let c = expand_dims(arange(0, BN), 0);
  let p = expand_dims(arange(0, BP), 0);
  let t = load(x[r, c]);
  store(out[r, p], gather(t, load(idx[r, p]), 1));
  let which = broadcast_to(expand_dims((arange(0, BR) * 3 + 1) % 5 - 1, 1), [BR, BN]);
  store(rows[expand_dims(arange(0, BR), 1), c], gather(t, which, axis = 0));
  let lanes = arange(0, BN);
  store(vout[lanes], gather(load(v[lanes]), BN - 1 - lanes));
}
)";
  const int64_t m = 4, n = 64, p = 100, r = 3;
  std::vector<float> x(m * n);
  for (int64_t i = 0; i < m * n; ++i)
    x[i] = float(i) * 0.5f - 7.0f;
  std::vector<int32_t> idx(m * p), v(n);
  for (int64_t i = 0; i < m * p; ++i)
    idx[i] = int32_t((i * 37) % 80) - 8; // -8 .. 71: some below 0, some past 63
  for (int64_t i = 0; i < n; ++i)
    v[i] = int32_t(i * i) - 100;
  forEachDevice([&](Session &s, const std::string &device) {
    Kernel k = s.compile(source, "pick");
    ASSERT_TRUE(k.ok()) << k.status().message();
    Tensor tx = s.upload(x, {m, n}), ti = s.upload(idx, {m, p}), out = s.empty<float>({m, p}),
           rows = s.empty<float>({r, n}), tv = s.upload(v, {n}), vout = s.empty<int32_t>({n});
    ASSERT_TRUE(k(tx, ti, out, rows, tv, vout).ok()) << device;
    std::vector<float> got, gotRows;
    std::vector<int32_t> gotV;
    ASSERT_TRUE(out.download(got).ok() && rows.download(gotRows).ok() &&
                vout.download(gotV).ok());
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < p; ++j) {
        int32_t at = idx[i * p + j];
        float want = at >= 0 && at < n ? x[i * n + at] : 0.0f;
        ASSERT_EQ(got[i * p + j], want) << device << " [" << i << ", " << j << "] index " << at;
      }
    for (int64_t i = 0; i < r; ++i)
      for (int64_t j = 0; j < n; ++j) {
        int64_t at = (i * 3 + 1) % 5 - 1; // 0, 3, 1
        ASSERT_EQ(gotRows[i * n + j], at < m ? x[at * n + j] : 0.0f) << device;
      }
    for (int64_t i = 0; i < n; ++i)
      ASSERT_EQ(gotV[i], v[n - 1 - i]) << device;
  });
}

TEST_F(DeviceAgreement, SortOnEveryDevice) {
  // Rows sorted both ways (NaN last ascending, first descending, as torch.sort),
  // columns of the same tile (axis 0), and i32 extremes; ragged rows padded with
  // other = inf stay at the end. argsort is the stable order: equal keys keep
  // their positions' order, both ways.
  const char *source = R"(
kernel sort_rows(x: tensor<f32>[M, N], up: tensor<f32>[M, N], down: tensor<f32>[M, N],
                 cols: tensor<f32>[M, N], v: tensor<i32>[L], vs: tensor<i32>[L])
    params(BM: i32 = 4, BN: i32 = 32, BL: i32 = 64) grid(1) {
  let r = expand_dims(arange(0, BM), 1);
  let c = expand_dims(arange(0, BN), 0);
  let t = load(x[r, c], other = inf);
  store(up[r, c], sort(t));
  store(down[r, c], sort(t, descending = true));
  store(cols[r, c], sort(t, axis = 0));
  let lanes = arange(0, BL);
  store(vs[lanes], sort(load(v[lanes])));
}
kernel orders(x: tensor<f32>[M, N], order: tensor<i32>[M, N], rorder: tensor<i32>[M, N])
    params(BM: i32 = 2, BN: i32 = 16) grid(1) {
  let r = expand_dims(arange(0, BM), 1);
  let c = expand_dims(arange(0, BN), 0);
  let t = load(x[r, c], other = inf);
  store(order[r, c], argsort(t));
  store(rorder[r, c], argsort(t, descending = true));
}
)";
  const int64_t m = 4, n = 30, len = 64;
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> small(-20, 20);
  std::vector<float> x(m * n);
  for (float &f : x)
    f = float(small(rng)) * 0.25f; // many ties
  x[3] = NAN, x[40] = NAN, x[41] = -INFINITY, x[70] = INFINITY, x[71] = -0.0f;
  std::vector<int32_t> v(len);
  for (int64_t i = 0; i < len; ++i)
    v[i] = int32_t(uint32_t(i) * 2654435761u);
  v[5] = INT_MIN, v[6] = INT_MAX;
  auto nanLast = [](float a, float b) { return a < b || (std::isnan(b) && !std::isnan(a)); };
  auto same = [](float a, float b) { return a == b || (std::isnan(a) && std::isnan(b)); };
  // The tile is 4 x 32: lanes past column 30 hold inf.
  std::vector<std::vector<float>> rows(m), columns(n);
  for (int64_t i = 0; i < m; ++i) {
    rows[i].assign(x.begin() + i * n, x.begin() + (i + 1) * n);
    rows[i].resize(32, INFINITY);
    std::sort(rows[i].begin(), rows[i].end(), nanLast);
  }
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t i = 0; i < m; ++i)
      columns[j].push_back(x[i * n + j]);
    std::sort(columns[j].begin(), columns[j].end(), nanLast);
  }
  std::vector<int32_t> sortedV = v;
  std::sort(sortedV.begin(), sortedV.end());
  // argsort over the first 2 rows' first 16 columns (a 2 x 14 tensor, so the
  // last two positions are inf padding): the stable orders.
  const int64_t om = 2, on = 14;
  std::vector<float> ox(om * on);
  for (int64_t i = 0; i < om; ++i)
    for (int64_t j = 0; j < on; ++j)
      ox[i * on + j] = x[i * n + j];
  std::vector<std::vector<int32_t>> order(om), rorder(om);
  for (int64_t i = 0; i < om; ++i) {
    auto key = [&](int32_t j) { return j < on ? ox[i * on + j] : INFINITY; };
    order[i].resize(16);
    std::iota(order[i].begin(), order[i].end(), 0);
    rorder[i] = order[i];
    std::stable_sort(order[i].begin(), order[i].end(),
                     [&](int32_t a, int32_t b) { return nanLast(key(a), key(b)); });
    std::stable_sort(rorder[i].begin(), rorder[i].end(),
                     [&](int32_t a, int32_t b) { return nanLast(key(b), key(a)); });
  }
  forEachDevice([&](Session &s, const std::string &device) {
    Kernel k = s.compile(source, "sort_rows");
    ASSERT_TRUE(k.ok()) << k.status().message();
    Tensor tx = s.upload(x, {m, n}), up = s.empty<float>({m, n}), down = s.empty<float>({m, n}),
           cols = s.empty<float>({m, n}), tv = s.upload(v, {len}), vs = s.empty<int32_t>({len});
    ASSERT_TRUE(k(tx, up, down, cols, tv, vs).ok()) << device;
    std::vector<float> gotUp, gotDown, gotCols;
    std::vector<int32_t> gotV;
    ASSERT_TRUE(up.download(gotUp).ok() && down.download(gotDown).ok() &&
                cols.download(gotCols).ok() && vs.download(gotV).ok());
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        ASSERT_TRUE(same(gotUp[i * n + j], rows[i][j]))
            << device << " ascending [" << i << ", " << j << "]: " << gotUp[i * n + j];
        // Descending: the 32-wide row reversed, whose first 2 are the inf padding.
        ASSERT_TRUE(same(gotDown[i * n + j], rows[i][31 - j]))
            << device << " descending [" << i << ", " << j << "]: " << gotDown[i * n + j];
        ASSERT_TRUE(same(gotCols[i * n + j], columns[j][i]))
            << device << " column [" << i << ", " << j << "]: " << gotCols[i * n + j];
      }
    EXPECT_EQ(gotV, sortedV) << device;
    Kernel ko = s.compile(source, "orders");
    ASSERT_TRUE(ko.ok()) << ko.status().message();
    Tensor tox = s.upload(ox, {om, on}), to = s.empty<int32_t>({om, on}),
           tro = s.empty<int32_t>({om, on});
    ASSERT_TRUE(ko(tox, to, tro).ok()) << device;
    std::vector<int32_t> gotOrder, gotROrder;
    ASSERT_TRUE(to.download(gotOrder).ok() && tro.download(gotROrder).ok());
    for (int64_t i = 0; i < om; ++i)
      for (int64_t j = 0; j < on; ++j) {
        ASSERT_EQ(gotOrder[i * on + j], order[i][j]) << device << " argsort row " << i;
        ASSERT_EQ(gotROrder[i * on + j], rorder[i][j]) << device << " descending row " << i;
      }
  });
}

TEST_F(DeviceAgreement, MaxMinReturnIndicesOnEveryDevice) {
  // max/min(x, axis, return_indices = true) give Triton's (values, indices):
  // the extreme of each row and the first position holding it (ties included).
  const char *source = R"(
kernel k(x: tensor<i32>[4, 16], out: tensor<i32>[4, 4]) grid(1) {
  let r = arange(0, 4);
  let v = load(x[r[:, None], arange(0, 16)[None, :]]);
  let (hi, at_hi) = max(v, axis = 1, return_indices = true);
  let (lo, at_lo) = min(v, axis = 1, return_indices = true);
  store(out[r, 0], hi);
  store(out[r, 1], at_hi);
  store(out[r, 2], lo);
  store(out[r, 3], at_lo);
}
)";
  std::vector<int32_t> x(64);
  std::mt19937 rng(4);
  for (int32_t &v : x)
    v = static_cast<int32_t>(rng() % 7); // many ties
  std::vector<int32_t> want(16);
  for (int i = 0; i < 4; ++i) {
    auto row = x.begin() + i * 16;
    auto hi = std::max_element(row, row + 16), lo = std::min_element(row, row + 16);
    want[i * 4 + 0] = *hi, want[i * 4 + 1] = static_cast<int32_t>(hi - row);
    want[i * 4 + 2] = *lo, want[i * 4 + 3] = static_cast<int32_t>(lo - row);
  }
  forEachDevice([&](Session &s, const std::string &device) {
    Kernel k = s.compile(source, "k");
    ASSERT_TRUE(k.ok()) << k.status().message();
    Tensor tx = s.upload(x, {4, 16}), out = s.empty<int32_t>({4, 4});
    ASSERT_TRUE(k(tx, out).ok()) << device;
    std::vector<int32_t> got;
    ASSERT_TRUE(out.download(got).ok());
    EXPECT_EQ(got, want) << device;
  });
}

TEST_F(DeviceAgreement, NewAxisIndexingOnEveryDevice) {
  // Triton's pointer-grid idiom, x[rm[:, None], rn[None, :]], reads a 12 x 20
  // block (edges masked by the bounds) and writes it transposed.
  const char *source = R"(
kernel t(x: tensor<f32>[M, N], y: tensor<f32>[N, M]) grid(1) {
  let rm = arange(0, 16);
  let rn = arange(0, 32);
  let v = load(x[rm[:, None], rn[None, :]]);
  store(y[rn[None, :], rm[:, None]], v);
}
)";
  const int64_t m = 12, n = 20;
  std::vector<float> x(m * n);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = static_cast<float>(i);
  forEachDevice([&](Session &s, const std::string &device) {
    Kernel k = s.compile(source, "t");
    ASSERT_TRUE(k.ok()) << k.status().message();
    Tensor tx = s.upload(x, {m, n}), ty = s.empty<float>({n, m});
    ASSERT_TRUE(k(tx, ty).ok()) << device;
    std::vector<float> got;
    ASSERT_TRUE(ty.download(got).ok());
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j)
        EXPECT_EQ(got[j * m + i], x[i * n + j]) << device << " at (" << i << ", " << j << ")";
  });
}

TEST_F(DeviceAgreement, ReverseScansOnEveryDevice) {
  // cumsum/cumprod/cummax/cummin with reverse = true run from the end of the
  // axis: out[i] combines x[i], x[i + 1], ..., along rows and down columns of a
  // 4 x 16 tile of small integers (exact in every order).
  const char *source = R"(
kernel k(x: tensor<i32>[4, 16], rows: tensor<i32>[4, 4, 16], cols: tensor<i32>[4, 4, 16])
    grid(1) {
  let r = expand_dims(arange(0, 4), 1);
  let c = expand_dims(arange(0, 16), 0);
  let v = load(x[r, c]);
  store(rows[0, r, c], cumsum(v, axis = 1, reverse = true));
  store(rows[1, r, c], cumprod(v, axis = 1, reverse = true));
  store(rows[2, r, c], cummax(v, axis = 1, reverse = true));
  store(rows[3, r, c], cummin(v, axis = 1, reverse = true));
  store(cols[0, r, c], cumsum(v, axis = 0, reverse = true));
  store(cols[1, r, c], cumprod(v, axis = 0, reverse = true));
  store(cols[2, r, c], cummax(v, axis = 0, reverse = true));
  store(cols[3, r, c], cummin(v, axis = 0, reverse = true));
}
)";
  std::vector<int32_t> x(64);
  std::mt19937 rng(9);
  for (int32_t &v : x)
    v = static_cast<int32_t>(rng() % 5) - 2; // products of up to 16 stay in i32
  auto combine = [](int k, int64_t a, int64_t b) {
    return k == 0 ? a + b : k == 1 ? a * b : k == 2 ? std::max(a, b) : std::min(a, b);
  };
  std::vector<int32_t> wantRows(4 * 64), wantCols(4 * 64);
  for (int k = 0; k < 4; ++k)
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 16; ++j) {
        int64_t acc = x[i * 16 + j];
        for (int t = j + 1; t < 16; ++t)
          acc = combine(k, acc, x[i * 16 + t]);
        wantRows[k * 64 + i * 16 + j] = static_cast<int32_t>(acc);
        acc = x[i * 16 + j];
        for (int t = i + 1; t < 4; ++t)
          acc = combine(k, acc, x[t * 16 + j]);
        wantCols[k * 64 + i * 16 + j] = static_cast<int32_t>(acc);
      }
  forEachDevice([&](Session &s, const std::string &device) {
    Kernel k = s.compile(source, "k");
    ASSERT_TRUE(k.ok()) << k.status().message();
    Tensor tx = s.upload(x, {4, 16}), rows = s.empty<int32_t>({4, 4, 16}),
           cols = s.empty<int32_t>({4, 4, 16});
    ASSERT_TRUE(k(tx, rows, cols).ok()) << device;
    std::vector<int32_t> gotRows, gotCols;
    ASSERT_TRUE(rows.download(gotRows).ok() && cols.download(gotCols).ok());
    EXPECT_EQ(gotRows, wantRows) << device << ": along rows";
    EXPECT_EQ(gotCols, wantCols) << device << ": down columns";
  });
}

TEST_F(DeviceAgreement, CustomReductionsAndScansOnEveryDevice) {
  // reduce and associative_scan with combine functions: an argmax over (value,
  // index) pairs along a ragged axis of 24, "last non-zero" down the columns (it
  // does not commute, so the order must hold), a first-order linear recurrence
  // h = a h + b scanned forwards and backwards (JAX's reverse), an "any" over
  // bools to a scalar, and a max over every element of a 2-D tile.
  const char *source = R"(
fn argmax_pair(v1, i1, v2, i2) {
  let second = v2 > v1 || (v2 == v1 && i2 < i1);
  return (where(second, v2, v1), where(second, i2, i1));
}
fn last_nonzero(a, b) { return where(b != 0, b, a); }
fn recurrence(a1, b1, a2, b2) { return (a1 * a2, b1 * a2 + b2); }
fn any(p, q) { return p || q; }
fn imax(a, b) { return max(a, b); }
kernel reductions(x: tensor<f32>[M, N], best: tensor<f32>[M], at: tensor<i32>[M],
                  z: tensor<i32>[M, N], last: tensor<i32>[1, N], flags: tensor<i32>[2])
    params(BM: i32 = 5, BN: i32 = 24) grid(1) {
  let rows = arange(0, BM);
  let r = expand_dims(rows, 1);
  let c = expand_dims(arange(0, BN), 0);
  let (m, i) = reduce((load(x[r, c]), broadcast_to(c, [BM, BN])), 1, argmax_pair);
  store(best[rows], m);
  store(at[rows], i);
  let zt = load(z[r, c]);
  store(last[expand_dims(arange(0, 1), 1), c],
        reduce(zt, axis = 0, combine = last_nonzero, keepdims = true));
  let pick = arange(0, 2);
  let found = cast<i32>(reduce(zt == 7, axis = 1, combine = any));
  store(flags[pick], where(pick == 0, reduce(found, combine = imax), reduce(zt, combine = imax)));
}
kernel scans(a: tensor<f32>[M, N], b: tensor<f32>[M, N], h: tensor<f32>[M, N],
             hr: tensor<f32>[M, N]) params(BM: i32 = 5, BN: i32 = 24) grid(1) {
  let r = expand_dims(arange(0, BM), 1);
  let c = expand_dims(arange(0, BN), 0);
  let (ta, tb) = (load(a[r, c]), load(b[r, c]));
  let (pa, fwd) = associative_scan((ta, tb), 1, recurrence);
  let (ra, back) = associative_scan((ta, tb), axis = 1, combine = recurrence, reverse = true);
  store(h[r, c], fwd);
  store(hr[r, c], back);
}
)";
  const int64_t m = 5, n = 24;
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> small(-6, 6);
  std::uniform_real_distribution<float> decay(0.5f, 1.0f);
  std::vector<float> x(m * n), a(m * n), b(m * n);
  std::vector<int32_t> z(m * n);
  for (int64_t i = 0; i < m * n; ++i) {
    x[i] = float(small(rng)); // ties: the first index must win
    z[i] = small(rng) % 3 == 0 ? 0 : small(rng);
    a[i] = decay(rng), b[i] = float(small(rng)) * 0.25f;
  }
  x[2 * n + 17] = 100.0f, z[3 * n + 5] = 7;
  for (int64_t i = 0; i < m; ++i) // a zero at the bottom of column i
    z[(m - 1) * n + i] = 0;
  forEachDevice([&](Session &s, const std::string &device) {
    Kernel reductions = s.compile(source, "reductions"), scans = s.compile(source, "scans");
    ASSERT_TRUE(reductions.ok()) << reductions.status().message();
    ASSERT_TRUE(scans.ok()) << scans.status().message();
    Tensor tx = s.upload(x, {m, n}), best = s.empty<float>({m}), at = s.empty<int32_t>({m}),
           tz = s.upload(z, {m, n}), last = s.empty<int32_t>({1, n}), ta = s.upload(a, {m, n}),
           tb = s.upload(b, {m, n}), h = s.empty<float>({m, n}), hr = s.empty<float>({m, n}),
           flags = s.empty<int32_t>({2});
    ASSERT_TRUE(reductions(tx, best, at, tz, last, flags).ok()) << device;
    ASSERT_TRUE(scans(ta, tb, h, hr).ok()) << device;
    std::vector<float> gotBest, gotH, gotHr;
    std::vector<int32_t> gotAt, gotLast, gotFlags;
    ASSERT_TRUE(best.download(gotBest).ok() && at.download(gotAt).ok() &&
                last.download(gotLast).ok() && h.download(gotH).ok() &&
                hr.download(gotHr).ok() && flags.download(gotFlags).ok());
    for (int64_t i = 0; i < m; ++i) {
      auto row = x.begin() + i * n;
      auto top = std::max_element(row, row + n); // the first largest
      EXPECT_EQ(gotBest[i], *top) << device << " row " << i;
      EXPECT_EQ(gotAt[i], top - row) << device << " row " << i;
    }
    for (int64_t j = 0; j < n; ++j) {
      int32_t want = 0;
      for (int64_t i = 0; i < m; ++i)
        want = z[i * n + j] != 0 ? z[i * n + j] : want;
      EXPECT_EQ(gotLast[j], want) << device << " column " << j;
    }
    std::vector<double> wantH(m * n), wantHr(m * n);
    for (int64_t i = 0; i < m; ++i) {
      double fwd = 0, back = 0;
      for (int64_t j = 0; j < n; ++j)
        wantH[i * n + j] = fwd = a[i * n + j] * fwd + b[i * n + j];
      for (int64_t j = n - 1; j >= 0; --j)
        wantHr[i * n + j] = back = a[i * n + j] * back + b[i * n + j];
    }
    EXPECT_TRUE(test::allClose(gotH, wantH, 1e-5, 1e-5)) << device;
    EXPECT_TRUE(test::allClose(gotHr, wantHr, 1e-5, 1e-5)) << device;
    EXPECT_EQ(gotFlags[0], 1) << device;
    EXPECT_EQ(gotFlags[1], *std::max_element(z.begin(), z.end())) << device;
  });
}

TEST_F(DeviceAgreement, TuplesOnEveryDevice) {
  // A helper returning a tuple carries an online-softmax state (running max and
  // rescaled sum) through a loop by tuple assignment; (a, b) = (b, a) swaps,
  // because the whole right side is computed before any variable changes.
  const char *source = R"(
fn step(m, l, x) {
  let m2 = max(m, x);
  return (m2, l * exp(m - m2) + exp(x - m2));
}
kernel k(x: tensor<f32>[N], out: tensor<f32>[2]) grid(1) {
  var (m, l) = (-inf, 0.0);
  var a = 1;
  var b = 2;
  for i in range(0, N) {
    (m, l) = step(m, l, load(x[i]));
    (a, b) = (b, a);
  }
  let o = arange(0, 2);
  store(out[o], where(o == 0, m, l + cast<f32>(a * 10)));
}
)";
  std::vector<float> x = {0.5f, -3.0f, 2.25f, 1.0f, 2.0f};
  double m = *std::max_element(x.begin(), x.end()), l = 0;
  for (float v : x)
    l += std::exp(double(v) - m);
  forEachDevice([&](Session &s, const std::string &device) {
    Kernel k = s.compile(source, "k");
    ASSERT_TRUE(k.ok()) << k.status().message();
    Tensor tx = s.upload(x, {5}), out = s.empty<float>({2});
    ASSERT_TRUE(k(tx, out).ok()) << device;
    std::vector<float> got;
    ASSERT_TRUE(out.download(got).ok());
    EXPECT_EQ(got[0], 2.25f) << device;
    EXPECT_NEAR(got[1], l + 20.0, 1e-5) << device; // five swaps leave a = 2
  });
}

TEST_F(DeviceAgreement, JoinSplitInterleaveCatOnEveryDevice) {
  // join stacks two tiles along a new last dimension, interleave alternates
  // their elements, split takes the pairs apart again (into a tuple), and cat
  // concatenates along an axis (a 1 x 8 and a 2 x 8 tile; two rank-1 tiles).
  const char *source = R"(
kernel k(x: tensor<f32>[N], y: tensor<f32>[N], j: tensor<f32>[N, 2], il: tensor<f32>[L],
         c: tensor<f32>[3, N], s: tensor<f32>[N], cc: tensor<f32>[L]) grid(1) {
  let o = arange(0, 8);
  let a = load(x[o]);
  let b = load(y[o]);
  let jt = join(a, b);
  store(j[expand_dims(o, 1), expand_dims(arange(0, 2), 0)], jt);
  store(il[arange(0, 16)], interleave(a, b));
  let ct = cat(expand_dims(a, 0), broadcast_to(expand_dims(b * 2.0, 0), [2, 8]));
  store(c[expand_dims(arange(0, 3), 1), expand_dims(o, 0)], ct);
  let (p, q) = split(jt);
  let (u, w) = split(join(q, 1.5));
  store(s[o], p * 100.0 + u * 10.0 + w);
  store(cc[arange(0, 16)], cat(b, a, axis = 0));
}
)";
  const int64_t n = 8;
  std::vector<float> x(n), y(n);
  for (int64_t i = 0; i < n; ++i)
    x[i] = float(i) + 0.25f, y[i] = -float(i) * 3.0f;
  forEachDevice([&](Session &s, const std::string &device) {
    Kernel k = s.compile(source, "k");
    ASSERT_TRUE(k.ok()) << k.status().message();
    Tensor tx = s.upload(x, {n}), ty = s.upload(y, {n}), j = s.empty<float>({n, 2}),
           il = s.empty<float>({2 * n}), c = s.empty<float>({3, n}), sp = s.empty<float>({n}),
           cc = s.empty<float>({2 * n});
    ASSERT_TRUE(k(tx, ty, j, il, c, sp, cc).ok()) << device;
    std::vector<float> gotJ, gotIl, gotC, gotS, gotCc;
    ASSERT_TRUE(j.download(gotJ).ok() && il.download(gotIl).ok() && c.download(gotC).ok() &&
                sp.download(gotS).ok() && cc.download(gotCc).ok());
    for (int64_t i = 0; i < n; ++i) {
      EXPECT_EQ(gotJ[2 * i], x[i]) << device << " join " << i;
      EXPECT_EQ(gotJ[2 * i + 1], y[i]) << device << " join " << i;
      EXPECT_EQ(gotIl[2 * i], x[i]) << device << " interleave " << i;
      EXPECT_EQ(gotIl[2 * i + 1], y[i]) << device << " interleave " << i;
      EXPECT_EQ(gotC[i], x[i]) << device << " cat row 0, " << i;
      EXPECT_EQ(gotC[n + i], y[i] * 2.0f) << device << " cat row 1, " << i;
      EXPECT_EQ(gotC[2 * n + i], y[i] * 2.0f) << device << " cat row 2, " << i;
      EXPECT_EQ(gotS[i], x[i] * 100.0f + y[i] * 10.0f + 1.5f) << device << " split " << i;
      EXPECT_EQ(gotCc[i], y[i]) << device << " cat " << i;
      EXPECT_EQ(gotCc[n + i], x[i]) << device << " cat " << n + i;
    }
  });
}

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
  const char *source = R"(
kernel k(x: tensor<f32>[N], out: tensor<f32>[5, N]) params(B: i32 = 16) grid(cdiv(N, B)) {
  let o = program_id(0) * B + arange(0, B);
  let v = load(x[o], mask = o < N);
  store(out[0, o], tanh(v), mask = o < N);
  store(out[1, o], sinh(v), mask = o < N);
  store(out[2, o], log(v), mask = o < N);
  store(out[3, o], log2(v), mask = o < N);
  store(out[4, o], cbrt(v), mask = o < N);
}
)";
  std::vector<float> x = {1e-30f, 1e-10f, -1e-6f, 3e-4f, -0.01f, 0.3f, 0.75f,
                          0.99999988f, 1.0000001f, 1.5f, 1e-40f, 5e-39f, 0x1p-140f, 20.0f,
                          88.5f, -89.2f};
  const int64_t n = x.size();
  std::vector<std::function<double(double)>> fns = {
      [](double a) { return std::tanh(a); }, [](double a) { return std::sinh(a); },
      [](double a) { return std::log(a); },  [](double a) { return std::log2(a); },
      [](double a) { return std::cbrt(a); }};
  forEachDevice([&](Session &s, const std::string &device) {
    Kernel k = s.compile(source, "k");
    ASSERT_TRUE(k.ok()) << k.status().message();
    Tensor tx = s.upload(x, {n}), out = s.empty<float>({5, n});
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
      {"acosh(A)", [](L a, L) { return acoshl(a); }, 2.5, 1, 5},
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
                                       kClosestToHalfPiMultiple, 1.7976931348623157e308};
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
      {"acosh(A)", [](L a, L) { return acoshl(a); }, 3, 1, 5},
      {"atanh(A)", [](L a, L) { return atanhl(a); }, 3, -1, 1},
      {"cbrt(A)", [](L a, L) { return cbrtl(a); }, 2, -8, 8},
      {"erf(A)", [](L a, L) { return erfl(a); }, 3.5, -4, 4},
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
                                      0.99999988f, 1.0000001f, 16777215.0f};
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

TEST_F(DeviceAgreement, Swizzle2dGroupsRowsOnEveryDevice) {
  // Program (i, j) of an ni x nj grid writes its row-major number at its
  // swizzled position: the positions must be Triton's (a permutation that walks
  // each group of g rows column by column, the last group shorter).
  const char *source = R"(
kernel order(out: tensor<i32>[NI, NJ]) params(G: i32 = 3) grid(NI, NJ) {
  let (i, j) = swizzle2d(program_id(0), program_id(1), NI, NJ, G);
  store(out[i, j], program_id(0) * NJ + program_id(1));
}
)";
  auto swizzled = [](int64_t i, int64_t j, int64_t ni, int64_t nj, int64_t g) {
    int64_t ij = i * nj + j, group = ij / (g * nj), first = group * g;
    int64_t rows = std::min(ni - first, g), within = ij % (g * nj);
    return std::pair{first + within % rows, within / rows};
  };
  forEachDevice([&](Session &s, const std::string &device) {
    for (auto [ni, nj, g] : {std::array<int64_t, 3>{7, 4, 3}, {8, 5, 4}, {1, 6, 3}, {5, 1, 8}}) {
      Kernel k = s.compile(source, "order", {{"G", std::to_string(g)}});
      ASSERT_TRUE(k.ok()) << k.status().message();
      Tensor out = s.upload(std::vector<int32_t>(ni * nj, -1), {ni, nj});
      ASSERT_TRUE(k(out).ok()) << device;
      std::vector<int32_t> got;
      ASSERT_TRUE(out.download(got).ok());
      std::vector<int32_t> want(ni * nj, -1);
      for (int64_t i = 0; i < ni; ++i)
        for (int64_t j = 0; j < nj; ++j) {
          auto [si, sj] = swizzled(i, j, ni, nj, g);
          want[si * nj + sj] = static_cast<int32_t>(i * nj + j);
        }
      EXPECT_EQ(got, want) << device << " " << ni << " x " << nj << " groups of " << g;
      EXPECT_EQ(std::count(want.begin(), want.end(), -1), 0) << "not a permutation";
    }
  });
}

TEST_F(DeviceAgreement, FlipRavelHistogramOnEveryDevice) {
  // flip along each axis of a 3 x 8 tile, ravel it, and count i32 values in 5
  // bins (values below 0 or past 4 are not counted).
  const char *source = R"(
kernel k(x: tensor<f32>[3, N], rows: tensor<f32>[3, N], cols: tensor<f32>[3, N],
         flat: tensor<f32>[L], v: tensor<i32>[M], counts: tensor<i32>[B]) grid(1) {
  let r = expand_dims(arange(0, 3), 1);
  let c = expand_dims(arange(0, 8), 0);
  let t = load(x[r, c]);
  store(rows[r, c], flip(t, 0));
  store(cols[r, c], flip(t));
  store(flat[arange(0, 24)], ravel(t));
  store(counts[arange(0, 5)], histogram(load(v[arange(0, 64)]), 5));
}
)";
  const int64_t n = 8, m = 64;
  std::vector<float> x(3 * n);
  for (int64_t i = 0; i < 3 * n; ++i)
    x[i] = float(i) * 1.5f - 4.0f;
  std::vector<int32_t> v(m), want(5, 0);
  for (int64_t i = 0; i < m; ++i) {
    v[i] = int32_t((i * 7) % 9) - 2; // -2 .. 6
    if (v[i] >= 0 && v[i] < 5)
      ++want[v[i]];
  }
  forEachDevice([&](Session &s, const std::string &device) {
    Kernel k = s.compile(source, "k");
    ASSERT_TRUE(k.ok()) << k.status().message();
    Tensor tx = s.upload(x, {3, n}), rows = s.empty<float>({3, n}), cols = s.empty<float>({3, n}),
           flat = s.empty<float>({3 * n}), tv = s.upload(v, {m}), counts = s.empty<int32_t>({5});
    ASSERT_TRUE(k(tx, rows, cols, flat, tv, counts).ok()) << device;
    std::vector<float> gotRows, gotCols, gotFlat;
    std::vector<int32_t> gotCounts;
    ASSERT_TRUE(rows.download(gotRows).ok() && cols.download(gotCols).ok() &&
                flat.download(gotFlat).ok() && counts.download(gotCounts).ok());
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t j = 0; j < n; ++j) {
        EXPECT_EQ(gotRows[i * n + j], x[(2 - i) * n + j]) << device << " flip 0";
        EXPECT_EQ(gotCols[i * n + j], x[i * n + n - 1 - j]) << device << " flip 1";
      }
    EXPECT_EQ(gotFlat, x) << device;
    EXPECT_EQ(gotCounts, want) << device;
  });
}

TEST_F(DeviceAgreement, KernelsReturnEarlyOnEveryDevice) {
  // `if pid * B >= N { return; }` guards the programs past the end (the grid
  // has two extra); a compile-time `if` returns nothing; a nested return skips
  // the final store of program 1 after its own store; a var assigned in
  // branches reaches the store after them.
  const char *source = R"(
kernel k(x: tensor<f32>[N], y: tensor<f32>[N]) params(B: i32 = 4, SKIP: i1 = false)
    grid(cdiv(N, B) + 2) {
  let pid = program_id(0);
  if pid * B >= N {
    return;
  }
  if SKIP {
    return;
  }
  let o = pid * B + arange(0, B);
  var v = load(x[o]);
  if pid == 1 {
    v = v * 10.0;
    if pid > 0 {
      store(y[o], v + 1.0);
      return;
    }
  } else {
    v = v + 100.0;
  }
  store(y[o], v);
}
)";
  const int64_t n = 12;
  std::vector<float> x(n);
  for (int64_t i = 0; i < n; ++i)
    x[i] = float(i);
  forEachDevice([&](Session &s, const std::string &device) {
    for (const char *skip : {"false", "true"}) {
      Kernel k = s.compile(source, "k", {{"SKIP", skip}});
      ASSERT_TRUE(k.ok()) << k.status().message();
      Tensor tx = s.upload(x, {n}), y = s.upload(std::vector<float>(n, -1.0f), {n});
      ASSERT_TRUE(k(tx, y).ok()) << device;
      std::vector<float> got;
      ASSERT_TRUE(y.download(got).ok());
      for (int64_t i = 0; i < n; ++i) {
        float want = skip[0] == 't' ? -1.0f : i / 4 == 1 ? x[i] * 10.0f + 1.0f : x[i] + 100.0f;
        EXPECT_EQ(got[i], want) << device << " SKIP=" << skip << " element " << i;
      }
    }
  });
}

TEST_F(DeviceAgreement, GridsPastTheWorkgroupLimitOnEveryDevice) {
  // Vulkan devices may count workgroups only to 65535 per axis (lavapipe
  // does): a wider grid runs as several dispatches, and program_id and
  // num_programs still give the whole grid's coordinates. `ids` takes three
  // dispatches along x (the last partial), `ids3` two along y.
  const char *source = R"(
kernel ids(out: tensor<i32>[N], counts: tensor<i32>[N]) grid(N) {
  let pid = program_id(0);
  store(out[pid], pid);
  store(counts[pid], num_programs(0));
}

kernel ids3(out: tensor<i32>[Z, Y, X], counts: tensor<i32>[Z, Y, X]) grid(X, Y, Z) {
  let x = program_id(0);
  let y = program_id(1);
  let z = program_id(2);
  store(out[z, y, x], (z * num_programs(1) + y) * num_programs(0) + x);
  store(counts[z, y, x], num_programs(0) * 1000000 + num_programs(1) * 10 + num_programs(2));
}
)";
  forEachDevice([&](Session &s, const std::string &device) {
    const int64_t n = 2 * 65535 + 1234;
    Kernel ids = s.compile(source, "ids");
    ASSERT_TRUE(ids.ok()) << ids.status().message();
    Tensor out = s.upload(std::vector<int32_t>(n, -1), {n});
    Tensor counts = s.upload(std::vector<int32_t>(n, -1), {n});
    ASSERT_TRUE(ids(out, counts).ok()) << device;
    std::vector<int32_t> got, gotCounts;
    ASSERT_TRUE(out.download(got).ok());
    ASSERT_TRUE(counts.download(gotCounts).ok());
    int64_t wrong = 0;
    for (int64_t i = 0; i < n; ++i)
      if (got[i] != i || gotCounts[i] != n) {
        if (++wrong <= 3)
          ADD_FAILURE() << device << " ids: program " << i << " saw id " << got[i]
                        << " and num_programs " << gotCounts[i];
      }
    EXPECT_EQ(wrong, 0) << device;

    const int64_t x = 3, y = 65535 + 17, z = 2;
    Kernel ids3 = s.compile(source, "ids3");
    ASSERT_TRUE(ids3.ok()) << ids3.status().message();
    Tensor out3 = s.upload(std::vector<int32_t>(x * y * z, -1), {z, y, x});
    Tensor counts3 = s.upload(std::vector<int32_t>(x * y * z, -1), {z, y, x});
    ASSERT_TRUE(ids3(out3, counts3).ok()) << device;
    ASSERT_TRUE(out3.download(got).ok());
    ASSERT_TRUE(counts3.download(gotCounts).ok());
    wrong = 0;
    const int32_t wantCount = int32_t(x * 1000000 + y * 10 + z);
    for (int64_t i = 0; i < x * y * z; ++i)
      if (got[i] != i || gotCounts[i] != wantCount) {
        if (++wrong <= 3)
          ADD_FAILURE() << device << " ids3: program " << i << " saw flat id " << got[i]
                        << " and counts " << gotCounts[i];
      }
    EXPECT_EQ(wrong, 0) << device;
  });
}

TEST_F(DeviceAgreement, BreakAndContinueOnEveryDevice) {
  // The first negative element's index (break), the sum of the others
  // (continue), `while true` left by a break, and a break in a nested loop that
  // leaves only the inner one.
  const char *source = R"(
kernel k(x: tensor<i32>[N], out: tensor<i32>[4]) grid(1) {
  // first index i with x[i] < 0 (or N), by a for loop with break
  var first = N;
  for i in range(0, N) {
    if load(x[i]) < 0 {
      first = i;
      break;
    }
  }
  // sum of the non-negative elements, skipping negatives with continue
  var total = 0;
  for i in range(0, N) {
    let v = load(x[i]);
    if v < 0 {
      continue;
    }
    total += v;
  }
  // while true with break: count how many doublings of 1 stay below 1000
  var n = 0;
  var p = 1;
  while true {
    p = p * 2;
    if p >= 1000 {
      break;
    }
    n += 1;
  }
  // nested: break only leaves the inner loop
  var pairs = 0;
  for a in range(0, 4) {
    for b in range(0, 4) {
      if b > a {
        break;
      }
      pairs += 1;
    }
  }
  let o = arange(0, 4);
  store(out[o], where(o == 0, first, where(o == 1, total, where(o == 2, n, pairs))));
}
)";
  std::vector<int32_t> x = {3, 5, 0, 7, -2, 4, -9, 6};
  const int64_t n = int64_t(x.size());
  forEachDevice([&](Session &s, const std::string &device) {
    Kernel k = s.compile(source, "k");
    ASSERT_TRUE(k.ok()) << k.status().message();
    for (bool negatives : {true, false}) {
      std::vector<int32_t> in = x;
      if (!negatives)
        for (int32_t &v : in)
          v = std::abs(v);
      Tensor tx = s.upload(in, {n}), out = s.empty<int32_t>({4});
      ASSERT_TRUE(k(tx, out).ok()) << device;
      std::vector<int32_t> got;
      ASSERT_TRUE(out.download(got).ok());
      int32_t total = 0;
      for (int32_t v : in)
        total += v < 0 ? 0 : v;
      std::vector<int32_t> want = {negatives ? 4 : int32_t(n), total, 9, 10};
      EXPECT_EQ(got, want) << device << (negatives ? " with negatives" : " without");
    }
  });
}

TEST_F(DeviceAgreement, RunTimeLoopStepsOnEveryDevice) {
  // range(start, end, step) with a step known only at launch: the trips and the
  // loop variable's sum, a tile carried through the loop, and a loop that may
  // break (which becomes a while loop). A step below 1 runs no trips; one past
  // the range runs one trip without stepping past 2^31 - 1.
  const char *source = R"(
kernel k(x: tensor<i32>[N], out: tensor<i32>[4], start: i32, step: i32) grid(1) {
  var trips = 0;
  var total = 0;
  var lanes = zeros<i32>[8];
  for i in range(start, N, step) {
    trips += 1;
    total += i;
    lanes += load(x[i * 0 + arange(0, 8)]);
  }
  var firstNegative = -1;
  for i in range(start, N, step) {
    if load(x[i]) < 0 {
      firstNegative = i;
      break;
    }
  }
  let o = arange(0, 4);
  store(out[o], where(o == 0, trips, where(o == 1, total,
                where(o == 2, sum(lanes), firstNegative))));
}
)";
  std::vector<int32_t> x = {3, 5, 0, 7, 2, 4, -9, 6, 1, -1, 8, 2, 5};
  const int64_t n = int64_t(x.size());
  const int32_t firstEight = 3 + 5 + 0 + 7 + 2 + 4 - 9 + 6;
  forEachDevice([&](Session &s, const std::string &device) {
    Kernel k = s.compile(source, "k");
    ASSERT_TRUE(k.ok()) << k.status().message();
    Tensor tx = s.upload(x, {n});
    for (int32_t start : {0, 2, 20, -5})
      for (int32_t step : {1, 3, 7, 0, -2, INT_MAX}) {
        Tensor out = s.empty<int32_t>({4});
        ASSERT_TRUE(k(tx, out, start, step).ok()) << device;
        std::vector<int32_t> got;
        ASSERT_TRUE(out.download(got).ok());
        int32_t trips = 0, total = 0, firstNegative = -1;
        for (int64_t i = start; step > 0 && i < n; i += step) {
          ++trips;
          total += int32_t(i);
          if (firstNegative < 0 && i >= 0 && x[i] < 0) // out of bounds reads 0
            firstNegative = int32_t(i);
        }
        std::vector<int32_t> want = {trips, total, trips * firstEight, firstNegative};
        EXPECT_EQ(got, want) << device << " start " << start << " step " << step;
      }
  });
}

TEST_F(DeviceAgreement, DescendingLoopsOnEveryDevice) {
  // range(start, end, step) with a negative constant step counts down while
  // i > end, as Python's does: the trips and the variable's sum and last
  // value for run-time bounds up to the ends of i32 (where negating would
  // overflow), a loop that may break (a while loop), a tile carried through,
  // and static_range counting down.
  const char *source = R"(
kernel k(x: tensor<i32>[N], out: tensor<i32>[6], start: i32, end: i32) params(STEP: i32 = -1)
    grid(1) {
  var trips = 0;
  var total = 0;
  var last = 0;
  var lanes = zeros<i32>[8];
  for i in range(start, end, STEP) {
    trips += 1;
    total += i;
    last = i;
    let j = (i % N + N) % N + arange(0, 8);
    lanes += load(x[j], mask = j < N, other = 0);
  }
  var stopped = 0;
  for i in range(start, end, STEP) {
    if i % 5 == 0 {
      stopped = i;
      break;
    }
  }
  var digits = 0;
  for i in static_range(9, -3, -4) {
    digits = digits * 100 + i + 10;
  }
  let o = arange(0, 6);
  store(out[o], where(o == 0, trips, where(o == 1, total, where(o == 2, last,
                where(o == 3, sum(lanes), where(o == 4, stopped, digits))))));
}
)";
  std::vector<int32_t> x = {3, 5, 0, 7, 2, 4, -9, 6, 1, -1, 8, 2, 5};
  const int64_t n = int64_t(x.size());
  struct Bounds {
    int32_t start, end;
  };
  const Bounds bounds[] = {{12, -1}, {12, 3},  {3, 12}, {7, 7}, {0, -20},
                           {INT_MIN + 6, INT_MIN}, {INT_MIN + 5, INT_MIN},
                           {INT_MAX, INT_MAX - 7}};
  forEachDevice([&](Session &s, const std::string &device) {
    Tensor tx = s.upload(x, {n});
    for (int32_t step : {-1, -3}) {
      Kernel k = s.compile(source, "k", {{"STEP", std::to_string(step)}});
      ASSERT_TRUE(k.ok()) << k.status().message();
      for (Bounds bd : bounds) {
        Tensor out = s.empty<int32_t>({6});
        ASSERT_TRUE(k(tx, out, bd.start, bd.end).ok()) << device;
        std::vector<int32_t> got;
        ASSERT_TRUE(out.download(got).ok());
        int32_t trips = 0;
        uint32_t total = 0;
        int64_t last = 0, lanes = 0;
        for (int64_t i = bd.start; i > bd.end; i += step) {
          ++trips;
          total += uint32_t(i);
          last = i;
          for (int64_t j = (i % n + n) % n; j < (i % n + n) % n + 8; ++j)
            lanes += j < n ? x[j] : 0;
        }
        int32_t firstFive = 0;
        for (int64_t i = bd.start; i > bd.end; i += step)
          if (i % 5 == 0) {
            firstFive = int32_t(i);
            break;
          }
        std::vector<int32_t> want = {trips,          int32_t(total), int32_t(last),
                                     int32_t(lanes), firstFive,      191511};
        EXPECT_EQ(got, want) << device << " range(" << bd.start << ", " << bd.end << ", "
                             << step << ")";
      }
    }
  });
}

TEST_F(DeviceAgreement, ReturnFromInsideLoopsOnEveryDevice) {
  // A program that finds a zero returns from inside two loops: the loops stop
  // and nothing after them runs; the others store their row's sum.
  const char *source = R"(
kernel k(x: tensor<i32>[M, N], out: tensor<i32>[M]) grid(M) {
  let row = program_id(0);
  var total = 0;
  var j = 0;
  while true {
    for k in range(0, 2) {
      if j + k < N {
        let v = load(x[row, j + k]);
        if v == 0 {
          return;
        }
        total += v;
      }
    }
    j += 2;
    if j >= N {
      break;
    }
  }
  store(out[row], total);
}
)";
  const int64_t m = 4, n = 5;
  std::vector<int32_t> x = {1, 2, 3, 4, 5, 1, 0, 1, 1, 1, 2, 2, 2, 2, 0, 7, 7, 7, 7, 7};
  forEachDevice([&](Session &s, const std::string &device) {
    Kernel k = s.compile(source, "k");
    ASSERT_TRUE(k.ok()) << k.status().message();
    Tensor tx = s.upload(x, {m, n}), out = s.upload(std::vector<int32_t>(m, -1), {m});
    ASSERT_TRUE(k(tx, out).ok()) << device;
    std::vector<int32_t> got;
    ASSERT_TRUE(out.download(got).ok());
    EXPECT_EQ(got, (std::vector<int32_t>{15, -1, -1, 35})) << device;
  });
}

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
  const char *source = R"(
kernel moves(x: tensor<bf16>[N], y: tensor<bf16>[N], z: tensor<bf16>[N], r: tensor<bf16>[N],
             a: tensor<bf16>[N])
    params(B: i32 = 4) grid(cdiv(N, B)) {
  let i = program_id(0) * B + arange(0, B);
  let v = load(x[i]);
  store(y[i], v);
  store(z[i], where(i % 3 == 0, v, load(x[i], other = 0.0)));
  store(r[i], flip(v, 0));
  store(a[i], abs(v) * 1.0);
}
)";
  std::vector<uint16_t> codes;
  for (uint16_t c = 1; c < 0x80; ++c) { // every subnormal, both signs
    codes.push_back(c);
    codes.push_back(0x8000 | c);
  }
  for (uint16_t c : {0x0000, 0x8000, 0x0080, 0x3f80, 0xc2f7, 0x7f7f, 0x7f80, 0xff80})
    codes.push_back(c);
  codes.push_back(0x3c00); // 263 values: the last program's block is partly masked
  const int64_t n = codes.size();
  for (int64_t block : {4, 32, 128}) {
    forEachDevice([&](Session &s, const std::string &device) {
      Kernel k = s.compile(source, "moves", {{"B", std::to_string(block)}});
      ASSERT_TRUE(k.ok()) << k.status().message();
      Tensor x = s.upload(codes.data(), DType::BF16, {n}), y = s.empty(DType::BF16, {n}),
             z = s.empty(DType::BF16, {n}), r = s.empty(DType::BF16, {n}),
             a = s.empty(DType::BF16, {n});
      ASSERT_TRUE(k(x, y, z, r, a).ok()) << device;
      std::vector<uint16_t> yo(n), zo(n), ro(n), ao(n);
      ASSERT_TRUE(y.download(yo.data()).ok() && z.download(zo.data()).ok() &&
                  r.download(ro.data()).ok() && a.download(ao.data()).ok());
      for (int64_t i = 0; i < n; ++i) {
        ASSERT_EQ(yo[i], codes[i]) << device << " B=" << block << " copy at " << i;
        ASSERT_EQ(ao[i], codes[i] & 0x7fff) << device << " B=" << block << " |v| * 1 at " << i;
        ASSERT_EQ(zo[i], codes[i]) << device << " B=" << block << " select at " << i;
        int64_t start = i / block * block, mirrored = start + block - 1 - (i - start);
        ASSERT_EQ(ro[i], mirrored < n ? codes[mirrored] : 0)
            << device << " B=" << block << " flip at " << i;
      }
    });
  }
}

/// The bf16 nearest to `x`, ties to the even code, found from the definition
/// (not by rounding to float first, the double rounding the test looks for).
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

TEST_F(DeviceAgreement, NarrowIntegerReductionsOfSmallTilesOnEveryDevice) {
  // An 8-element tile leaves most of a GPU program's threads without an
  // element; their partials must be the identity of the tile's own type (on
  // Vulkan, min of non-negative i8 values was -1 and max of negative ones 0).
  const char *source = R"(
kernel k(a: tensor<i8>[M, 8], b: tensor<u8>[M, 8], c: tensor<i16>[M, 8], d: tensor<u16>[M, 8],
         o: tensor<i32>[M, 12]) grid(M) {
  let r = program_id(0);
  let j = arange(0, 8);
  let va = load(a[r, j]);
  let vb = load(b[r, j]);
  let vc = load(c[r, j]);
  let vd = load(d[r, j]);
  store(o[r, 0], cast<i32>(min(va)));
  store(o[r, 1], cast<i32>(max(va)));
  store(o[r, 2], cast<i32>(sum(va)));
  store(o[r, 3], cast<i32>(min(vb)));
  store(o[r, 4], cast<i32>(max(vb)));
  store(o[r, 5], cast<i32>(sum(vb)));
  store(o[r, 6], cast<i32>(min(vc)));
  store(o[r, 7], cast<i32>(max(vc)));
  store(o[r, 8], cast<i32>(sum(vc)));
  store(o[r, 9], cast<i32>(min(vd)));
  store(o[r, 10], cast<i32>(max(vd)));
  store(o[r, 11], cast<i32>(argmin(va, axis=0)));
}
)";
  // Rows: all positive, all negative, zeros, mixed, extremes.
  std::vector<std::array<int, 8>> rows = {{5, 9, 3, 7, 100, 12, 8, 6},
                                          {-5, -9, -3, -7, -100, -12, -8, -6},
                                          {0, 0, 0, 0, 0, 0, 0, 0},
                                          {-1, 2, -3, 4, -5, 6, -7, 8},
                                          {127, -128, 1, 0, 127, -128, 5, 9}};
  const int64_t m = rows.size();
  std::vector<int8_t> a;
  std::vector<uint8_t> b;
  std::vector<int16_t> c;
  std::vector<uint16_t> d;
  for (auto &row : rows)
    for (int v : row) {
      a.push_back(int8_t(v));
      b.push_back(uint8_t(v));
      c.push_back(int16_t(v * 200));
      d.push_back(uint16_t(v * 200));
    }
  forEachDevice([&](Session &s, const std::string &device) {
    Kernel k = s.compile(source, "k");
    ASSERT_TRUE(k.ok()) << k.status().message();
    Tensor ta = s.upload(a.data(), DType::I8, {m, 8}), tb = s.upload(b.data(), DType::U8, {m, 8}),
           tc = s.upload(c.data(), DType::I16, {m, 8}), td = s.upload(d.data(), DType::U16, {m, 8}),
           out = s.empty<int32_t>({m, 12});
    ASSERT_TRUE(k(ta, tb, tc, td, out).ok()) << device;
    std::vector<int32_t> got;
    ASSERT_TRUE(out.download(got).ok());
    for (int64_t r = 0; r < m; ++r) {
      auto row = [&](auto &v) { return std::vector<int64_t>(v.begin() + r * 8, v.begin() + r * 8 + 8); };
      auto ra = row(a), rb = row(b), rc = row(c), rd = row(d);
      auto lo = [](auto &v) { return *std::min_element(v.begin(), v.end()); };
      auto hi = [](auto &v) { return *std::max_element(v.begin(), v.end()); };
      auto total = [](auto &v) { return std::accumulate(v.begin(), v.end(), int64_t(0)); };
      int64_t want[12] = {lo(ra), hi(ra), int8_t(total(ra)), lo(rb), hi(rb), uint8_t(total(rb)),
                          lo(rc), hi(rc), int16_t(total(rc)), lo(rd), hi(rd),
                          std::min_element(ra.begin(), ra.end()) - ra.begin()};
      for (int col = 0; col < 12; ++col)
        EXPECT_EQ(got[r * 12 + col], want[col]) << device << " row " << r << " column " << col;
    }
  });
}

TEST_F(DeviceAgreement, RowReductionsOfEveryShapeOnEveryDevice) {
  // Reductions along a tile's last axis. GPU targets fold the runs of a row
  // each thread holds in registers first and exchange one partial per run, when
  // the row and the layout's run length (4 here with 32-bit memory, 8 with
  // 16-bit) share a factor; rows of odd length take the element-wise exchange.
  // Rows that span whole waves of the program's threads are each reduced like
  // a whole tile (registers, subgroup, shared memory) and every thread keeps
  // every row's total, so broadcasting them back takes no exchange. Shapes
  // cover rows shorter and longer than a run and than a wave, tiles smaller
  // than the program's threads, and tiles several runs per thread deep; values
  // are small integers (exact sums in f16 too), with a NaN in row 1.
  const char *source = R"(
kernel wide(x: tensor<f32>[M, N], o: tensor<f32>[M, 3], n: tensor<i32>[M, 3])
    params(BR: i32 = 4, BD: i32 = 8) grid(1) {
  let v = load(x.tile([BR, BD], [0, 0]));
  let rows = arange(0, BR);
  store(o[rows, 0], sum(v, axis = 1));
  store(o[rows, 1], max(v, axis = 1));
  store(o[rows, 2], min(v, axis = 1));
  let i = cast<i32>(v);
  store(n[rows, 0], xor_sum(i * -1640531535, axis = 1));
  store(n[rows, 1], cast<i32>(sum(cast<i8>(i * 9), axis = 1)));
  store(n[rows, 2], max(i, axis = 1));
}
kernel back(x: tensor<f32>[M, N], y: tensor<f32>[M, N], z: tensor<i32>[N, M])
    params(BR: i32 = 4, BD: i32 = 8) grid(1) {
  let v = load(x.tile([BR, BD], [0, 0]));
  let total = sum(v, axis = 1);
  store(y.tile([BR, BD], [0, 0]), v * 2.0 - total[:, None]);
  store(z.tile([BD, BR], [0, 0]), broadcast_to(sum(cast<i32>(v), axis = 1)[None, :], [BD, BR]));
}
kernel narrow(x: tensor<f16>[M, N], o: tensor<f16>[M, 2], n: tensor<i16>[M, 2])
    params(BR: i32 = 4, BD: i32 = 8) grid(1) {
  let v = load(x.tile([BR, BD], [0, 0]));
  let rows = arange(0, BR);
  store(o[rows, 0], sum(v, axis = 1));
  store(o[rows, 1], max(v, axis = 1));
  let i = cast<i16>(v);
  store(n[rows, 0], sum(i * 1000, axis = 1));
  store(n[rows, 1], cast<i16>(min(cast<u8>(i), axis = 1)));
}
)";
  struct Shape {
    int64_t rows, cols;
  };
  const Shape shapes[] = {{4, 8}, {3, 16}, {16, 16}, {5, 4}, {8, 2}, {2, 64}, {7, 6},
                          {3, 5}, {1, 24}, {32, 64}, {2, 512}, {4, 1024}, {1, 4096}};
  auto same = [](double got, double want) {
    return got == want || (std::isnan(got) && std::isnan(want));
  };
  forEachDevice([&](Session &s, const std::string &device) {
    for (Shape sh : shapes) {
      const int64_t m = sh.rows, d = sh.cols;
      std::vector<float> x(m * d);
      for (int64_t e = 0; e < m * d; ++e)
        x[e] = float(int64_t(e * 7919 % 41) - 20);
      if (m > 1)
        x[1 * d + d - 1] = NAN;
      std::vector<uint16_t> h(x.size());
      for (size_t e = 0; e < x.size(); ++e)
        h[e] = floatToHalfBits(x[e]);
      std::string where = device + " " + std::to_string(m) + "x" + std::to_string(d);
      std::map<std::string, std::string> params = {{"BR", std::to_string(m)},
                                                    {"BD", std::to_string(d)}};
      Kernel wide = s.compile(source, "wide", params);
      Kernel narrow = s.compile(source, "narrow", params);
      Kernel back = s.compile(source, "back", params);
      ASSERT_TRUE(wide.ok()) << where << ": " << wide.status().message();
      ASSERT_TRUE(back.ok()) << where << ": " << back.status().message();
      ASSERT_TRUE(narrow.ok()) << where << ": " << narrow.status().message();
      Tensor tx = s.upload(x, {m, d}), th = s.upload(h.data(), DType::F16, {m, d});
      Tensor wo = s.empty<float>({m, 3}), wn = s.empty<int32_t>({m, 3});
      Tensor no = s.empty(DType::F16, {m, 2}), nn = s.empty(DType::I16, {m, 2});
      ASSERT_TRUE(wide(tx, wo, wn).ok()) << where;
      ASSERT_TRUE(narrow(th, no, nn).ok()) << where;
      Tensor by = s.empty<float>({m, d}), bz = s.empty<int32_t>({d, m});
      ASSERT_TRUE(back(tx, by, bz).ok()) << where;
      std::vector<float> gotBy;
      std::vector<int32_t> gotBz;
      ASSERT_TRUE(by.download(gotBy).ok() && bz.download(gotBz).ok());
      int64_t wrongBack = 0;
      std::vector<float> gotWo;
      std::vector<int32_t> gotWn;
      std::vector<uint16_t> gotNo;
      std::vector<int16_t> gotNn;
      ASSERT_TRUE(wo.download(gotWo).ok() && wn.download(gotWn).ok());
      ASSERT_TRUE(no.download(gotNo).ok() && nn.download(gotNn).ok());
      for (int64_t r = 0; r < m; ++r) {
        double total = 0, hi = -INFINITY, lo = INFINITY;
        int32_t bits = 0, hiInt = INT32_MIN;
        int64_t bytes = 0, shorts = 0, loByte = 255;
        for (int64_t c = 0; c < d; ++c) {
          float v = x[r * d + c];
          total += v;
          hi = std::isnan(v) || std::isnan(hi) ? NAN : std::max<double>(hi, v);
          lo = std::isnan(v) || std::isnan(lo) ? NAN : std::min<double>(lo, v);
          int32_t i = std::isnan(v) ? 0 : int32_t(v); // saturating casts take NaN to 0
          bits ^= int32_t(uint32_t(i) * 2654435761u);
          bytes += int8_t(i * 9);
          hiInt = std::max(hiInt, i);
          shorts += i * 1000;
          loByte = std::min<int64_t>(loByte, uint8_t(i));
        }
        EXPECT_TRUE(same(gotWo[r * 3 + 0], total)) << where << " row " << r << " sum";
        EXPECT_TRUE(same(gotWo[r * 3 + 1], hi)) << where << " row " << r << " max";
        EXPECT_TRUE(same(gotWo[r * 3 + 2], lo)) << where << " row " << r << " min";
        EXPECT_EQ(gotWn[r * 3 + 0], bits) << where << " row " << r << " xor_sum";
        EXPECT_EQ(gotWn[r * 3 + 1], int8_t(bytes)) << where << " row " << r << " i8 sum";
        EXPECT_EQ(gotWn[r * 3 + 2], hiInt) << where << " row " << r << " i32 max";
        EXPECT_TRUE(same(halfBitsToFloat(gotNo[r * 2 + 0]), total))
            << where << " row " << r << " f16 sum";
        EXPECT_TRUE(same(halfBitsToFloat(gotNo[r * 2 + 1]), hi))
            << where << " row " << r << " f16 max";
        EXPECT_EQ(gotNn[r * 2 + 0], int16_t(shorts)) << where << " row " << r << " i16 sum";
        EXPECT_EQ(gotNn[r * 2 + 1], loByte) << where << " row " << r << " u8 min";
        int32_t intTotal = 0;
        for (int64_t c = 0; c < d; ++c)
          intTotal += std::isnan(x[r * d + c]) ? 0 : int32_t(x[r * d + c]);
        for (int64_t c = 0; c < d; ++c) {
          bool ok = same(gotBy[r * d + c], double(x[r * d + c]) * 2 - total) &&
                    gotBz[c * m + r] == intTotal;
          if (!ok && wrongBack++ < 5)
            ADD_FAILURE() << where << " broadcast back at (" << r << ", " << c << "): "
                          << gotBy[r * d + c] << " want " << double(x[r * d + c]) * 2 - total
                          << ", i32 sum " << gotBz[c * m + r] << " want " << intTotal;
        }
      }
    }
  });
}

TEST_F(DeviceAgreement, ColumnReductionsOfEveryShapeOnEveryDevice) {
  // Reductions along the first and middle axes of 3-D tiles. Where the tile
  // repeats the threads' layout along the axis, GPU targets fold a thread's
  // elements of one result in registers and exchange one partial per group (a
  // result then reads the first positions of the axis only); elsewhere the
  // elements are exchanged. Shapes cover both, axes longer and shorter than the
  // threads' reach, and rows shorter and longer than it; values are small
  // integers (exact sums), with a NaN in one column.
  const char *source = R"(
kernel cols(x: tensor<f32>[A, B, C], o0: tensor<f32>[B, C, 2], o1: tensor<f32>[A, C, 2],
            n0: tensor<i32>[B, C, 2], n1: tensor<i32>[A, C, 2])
    params(BA: i32 = 2, BB: i32 = 2, BC: i32 = 2) grid(1) {
  let v = load(x.tile([BA, BB, BC], [0, 0, 0]));
  let a = arange(0, BA)[:, None];
  let b = arange(0, BB)[:, None];
  let c = arange(0, BC)[None, :];
  store(o0[b, c, 0], sum(v, axis = 0));
  store(o0[b, c, 1], max(v, axis = 0));
  store(o1[a, c, 0], sum(v, axis = 1));
  store(o1[a, c, 1], min(v, axis = 1));
  let i = cast<i32>(v);
  store(n0[b, c, 0], xor_sum(i * -1640531535, axis = 0));
  store(n0[b, c, 1], cast<i32>(sum(cast<i8>(i * 9), axis = 0)));
  store(n1[a, c, 0], xor_sum(i * -1640531535, axis = 1));
  store(n1[a, c, 1], cast<i32>(sum(cast<i8>(i * 9), axis = 1)));
}
)";
  struct Shape {
    int64_t a, b, c;
  };
  const Shape shapes[] = {{32, 8, 8}, {4, 4, 256}, {2, 128, 4}, {3, 5, 7},
                          {64, 2, 2}, {8, 1, 512}, {8, 32, 3}};
  auto same = [](double got, double want) {
    return got == want || (std::isnan(got) && std::isnan(want));
  };
  forEachDevice([&](Session &s, const std::string &device) {
    for (Shape sh : shapes) {
      const int64_t A = sh.a, B = sh.b, C = sh.c;
      std::vector<float> x(A * B * C);
      for (size_t e = 0; e < x.size(); ++e)
        x[e] = float(int64_t(e * 7919 % 41) - 20);
      x[x.size() / 2] = NAN;
      std::string where = device + " " + std::to_string(A) + "x" + std::to_string(B) + "x" +
                          std::to_string(C);
      Kernel k = s.compile(source, "cols",
                           {{"BA", std::to_string(A)},
                            {"BB", std::to_string(B)},
                            {"BC", std::to_string(C)}});
      ASSERT_TRUE(k.ok()) << where << ": " << k.status().message();
      Tensor tx = s.upload(x, {A, B, C});
      Tensor o0 = s.empty<float>({B, C, 2}), o1 = s.empty<float>({A, C, 2});
      Tensor n0 = s.empty<int32_t>({B, C, 2}), n1 = s.empty<int32_t>({A, C, 2});
      ASSERT_TRUE(k(tx, o0, o1, n0, n1).ok()) << where;
      std::vector<float> g0, g1;
      std::vector<int32_t> h0, h1;
      ASSERT_TRUE(o0.download(g0).ok() && o1.download(g1).ok() && n0.download(h0).ok() &&
                  n1.download(h1).ok());
      // The reductions of x along `axis` at the other two coordinates (p, q).
      int64_t wrong = 0;
      auto check = [&](int axis, int64_t p, int64_t q, const std::vector<float> &got,
                       const std::vector<int32_t> &gotInt, int64_t slot) {
        int64_t length = axis == 0 ? A : B;
        double total = 0, extreme = axis == 0 ? -INFINITY : INFINITY;
        int32_t bits = 0;
        int64_t bytes = 0;
        for (int64_t k = 0; k < length; ++k) {
          float v = axis == 0 ? x[(k * B + p) * C + q] : x[(p * B + k) * C + q];
          total += v;
          extreme = std::isnan(v) || std::isnan(extreme) ? NAN
                    : axis == 0                          ? std::max<double>(extreme, v)
                                                         : std::min<double>(extreme, v);
          int32_t i = std::isnan(v) ? 0 : int32_t(v); // saturating casts take NaN to 0
          bits ^= int32_t(uint32_t(i) * 2654435761u);
          bytes += int8_t(i * 9);
        }
        bool ok = same(got[slot * 2], total) && same(got[slot * 2 + 1], extreme) &&
                  gotInt[slot * 2] == bits && gotInt[slot * 2 + 1] == int8_t(bytes);
        if (!ok && wrong++ < 5)
          ADD_FAILURE() << where << " axis " << axis << " at (" << p << ", " << q
                        << "): sum " << got[slot * 2] << " want " << total << ", "
                        << (axis == 0 ? "max " : "min ") << got[slot * 2 + 1] << " want "
                        << extreme << ", xor_sum " << gotInt[slot * 2] << " want " << bits
                        << ", i8 sum " << gotInt[slot * 2 + 1] << " want "
                        << int(int8_t(bytes));
      };
      for (int64_t p = 0; p < B; ++p)
        for (int64_t q = 0; q < C; ++q)
          check(0, p, q, g0, h0, p * C + q);
      for (int64_t p = 0; p < A; ++p)
        for (int64_t q = 0; q < C; ++q)
          check(1, p, q, g1, h1, p * C + q);
      EXPECT_EQ(wrong, 0) << where;
    }
  });
}

TEST_F(DeviceAgreement, LongScansOnEveryDevice) {
  // Scans along an axis of 128 elements or more take log2(n) doubling steps
  // on GPUs and Vulkan: along the last axis and a middle one (stride 2), over a
  // tile larger than the program's threads, forward and reversed, with tails
  // masked off. Values are integers below 2^13, so f32 sums are exact and every
  // device must give the exact prefix. They are drawn at random but for new
  // highs (lows in `flat`) at positions 4^k - 1, which a running max (min) must
  // carry over up to 3 * 4^k elements (past half the axis), and odd factors
  // keep a product from settling at zero, so each scan needs its long reaches.
  const char *source = R"(
kernel scans(x: tensor<i32>[R, N, C], s: tensor<f32>[R, N, C], p: tensor<i32>[R, N, C],
             hi: tensor<f32>[R, N, C], back: tensor<i32>[R, N, C])
    params(BR: i32 = 2, BN: i32 = 256, BC: i32 = 2) grid(1) {
  let r = arange(0, BR)[:, None, None];
  let n = arange(0, BN)[None, :, None];
  let c = arange(0, BC)[None, None, :];
  let m = n < N;
  let v = load(x[r, n, c], mask = m, other = 0);
  let f = cast<f32>(v);
  store(s[r, n, c], cumsum(f, axis = 1), mask = m);
  store(p[r, n, c], cumprod(2 * (v % 3) + 1, axis = 1), mask = m);
  store(hi[r, n, c], cummax(f, axis = 1), mask = m);
  store(back[r, n, c], cumsum(v, axis = 1, reverse = true), mask = m);
}
kernel rows(x: tensor<i32>[M], y: tensor<i32>[M], z: tensor<i32>[M])
    params(BLOCK: i32 = 4096) grid(1) {
  let i = arange(0, BLOCK);
  let v = load(x[i], mask = i < M, other = 0);
  store(y[i], cumsum(v), mask = i < M);
  store(z[i], cummin(v), mask = i < M);
}
)";
  const int64_t R = 2, N = 250, C = 2, M = 4000;
  std::vector<int32_t> x(R * N * C), flat(M);
  auto draw = [](uint32_t e) { // in [-4096, 4096]
    uint32_t h = e * 2654435761u;
    h = (h ^ (h >> 15)) * 2246822519u;
    return int32_t((h ^ (h >> 13)) % 8193) - 4096;
  };
  auto record = [](int64_t e) { // k at e = 4^k - 1, else 0
    int32_t k = 0;
    while ((int64_t(1) << 2 * k) < e + 1)
      ++k;
    return (int64_t(1) << 2 * k) == e + 1 ? k : 0;
  };
  for (size_t e = 0; e < x.size(); ++e) {
    int64_t n = int64_t(e) / C % N;
    x[e] = record(n) ? 5000 + record(n) : draw(uint32_t(e));
  }
  for (int64_t e = 0; e < M; ++e)
    flat[e] = record(e) ? -5000 - record(e) : draw(uint32_t(e + 100000));
  forEachDevice([&](Session &s, const std::string &device) {
    Kernel scans = s.compile(source, "scans"), rows = s.compile(source, "rows");
    ASSERT_TRUE(scans.ok()) << scans.status().message();
    ASSERT_TRUE(rows.ok()) << rows.status().message();
    Tensor tx = s.upload(x, {R, N, C});
    Tensor ts = s.empty<float>({R, N, C}), tp = s.empty<int32_t>({R, N, C}),
           th = s.empty<float>({R, N, C}), tb = s.empty<int32_t>({R, N, C});
    ASSERT_TRUE(scans(tx, ts, tp, th, tb).ok()) << device;
    Tensor tf = s.upload(flat, {M}), ty = s.empty<int32_t>({M}), tz = s.empty<int32_t>({M});
    ASSERT_TRUE(rows(tf, ty, tz).ok()) << device;
    std::vector<float> gs, gh;
    std::vector<int32_t> gp, gb, gy, gz;
    ASSERT_TRUE(ts.download(gs).ok() && tp.download(gp).ok() && th.download(gh).ok() &&
                tb.download(gb).ok() && ty.download(gy).ok() && tz.download(gz).ok());
    int64_t wrong = 0;
    for (int64_t r = 0; r < R; ++r)
      for (int64_t c = 0; c < C; ++c) {
        int64_t total = 0, back = 0;
        uint32_t product = 1;
        int32_t hi = INT32_MIN;
        auto at = [&](int64_t n) { return (r * N + n) * C + c; };
        for (int64_t n = 0; n < N; ++n)
          back += x[at(n)];
        for (int64_t n = 0; n < N; ++n) {
          int32_t v = x[at(n)];
          total += v;
          product *= uint32_t(2 * (v % 3) + 1); // % truncates, as C++'s
          hi = std::max(hi, v);
          bool ok = gs[at(n)] == float(total) && gp[at(n)] == int32_t(product) &&
                    gh[at(n)] == float(hi) && gb[at(n)] == int32_t(back);
          if (!ok && wrong++ < 5)
            ADD_FAILURE() << device << " r=" << r << " n=" << n << " c=" << c << ": sum "
                          << gs[at(n)] << " want " << total << ", prod " << gp[at(n)]
                          << " want " << int32_t(product) << ", max " << gh[at(n)] << " want "
                          << hi << ", reversed sum " << gb[at(n)] << " want " << back;
          back -= v;
        }
      }
    int64_t total = 0;
    int32_t lo = INT32_MAX;
    for (int64_t e = 0; e < M; ++e) {
      total += flat[e];
      lo = std::min(lo, flat[e]);
      if ((gy[e] != total || gz[e] != lo) && wrong++ < 10)
        ADD_FAILURE() << device << " rows e=" << e << ": sum " << gy[e] << " want " << total
                      << ", min " << gz[e] << " want " << lo;
    }
    EXPECT_EQ(wrong, 0) << device;
  });
}

TEST_F(DeviceAgreement, LoopsLavapipeWouldCutFailTheLaunch) {
  // lavapipe ends every loop of an invocation once its loops have iterated
  // 65535 times in all; Kiln's lavapipe kernels record whether each loop ran
  // to its end, so what would be a wrong answer is a failed launch. Loops that
  // stay under the limit, or that NIR unrolls (an inner loop of 16 constant
  // steps under 20000 outer ones), run and agree with the CPU, as does a cumsum
  // over 4096 elements (log2 doubling steps). Loops of constant trips are
  // checked when they may pass the limit (llvmpipe counts a loop's trips + 1),
  // and so is the loop of an exact f32 `%`, added after the kernel's own.
  const char *source = R"(
kernel steps(x: tensor<i32>[N], y: tensor<i32>[1]) params(INNER: i32 = 1) grid(1) {
  var acc = 0;
  for i in range(0, N) {
    let v = load(x[i]);
    for j in range(0, INNER) {
      acc = acc + v * (j + 1);
    }
  }
  store(y[0], acc);
}
kernel fixed(x: tensor<i32>[N], y: tensor<i32>[1]) params(OUTER: i32 = 1000) grid(1) {
  var acc = 0;
  for i in range(0, OUTER) {
    for j in range(0, 64) {
      acc = acc + load(x[j]) * (i + 1);
    }
  }
  store(y[0], acc);
}
kernel remainder(x: tensor<i32>[N], y: tensor<i32>[1], r: tensor<f32>[1], a: f32, b: f32)
    grid(1) {
  var acc = 0;
  for i in range(0, N) {
    acc = acc + load(x[i]);
  }
  store(y[0], acc);
  store(r[0], a % b);
}
kernel countdown(y: tensor<i32>[1], n: i32) grid(1) {
  var left = n;
  var count = 0;
  while left > 0 {
    left = left - 1;
    count = count + 1;
  }
  store(y[0], count);
}
kernel prefix(x: tensor<i32>[N], y: tensor<i32>[N]) params(BLOCK: i32 = 4096) grid(1) {
  let i = arange(0, BLOCK);
  store(y[i], cumsum(load(x[i], mask = i < N, other = 0), axis = 0), mask = i < N);
}
)";
  forEachDevice([&](Session &s, const std::string &device) {
    bool lavapipe = s.device().target().find(":cpu") != std::string::npos;
    auto run = [&](const std::string &kernel, int64_t n, int inner) {
      std::map<std::string, std::string> params;
      if (kernel == "steps")
        params["INNER"] = std::to_string(inner);
      if (kernel == "fixed")
        params["OUTER"] = std::to_string(n);
      Kernel k = s.compile(source, kernel, params);
      EXPECT_TRUE(k.ok()) << k.status().message();
      int64_t outputs = kernel == "prefix" ? n : 1;
      Tensor y = s.upload(std::vector<int32_t>(outputs, -1), {outputs});
      rt::Status st;
      if (kernel == "countdown") {
        st = k(y, int32_t(n));
      } else {
        int64_t size = kernel == "fixed" ? 64 : n;
        Tensor x = s.upload(std::vector<int32_t>(size, 1), {size});
        st = k(x, y);
      }
      std::vector<int32_t> got;
      if (st.ok())
        EXPECT_TRUE(y.download(got).ok());
      return std::make_pair(st, got);
    };
    struct Case {
      const char *kernel;
      int64_t n;
      int inner;
      int64_t want; // y[0], or for prefix y[n - 1]
      bool pastTheLimit;
    };
    const Case cases[] = {{"steps", 60000, 1, 60000, false},
                          {"steps", 70000, 1, 70000, true},
                          {"steps", 20000, 16, 20000 * 136, false},
                          {"steps", 1200, 64, 1200 * 2080, true},
                          {"fixed", 900, 64, 64 * 900 * 901 / 2, false},
                          {"fixed", 1000, 64, 64 * 1000 * 1001 / 2, true},
                          {"countdown", 60000, 1, 60000, false},
                          {"countdown", 70000, 1, 70000, true},
                          // 12 doubling steps (folding each prefix took up to
                          // 4096 trips per register, past the limit)
                          {"prefix", 4096, 1, 4096, false}};
    for (const Case &c : cases) {
      std::string where = device + " " + c.kernel + " n=" + std::to_string(c.n) +
                          " inner=" + std::to_string(c.inner);
      auto [status, got] = run(c.kernel, c.n, c.inner);
      if (lavapipe && c.pastTheLimit) {
        ASSERT_FALSE(status.ok()) << where << ": a cut loop went unreported";
        EXPECT_NE(status.message().find("lavapipe's limit"), std::string::npos)
            << where << ": " << status.message();
        continue;
      }
      ASSERT_TRUE(status.ok()) << where << ": " << status.message();
      EXPECT_EQ(got[c.kernel == std::string("prefix") ? c.n - 1 : 0], c.want) << where;
    }

    // 3e38 % 1e-38 takes the long division's 32 steps (33 as llvmpipe counts):
    // after 65000 trips they fit under the limit, after 65510 they are cut.
    Kernel remainder = s.compile(source, "remainder");
    ASSERT_TRUE(remainder.ok()) << remainder.status().message();
    const float a = 3e38f, b = 1e-38f;
    for (int64_t n : {65000, 65510}) {
      std::string where = device + " remainder after " + std::to_string(n) + " trips";
      Tensor x = s.upload(std::vector<int32_t>(n, 1), {n});
      Tensor y = s.empty<int32_t>({1}), r = s.empty<float>({1});
      rt::Status status = remainder(x, y, r, a, b);
      if (lavapipe && n == 65510) {
        ASSERT_FALSE(status.ok()) << where << ": a cut loop went unreported";
        EXPECT_NE(status.message().find("lavapipe's limit"), std::string::npos)
            << where << ": " << status.message();
        continue;
      }
      ASSERT_TRUE(status.ok()) << where << ": " << status.message();
      std::vector<int32_t> gy;
      std::vector<float> gr;
      ASSERT_TRUE(y.download(gy).ok() && r.download(gr).ok());
      EXPECT_EQ(gy[0], n) << where;
      EXPECT_EQ(gr[0], std::fmod(a, b)) << where;
    }
  });
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
