//===- kiln-bench.cpp - Kiln against its peers, side by side, in one run ---===//
//
// Every pair runs in this process, back to back, on the same data: Kiln's CPU
// backend against OpenBLAS sgemm and plain C++ loops; Kiln's SPIR-V against
// hand-written GLSL through the same kiln-rt Vulkan path; Kiln's compile latency
// (cold and cached) against nvcc. Prints a table, writes JSON for bench/plot.py.
// Nothing here is asserted: the machines are shared and noisy.
//
//===----------------------------------------------------------------------===//

#include "bench/peers/Peers.h"
#include "kiln/kiln.h"
#include "codegen/Common/GPUBinary.h"
#include "lib/Compiler/Build.h"
#include "lib/Support/ThreadPool.h"
#include "runtime/Metadata.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <cblas.h>
#include <unistd.h>

extern "C" void openblas_set_num_threads(int);
extern "C" char *openblas_get_corename(void);

using namespace kiln;
using Clock = std::chrono::steady_clock;

namespace {

std::string slurp(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Timing {
  double minMs = 0, medianMs = 0;
};

/// Runs `fn` `warmup` times, then `reps` timed times.
Timing measure(const std::function<void()> &fn, int reps = 7, int warmup = 2) {
  for (int i = 0; i < warmup; ++i)
    fn();
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    auto a = Clock::now();
    fn();
    t.push_back(std::chrono::duration<double, std::milli>(Clock::now() - a).count());
  }
  std::sort(t.begin(), t.end());
  return {t.front(), t[t.size() / 2]};
}

struct Row {
  std::string group, op, size, unit;
  double kiln = 0, peer = 0; // throughput in `unit` (higher is better) from median times
  std::string peerName;
  double limitPct = -1;      // Kiln's share of the machine's limit, when known
};
std::vector<Row> rows;

void report(Row r) {
  std::printf("%-8s %-11s %-14s %10.2f %10.2f %-14s %6.2fx", r.group.c_str(), r.op.c_str(),
              r.size.c_str(), r.kiln, r.peer, r.peerName.c_str(), r.kiln / r.peer);
  if (r.limitPct >= 0)
    std::printf("  %5.1f%%", r.limitPct);
  std::printf("  %s\n", r.unit.c_str());
  std::fflush(stdout);
  rows.push_back(std::move(r));
}

std::vector<float> randomVector(size_t n, unsigned seed, float lo = -1, float hi = 1) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float &x : v)
    x = d(gen);
  return v;
}

/// Host memory bandwidth from a large memcpy: the CPU's (and lavapipe's) limit.
double copyBandwidthGBs() {
  size_t n = size_t(1) << 27;
  std::vector<char> a(n, 1), b(n, 0);
  Timing t = measure([&] { std::memcpy(b.data(), a.data(), n); }, 5, 1);
  return 2.0 * n / t.minMs / 1e6; // read + write
}

