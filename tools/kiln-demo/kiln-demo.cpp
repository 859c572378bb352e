//===- kiln-demo.cpp - compile and run every example kernel ---------------===//
//
// The main job: each kernel in examples/ is compiled from source through MLIR to
// host code, run over the program grid on all cores, and checked against a plain
// C++ reference. Prints one line per kernel; exits 1 if any result is wrong.
//
//===----------------------------------------------------------------------===//

#include "examples/reference/References.h"
#include "kiln/Version.h"
#include "lib/Compiler/Compiler.h"
#include "lib/Support/ThreadPool.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cmath>
#include <functional>
#include <random>

using namespace kiln;
namespace cl = llvm::cl;

static cl::opt<std::string> examplesDir("examples", cl::desc("Folder of .kiln examples"),
                                        cl::init(KILN_EXAMPLES_DIR));
static cl::opt<unsigned> repeats("repeats", cl::desc("Timed runs per kernel"), cl::init(5));

namespace {
using Clock = std::chrono::steady_clock;

double msSince(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

std::vector<float> randomVector(size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<float> v(n);
  for (float &x : v)
    x = dist(gen);
  return v;
}

TensorRef dense(std::vector<float> &v, std::vector<int64_t> sizes) {
  return TensorRef::contiguous(v.data(), DType::F32, std::move(sizes));
}

/// One row of the demo: what to compile, how to run it, and how to check it.
struct Case {
  std::string file, kernel, shape;
  std::map<std::string, std::string> defines;
  double bytes = 0, flops = 0; // per run, for throughput
  std::function<std::vector<KernelArg>()> args;
  std::function<double()> maxError; // compares outputs with the reference
};

int runCase(const Case &c) {
  auto buffer = llvm::MemoryBuffer::getFile(examplesDir + "/" + c.file);
  if (!buffer) {
    llvm::errs() << "cannot read " << examplesDir << "/" << c.file << "\n";
    return 1;
  }
  GenOptions options;
  options.kernel = c.kernel;
  options.defines = c.defines;
  auto start = Clock::now();
  auto exe = compileForCPU((*buffer)->getBuffer(), c.file, options);
  double compileMs = msSince(start);
  if (!exe) {
    llvm::errs() << llvm::toString(exe.takeError());
    return 1;
  }
  std::vector<KernelArg> args = c.args();
  if (auto err = (*exe)->launch(c.kernel, args)) { // warm-up, and the checked run
    llvm::errs() << llvm::toString(std::move(err)) << "\n";
    return 1;
  }
  double err = c.maxError();
  double best = INFINITY;
  for (unsigned r = 0; r < repeats; ++r) {
    auto t = Clock::now();
    if (auto e = (*exe)->launch(c.kernel, args)) {
      llvm::errs() << llvm::toString(std::move(e)) << "\n";
      return 1;
    }
    best = std::min(best, msSince(t));
  }
  bool ok = err <= 1e-3;
  std::string rate = c.flops > 0 ? llvm::formatv("{0,7:f2} GFLOP/s", c.flops / best / 1e6).str()
                                 : llvm::formatv("{0,7:f2} GB/s   ", c.bytes / best / 1e6).str();
  llvm::outs() << llvm::formatv("{0,-11} {1,-20} {2,9:f1} ms {3,9:f3} ms  {4}  {5,9:e1}  {6}\n",
                                c.kernel, c.shape, compileMs, best, rate, err,
                                ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}

double maxAbsDiff(const std::vector<float> &got, const std::vector<double> &want) {
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i)
    worst = std::max(worst, std::abs(double(got[i]) - want[i]));
  return got.size() == want.size() && !std::isnan(worst) ? worst : INFINITY;
}
} // namespace

int main(int argc, char **argv) {
  cl::ParseCommandLineOptions(argc, argv, "Kiln demo: every example, compiled and checked\n");
  llvm::outs() << "Kiln " << KILN_VERSION_STRING << " (LLVM/MLIR " << KILN_LLVM_VERSION_STRING
               << "), CPU backend, " << defaultThreadCount() << " threads\n\n";
  llvm::outs() << llvm::formatv("{0,-11} {1,-20} {2,12} {3,12}  {4,-15}  {5,9}  {6}\n", "kernel",
                                "shape", "compile", "run (best)", "throughput", "max |err|",
                                "check");

  const int64_t n = 1 << 22, m = 4096, cols = 1000, mk = 384;
  std::vector<float> x = randomVector(n, 1), y = randomVector(n, 2), z(n);
  std::vector<float> mat = randomVector(m * cols, 3), out(m * cols), w = randomVector(cols, 4),
                     b = randomVector(cols, 5), rows(m), colsum(cols);
  std::vector<float> a = randomVector(mk * mk, 6), bb = randomVector(mk * mk, 7), c(mk * mk);

  std::vector<Case> cases;
  cases.push_back({"vector_add.kiln", "vector_add", "4194304", {}, 12.0 * n, 0,
                   [&] { return std::vector<KernelArg>{KernelArg::of(dense(x, {n})),
                                                        KernelArg::of(dense(y, {n})),
                                                        KernelArg::of(dense(z, {n}))}; },
                   [&] { return maxAbsDiff(z, reference::vectorAdd(x.data(), y.data(), n)); }});
  cases.push_back({"softmax.kiln", "softmax", "4096 x 1000", {{"BLOCK", "1024"}},
                   8.0 * m * cols, 0,
                   [&] { return std::vector<KernelArg>{KernelArg::of(dense(mat, {m, cols})),
                                                        KernelArg::of(dense(out, {m, cols}))}; },
                   [&] { return maxAbsDiff(out, reference::softmax(mat.data(), m, cols, cols)); }});
  cases.push_back({"layernorm.kiln", "layernorm", "4096 x 1000", {}, 8.0 * m * cols, 0,
                   [&] {
                     return std::vector<KernelArg>{
                         KernelArg::of(dense(mat, {m, cols})), KernelArg::of(dense(w, {cols})),
                         KernelArg::of(dense(b, {cols})), KernelArg::of(dense(out, {m, cols})),
                         KernelArg::ofFloat(1e-5)};
                   },
                   [&] {
                     return maxAbsDiff(out, reference::layernorm(mat.data(), w.data(), b.data(),
                                                                 m, cols, 1e-5));
                   }});
  cases.push_back({"reduce.kiln", "row_sum", "4096 x 1000", {}, 4.0 * m * cols, 0,
                   [&] { return std::vector<KernelArg>{KernelArg::of(dense(mat, {m, cols})),
                                                        KernelArg::of(dense(rows, {m}))}; },
                   [&] {
                     return maxAbsDiff(rows, reference::sum2d(mat.data(), m, cols, cols, 1, true));
                   }});
  cases.push_back({"reduce.kiln", "col_sum", "4096 x 1000", {}, 4.0 * m * cols, 0,
                   [&] { return std::vector<KernelArg>{KernelArg::of(dense(mat, {m, cols})),
                                                        KernelArg::of(dense(colsum, {cols}))}; },
                   [&] {
                     return maxAbsDiff(colsum,
                                       reference::sum2d(mat.data(), m, cols, cols, 1, false));
                   }});
  cases.push_back({"matmul.kiln", "matmul", "384 x 384 x 384", {}, 0, 2.0 * mk * mk * mk,
                   [&] { return std::vector<KernelArg>{KernelArg::of(dense(a, {mk, mk})),
                                                        KernelArg::of(dense(bb, {mk, mk})),
                                                        KernelArg::of(dense(c, {mk, mk}))}; },
                   [&] {
                     return maxAbsDiff(c, reference::matmul(a.data(), bb.data(), mk, mk, mk, mk, 1));
                   }});

  int failures = 0;
  for (const Case &cs : cases)
    failures += runCase(cs);
  llvm::outs() << "\n" << (cases.size() - failures) << " of " << cases.size()
               << " kernels correct\n";
  return failures ? 1 : 0;
}
