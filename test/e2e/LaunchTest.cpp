//===- LaunchTest.cpp - launches reject wrong arguments clearly -----------===//

#include "examples/reference/References.h"
#include "test/e2e/Harness.h"

#include "llvm/Support/CommandLine.h"

using namespace kiln;
using namespace kiln::test;

namespace {

std::string launchError(cpu::Executable &exe, const std::string &kernel,
                        const std::vector<KernelArg> &args) {
  llvm::Error err = exe.launch(kernel, args);
  return err ? llvm::toString(std::move(err)) : "";
}

class SoftmaxLaunch : public ::testing::Test {
protected:
  void SetUp() override { exe = compileExample("softmax.kiln", "softmax", {{"BLOCK", "16"}}); }
  std::unique_ptr<cpu::Executable> exe;
  std::vector<float> x = std::vector<float>(64, 1.0f), y = std::vector<float>(64, 0.0f);
  TensorRef xs = TensorRef::contiguous(x.data(), DType::F32, {4, 16});
  TensorRef ys = TensorRef::contiguous(y.data(), DType::F32, {4, 16});
};

TEST_F(SoftmaxLaunch, Succeeds) {
  ASSERT_TRUE(exe);
  EXPECT_EQ(launchError(*exe, "softmax", {KernelArg::of(xs), KernelArg::of(ys)}), "");
  EXPECT_FLOAT_EQ(y[0], 1.0f / 16);
}

TEST_F(SoftmaxLaunch, WrongArgumentCount) {
  ASSERT_TRUE(exe);
  EXPECT_EQ(launchError(*exe, "softmax", {KernelArg::of(xs)}),
            "kernel 'softmax': takes 2 arguments, got 1");
}

TEST_F(SoftmaxLaunch, WrongDType) {
  ASSERT_TRUE(exe);
  std::vector<uint16_t> h(64);
  TensorRef hs = TensorRef::contiguous(h.data(), DType::F16, {4, 16});
  EXPECT_EQ(launchError(*exe, "softmax", {KernelArg::of(hs), KernelArg::of(ys)}),
            "kernel 'softmax': argument 'x' has dtype f16 but the kernel expects f32");
}

TEST_F(SoftmaxLaunch, WrongRank) {
  ASSERT_TRUE(exe);
  TensorRef flat = TensorRef::contiguous(x.data(), DType::F32, {64});
  EXPECT_EQ(launchError(*exe, "softmax", {KernelArg::of(flat), KernelArg::of(ys)}),
            "kernel 'softmax': argument 'x' has rank 1 but the kernel expects rank 2");
}

TEST_F(SoftmaxLaunch, SizeNamesMustAgree) {
  ASSERT_TRUE(exe);
  TensorRef other = TensorRef::contiguous(y.data(), DType::F32, {2, 16});
  EXPECT_EQ(launchError(*exe, "softmax", {KernelArg::of(xs), KernelArg::of(other)}),
            "kernel 'softmax': argument 'y' dimension 0 (M) is 2 but argument 'x' has M = 4");
}

TEST_F(SoftmaxLaunch, ScalarWhereTensorExpected) {
  ASSERT_TRUE(exe);
  EXPECT_EQ(launchError(*exe, "softmax", {KernelArg::ofFloat(1.0), KernelArg::of(ys)}),
            "kernel 'softmax': argument 'x' must be a tensor");
}

TEST_F(SoftmaxLaunch, NullData) {
  ASSERT_TRUE(exe);
  TensorRef null = xs;
  null.data = nullptr;
  EXPECT_EQ(launchError(*exe, "softmax", {KernelArg::of(null), KernelArg::of(ys)}),
            "kernel 'softmax': argument 'x' has no data (null pointer)");
}

TEST_F(SoftmaxLaunch, UnknownKernel) {
  ASSERT_TRUE(exe);
  EXPECT_EQ(launchError(*exe, "softmin", {}), "no kernel named 'softmin' in this module");
}

TEST_F(SoftmaxLaunch, EmptyGridIsANoOp) {
  ASSERT_TRUE(exe);
  TensorRef e0 = TensorRef::contiguous(x.data(), DType::F32, {0, 16});
  TensorRef e1 = TensorRef::contiguous(y.data(), DType::F32, {0, 16});
  EXPECT_EQ(launchError(*exe, "softmax", {KernelArg::of(e0), KernelArg::of(e1)}), "");
  EXPECT_EQ(y[0], 0.0f);
}

TEST(LaunchScalars, ScalarDTypeIsChecked) {
  auto exe = compileExample("layernorm.kiln", "layernorm");
  ASSERT_TRUE(exe);
  std::vector<float> x(8), w(8), b(8), y(8);
  std::vector<KernelArg> args = {
      KernelArg::of(TensorRef::contiguous(x.data(), DType::F32, {1, 8})),
      KernelArg::of(TensorRef::contiguous(w.data(), DType::F32, {8})),
      KernelArg::of(TensorRef::contiguous(b.data(), DType::F32, {8})),
      KernelArg::of(TensorRef::contiguous(y.data(), DType::F32, {1, 8})),
      KernelArg::ofInt(1)};
  EXPECT_EQ(launchError(*exe, "layernorm", args),
            "kernel 'layernorm': argument 'eps' has dtype i32 but the kernel expects f32");
}

TEST(LaunchScalars, ValuesMustFitTheirType) {
  // A scalar the kernel would receive changed is an error: integers are not
  // wrapped (300 as i8 was 44) and finite floats are not made infinite (1e40 as
  // f32); fp8 saturates by definition and u64/i64 take any 64 bits.
  auto exe = compileSource(
      "kernel k(y: tensor<f32>[N], a: i8, b: u16, c: i1, h: f16, g: bf16, s: f32, e: f8e4m3)"
      " grid(1) {\n  store(y[0], cast<f32>(a) + cast<f32>(b) + cast<f32>(c) + cast<f32>(h)"
      " + cast<f32>(g) + s + cast<f32>(e));\n}\n",
      "k");
  ASSERT_TRUE(exe);
  std::vector<float> y(1);
  auto with = [&](KernelArg a, KernelArg b, KernelArg c, KernelArg h, KernelArg g, KernelArg s) {
    return launchError(*exe, "k",
                       {KernelArg::of(TensorRef::contiguous(y.data(), DType::F32, {1})), a, b,
                        c, h, g, s, KernelArg::ofFloat(1e6, DType::F8E4M3)});
  };
  KernelArg a = KernelArg::ofInt(-128, DType::I8), b = KernelArg::ofInt(65535, DType::U16),
            c = KernelArg::ofInt(1, DType::I1), h = KernelArg::ofFloat(65519, DType::F16),
            g = KernelArg::ofFloat(-3e38, DType::BF16), s = KernelArg::ofFloat(-INFINITY);
  EXPECT_EQ(with(a, b, c, h, g, s), "");
  EXPECT_EQ(y[0], -INFINITY);
  EXPECT_EQ(with(KernelArg::ofInt(300, DType::I8), b, c, h, g, s),
            "kernel 'k': argument 'a' is 300, which does not fit in i8");
  EXPECT_EQ(with(a, KernelArg::ofInt(-1, DType::U16), c, h, g, s),
            "kernel 'k': argument 'b' is -1, which does not fit in u16");
  EXPECT_EQ(with(a, b, KernelArg::ofInt(2, DType::I1), h, g, s),
            "kernel 'k': argument 'c' is 2, which does not fit in i1");
  EXPECT_EQ(with(a, b, c, KernelArg::ofFloat(65520, DType::F16), g, s),
            "kernel 'k': argument 'h' is 65520, beyond f16's finite values");
  EXPECT_EQ(with(a, b, c, h, KernelArg::ofFloat(1e39, DType::BF16), s),
            "kernel 'k': argument 'g' is 1e+39, beyond bf16's finite values");
  EXPECT_EQ(with(a, b, c, h, g, KernelArg::ofFloat(1e40)),
            "kernel 'k': argument 's' is 1e+40, beyond f32's finite values");
}

TEST(MaskedStore, ComputedMaskIsRespected) {
  // The mask is a bool tile computed from the data. It was once vectorized into
  // a bit-packed vector<128xi1> and read back byte by byte, so the CPU stored
  // the wrong lanes.
  const char *source = R"(
kernel clip_copy(x: tensor<f32>[N], y: tensor<f32>[N], lo: f32, hi: f32)
    params(BLOCK: i32 = 128) grid(cdiv(N, BLOCK)) {
  let offs = program_id(0) * BLOCK + arange(0, BLOCK);
  let v = load(x[offs]);
  store(y[offs], v, mask = v >= lo && v < hi);
}
)";
  GenOptions options;
  auto exe = compileForCPU(source, "masked.kiln", options);
  ASSERT_TRUE(bool(exe)) << llvm::toString(exe.takeError());
  int64_t n = 1000;
  auto x = randomVector(n, 29, -1, 1);
  std::vector<float> y(n, 7.0f);
  launchOrFail(**exe, "clip_copy",
               {KernelArg::of(TensorRef::contiguous(x.data(), DType::F32, {n})),
                KernelArg::of(TensorRef::contiguous(y.data(), DType::F32, {n})),
                KernelArg::ofFloat(-0.5f), KernelArg::ofFloat(0.25f)});
  for (int64_t i = 0; i < n; ++i)
    ASSERT_EQ(y[i], x[i] >= -0.5f && x[i] < 0.25f ? x[i] : 7.0f) << "at " << i;
}