void cpuBenchmarks(const std::string &examples, double bandwidth) {
  unsigned all = defaultThreadCount();
  Session s("cpu");
  if (!s.ok())
    return;
  // GEMM against OpenBLAS, on one thread and on all.
  Kernel mm = s.compile(slurp(examples + "/matmul.kiln"), "matmul", {}, "matmul.kiln");
  if (!mm.ok()) {
    std::fprintf(stderr, "%s\n", mm.status().message().c_str());
    return;
  }
  for (int64_t n : {128, 256, 512, 1024, 2048}) {
    auto a = randomVector(n * n, 1), b = randomVector(n * n, 2);
    std::vector<float> c(n * n);
    Tensor ta = s.upload(a, {n, n}), tb = s.upload(b, {n, n}), tc = s.empty<float>({n, n});
    double flops = 2.0 * n * n * n;
    for (unsigned threads : {1u, all}) {
      setenv("KILN_NUM_THREADS", std::to_string(threads).c_str(), 1);
      openblas_set_num_threads(static_cast<int>(threads));
      int reps = n >= 1024 ? 3 : 7;
      Timing k = measure([&] { (void)mm(ta, tb, tc); }, reps, 1);
      Timing p = measure([&] {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n,
                    b.data(), n, 0.0f, c.data(), n);
      }, reps, 1);
      report({"cpu", "sgemm-" + std::to_string(threads) + "t", std::to_string(n) + "^3",
              "GFLOP/s", flops / k.medianMs / 1e6, flops / p.medianMs / 1e6, "OpenBLAS"});
    }
  }
  unsetenv("KILN_NUM_THREADS");

  // The same GEMM with tile shapes chosen by the autotuner (all threads): the
  // choice is cached per shape bucket, so only the first run of the bench tunes.
  {
    int64_t n = 1024;
    auto a = randomVector(n * n, 1), b = randomVector(n * n, 2);
    std::vector<float> c(n * n);
    Tensor ta = s.upload(a, {n, n}), tb = s.upload(b, {n, n}), tc = s.empty<float>({n, n});
    TuneOptions options;
    options.progress = 0;
    // The candidates are the ones matmul.kiln declares with `tune [...]`.
    TuneResult tuned = s.autotune(slurp(examples + "/matmul.kiln"), "matmul",
                                  {ta.arg(), tb.arg(), tc.arg()}, options, "matmul.kiln");
    if (tuned.kernel.ok()) {
      std::string chosen;
      for (auto &[name, value] : tuned.params)
        chosen += (chosen.empty() ? "" : ",") + name + "=" + value;
      std::fprintf(stderr, "autotuned matmul: %s%s\n", chosen.c_str(),
                   tuned.fromCache ? " (cached choice)" : "");
      double flops = 2.0 * n * n * n;
      for (unsigned threads : {1u, all}) {
        setenv("KILN_NUM_THREADS", std::to_string(threads).c_str(), 1);
        openblas_set_num_threads(static_cast<int>(threads));
        Timing k = measure([&] { (void)tuned.kernel(ta, tb, tc); }, 3, 1);
        Timing p = measure([&] {
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n,
                      b.data(), n, 0.0f, c.data(), n);
        }, 3, 1);
        report({"cpu", "sgemm-" + std::to_string(threads) + "t-tuned", std::to_string(n) + "^3",
                "GFLOP/s", flops / k.medianMs / 1e6, flops / p.medianMs / 1e6, "OpenBLAS"});
      }
      unsetenv("KILN_NUM_THREADS");
    }
  }

  // Row-wise ops against plain C++ loops on all threads.
  const int64_t m = 4096, n = 1024;
  auto x = randomVector(m * n, 3), w = randomVector(n, 4), bias = randomVector(n, 5);
  std::vector<float> y(m * n), r(m);
  Tensor tx = s.upload(x, {m, n}), ty = s.empty<float>({m, n}), tw = s.upload(w, {n}),
         tb = s.upload(bias, {n}), tr = s.empty<float>({m});
  double bytes = 2.0 * m * n * 4;
  Kernel sm = s.compile(slurp(examples + "/softmax.kiln"), "softmax", {}, "softmax.kiln");
  Kernel ln = s.compile(slurp(examples + "/layernorm.kiln"), "layernorm", {}, "layernorm.kiln");
  Kernel rs = s.compile(slurp(examples + "/reduce.kiln"), "row_sum", {}, "reduce.kiln");
  auto gbs = [](double bytes, const Timing &t) { return bytes / t.medianMs / 1e6; };
  Timing k = measure([&] { (void)sm(tx, ty); });
  Timing p = measure([&] { peers::softmax(x.data(), y.data(), m, n, all); });
  report({"cpu", "softmax", "4096x1024", "GB/s", gbs(bytes, k), gbs(bytes, p), "C++ -O3 loops",
          100 * gbs(bytes, k) / bandwidth});
  k = measure([&] { (void)ln(tx, tw, tb, ty, 1e-5f); });
  p = measure([&] { peers::layernorm(x.data(), w.data(), bias.data(), y.data(), m, n, 1e-5f, all); });
  report({"cpu", "layernorm", "4096x1024", "GB/s", gbs(bytes, k), gbs(bytes, p), "C++ -O3 loops",
          100 * gbs(bytes, k) / bandwidth});
  k = measure([&] { (void)rs(tx, tr); });
  p = measure([&] { peers::rowSum(x.data(), r.data(), m, n, all); });
  report({"cpu", "row_sum", "4096x1024", "GB/s", gbs(bytes / 2, k), gbs(bytes / 2, p),
          "C++ -O3 loops", 100 * gbs(bytes / 2, k) / bandwidth});

  // A first-order recurrence over time (an associative_scan in Kiln, sequential
  // in the peer): x as the step inputs, a in [0, 1) as the decays.
  auto decay = randomVector(m * n, 12, 0.0f, 1.0f), h0 = randomVector(n, 13);
  std::vector<float> last(n);
  Tensor ta = s.upload(decay, {m, n}), th0 = s.upload(h0, {n}), tlast = s.empty<float>({n});
  double scanBytes = 3.0 * m * n * 4;
  p = measure([&] {
    peers::linearRecurrence(decay.data(), x.data(), h0.data(), y.data(), last.data(), m, n, all);
  });
  for (const char *kernel : {"linear_recurrence", "linear_recurrence_loop"}) {
    Kernel lr = s.compile(slurp(examples + "/linear_recurrence.kiln"), kernel, {},
                          "linear_recurrence.kiln");
    k = measure([&] { (void)lr(ta, tx, th0, ty, tlast); });
    report({"cpu", kernel, "4096x1024", "GB/s", gbs(scanBytes, k), gbs(scanBytes, p),
            "C++ -O3 loops", 100 * gbs(scanBytes, k) / bandwidth});
  }
}

