//===- FuzzCompile.cpp - libFuzzer target: source through every pipeline --===//
//
// What the front end accepts must lower: each input that becomes verified kiln
// IR is run through the pass pipelines of the CPU, Vulkan and CUDA targets (up
// to the LLVM dialect, SPIR-V and NVVM; LLVM's own code generation is left out,
// it is not Kiln's code and would slow fuzzing tenfold).
//
// A CPU module must not call MLIR's runtime libraries (memrefCopy and the
// like), which kiln-rt does not link: the module would fail to load.
//
// A pipeline may still reject a kernel with a diagnostic (a tile too large for
// a target's shared memory, a dtype it lacks). With KILN_FUZZ_REJECTS=1 every
// other rejection is printed and aborts, so that the input is kept and can be
// read: that is how internal errors (a pass failing on valid IR) are found.
//
//===----------------------------------------------------------------------===//

#include "fuzz/FuzzSupport.h"

#include "codegen/CPU/CPUPipeline.h"
#include "codegen/Common/Target.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Diagnostics.h"

#include "llvm/Support/raw_ostream.h"

#include <cstdlib>

namespace {

bool reportRejects() {
  static bool report = [] {
    const char *value = std::getenv("KILN_FUZZ_REJECTS");
    return value && llvm::StringRef(value) != "0" && *value;
  }();
  return report;
}

/// Lowers a copy of `module` for `spec`; on a rejection prints why, and aborts
/// when asked to.
void lower(mlir::ModuleOp module, llvm::StringRef spec) {
  auto target = kiln::Target::parse(spec);
  if (!target) {
    llvm::errs() << llvm::toString(target.takeError()) << "\n";
    std::abort();
  }
  mlir::OwningOpRef<mlir::ModuleOp> copy = module.clone();
  std::string messages;
  mlir::ScopedDiagnosticHandler collect(copy->getContext(), [&](mlir::Diagnostic &d) {
    messages += d.str() + "\n";
    return mlir::success();
  });
  // What a target lacks (f64 on Metal, f64 exp on Vulkan) is reported before the
  // pipeline runs, as kilnc does: that is not an internal error.
  if (target->isGPU() && mlir::failed(kiln::checkTargetSupport(*copy, *target)))
    return;
  bool ok = target->isGPU()
                ? mlir::succeeded(kiln::runPipeline(*copy, kiln::targetPipeline(*target)))
                : mlir::succeeded(kiln::cpu::lowerToLLVMDialect(*copy));
  // Limits a kernel can exceed on a valid program, reported at its source
  // (docs/language.md, "Limits").
  llvm::StringRef text(messages);
  bool aLimit = text.contains("bytes of shared memory") || text.contains("elements per thread");
  if (!ok && reportRejects() && !aLimit) {
    llvm::errs() << spec << " rejected the kernel:\n" << messages;
    std::abort();
  }
  if (ok && !target->isGPU())
    copy->walk([](mlir::LLVM::LLVMFuncOp fn) {
      llvm::StringRef name = fn.getSymName();
      if (fn.isExternal() && (name.starts_with("memref") || name.starts_with("_mlir"))) {
        llvm::errs() << "the CPU module calls " << name << " from MLIR's runtime library\n";
        std::abort();
      }
    });
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  kiln::registerPasses();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::SourceMgr sourceMgr;
  kiln::addSourceBuffer(sourceMgr, {reinterpret_cast<const char *>(data), size}, "fuzz.kiln");
  std::vector<kiln::KernelInfo> infos;
  kiln::GenOptions options;
  auto module =
      kiln::buildKilnModule(kiln::fuzz::context(), sourceMgr, options, infos, llvm::nulls());
  if (!module)
    return 0;
  for (const char *spec : {"cpu", "vulkan", "cuda:sm_90"})
    lower(*module, spec);
  return 0;
}
