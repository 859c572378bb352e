//===- CPUPipeline.h - kiln IR to the LLVM dialect for the host -*- C++ -*-===//
#pragma once

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"

#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/SubtargetFeature.h"

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

/// Rewrites each load, store, phi, select and vector element move of bf16
/// values (scalars or vectors) in `m` as the same on their bits (i16), with
/// bitcasts around. LLVM's x86 backend keeps bf16 values in float registers and,
/// where the CPU has AVX512_BF16, narrows them back with vcvtneps2bf16, which
/// flushes subnormal inputs to zero: a plain copy lost bf16 subnormals. Run after
/// the optimizer, which would fold the bitcasts back. (The loop vectorizer's
/// masked loads and stores keep their bf16 vectors, which the backend moves
/// without converting: the partly masked blocks of
/// DeviceAgreement.BFloat16MovesKeepEveryBitOnEveryDevice go through them.)
void moveBF16AsBits(llvm::Module &m);

/// A target machine for the host CPU (its name and features), for the LLVM
/// optimization pipeline's cost models: without one the loop vectorizer sees no
/// vector registers. Null, with an error printed, if the host has no target.
std::unique_ptr<llvm::TargetMachine> createHostTargetMachine();

/// Turns off the host features whose instructions would flush subnormals
/// (AVX512_BF16's and AVX-NE-CONVERT's bf16 conversions).
void keepSubnormals(llvm::SubtargetFeatures &features);

/// Translates an LLVM-dialect module to LLVM IR, optimized at `optLevel` for the host.
std::unique_ptr<llvm::Module> translateToLLVMIR(mlir::ModuleOp module,
                                                llvm::LLVMContext &llvmContext,
                                                unsigned optLevel = 3);

} // namespace kiln::cpu