void vulkanBenchmarks(const std::string &examples, const std::string &peerDir,
                      double bandwidth) {
  Session s("vulkan");
  if (!s.ok()) {
    std::printf("vulkan   (skipped: %s)\n", s.status().message().c_str());
    return;
  }
  rt::Device &d = s.device();
  // A GLSL peer takes Kiln's ABI, and records it as kilnc does (kiln-rt checks
  // the record against the metadata).
  auto peer = [&](const std::string &name) -> rt::Result<rt::Module> {
    std::string spv = slurp(peerDir + "/" + name + ".spv");
    std::string json = slurp(peerDir + "/glsl/" + name + ".json");
    rt::ModuleMetadata metadata;
    std::string error;
    if (!rt::parseMetadata(json, metadata, error))
      return rt::Status::failure("GLSL peer " + name + ": " + error);
    std::vector<uint32_t> words(spv.size() / 4);
    std::memcpy(words.data(), spv.data(), words.size() * 4);
    std::vector<std::string> records;
    for (const KernelInfo &k : metadata.kernels)
      records.push_back(abiSignature(k));
    spirv::addStrings(words, records);
    auto m = d.load(std::string(reinterpret_cast<const char *>(words.data()), words.size() * 4),
                    json);
    if (!m)
      std::fprintf(stderr, "GLSL peer %s: %s\n", name.c_str(), m.status().message().c_str());
    return m;
  };
  // One row: Kiln's `kernel` from examples/`file` against the GLSL peer of the same
  // name, both launched through this device with `args`, doing `work` per launch
  // (bytes moved for GB/s, flops for GFLOP/s). Both must write the same `out`.
  auto compare = [&](const std::string &file, const std::string &kernel, const std::string &size,
                     const std::vector<rt::Arg> &args, const Tensor &out, double work,
                     const std::string &unit = "GB/s") {
    Kernel k = s.compile(slurp(examples + "/" + file), kernel, {}, file);
    auto m = peer(kernel);
    if (!m || !k.ok())
      return;
    Timing tk = measure([&] { (void)k.launch(args); }, 5, 1);
    std::vector<float> kilnOut, peerOut;
    (void)out.download(kilnOut);
    Timing tp = measure([&] { (void)d.launch(*m, kernel, args); }, 5, 1);
    (void)out.download(peerOut);
    double worst = 0;
    for (size_t i = 0; i < kilnOut.size() && i < peerOut.size(); ++i)
      worst = std::max(worst, (double)std::abs(kilnOut[i] - peerOut[i]) /
                                  (1e-3 + std::abs((double)peerOut[i])));
    if (kilnOut.empty() || kilnOut.size() != peerOut.size() || !(worst < 1e-3))
      std::fprintf(stderr, "%s: Kiln and its GLSL peer disagree (worst relative difference %g)\n",
                   kernel.c_str(), worst);
    double gk = work / tk.medianMs / 1e6, gp = work / tp.medianMs / 1e6;
    report({"vulkan", kernel, size, unit, gk, gp, "GLSL",
            unit == "GB/s" ? 100 * gk / bandwidth : -1});
  };

  int64_t n = 1 << 22;
  auto x = randomVector(n, 6);
  Tensor a = s.upload(x, {n}), b = s.upload(x, {n}), c = s.empty<float>({n});
  compare("vector_add.kiln", "vector_add", "4194304", {a.arg(), b.arg(), c.arg()}, c, 3.0 * n * 4);
  const int64_t rowsM = 4096, cols = 1024;
  auto xm = randomVector(rowsM * cols, 7);
  Tensor tx = s.upload(xm, {rowsM, cols}), ty = s.empty<float>({rowsM, cols}),
         tr = s.empty<float>({rowsM});
  compare("softmax.kiln", "softmax", "4096x1024", {tx.arg(), ty.arg()}, ty, 2.0 * rowsM * cols * 4);
  compare("reduce.kiln", "row_sum", "4096x1024", {tx.arg(), tr.arg()}, tr, 1.0 * rowsM * cols * 4);
  auto xw = randomVector(cols, 10), xbias = randomVector(cols, 11);
  Tensor lw = s.upload(xw, {cols}), lb = s.upload(xbias, {cols});
  compare("layernorm.kiln", "layernorm", "4096x1024",
          {tx.arg(), lw.arg(), lb.arg(), ty.arg(), rt::Arg::f32(1e-5)}, ty,
          2.0 * rowsM * cols * 4);
  const int64_t mm = 512;
  auto xa = randomVector(mm * mm, 8), xb = randomVector(mm * mm, 9);
  Tensor ma = s.upload(xa, {mm, mm}), mb = s.upload(xb, {mm, mm}), mc = s.empty<float>({mm, mm});
  compare("matmul.kiln", "matmul", "512^3", {ma.arg(), mb.arg(), mc.arg()}, mc, 2.0 * mm * mm * mm,
          "GFLOP/s");
}

