//===- DenseBlockTest.cpp - 2-D tile accesses on the CPU's dense path -----===//
//
// A load or store `x[r, c]` whose index tiles are `t0 + arange` along the
// tile's rows and `c0 + arange` along its columns reads a dense block without
// per-element bounds checks when the block lies inside the tensor and its rows
// are contiguous; other blocks, and views whose rows are not contiguous, take
// the guarded path. Both must give the same answers: every shape here has
// inner and edge blocks, explicit masks (a checkerboard, with `other`) and a
// transposed view.

#include "test/e2e/Harness.h"

#include <cmath>

using namespace kiln;
using namespace kiln::test;

namespace {

// y = x read on the checkerboard's black squares, -1 (other) on the white ones;
// z = 2 x written on the black squares only; BM x BN blocks.
const char *kSource = R"(
kernel blocks(x: tensor<f32>[M, N], y: tensor<f32>[M, N], z: tensor<f32>[M, N])
    params(BM: i32 = 8, BN: i32 = 16) grid(cdiv(M, BM), cdiv(N, BN)) {
  let r = expand_dims(program_id(0) * BM + arange(0, BM), 1);
  let c = expand_dims(program_id(1) * BN + arange(0, BN), 0);
  let black = (r + c) % 2 == 0;
  let v = load(x[r, c], mask = black, other = -1.0);
  store(y[r, c], v);
  store(z[r, c], 2.0 * v, mask = black);
}
)";

struct Case {
  int64_t m, n;
  bool transposed; // x is a transposed view (inner stride m): the guarded path
};

class DenseBlocks : public ::testing::TestWithParam<Case> {};

TEST_P(DenseBlocks, MatchTheGuardedAccesses) {
  auto [m, n, transposed] = GetParam();
  auto exe = compileSource(kSource, "blocks");
  ASSERT_TRUE(exe);
  auto data = randomVector(m * n, 11, 0, 1); // never -1
  TensorRef x = transposed ? TensorRef{data.data(), DType::F32, {m, n}, {1, m}}
                           : TensorRef::contiguous(data.data(), DType::F32, {m, n});
  std::vector<float> y(m * n, NAN), z(m * n, NAN);
  launchOrFail(*exe, "blocks",
               {KernelArg::of(x), KernelArg::of(TensorRef::contiguous(y.data(), DType::F32, {m, n})),
                KernelArg::of(TensorRef::contiguous(z.data(), DType::F32, {m, n}))});
  for (int64_t r = 0; r < m; ++r)
    for (int64_t c = 0; c < n; ++c) {
      float xv = transposed ? data[c * m + r] : data[r * n + c];
      bool black = (r + c) % 2 == 0;
      EXPECT_EQ(y[r * n + c], black ? xv : -1.0f) << "loaded at (" << r << ", " << c << ")";
      if (black)
        EXPECT_EQ(z[r * n + c], 2.0f * xv) << "stored at (" << r << ", " << c << ")";
      else
        EXPECT_TRUE(std::isnan(z[r * n + c])) << "masked-off (" << r << ", " << c << ") written";
    }
}

INSTANTIATE_TEST_SUITE_P(Shapes, DenseBlocks,
                         ::testing::Values(Case{8, 16, false}, Case{16, 32, false},
                                           Case{13, 37, false}, Case{3, 5, false},
                                           Case{13, 37, true}, Case{16, 32, true}));

} // namespace
