//===- CPUPipeline.cpp - kiln IR to the LLVM dialect for the host ---------===//

#include "codegen/CPU/CPUPipeline.h"

#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"

#include "llvm/IR/IRBuilder.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/SubtargetFeature.h"

#include <mutex>

using namespace mlir;

/// The micro-kernel's register budget on this host: 32 x 512-bit registers
/// with AVX-512, 16 x 256-bit with AVX2, else 16 x 128-bit (SSE, NEON); and
/// whether x86's pmaddwd exists at that width for integer pairs.
static std::string hostVectorOptions() {
  llvm::StringMap<bool> features = llvm::sys::getHostCPUFeatures();
  auto has = [&](llvm::StringRef f) { return features.lookup(f); };
  if (has("avx512f"))
    return std::string("register-bits=512 registers=32 x86-pmaddwd=") +
           (has("avx512bw") ? "1" : "0");
  if (has("avx2"))
    return "register-bits=256 registers=16 x86-pmaddwd=1";
  return std::string("register-bits=128 registers=16 x86-pmaddwd=") + (has("sse2") ? "1" : "0");
}

const std::string &kiln::cpu::pipelineString() {
  // Stages: kiln cleanups; program ids become arguments; tiles become linalg on
  // tensors and fuse; bufferize; loops; everything to the LLVM dialect.
  static const std::string pipeline =
      "builtin.module("
      "kiln-expand-associative-scans{keep-foldable=1},"
      "inline,canonicalize,cse,kiln-simplify-masks,symbol-dce,"
      "kiln-lower-program-ids,convert-kiln-to-linalg,symbol-dce,"
      "func.func(convert-elementwise-to-linalg,kiln-fuse-elementwise),"
      "canonicalize,cse,func.func(kiln-widen-bool-tiles,kiln-reuse-input-buffers,kiln-vectorize-elementwise),"
      "canonicalize,func.func(kiln-split-empty-tensors),"
      "one-shot-bufferize{allow-return-allocs-from-loops=1 bufferize-function-boundaries=1 "
      "function-boundary-type-conversion=identity-layout-map},"
      "func.func(buffer-hoisting,buffer-loop-hoisting,kiln-promote-tiles-to-stack),"
      "buffer-deallocation-pipeline,"
      "func.func(kiln-lower-compare-and-swap,kiln-lower-strided-copies),"
      "func.func(kiln-cpu-prefetch-tiles,kiln-cpu-vectorize-tile-copies,"
      "kiln-cpu-matmul-microkernel{" + hostVectorOptions() + "}),"
      "func.func(convert-linalg-to-loops),canonicalize,cse,"
      "func.func(kiln-lower-outer-reductions,"
      "lower-vector-multi-reduction{lowering-strategy=inner-reduction},convert-vector-to-scf,"
      "kiln-hoist-loop-allocas),"
      "expand-strided-metadata,lower-affine,convert-scf-to-cf,"
      "func.func(kiln-annotate-access-loops,kiln-branch-memref-selects,"
      "arith-emulate-unsupported-floats{source-types=bf16,f16,f8E4M3FN,f8E5M2 "
      "target-type=f32},kiln-keep-float-roundings,kiln-expand-f8{narrow-bf16=1}),"
      // math-to-libm scalarizes vector math it calls out for (tanh, erf, ...) with
      // vector ops, so it runs before the vector lowering.
      "func.func(kiln-cpu-vector-math),convert-math-to-llvm,convert-math-to-libm,"
      "convert-vector-to-llvm{reassociate-fp-reductions=1},"
      "arith-expand{include-bf16=1},"
      "convert-arith-to-llvm,convert-index-to-llvm,finalize-memref-to-llvm,"
      "convert-func-to-llvm,convert-cf-to-llvm,reconcile-unrealized-casts,"
      "canonicalize)";
  return pipeline;
}

LogicalResult kiln::cpu::lowerToLLVMDialect(ModuleOp module, bool timePasses) {
  PassManager pm(module.getContext());
  if (timePasses)
    pm.enableTiming();
  // The string names its anchor (builtin.module); parse what runs inside it.
  llvm::StringRef inner = pipelineString();
  inner = inner.drop_front(llvm::StringRef("builtin.module(").size()).drop_back();
  if (failed(parsePassPipeline(inner, pm, llvm::errs())))
    return failure();
  return pm.run(module);
}