double runCommandMs(const std::string &cmd) {
  Timing t = measure([&] { (void)std::system((cmd + " > /dev/null 2>&1").c_str()); }, 5, 1);
  return t.medianMs;
}

/// Runs a command and returns what it printed on stdout.
std::string capture(const std::string &cmd) {
  std::string out;
  if (FILE *p = popen(cmd.c_str(), "r")) {
    char buf[256];
    while (fgets(buf, sizeof buf, p))
      out += buf;
    if (pclose(p) != 0)
      out.clear();
  }
  return out;
}

void compileBenchmarks(const std::string &examples, const std::string &bin,
                       const std::string &peerDir) {
  // In process: a cold compile (empty cache) against a cached one.
  std::string src = slurp(examples + "/softmax.kiln");
  std::vector<double> cold, warm;
  for (int i = 0; i < 5; ++i) {
    std::string dir = "/tmp/kiln-bench-cache-" + std::to_string(i) + "-" + std::to_string(getpid());
    setenv("KILN_CACHE_DIR", dir.c_str(), 1);
    auto a = Clock::now();
    { Session s("cpu"); (void)s.compile(src, "softmax"); }
    cold.push_back(std::chrono::duration<double, std::milli>(Clock::now() - a).count());
    a = Clock::now();
    { Session s("cpu"); (void)s.compile(src, "softmax"); }
    warm.push_back(std::chrono::duration<double, std::milli>(Clock::now() - a).count());
    (void)std::system(("rm -rf " + dir).c_str());
  }
  std::sort(cold.begin(), cold.end());
  std::sort(warm.begin(), warm.end());
  // Kiln's cached compile against its own cold compile: what the disk cache saves.
  report({"compile", "cache-hit", "softmax cpu", "compiles/s", 1000 / warm[2], 1000 / cold[2],
          "cold compile"});
  // In process, both compiling softmax for sm_90 without a GPU: Kiln against Triton
  // (pip), cold and from each one's cache.
  std::string triton = capture("TRITON_DEFAULT_FP_FUSION=1 python3 " + peerDir +
                               "/triton_softmax.py 2>/dev/null");
  double tritonCold = 0, tritonWarm = 0;
  if (std::sscanf(triton.c_str(), "%lf %lf", &tritonCold, &tritonWarm) == 2) {
    auto cuda = Target::parse("cuda:sm_90");
    GenOptions options;
    options.kernel = "softmax";
    Timing k = measure([&] {
      auto ptx = compileSource(src, "softmax.kiln", options, *cuda, ArtifactKind::PTX);
      if (!ptx)
        llvm::consumeError(ptx.takeError());
    }, 5, 1);
    report({"compile", "vs-triton", "softmax sm_90", "compiles/s", 1000 / k.medianMs,
            1000 / tritonCold, "Triton (cold)"});
    report({"compile", "cached", "softmax", "compiles/s", 1000 / warm[2], 1000 / tritonWarm,
            "Triton (cache)"});
  } else {
    std::printf("compile  (Triton not installed: pip install triton)\n");
  }
  // As processes: kilnc to PTX against nvcc -ptx on a hand-written CUDA softmax.
  if (std::system("command -v nvcc > /dev/null 2>&1") == 0) {
    double k = runCommandMs(bin + "/kilnc " + examples + "/softmax.kiln --target=cuda:sm_90 --emit=ptx -o /tmp/kiln-bench.ptx");
    double p = runCommandMs("nvcc -ptx -arch=sm_90 " + peerDir + "/softmax.cu -o /tmp/kiln-bench-nvcc.ptx");
    report({"compile", "softmax-ptx", "kilnc vs nvcc", "compiles/s", 1000 / k, 1000 / p, "nvcc -ptx"});
    k = runCommandMs(bin + "/kilnc " + examples + "/softmax.kiln --target=vulkan --emit=spirv -o /tmp/kiln-bench.spv");
    p = runCommandMs("glslangValidator -V --target-env vulkan1.2 " + peerDir + "/glsl/softmax.comp -o /tmp/kiln-bench-glsl.spv");
    report({"compile", "softmax-spirv", "kilnc vs glslang", "compiles/s", 1000 / k, 1000 / p, "glslangValidator"});
  }
  // As processes: kilnc to SPIR-V against IREE (pip iree-base-compiler) compiling
  // linalg.softmax for its Vulkan target. IREE's output also holds the host-side
  // schedule (a .vmfb), so it does a little more than kilnc does here.
  std::string iree = "iree-compile --iree-hal-target-device=vulkan " + peerDir +
                     "/softmax_iree.mlir -o /tmp/kiln-bench-iree.vmfb";
  if (std::system("command -v iree-compile > /dev/null 2>&1") != 0) {
    std::printf("compile  (IREE not installed: pip install iree-base-compiler)\n");
  } else if (std::system((iree + " > /dev/null 2>&1").c_str()) != 0) {
    std::printf("compile  (iree-compile failed on bench/peers/softmax_iree.mlir)\n");
  } else {
    double k = runCommandMs(bin + "/kilnc " + examples + "/softmax.kiln --target=vulkan --emit=spirv -o /tmp/kiln-bench.spv");
    double p = runCommandMs(iree);
    report({"compile", "softmax-vulkan", "kilnc vs IREE", "compiles/s", 1000 / k, 1000 / p, "iree-compile"});
  }
}

