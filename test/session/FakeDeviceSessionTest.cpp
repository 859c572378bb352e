//===- FakeDeviceSessionTest.cpp - the JIT for CUDA and HIP devices -------===//
//
// A Session on the fake CUDA and HIP devices of test/fakes: it compiles for
// the device's own target (cuda:sm_90, amdgpu:gfx942), the binary loads, the
// launch has the kernel's grid and block, and the cache keys the target. No
// kernel runs (test/runtime/FakeDriverTest.cpp says what the fakes check).
//
//===----------------------------------------------------------------------===//

#include "kiln/kiln.h"
#include "test/fakes/FakeHooks.h"
#include "test/session/FreshCache.h"

#include <gtest/gtest.h>

using namespace kiln;

namespace {

const char *kRowSum = R"(
kernel row_sum(x: tensor<f32>[M, N], y: tensor<f32>[M]) params(BLOCK: i32 = 64) grid(M) {
  let row = program_id(0);
  store(y[row], sum(load(x[row, arange(0, BLOCK)]), axis = 0));
}
)";

struct FakeDevice {
  std::string device, target;
  const char *library;
};

void PrintTo(const FakeDevice &d, std::ostream *os) { *os << d.device; }

class FakeDeviceSession : public test::FreshCacheTest,
                          public ::testing::WithParamInterface<FakeDevice> {};

TEST_P(FakeDeviceSession, CompilesForTheDevicesTargetAndLaunches) {
  test::FakeHooks hooks(GetParam().library);
  ASSERT_TRUE(hooks.ok()) << hooks.error;
  hooks.reset();
  Session s(GetParam().device);
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s.device().target(), GetParam().target);

  Kernel k = s.compile(kRowSum, "row_sum");
  ASSERT_TRUE(k.ok()) << k.status().message() << " (the fake: " << hooks.lastRefusal() << ")";
  Tensor x = s.empty<float>({5, 64}), y = s.empty<float>({5});
  rt::Status launched = k(x, y);
  ASSERT_TRUE(launched.ok()) << launched.message() << " (the fake: " << hooks.lastRefusal() << ")";
  FakeLaunch record = hooks.last();
  EXPECT_STREQ(record.kernel, "row_sum");
  EXPECT_EQ(record.grid[0], 5u);
  EXPECT_EQ(record.block[0], static_cast<unsigned>(k.info()->threadsPerBlock));
  // Two tensors, as the binary declares them (for CUDA, the cubin's .nv.info):
  // a pointer, two sizes and two strides, then a pointer, a size and a stride.
  ASSERT_EQ(record.paramCount, 8);
  EXPECT_EQ(std::vector<unsigned>(record.paramBytes, record.paramBytes + 8),
            (std::vector<unsigned>{8, 4, 4, 4, 4, 8, 4, 4}));

  // Another session finds the binary for this target on disk.
  Session t(GetParam().device);
  ASSERT_TRUE(t.compile(kRowSum, "row_sum").ok());
  EXPECT_EQ(t.cacheStats().diskHits, 1);
  EXPECT_EQ(t.cacheStats().compiles, 0);
}

INSTANTIATE_TEST_SUITE_P(Fakes, FakeDeviceSession,
                         ::testing::Values(FakeDevice{"cuda", "cuda:sm_90", "libcuda.so.1"},
                                           FakeDevice{"hip", "amdgpu:gfx942", "libamdhip64.so"}),
                         [](const auto &info) { return info.param.device; });

} // namespace