/// Block placement ends with a branch-folding run whose tail merging grows with
/// the square of a block's predecessors: a static_range of masked scalar loads
/// (one branch each, all joining one block after jump threading) took 24 s at
/// 24 x 24 and 261 s at 30 x 30 for an AVX host (1.8 s without it). The branch
/// folder that runs before placement still merges tails. A program that sets
/// the option itself keeps its choice.
static void boundCodeGenerationTime() {
  llvm::StringMap<llvm::cl::Option *> &options = llvm::cl::getRegisteredOptions();
  auto it = options.find("branch-fold-placement");
  if (it != options.end() && it->second->getNumOccurrences() == 0)
    it->second->addOccurrence(0, "branch-fold-placement", "false");
}

void kiln::cpu::initializeHostTarget() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    boundCodeGenerationTime();
  });
}

void kiln::cpu::keepSubnormals(llvm::SubtargetFeatures &features) {
  // Their f32 -> bf16 conversions (vcvtneps2bf16) flush subnormal inputs and
  // results to zero whatever MXCSR says; Kiln's bf16 keeps every bit, as the
  // GPUs' conversions do, so LLVM rounds with integer operations instead.
  features.AddFeature("avx512bf16", false);
  features.AddFeature("avxneconvert", false);
}

std::unique_ptr<llvm::TargetMachine> kiln::cpu::createHostTargetMachine() {
  initializeHostTarget();
  std::string error;
  std::string triple = llvm::sys::getProcessTriple();
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target) {
    llvm::errs() << "error: no LLVM target for " << triple << ": " << error << "\n";
    return nullptr;
  }
  llvm::SubtargetFeatures features;
  for (const auto &[feature, enabled] : llvm::sys::getHostCPUFeatures())
    features.AddFeature(feature, enabled);
  keepSubnormals(features);
  return std::unique_ptr<llvm::TargetMachine>(target->createTargetMachine(
      triple, llvm::sys::getHostCPUName(), features.getString(), {}, std::nullopt));
}