/// OpenBLAS picks its kernels from the CPU's model number, and a CPU newer than
/// the library falls back to the oldest x86-64 kernels (Prescott, SSE3) at a
/// fifth of the speed the CPU has, which would flatter Kiln. Names the core a
/// CPU with AVX-512 or AVX2 should get when OpenBLAS picked one with neither;
/// empty when its pick is fine or the user chose one (OPENBLAS_CORETYPE).
std::string betterOpenBlasCore() {
  if (std::getenv("OPENBLAS_CORETYPE"))
    return {};
  static const char *const wide[] = {"Haswell",  "Zen",          "SkylakeX",
                                     "Cooperlake", "SapphireRapids"};
  std::string core = openblas_get_corename();
  if (std::find(std::begin(wide), std::end(wide), core) != std::end(wide))
    return {};
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
    return "SkylakeX";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return "Haswell";
  return {};
}

void writeJson(const std::string &path, double bandwidth) {
  std::ofstream out(path);
  out << "{\n  \"copy_bandwidth_gbs\": " << bandwidth << ",\n  \"threads\": " << defaultThreadCount()
      << ",\n  \"openblas_core\": \"" << openblas_get_corename() << "\",\n  \"rows\": [\n";
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row &r = rows[i];
    out << "    {\"group\": \"" << r.group << "\", \"op\": \"" << r.op << "\", \"size\": \"" << r.size
        << "\", \"unit\": \"" << r.unit << "\", \"kiln\": " << r.kiln << ", \"peer\": " << r.peer
        << ", \"peer_name\": \"" << r.peerName << "\", \"ratio\": " << r.kiln / r.peer
        << ", \"limit_pct\": " << r.limitPct << "}" << (i + 1 < rows.size() ? "," : "") << "\n";
  }
  out << "  ]\n}\n";
}

} // namespace