TEST(Grid, ComesFromTheKernel) {
  auto exe = compileExample("matmul.kiln", "matmul", {{"BM", "16"}, {"BN", "8"}});
  ASSERT_TRUE(exe);
  std::vector<float> a(100 * 7), b(7 * 33), c(100 * 33);
  auto grid = exe->grid("matmul", {KernelArg::of(TensorRef::contiguous(a.data(), DType::F32, {100, 7})),
                                   KernelArg::of(TensorRef::contiguous(b.data(), DType::F32, {7, 33})),
                                   KernelArg::of(TensorRef::contiguous(c.data(), DType::F32, {100, 33}))});
  ASSERT_TRUE(bool(grid)) << llvm::toString(grid.takeError());
  EXPECT_EQ((*grid)[0], 7); // cdiv(100, 16)
  EXPECT_EQ((*grid)[1], 5); // cdiv(33, 8)
  EXPECT_EQ((*grid)[2], 1);
}

TEST(Grid, PersistentKernelsGetAProgramPerWorker) {
  auto exe = compileExample("matmul.kiln", "matmul_persistent", {});
  ASSERT_TRUE(exe);
  const int64_t m = 300, n = 260, k = 70; // 5 x 5 tiles of 64 x 64
  auto a = randomVector(m * k, 31), b = randomVector(k * n, 32);
  std::vector<float> c(m * n, NAN);
  std::vector<KernelArg> args = {KernelArg::of(TensorRef::contiguous(a.data(), DType::F32, {m, k})),
          KernelArg::of(TensorRef::contiguous(b.data(), DType::F32, {k, n})),
          KernelArg::of(TensorRef::contiguous(c.data(), DType::F32, {m, n}))};
  for (unsigned workers : {1u, 3u, 64u}) {
    auto grid = exe->grid("matmul_persistent", args, workers);
    ASSERT_TRUE(bool(grid)) << llvm::toString(grid.takeError());
    EXPECT_EQ((*grid)[0], std::min<int64_t>(25, workers)); // min(tiles, num_processors())
    std::fill(c.begin(), c.end(), NAN);
    launchOrFail(*exe, "matmul_persistent", args, workers);
    EXPECT_TRUE(allClose(c, reference::matmul(a.data(), b.data(), m, n, k, k, 1), 1e-4, 1e-4))
        << workers << " workers";
  }
}

