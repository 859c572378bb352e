//===- CPUPipeline.h - kiln IR to the LLVM dialect for the host -*- C++ -*-===//
#pragma once

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"

#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Target/TargetMachine.h"

#include <memory>
#include <string>

namespace kiln::cpu {

/// The pass pipeline from kiln IR to the LLVM dialect, as `kiln-opt` accepts it.
/// This string is the single definition: the compiler parses it to run it.
const std::string &pipelineString();

/// Runs `pipelineString()` on `module`. Diagnostics go to the context's handler.
mlir::LogicalResult lowerToLLVMDialect(mlir::ModuleOp module, bool timePasses = false);

/// Initializes the host target once (idempotent).
void initializeHostTarget();

/// A target machine for the host CPU (its name and features), for the LLVM
/// optimization pipeline's cost models: without one the loop vectorizer sees no
/// vector registers. Null, with an error printed, if the host has no target.
std::unique_ptr<llvm::TargetMachine> createHostTargetMachine();

/// Translates an LLVM-dialect module to LLVM IR, optimized at `optLevel` for the host.
std::unique_ptr<llvm::Module> translateToLLVMIR(mlir::ModuleOp module,
                                                llvm::LLVMContext &llvmContext,
                                                unsigned optLevel = 3);

} // namespace kiln::cpu