int main(int argc, char **argv) {
  std::string examples = KILN_EXAMPLES_DIR, peers = KILN_PEERS_DIR, bin = KILN_BIN_DIR;
  if (argc > 1 && argv[1][0] == '-') {
    std::printf("usage: kiln-bench [OUT.json [GROUP...]]\n"
                "  GROUP: cpu, vulkan or compile (default: all); OUT.json defaults to "
                "bench-results.json\n");
    return std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0 ? 0 : 2;
  }
  std::string json = argc > 1 ? argv[1] : "bench-results.json";
  std::vector<std::string> groups(argv + std::min(argc, 2), argv + argc);
  for (const std::string &group : groups)
    if (group != "cpu" && group != "vulkan" && group != "compile") {
      std::fprintf(stderr, "kiln-bench: unknown group '%s' (cpu, vulkan or compile)\n",
                   group.c_str());
      return 2;
    }
  // OpenBLAS reads its core choice when it loads: run again with it set.
  if (std::string core = betterOpenBlasCore(); !core.empty()) {
    std::fprintf(stderr, "OpenBLAS picked %s kernels on a CPU that has %s's: running again with "
                 "OPENBLAS_CORETYPE=%s\n", openblas_get_corename(), core.c_str(), core.c_str());
    setenv("OPENBLAS_CORETYPE", core.c_str(), 1);
    execv("/proc/self/exe", argv);
    std::perror("kiln-bench: execv");
  }
  auto wanted = [&](const char *group) {
    return groups.empty() || std::find(groups.begin(), groups.end(), group) != groups.end();
  };
  double bandwidth = copyBandwidthGBs();
  std::printf("Kiln benchmarks: %u threads, host copy bandwidth %.1f GB/s, OpenBLAS core %s\n\n",
              defaultThreadCount(), bandwidth, openblas_get_corename());
  std::printf("%-8s %-11s %-14s %10s %10s %-14s %7s  %s\n", "group", "op", "size", "kiln", "peer",
              "peer name", "ratio", "% of copy bw / unit");
  if (wanted("cpu"))
    cpuBenchmarks(examples, bandwidth);
  if (wanted("vulkan"))
    vulkanBenchmarks(examples, peers, bandwidth);
  if (wanted("compile"))
    compileBenchmarks(examples, bin, peers);
  writeJson(json, bandwidth);
  std::printf("\nratio = Kiln / peer (higher is better for Kiln); JSON: %s\n", json.c_str());
  return 0;
}