TEST(Compile, ErrorsCarrySourceLocations) {
  GenOptions options;
  auto exe = compileForCPU("kernel k(x: tensor<f32>[N]) {\n  store(x[0], y);\n}\n", "bad.kiln",
                           options);
  ASSERT_FALSE(bool(exe));
  std::string message = llvm::toString(exe.takeError());
  EXPECT_NE(message.find("bad.kiln:2:15: error: unknown name 'y'"), std::string::npos) << message;
  EXPECT_NE(message.find("  store(x[0], y);\n              ^"), std::string::npos) << message;
}

/// 576 masked scalar loads in straight-line code: each is a branch, and after
/// jump threading all of them join one block. LLVM's tail merging inside block
/// placement is quadratic in such a block's predecessors, and this kernel took
/// 24 s to compile for an AVX host (30 x 30: over 4 minutes); Kiln turns that
/// merging off. The loads past N are masked to 0.
TEST(Compile, UnrolledScalarLoadsStayCheapToCompile) {
  const char *source = R"(
kernel unrolled_sum(x: tensor<f32>[N], y: tensor<f32>[1]) grid(1) {
  var acc = 0.0;
  for i in static_range(24) { for j in static_range(24) { acc += load(x[i * 24 + j]); } }
  store(y[0], acc);
}
)";
  auto exe = compileSource(source, "unrolled_sum");
  ASSERT_TRUE(exe);
  auto option = llvm::cl::getRegisteredOptions().find("branch-fold-placement");
  ASSERT_NE(option, llvm::cl::getRegisteredOptions().end());
  EXPECT_FALSE(static_cast<llvm::cl::opt<bool> *>(option->second)->getValue());
  for (int64_t n : {576, 300}) {
    std::vector<float> x(n), y(1, NAN);
    for (int64_t i = 0; i < n; ++i)
      x[i] = static_cast<float>(i % 7);
    launchOrFail(*exe, "unrolled_sum",
                 {KernelArg::of(TensorRef::contiguous(x.data(), DType::F32, {n})),
                  KernelArg::of(TensorRef::contiguous(y.data(), DType::F32, {1}))});
    float expected = 0;
    for (float v : x)
      expected += v;
    EXPECT_EQ(y[0], expected) << "N = " << n;
  }
}

