//===- kiln-gpu-bench.cpp - Kiln's kernels on a GPU, runtime only ---------===//
//
// Links kiln-rt only, so it runs on a GPU machine without LLVM: the kernels were
// compiled by kilnc on the build machine (scripts/gpu-bench.sh). Times each
// library kernel with the device's events (median of repeats) and prints one
// JSON object per line; bench/peers/gpu_peers.py measures torch and Triton on
// the same shapes and bench/gpu_report.py turns both into ratios.
//
//   kiln-gpu-bench KERNELS_DIR [--device cuda] [--small] [--require-device]
//
// Without the device it prints why and succeeds (nothing to measure), unless
// --require-device.
//
//===----------------------------------------------------------------------===//

#include "kiln/Runtime.h"
#include "lib/Support/Half.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

using namespace kiln;
using namespace kiln::rt;

namespace {

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Bench {
  std::shared_ptr<Device> device;
  std::string dir, ext;
  int repeats = 20;
  bool failed = false;

  Result<Module> load(const std::string &name) {
    std::string base = dir + "/" + name + "." + ext;
    std::string binary = readFile(base);
    if (binary.empty())
      return Status::failure("missing " + base);
    return device->load(binary, readFile(base + ".json"));
  }

  Result<Buffer> random(size_t count, DType dtype, unsigned seed) {
    std::mt19937 gen(seed);
    std::uniform_real_distribution<float> dist(-1, 1);
    std::vector<char> bytes(count * dtypeBytes(dtype));
    for (size_t i = 0; i < count; ++i) {
      float v = dist(gen);
      if (dtype == DType::F16) {
        uint16_t h = floatToHalfBits(v);
        std::memcpy(&bytes[i * 2], &h, 2);
      } else if (dtype == DType::BF16) {
        uint16_t h = floatToBF16Bits(v);
        std::memcpy(&bytes[i * 2], &h, 2);
      } else if (isF8(dtype)) {
        bytes[i] = static_cast<char>(floatToF8Bits(v, dtype));
      } else if (dtype == DType::I8) {
        bytes[i] = static_cast<char>(static_cast<int>(v * 127));
      } else {
        std::memcpy(&bytes[i * 4], &v, 4);
      }
    }
    auto b = device->allocate(bytes.size());
    if (!b)
      return b.status();
    if (Status s = device->write(*b, bytes.data(), bytes.size()); !s)
      return s;
    return *b;
  }

  /// Median milliseconds of `launch` over `repeats`, after two warm-up calls.
  Result<double> time(const std::function<Status()> &launch) {
    for (int w = 0; w < 2; ++w)
      if (Status s = launch(); !s)
        return s;
    std::vector<double> ms;
    for (int r = 0; r < repeats; ++r) {
      auto a = device->record();
      if (Status s = launch(); !s)
        return s;
      auto b = device->record();
      if (!a || !b)
        return Status::failure("device events failed");
      ms.push_back(b->since(*a));
    }
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
  }

  void report(const std::string &op, const std::string &shape, Result<double> ms, double flops,
              double bytes) {
    if (!ms) {
      failed = true;
      std::printf("{\"op\": \"%s\", \"shape\": \"%s\", \"error\": \"%s\"}\n", op.c_str(),
                  shape.c_str(), ms.status().message().c_str());
      return;
    }
    std::printf("{\"op\": \"%s\", \"shape\": \"%s\", \"ms\": %.6f, \"tflops\": %.4f, "
                "\"gbs\": %.2f}\n",
                op.c_str(), shape.c_str(), *ms, flops / *ms / 1e9, bytes / *ms / 1e6);
    std::fflush(stdout);
  }
};

} // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: kiln-gpu-bench KERNELS_DIR [--device D] [--small]\n");
    return 2;
  }
  Bench bench;
  bench.dir = argv[1];
  std::string spec = "cuda";
  bool small = false, requireDevice = false;
  for (int i = 2; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--device") && i + 1 < argc)
      spec = argv[++i];
    else if (!std::strcmp(argv[i], "--small"))
      small = true;
    else if (!std::strcmp(argv[i], "--require-device"))
      requireDevice = true;
  }
  auto device = Device::open(spec);
  if (!device) {
    std::fprintf(stderr, "kiln-gpu-bench: no %s device: %s\n", spec.c_str(),
                 device.status().message().c_str());
    return requireDevice ? 1 : 0;
  }
  bench.device = *device;
  switch (bench.device->backend()) {
  case rt::Backend::CPU: bench.ext = "cpu.so"; break;
  case rt::Backend::CUDA: bench.ext = "cuda.ptx"; break;
  case rt::Backend::HIP: bench.ext = "hip.hsaco"; break;
  case rt::Backend::Vulkan: bench.ext = "vulkan.spv"; break;
  }
  if (small)
    bench.repeats = 3;
  std::fprintf(stderr, "kiln-gpu-bench on %s\n", bench.device->name().c_str());

  auto fail = [](const Status &s) {
    std::fprintf(stderr, "kiln-gpu-bench: %s\n", s.message().c_str());
    return 1;
  };

  // GEMM: f16 and bf16 inputs, f32 accumulation and output (the tensor-core form).
  // On CUDA two tile configurations run (64 x 64 with 4 warps, 128 x 128 with 8)
  // and the faster is reported, as an autotuner would pick.
  int64_t n = small ? 256 : 8192;
  for (auto [name, dtype] : {std::pair{"matmul", DType::F16}, std::pair{"matmul_bf16", DType::BF16}}) {
    bool cuda = bench.ext == "cuda.ptx";
    if (dtype == DType::BF16 && !cuda)
      continue; // bf16 needs the CUDA build of the kernel
    auto a = bench.random(n * n, dtype, 1), b = bench.random(n * n, dtype, 2);
    auto c = bench.device->allocate(n * n * 4);
    if (!a || !b || !c)
      return fail(Status::failure("out of device memory for the GEMM"));
    std::vector<Arg> args{Arg::tensor(*a, dtype, {n, n}), Arg::tensor(*b, dtype, {n, n}),
                          Arg::tensor(*c, DType::F32, {n, n})};
    std::vector<std::string> configs{name};
    if (cuda)
      configs.push_back(std::string(name) + "_big");
    Result<double> best = Status::failure("no configuration ran");
    for (const std::string &config : configs) {
      auto m = bench.load(config);
      if (!m)
        return fail(m.status());
      Result<double> t = bench.time([&] { return bench.device->launch(*m, "matmul_f16", args); });
      if (t)
        std::fprintf(stderr, "kiln-gpu-bench: %s: median %.3f ms\n", config.c_str(), *t);
      else
        std::fprintf(stderr, "kiln-gpu-bench: %s: %s\n", config.c_str(), t.status().message().c_str());
      if (!best || (t && *t < *best))
        best = t;
    }
    bench.report(std::string("gemm-") + dtypeName(dtype), std::to_string(n) + "^3", best,
                 2.0 * n * n * n, 0);
  }

  // fp8 GEMM (e4m3 in, f32 accumulation, scaled bf16 out: test/Target/fp8.test.kiln),
  // on sm_90's mma.sync.m16n8k32; CUDA only, like the bf16 kernel.
  if (bench.ext == "cuda.ptx") {
    auto a = bench.random(n * n, DType::F8E4M3, 1), b = bench.random(n * n, DType::F8E4M3, 2);
    auto c = bench.device->allocate(n * n * 2);
    auto m = bench.load("matmul_f8");
    if (!a || !b || !c)
      return fail(Status::failure("out of device memory for the fp8 GEMM"));
    if (!m)
      return fail(m.status());
    std::vector<Arg> args{Arg::tensor(*a, DType::F8E4M3, {n, n}),
                          Arg::tensor(*b, DType::F8E4M3, {n, n}),
                          Arg::tensor(*c, DType::BF16, {n, n}), Arg::f32(1.0)};
    bench.report("gemm-f8e4m3", std::to_string(n) + "^3",
                 bench.time([&] { return bench.device->launch(*m, "matmul_f8", args); }),
                 2.0 * n * n * n, 0);
  }

  // int8 GEMM (W8A8: i8 in, exact i32 sums, scaled f16 out: examples/quant_matmul.kiln)
  // on mma.sync.m16n8k32's s8 form; CUDA only.
  if (bench.ext == "cuda.ptx") {
    auto a = bench.random(n * n, DType::I8, 3), b = bench.random(n * n, DType::I8, 4);
    auto sa = bench.random(n, DType::F32, 5), sw = bench.random(n, DType::F32, 6);
    auto c = bench.device->allocate(n * n * 2);
    auto m = bench.load("quant_matmul");
    if (!a || !b || !sa || !sw || !c)
      return fail(Status::failure("out of device memory for the int8 GEMM"));
    if (!m)
      return fail(m.status());
    std::vector<Arg> args{Arg::tensor(*a, DType::I8, {n, n}), Arg::tensor(*b, DType::I8, {n, n}),
                          Arg::tensor(*sa, DType::F32, {n}), Arg::tensor(*sw, DType::F32, {n}),
                          Arg::tensor(*c, DType::F16, {n, n})};
    bench.report("gemm-w8a8", std::to_string(n) + "^3",
                 bench.time([&] { return bench.device->launch(*m, "matmul_w8a8", args); }),
                 2.0 * n * n * n, 0);
  }

  // The grouped GEMM of a mixture-of-experts layer (examples/moe.kiln): 8 experts
  // of T / 8 rows each, f16 in, f32 out, in one launch.
  {
    const int64_t t = small ? 512 : 16384, k = small ? 256 : 4096, nn = small ? 256 : 4096;
    const int64_t experts = 8;
    auto x = bench.random(t * k, DType::F16, 6), w = bench.random(experts * k * nn, DType::F16, 7);
    auto y = bench.device->allocate(t * nn * 4);
    auto ends = bench.device->allocate(experts * 4);
    std::vector<int32_t> endRows(experts);
    for (int64_t e = 0; e < experts; ++e)
      endRows[e] = int32_t((e + 1) * t / experts);
    if (!x || !w || !y || !ends || !bench.device->write(*ends, endRows.data(), experts * 4))
      return fail(Status::failure("out of device memory for the MoE GEMM"));
    auto m = bench.load("moe");
    if (!m)
      return fail(m.status());
    std::vector<Arg> args{Arg::tensor(*x, DType::F16, {t, k}),
                          Arg::tensor(*w, DType::F16, {experts, k, nn}),
                          Arg::tensor(*ends, DType::I32, {experts}),
                          Arg::tensor(*y, DType::F32, {t, nn})};
    bench.report("moe-f16", "8x" + std::to_string(t / experts) + "x" + std::to_string(k) + "x" +
                                std::to_string(nn),
                 bench.time([&] { return bench.device->launch(*m, "moe_matmul", args); }),
                 2.0 * t * k * nn, 0);
  }

  // Softmax, layernorm and rmsnorm over rows: bandwidth-bound.
  int64_t rows = small ? 64 : 16384, cols = small ? 1024 : 4096;
  {
    auto x = bench.random(rows * cols, DType::F32, 3), w = bench.random(cols, DType::F32, 4),
         bb = bench.random(cols, DType::F32, 5);
    auto y = bench.device->allocate(rows * cols * 4);
    if (!x || !w || !bb || !y)
      return fail(Status::failure("out of device memory for the row kernels"));
    std::string shape = std::to_string(rows) + "x" + std::to_string(cols);
    double bytes = 2.0 * rows * cols * 4;
    auto softmax = bench.load("softmax_4096");
    if (!softmax)
      return fail(softmax.status());
    std::vector<Arg> sargs{Arg::tensor(*x, DType::F32, {rows, cols}),
                           Arg::tensor(*y, DType::F32, {rows, cols})};
    bench.report("softmax", shape,
                 bench.time([&] { return bench.device->launch(*softmax, "softmax", sargs); }), 0,
                 bytes);
    auto layernorm = bench.load("layernorm");
    if (!layernorm)
      return fail(layernorm.status());
    std::vector<Arg> largs{Arg::tensor(*x, DType::F32, {rows, cols}),
                           Arg::tensor(*w, DType::F32, {cols}), Arg::tensor(*bb, DType::F32, {cols}),
                           Arg::tensor(*y, DType::F32, {rows, cols}), Arg::f32(1e-5)};
    bench.report("layernorm", shape,
                 bench.time([&] { return bench.device->launch(*layernorm, "layernorm", largs); }),
                 0, bytes);
    auto rmsnorm = bench.load("rmsnorm");
    if (!rmsnorm)
      return fail(rmsnorm.status());
    std::vector<Arg> rargs{Arg::tensor(*x, DType::F32, {rows, cols}),
                           Arg::tensor(*w, DType::F32, {cols}),
                           Arg::tensor(*y, DType::F32, {rows, cols}), Arg::f32(1e-6)};
    bench.report("rmsnorm", shape,
                 bench.time([&] { return bench.device->launch(*rmsnorm, "rmsnorm", rargs); }), 0,
                 bytes);
    // Cross-entropy forward over the same logits, one class index per row.
    auto xent = bench.load("cross_entropy");
    if (!xent)
      return fail(xent.status());
    std::vector<int64_t> classes(rows);
    for (int64_t r = 0; r < rows; ++r)
      classes[r] = (r * 7919) % cols;
    auto target = bench.device->allocate(rows * 8), loss = bench.device->allocate(rows * 4),
         lse = bench.device->allocate(rows * 4);
    if (!target || !loss || !lse || !bench.device->write(*target, classes.data(), rows * 8))
      return fail(Status::failure("out of device memory for cross_entropy"));
    std::vector<Arg> xargs{Arg::tensor(*x, DType::F32, {rows, cols}),
                           Arg::tensor(*target, DType::I64, {rows}),
                           Arg::tensor(*loss, DType::F32, {rows}),
                           Arg::tensor(*lse, DType::F32, {rows})};
    bench.report("cross_entropy", shape,
                 bench.time([&] { return bench.device->launch(*xent, "cross_entropy", xargs); }),
                 0, rows * cols * 4.0 + rows * 16.0);
  }

  // Flash attention forward, head dim 64, causal and not: f16 (the tensor-core
  // form, 64 x 64 blocks and 8 warps, CUDA only) and f32.
  int64_t z = small ? 2 : 32, s = small ? 128 : 4096, d = 64;
  struct AttentionRun {
    const char *module, *kernel, *op;
    DType dtype;
    bool causal;
  };
  std::vector<AttentionRun> attention = {
      {"attention", "attention", "attention", DType::F32, false},
      {"attention_causal", "attention", "attention_causal", DType::F32, true}};
  if (bench.ext == "cuda.ptx")
    attention.insert(attention.begin(),
                     {{"attention_f16_big", "attention_f16", "attention_f16", DType::F16, false},
                      {"attention_f16_big_causal", "attention_f16", "attention_f16_causal",
                       DType::F16, true}});
  for (const AttentionRun &run : attention) {
    auto m = bench.load(run.module);
    if (!m)
      return fail(m.status());
    auto q = bench.random(z * s * d, run.dtype, 6), k = bench.random(z * s * d, run.dtype, 7),
         v = bench.random(z * s * d, run.dtype, 8);
    auto o = bench.device->allocate(z * s * d * dtypeBytes(run.dtype));
    if (!q || !k || !v || !o)
      return fail(Status::failure("out of device memory for attention"));
    std::vector<int64_t> shape{z, s, d};
    std::vector<Arg> args{Arg::tensor(*q, run.dtype, shape), Arg::tensor(*k, run.dtype, shape),
                          Arg::tensor(*v, run.dtype, shape), Arg::tensor(*o, run.dtype, shape),
                          Arg::f32(0.125)};
    double flops = 4.0 * z * s * s * d * (run.causal ? 0.5 : 1.0);
    bench.report(run.op, std::to_string(z) + "x" + std::to_string(s) + "x64",
                 bench.time([&] { return bench.device->launch(*m, run.kernel, args); }), flops,
                 0);
  }
  return bench.failed ? 1 : 0;
}
