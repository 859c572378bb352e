//===- DeviceAgreementDotsTest.cpp - dot on every device ------------------===//
//
// The FMA dot's register blockings for every tile shape, integer dots at their
// extremes, accumulators of other types, batched dots, and Vulkan's use of the
// device's shared memory.
//
// Each kernel runs through kiln::Session on the CPU and on Vulkan (lavapipe here),
// against a C++ reference.
//
//===----------------------------------------------------------------------===//

#include "examples/reference/References.h"
#include "kiln/kiln.h"
#include "test/Common/Compare.h"
#include "test/session/FreshCache.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <regex>
#include <sstream>

using namespace kiln;

namespace {

using DeviceAgreement = test::FreshCacheTest;
using test::forEachDevice;

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

} // namespace