void kiln::cpu::moveBF16AsBits(llvm::Module &m) {
  auto bitsOf = [](llvm::Type *type) -> llvm::Type * {
    if (!type->getScalarType()->isBFloatTy())
      return nullptr;
    llvm::Type *i16 = llvm::Type::getInt16Ty(type->getContext());
    if (auto *vector = llvm::dyn_cast<llvm::VectorType>(type))
      return llvm::VectorType::get(i16, vector->getElementCount());
    return i16;
  };
  for (llvm::Function &f : m)
    for (llvm::BasicBlock &block : f)
      for (llvm::Instruction &inst : llvm::make_early_inc_range(block)) {
        llvm::IRBuilder<> b(&inst);
        // Each operand as bits: bf16 values through a bitcast, others as they are.
        auto asBits = [&](llvm::Value *v) -> llvm::Value * {
          llvm::Type *bits = bitsOf(v->getType());
          return bits ? b.CreateBitCast(v, bits) : v;
        };
        llvm::Type *bits = bitsOf(inst.getType());
        llvm::Value *raw = nullptr;
        if (auto *load = llvm::dyn_cast<llvm::LoadInst>(&inst)) {
          if (!bits || load->isAtomic())
            continue;
          raw = b.CreateAlignedLoad(bits, load->getPointerOperand(), load->getAlign(),
                                    load->isVolatile());
        } else if (auto *store = llvm::dyn_cast<llvm::StoreInst>(&inst)) {
          if (!bitsOf(store->getValueOperand()->getType()) || store->isAtomic())
            continue;
          b.CreateAlignedStore(asBits(store->getValueOperand()), store->getPointerOperand(),
                               store->getAlign(), store->isVolatile())
              ->copyMetadata(*store);
          store->eraseFromParent();
          continue;
        } else if (!bits) {
          continue;
        } else if (auto *phi = llvm::dyn_cast<llvm::PHINode>(&inst)) {
          // An invoke's result is defined only on its edges: no cast can
          // precede that block's terminator (Kiln's kernels have no invokes).
          if (llvm::any_of(phi->incoming_values(),
                           [](llvm::Value *v) { return llvm::isa<llvm::InvokeInst>(v); }))
            continue;
          llvm::PHINode *bitsPhi = b.CreatePHI(bits, phi->getNumIncomingValues());
          llvm::DenseMap<llvm::BasicBlock *, llvm::Value *> castIn; // one per block
          for (unsigned i = 0; i < phi->getNumIncomingValues(); ++i) {
            llvm::BasicBlock *from = phi->getIncomingBlock(i);
            llvm::Value *&cast = castIn[from];
            if (!cast)
              cast = llvm::IRBuilder<>(from->getTerminator())
                         .CreateBitCast(phi->getIncomingValue(i), bits);
            bitsPhi->addIncoming(cast, from);
          }
          b.SetInsertPoint(&*block.getFirstInsertionPt());
          raw = bitsPhi;
        } else if (auto *select = llvm::dyn_cast<llvm::SelectInst>(&inst)) {
          raw = b.CreateSelect(select->getCondition(), asBits(select->getTrueValue()),
                               asBits(select->getFalseValue()));
        } else if (auto *extract = llvm::dyn_cast<llvm::ExtractElementInst>(&inst)) {
          raw = b.CreateExtractElement(asBits(extract->getVectorOperand()),
                                       extract->getIndexOperand());
        } else if (auto *insert = llvm::dyn_cast<llvm::InsertElementInst>(&inst)) {
          raw = b.CreateInsertElement(asBits(insert->getOperand(0)),
                                      asBits(insert->getOperand(1)), insert->getOperand(2));
        } else if (auto *shuffle = llvm::dyn_cast<llvm::ShuffleVectorInst>(&inst)) {
          raw = b.CreateShuffleVector(asBits(shuffle->getOperand(0)),
                                      asBits(shuffle->getOperand(1)), shuffle->getShuffleMask());
        } else {
          continue; // arithmetic and conversions (none reach here: arith-expand)
        }
        if (auto *rawInst = llvm::dyn_cast<llvm::Instruction>(raw))
          rawInst->copyMetadata(inst);
        inst.replaceAllUsesWith(b.CreateBitCast(raw, inst.getType()));
        inst.eraseFromParent();
      }
  // Bits cast to bf16 and back are the bits: no bf16 value is left to cross a
  // block boundary or to be moved.
  for (llvm::Function &f : m)
    for (llvm::BasicBlock &block : f)
      for (llvm::Instruction &inst : llvm::make_early_inc_range(block))
        if (auto *outer = llvm::dyn_cast<llvm::BitCastInst>(&inst)) {
          if (auto *inner = llvm::dyn_cast<llvm::BitCastInst>(outer->getOperand(0));
              inner && inner->getSrcTy() == outer->getDestTy())
            outer->replaceAllUsesWith(inner->getOperand(0));
        }
  for (bool erased = true; erased;) { // an inner cast may come in an earlier block
    erased = false;
    for (llvm::Function &f : m)
      for (llvm::BasicBlock &block : f)
        for (llvm::Instruction &inst : llvm::make_early_inc_range(llvm::reverse(block)))
          if (llvm::isa<llvm::BitCastInst>(inst) && inst.use_empty()) {
            inst.eraseFromParent();
            erased = true;
          }
  }
}

std::unique_ptr<llvm::Module> kiln::cpu::translateToLLVMIR(ModuleOp module,
                                                           llvm::LLVMContext &llvmContext,
                                                           unsigned optLevel) {
  initializeHostTarget();
  registerBuiltinDialectTranslation(*module.getContext());
  registerLLVMDialectTranslation(*module.getContext());
  auto llvmModule = translateModuleToLLVMIR(module, llvmContext);
  if (!llvmModule)
    return nullptr;
  std::unique_ptr<llvm::TargetMachine> machine = createHostTargetMachine();
  if (!machine)
    return nullptr;
  llvmModule->setDataLayout(machine->createDataLayout());
  llvmModule->setTargetTriple(machine->getTargetTriple().str());
  auto optimize = makeOptimizingTransformer(optLevel, /*sizeLevel=*/0, machine.get());
  if (auto err = optimize(llvmModule.get())) {
    llvm::errs() << "error: LLVM optimization failed: " << llvm::toString(std::move(err)) << "\n";
    return nullptr;
  }
  moveBF16AsBits(*llvmModule);
  return llvmModule;
}