/// A grid is its rule's value in exact integers: each program of `count` adds
/// one, so the count is the grid's size; a rule whose value leaves i32 (or 64
/// bits), a cast that would change its value, a bad shift or a division by zero
/// is an error, never a wrapped grid. kiln-rt evaluates the same text.
TEST(GridRules, AreExactIntegers) {
  struct Case {
    std::string rule;
    int64_t s, t;
    int64_t programs;  // when it launches
    std::string error; // else, a part of the message
  };
  const std::vector<Case> cases = {
      {"cdiv(R, 3) * cast<i32>(s)", 5, 0, 20, ""},
      {"max(-t, ~t) + (C >> 1)", 0, -7, 10, ""},
      {"(x.stride(0) & 3) | 1, x.size(1)", 0, 0, 3 * 6, ""},
      {"cast<i32>(R > C) + cast<i32>(!(R < C)) + (R << 2)", 0, 0, 42, ""},
      {"(t * 100000) / 100000", 0, 30000, 30000, ""}, // exact, not wrapped in i32
      {"cdiv(R, 3) * cast<i32>(s)", int64_t(1) << 40, 0, 0,
       "cast<i32>(1099511627776) would change the value"},
      {"t * 100000", 0, 30000, 0, "gave 3000000000 programs along axis 0, beyond i32"},
      {"R % t", 0, 0, 0, "division by zero"},
      {"C << t", 0, -1, 0, "shift by -1 (it must be 0 to 63)"},
      {"C << t", 0, 62, 0, "a value leaves the 64-bit integers"},
      {"-t", 0, 3, 0, "gave -3 programs along axis 0"},
  };
  std::vector<float> xs(60);
  TensorRef x = TensorRef::contiguous(xs.data(), DType::F32, {10, 6});
  for (const Case &c : cases) {
    SCOPED_TRACE(c.rule);
    std::string source = "kernel count(n: tensor<i32>[1], x: tensor<f32>[R, C], s: i64, "
                         "t: i32) grid(" + c.rule + ") {\n  atomic_add(n[0], 1);\n}\n";
    auto exe = compileSource(source, "count");
    ASSERT_TRUE(exe);
    int32_t n = 0;
    TensorRef count = TensorRef::contiguous(&n, DType::I32, {1});
    std::string error = launchError(*exe, "count", {KernelArg::of(count), KernelArg::of(x),
                                                    KernelArg::ofInt(c.s, DType::I64),
                                                    KernelArg::ofInt(c.t)});
    if (c.error.empty()) {
      EXPECT_EQ(error, "");
      EXPECT_EQ(n, c.programs);
    } else {
      EXPECT_NE(error.find(c.error), std::string::npos) << error;
      EXPECT_EQ(n, 0);
    }
  }
}

} // namespace
