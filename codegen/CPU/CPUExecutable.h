//===- CPUExecutable.h - JIT-compiled kernels on the host -------*- C++ -*-===//
#pragma once

#include "kiln/KernelInfo.h"
#include "kiln/TensorRef.h"

#include "mlir/IR/BuiltinOps.h"

#include "llvm/Support/Error.h"

#include <array>
#include <memory>
#include <string>
#include <vector>

namespace mlir {
class ExecutionEngine;
}

namespace kiln::cpu {

/// Kernels of one module, compiled in process. Launches check every argument
/// against the kernel's metadata and run the grid over a thread pool.
class Executable {
public:
  /// `module` must be in the LLVM dialect (see lowerToLLVMDialect).
  static llvm::Expected<std::unique_ptr<Executable>>
  create(mlir::ModuleOp module, std::vector<KernelInfo> kernels, unsigned optLevel = 3);
  ~Executable();

  const std::vector<KernelInfo> &kernels() const { return infos; }

  /// The grid the kernel's grid rule gives for these arguments when `threads`
  /// workers run it (its num_processors(); 0 means defaultThreadCount()).
  llvm::Expected<std::array<int64_t, 3>> grid(llvm::StringRef kernel,
                                              const std::vector<KernelArg> &args,
                                              unsigned threads = 0);

  /// Runs every program of the grid; `threads` 0 means defaultThreadCount().
  llvm::Error launch(llvm::StringRef kernel, const std::vector<KernelArg> &args,
                     unsigned threads = 0);

  /// The compiled machine code as an ELF object file, or as assembly text.
  llvm::Expected<std::string> machineCode(bool assembly = false);

private:
  Executable() = default;
  const KernelInfo *find(llvm::StringRef name) const;

  std::unique_ptr<mlir::ExecutionEngine> engine;
  std::vector<KernelInfo> infos;
  std::string bitcode; ///< the optimized module, for machineCode
};

} // namespace kiln::cpu
