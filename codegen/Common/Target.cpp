//===- Target.cpp - code generation targets and their pipelines -----------===//

#include "codegen/Common/Target.h"

#include "codegen/CPU/CPUPipeline.h"
#include "lib/Support/Checksum.h"
#include "dialects/Kiln/IR/KilnOps.h"
#include "dialects/KilnGPU/IR/KilnGPUDialect.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <cmath>

using namespace kiln;

static llvm::Error targetError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

llvm::Expected<Target> Target::parse(llvm::StringRef spec) {
  auto [name, chip] = spec.split(':');
  bool known = llvm::is_contained({"cpu", "host", "cuda", "amdgpu", "hip", "vulkan", "metal"},
                                  name);
  if (known && spec.ends_with(":")) // an empty chip is not the default one
    return targetError("target '" + spec + "' ends with ':' (" +
                       (name == "cpu" || name == "host" || name == "metal"
                            ? "it takes nothing after the name"
                            : "name a chip or version after it, or leave the ':' out") +
                       ")");
  Target t;
  if (name == "cpu" || name == "host") {
    if (!chip.empty())
      return targetError("the cpu target takes no chip, got '" + chip + "'");
    t.kind = Kind::CPU;
    return t;
  }
  if (name == "cuda") {
    t.kind = Kind::CUDA;
    t.chip = chip.empty() ? "sm_80" : chip.str();
    static const unsigned known[] = {70, 72, 75, 80, 86, 87, 89, 90, 100, 101, 103, 110, 120, 121};
    unsigned sm;
    if (!llvm::StringRef(t.chip).consume_front("sm_") ||
        llvm::StringRef(t.chip).drop_front(3).getAsInteger(10, sm) ||
        !llvm::is_contained(known, sm) || t.chip != "sm_" + std::to_string(sm))
      return targetError("unknown CUDA architecture '" + t.chip +
                         "' (expected sm_70, 72, 75, 80, 86, 87, 89, 90, 100, 101, 103, 110, 120 or "
                         "121, e.g. cuda:sm_90)");
    return t;
  }
  if (name == "amdgpu" || name == "hip") {
    t.kind = Kind::AMDGPU;
    t.chip = chip.empty() ? "gfx942" : chip.str();
    static const char *known[] = {"gfx90a", "gfx940", "gfx941", "gfx942", "gfx1030",
                                  "gfx1100", "gfx1101", "gfx1102"};
    if (!llvm::is_contained(known, t.chip))
      return targetError("unknown AMDGPU chip '" + t.chip +
                         "' (supported: gfx90a, gfx940-gfx942, gfx1030, gfx1100-gfx1102)");
    return t;
  }
  if (name == "vulkan" || name == "metal") {
    t.kind = name == "vulkan" ? Kind::Vulkan : Kind::Metal;
    // vulkan[:VERSION][:cpu][:shared=BYTES][:loose-specials][:float-atomic-add];
    // `cpu` tunes for an implementation on the host CPU, `shared` is the device's
    // maxComputeSharedMemorySize, `loose-specials` a device that cannot
    // preserve infinities, NaNs and signed zeros on request, `float-atomic-add`
    // one that adds f32 atomically (VK_EXT_shader_atomic_float).
    if (t.kind == Kind::Metal && !chip.empty())
      return targetError("unknown metal target '" + spec + "' (it takes no version or options)");
    llvm::StringRef version, rest = chip;
    llvm::StringSet<> seen; // each option at most once
    while (!rest.empty()) {
      auto [part, tail] = rest.split(':');
      rest = tail;
      if (part.empty())
        return targetError("target '" + spec + "' has an empty option between its ':'s");
      llvm::StringRef bytes = part;
      if (!seen.insert(part.split('=').first).second)
        return targetError("'" + part.split('=').first + "' is given twice in '" + spec + "'");
      if (t.kind == Kind::Vulkan && part == "cpu") {
        t.vulkanOnCPU = true;
      } else if (t.kind == Kind::Vulkan && part == "loose-specials") {
        t.vulkanLooseSpecials = true;
      } else if (t.kind == Kind::Vulkan && part == "float-atomic-add") {
        t.vulkanFloatAtomicAdd = true;
      } else if (t.kind == Kind::Vulkan && bytes.consume_front("shared=")) {
        if (bytes.getAsInteger(10, t.vulkanSharedBytes) || t.vulkanSharedBytes < 16 * 1024 ||
            t.vulkanSharedBytes > 1024 * 1024)
          return targetError("shared memory '" + part +
                             "' must be shared=BYTES, from 16384 (Vulkan's guarantee) to 1 MiB");
      } else if (version.empty() && !t.vulkanOnCPU && !t.vulkanSharedBytes &&
                 !t.vulkanLooseSpecials && !t.vulkanFloatAtomicAdd) {
        version = part;
      } else {
        return targetError(
            "unknown " + name + " target '" + spec +
            "' (expected vulkan[:1.1|1.2|1.3][:cpu][:shared=BYTES][:loose-specials]"
            "[:float-atomic-add])");
      }
    }
    if (version.empty())
      version = "1.2";
    if (version != "1.1" && version != "1.2" && version != "1.3")
      return targetError("unknown Vulkan version '" + version +
                         "' (expected 1.1, 1.2 or 1.3)");
    if (t.vulkanSharedBytes == 16 * 1024)
      t.vulkanSharedBytes = 0; // the default, spelled the default way
    t.chip = ("vulkan" + version).str();
    return t;
  }
  return targetError("unknown target '" + spec +
                     "' (expected cpu, cuda:sm_XX, amdgpu:gfxXXX, "
                     "vulkan[:1.1|1.2|1.3][:cpu][:shared=BYTES][:loose-specials]"
                     "[:float-atomic-add], metal)");
}

std::string Target::str() const {
  switch (kind) {
  case Kind::CPU: return "cpu";
  case Kind::CUDA: return "cuda:" + chip;
  case Kind::AMDGPU: return "amdgpu:" + chip;
  case Kind::Vulkan:
    return "vulkan:" + chip.substr(6) + (vulkanOnCPU ? ":cpu" : "") +
           (vulkanSharedBytes ? ":shared=" + std::to_string(vulkanSharedBytes) : "") +
           (vulkanLooseSpecials ? ":loose-specials" : "") +
           (vulkanFloatAtomicAdd ? ":float-atomic-add" : "");
  case Kind::Metal: return "metal";
  }
  return "?";
}

unsigned Target::warpSize() const {
  // CDNA (gfx9) runs 64-wide wavefronts; RDNA and NVIDIA 32. Vulkan and Metal
  // reduce with subgroup operations whose width the device decides.
  if (kind == Kind::AMDGPU && llvm::StringRef(chip).starts_with("gfx9"))
    return 64;
  return 32;
}

int64_t Target::sharedMemoryBytes() const {
  switch (kind) {
  case Kind::CUDA:
    // Per block with the dynamic shared memory opt-in (kernels above 48 KiB ask
    // for it at launch), from the CUDA programming guide's per-architecture table.
    switch (smVersion()) {
    case 90: case 100: case 101: case 103: return 227 * 1024;
    case 80: case 87: return 163 * 1024;
    case 86: case 89: case 120: case 121: return 99 * 1024;
    case 70: case 72: return 96 * 1024;
    case 75: return 64 * 1024;
    default: return 48 * 1024;
    }
  case Kind::AMDGPU: return 64 * 1024;
  case Kind::Vulkan: // the device's maxComputeSharedMemorySize, when the profile gives it
    return vulkanSharedBytes ? vulkanSharedBytes : 16 * 1024;
  case Kind::Metal: return 16 * 1024; // maxComputeSharedMemorySize guaranteed by Vulkan
  case Kind::CPU: return 0;
  }
  return 0;
}

unsigned Target::smVersion() const {
  unsigned sm = 0;
  if (kind != Kind::CUDA || llvm::StringRef(chip).drop_front(3).getAsInteger(10, sm))
    return 0;
  return sm;
}

std::string Target::ptxChip() const {
  // wgmma and the other sm_90 warpgroup instructions exist only in the
  // architecture-specific sm_90a; its code runs on every sm_90 device. LLVM 19
  // knows nothing newer than sm_90: Blackwell (sm_100 ... sm_121, and sm_110,
  // which CUDA 13 calls the Thor chip that CUDA 12.8 called sm_101) gets sm_90 PTX
  // (mma.sync, no sm_90a instructions), which ptxas and the driver's JIT
  // compile for the newer architecture.
  if (smVersion() == 90)
    return "sm_90a";
  return isNewerThanLLVM() ? "sm_90" : chip;
}

std::string Target::matrixUnits() const {
  if (!matrixUnitsOverride.empty())
    return matrixUnitsOverride;
  if (smVersion() == 90)
    return "wgmma";
  if (smVersion() >= 80)
    return "mma-sync";
  if (kind == Kind::AMDGPU && (chip == "gfx90a" || llvm::StringRef(chip).starts_with("gfx94")))
    return "mfma";
  if (kind == Kind::AMDGPU && llvm::StringRef(chip).starts_with("gfx11"))
    return "wmma";
  return "none";
}

std::vector<std::string> Target::availableMatrixUnits() const {
  std::vector<std::string> units = {"none"};
  if (smVersion() >= 80)
    units.push_back("mma-sync");
  if (smVersion() == 90)
    units.push_back("wgmma");
  Target best = *this;
  best.matrixUnitsOverride.clear();
  if (kind == Kind::AMDGPU && best.matrixUnits() != "none")
    units.push_back(best.matrixUnits());
  return units;
}

llvm::Error Target::setMatrixUnits(llvm::StringRef units) {
  if (units == "auto") {
    matrixUnitsOverride.clear();
    return llvm::Error::success();
  }
  std::vector<std::string> available = availableMatrixUnits();
  if (!llvm::is_contained(available, units))
    return targetError("matrix units '" + units + "' are not available on " + str() +
                       " (choose auto, " + llvm::join(available, ", ") + ")");
  matrixUnitsOverride = units.str();
  return llvm::Error::success();
}

std::vector<std::string> Target::emits() const {
  std::vector<std::string> common = {"ast", "kiln"};
  switch (kind) {
  case Kind::CPU: common.insert(common.end(), {"llvm-mlir", "llvm", "asm", "obj", "so"}); break;
  case Kind::CUDA:
    common.insert(common.end(), {"kiln-gpu", "gpu", "llvm-mlir", "llvm", "ptx", "cubin"});
    break;
  case Kind::AMDGPU:
    common.insert(common.end(), {"kiln-gpu", "gpu", "llvm-mlir", "llvm", "asm", "hsaco"});
    break;
  case Kind::Vulkan: common.insert(common.end(), {"kiln-gpu", "gpu", "spirv-mlir", "spirv"}); break;
  case Kind::Metal: common.insert(common.end(), {"kiln-gpu", "gpu", "spirv-mlir", "msl"}); break;
  }
  return common;
}

std::string kiln::pipelineUpTo(const Target &target, Stage stage) {
  if (target.kind == Target::Kind::CPU)
    return cpu::pipelineString();
  bool spirv = target.kind == Target::Kind::Vulkan || target.kind == Target::Kind::Metal;
  std::string units = target.matrixUnits();
  // CDNA3 (gfx94x) has MFMA forms CDNA2 lacks and lacks some it has (int8 at K =
  // 32, not 16): the passes are told which MFMA they have.
  if (units == "mfma" && llvm::StringRef(target.chip).starts_with("gfx94"))
    units = "mfma-cdna3";
  // Vulkan on the CPU (lavapipe) runs a workgroup's invocations as SIMD batches on
  // one core and a barrier switches between them, so kernels that exchange
  // elements run fastest with few warps, down to one, as long as no thread holds
  // more than 32 elements of a tile (beyond that lavapipe's shader compile time
  // explodes: 33 s instead of 1.5 s for a 4 x 1024 argmax); elementwise kernels
  // run fastest with eight (four elements each).
  unsigned elementwiseWarps = target.vulkanOnCPU ? 8 : 0;
  unsigned exchangeRegisters = target.vulkanOnCPU ? 32 : 0;
  std::string passes =
      llvm::formatv("kiln-expand-associative-scans,inline,canonicalize,cse,"
                    "kiln-simplify-masks,symbol-dce,"
                    "convert-kiln-to-kiln-gpu{{num-warps=4 elementwise-warps={3} "
                    "exchange-registers={4} warp-size={0}},kiln-gpu-coalesce,"
                    "kiln-gpu-allocate-shared-memory{{max-bytes={1} matrix-units={2} "
                    "integer-atomics-only={5} float-atomic-add={6}}",
                    target.warpSize(), target.sharedMemoryBytes(), units, elementwiseWarps,
                    exchangeRegisters, spirv, target.vulkanFloatAtomicAdd)
          .str();
  // CUDA declares up to 48 KiB of shared memory statically; beyond that it is
  // requested at launch.
  int64_t dynamicAbove = target.kind == Target::Kind::CUDA ? 48 * 1024 : 0;
  if (stage >= Stage::ThreadCode) {
    bool amd = target.kind == Target::Kind::AMDGPU;
    // lavapipe ends an invocation's loops after 65535 iterations in all (Mesa's
    // LP_MAX_TGSI_LOOP_ITERATIONS); kernels that may loop longer check it.
    int64_t loopLimit = target.vulkanOnCPU ? 65535 : 0;
    passes += llvm::formatv(",convert-kiln-gpu-to-gpu{{memory={0} subgroup-reduce={1} "
                            "vendor={2} matrix-units={3} dynamic-shared-above={4} "
                            "float-atomic-add={5} loop-limit={6}},canonicalize,cse",
                            spirv ? "spirv" : "llvm",
                            spirv ? "native" : amd ? "amd-swizzle" : "shuffle",
                            spirv ? "any" : amd ? "amd" : "nvidia", units, dynamicAbove,
                            target.vulkanFloatAtomicAdd, loopLimit)
                  .str();
  }
  if (stage >= Stage::Device)
    passes += "," + devicePipeline(target);
  return "builtin.module(" + passes + ")";
}

std::string kiln::devicePipeline(const Target &target) {
  switch (target.kind) {
  case Target::Kind::CUDA:
    // PTX ISA 8.4 (CUDA 12.4) is the first with fp8 mma.sync; sm_90 code
    // declares it, older architectures keep LLVM's default. bf16 arithmetic is
    // sm_80's: before it, it runs in f32, max and min as compares (LLVM's NVPTX
    // backend cannot select the bf16 maximum InstCombine narrows them to).
    return llvm::formatv("nvvm-attach-target{{chip={0} O=3{1}},"
                         "gpu.module(math-legalize-to-f32,kiln-keep-float-roundings),"
                         "kiln-approximate-math{{target=nvvm},"
                         "gpu.module(convert-scf-to-cf,{2}"
                         "arith-emulate-unsupported-floats{{source-types={3}f8E4M3FN,f8E5M2 "
                         "target-type=f32},kiln-keep-float-roundings,kiln-expand-f8,"
                         "convert-gpu-to-nvvm,convert-math-to-llvm),"
                         "reconcile-unrealized-casts,kiln-extern-dynamic-shared",
                         target.ptxChip(), target.smVersion() >= 90 ? " features=+ptx84" : "",
                         target.smVersion() >= 80 ? "" : "kiln-expand-min-max,",
                         target.smVersion() >= 80 ? "" : "bf16,")
        .str();
  case Target::Kind::AMDGPU:
    return llvm::formatv("rocdl-attach-target{{chip={0} O=3},"
                         "gpu.module(math-legalize-to-f32,kiln-keep-float-roundings,"
                         "convert-scf-to-cf,"
                         "arith-emulate-unsupported-floats{{source-types=bf16,f8E4M3FN,f8E5M2 "
                         "target-type=f32},kiln-keep-float-roundings,"
                         "kiln-expand-f8{{narrow-bf16=1},arith-expand{{include-bf16=1},"
                         "convert-gpu-to-rocdl{{chipset={0} runtime=HIP},"
                         "convert-math-to-llvm),"
                         "reconcile-unrealized-casts,kiln-bitcast-bf16-casts",
                         target.chip)
        .str();
  case Target::Kind::Vulkan:
  case Target::Kind::Metal:
    // SPIR-V has no 8-bit floats and no bfloat16: as on AMD, arithmetic and math
    // on them (and math on f16, as on NVIDIA) run in f32 (math before the
    // approximations, whose MLIR patterns take f32 and f16 only), their conversions
    // become integer arithmetic (kiln-expand-f8, arith-expand) and their values
    // their bits (kiln-retype-unsupported-floats).
    return llvm::formatv("kiln-attach-spirv-target{{client={0} float-atomic-add={2}},"
                         "gpu.module(math-legalize-to-f32,kiln-keep-float-roundings),"
                         "kiln-spirv-remainders," // before: its ctlz are expanded there
                         "kiln-approximate-math{{target=spirv},"
                         "gpu.module(arith-emulate-unsupported-floats{{source-types=bf16,"
                         "f8E4M3FN,f8E5M2 target-type=f32},kiln-keep-float-roundings,"
                         "kiln-expand-f8{{narrow-bf16=1},"
                         "arith-expand{{include-bf16=1}),kiln-retype-unsupported-floats,"
                         "gpu.module(kiln-spirv-sign-extensions,map-memref-spirv-storage-class,"
                         "convert-math-to-spirv),"
                         "kiln-gpu-to-spirv,"
                         "spirv.module(spirv-lower-abi-attrs,spirv-update-vce),"
                         "kiln-spirv-int64-atomics,"
                         "kiln-spirv-unbind-push-constants{1}",
                         target.chip,
                         // Metal's SPIRV-Cross writes NoContraction arithmetic as
                         // calls of [[clang::optnone]] helpers.
                         target.kind != Target::Kind::Vulkan ? ""
                         : target.vulkanLooseSpecials
                             ? ",kiln-spirv-exact-floats{preserve-specials=0}"
                             : ",kiln-spirv-exact-floats",
                         target.vulkanFloatAtomicAdd)
        .str();
  case Target::Kind::CPU:
    break;
  }
  return "";
}

void kiln::collectLaunchInfo(mlir::ModuleOp module, std::vector<KernelInfo> &kernels) {
  module.walk([&](mlir::gpu::GPUFuncOp f) {
    for (KernelInfo &k : kernels) {
      if (f.getName() != k.name)
        continue;
      if (auto t = f->getAttrOfType<mlir::IntegerAttr>(gpu::kThreadsAttr))
        k.threadsPerBlock = t.getInt();
      if (auto s = f->getAttrOfType<mlir::IntegerAttr>(gpu::kSharedBytesAttr))
        k.sharedMemoryBytes = s.getInt();
      k.dynamicSharedMemory = f->hasAttr(gpu::kDynamicSharedAttr);
      auto shapeOf = [](mlir::DictionaryAttr entry) {
        llvm::ArrayRef<int64_t> shape = entry.getAs<mlir::DenseI64ArrayAttr>("shape");
        return std::vector<int64_t>(shape.begin(), shape.end());
      };
      if (auto asserts = f->getAttrOfType<mlir::ArrayAttr>(gpu::kAssertsAttr))
        for (auto a : asserts.getAsRange<mlir::DictionaryAttr>())
          k.asserts.push_back({a.getAs<mlir::StringAttr>("message").str(), shapeOf(a)});
      if (auto prints = f->getAttrOfType<mlir::ArrayAttr>(gpu::kPrintsAttr))
        for (auto p : prints.getAsRange<mlir::DictionaryAttr>()) {
          PrintInfo print{p.getAs<mlir::StringAttr>("prefix").str(), shapeOf(p)};
          if (auto dtype = parseDType(p.getAs<mlir::StringAttr>("dtype").strref().str())) {
            print.hasValue = true;
            print.dtype = *dtype;
          }
          if (auto hex = p.getAs<mlir::IntegerAttr>("hex"))
            print.hexDigits = hex.getInt();
          k.prints.push_back(std::move(print));
        }
    }
  });
}

std::string kiln::targetPipeline(const Target &target) {
  return pipelineUpTo(target, Stage::Device);
}

mlir::LogicalResult kiln::checkTargetSupport(mlir::ModuleOp module, const Target &target) {
  auto unsupported = [&](mlir::Type type) -> const char * {
    mlir::Type elem = mlir::getElementTypeOrSelf(type);
    if (target.kind == Target::Kind::Metal && elem.isF64())
      return "f64 is not supported on the metal target (Metal has no double precision)";
    return nullptr;
  };
  // GLSL.std.450 has no f64 transcendental functions; kiln-approximate-math
  // computes these for f64 (passes/GPU/ExactMath.h: each thread's scalars), and
  // SPIR-V has the rest of the list. Other f64 math would be invalid SPIR-V.
  auto vulkanF64 = [](mlir::Operation *op) {
    static const llvm::StringRef handled[] = {
        "exp",   "exp2",  "expm1",  "log",   "log2",      "log10", "log1p", "sin",
        "cos",   "tan",   "atan",   "atan2", "asin",      "acos",  "sinh",  "cosh",
        "tanh",  "asinh", "acosh",  "atanh", "cbrt",      "erf",   "powf",  "sqrt",
        "rsqrt", "floor", "ceil",   "round", "roundeven", "trunc", "absf",  "fma",
        "copysign", "isnan", "isinf", "isfinite"};
    return llvm::is_contained(handled, op->getName().stripDialect());
  };
  mlir::WalkResult result = module.walk([&](mlir::Operation *op) {
    // PTX identifiers are `[a-zA-Z][a-zA-Z0-9_$]*` or `[_$%][a-zA-Z0-9_$]+`, and
    // WARP_SZ is its one predefined name without `%`: ptxas rejects both kernel names.
    if (target.kind == Target::Kind::CUDA && op->hasAttr("kiln.kernel")) {
      llvm::StringRef name = mlir::SymbolTable::getSymbolName(op).getValue();
      if (name == "_" || name == "WARP_SZ") {
        op->emitError() << "kernel name '" << name << "' is "
                        << (name == "_" ? "not a PTX identifier" : "reserved in PTX")
                        << " (the cuda target); rename the kernel";
        return mlir::WalkResult::interrupt();
      }
    }
    if (target.kind == Target::Kind::Metal && mlir::isa<AtomicRMWOp, AtomicSwapOp>(op) &&
        mlir::getElementTypeOrSelf(op->getResult(0)).getIntOrFloatBitWidth() == 64) {
      op->emitError("64-bit atomics are not supported on the metal target (Metal has 32-bit "
                    "atomics only)");
      return mlir::WalkResult::interrupt();
    }
    if (target.kind == Target::Kind::Vulkan && op->getName().getDialectNamespace() == "math" &&
        op->getNumOperands() && mlir::getElementTypeOrSelf(op->getOperand(0)).isF64() &&
        !vulkanF64(op)) {
      op->emitError() << op->getName().stripDialect()
                      << " of f64 is not supported on the vulkan target; cast to f32 first";
      return mlir::WalkResult::interrupt();
    }
    auto check = [&](mlir::Type t) {
      if (const char *why = unsupported(t)) {
        op->emitError(why);
        return true;
      }
      return false;
    };
    for (mlir::Type t : op->getResultTypes())
      if (check(t))
        return mlir::WalkResult::interrupt();
    for (mlir::Region &region : op->getRegions())
      for (mlir::Block &block : region)
        for (mlir::BlockArgument arg : block.getArguments())
          if (const char *why = unsupported(arg.getType())) {
            mlir::emitError(arg.getLoc(), why);
            return mlir::WalkResult::interrupt();
          }
    return mlir::WalkResult::advance();
  });
  return mlir::failure(result.wasInterrupted());
}

mlir::LogicalResult kiln::runPipeline(mlir::ModuleOp module, llvm::StringRef pipeline,
                                      bool timePasses) {
  mlir::PassManager pm(module.getContext());
  if (timePasses)
    pm.enableTiming();
  llvm::StringRef inner = pipeline;
  if (!inner.consume_front("builtin.module(") || !inner.consume_back(")")) {
    llvm::errs() << "error: a pipeline must be builtin.module(...)\n";
    return mlir::failure();
  }
  if (mlir::failed(mlir::parsePassPipeline(inner, pm, llvm::errs())))
    return mlir::failure();
  return pm.run(module);
}

std::string kiln::kernelMetadataJSON(const std::vector<KernelInfo> &kernels,
                                     const Target &target, const std::string *binary) {
  llvm::json::Array list;
  for (const KernelInfo &k : kernels) {
    llvm::json::Array args;
    for (const ArgInfo &a : k.args) {
      llvm::json::Array dims;
      for (const std::string &d : a.dims)
        dims.push_back(d);
      args.push_back(llvm::json::Object{{"name", a.name},
                                        {"kind", a.isTensor ? "tensor" : "scalar"},
                                        {"dtype", dtypeName(a.dtype)},
                                        {"dims", std::move(dims)}});
    }
    llvm::json::Object params, tune;
    for (const ParamValue &p : k.params) {
      // JSON has no infinities or NaN: those values are written as strings.
      if (std::isfinite(p.value))
        params[p.name] = p.value;
      else
        params[p.name] = std::isnan(p.value) ? "nan" : p.value > 0 ? "inf" : "-inf";
      if (!p.tune.empty())
        tune[p.name] = llvm::json::Array(p.tune);
    }
    llvm::json::Array grid;
    for (const std::string &g : k.grid)
      grid.push_back(g);
    llvm::json::Array asserts, prints;
    for (const AssertInfo &a : k.asserts)
      asserts.push_back(
          llvm::json::Object{{"message", a.message}, {"shape", llvm::json::Array(a.shape)}});
    for (const PrintInfo &p : k.prints)
      prints.push_back(llvm::json::Object{{"prefix", p.prefix},
                                          {"shape", llvm::json::Array(p.shape)},
                                          {"dtype", p.hasValue ? dtypeName(p.dtype) : ""},
                                          {"hex", p.hexDigits}});
    llvm::json::Object kernel{
        {"name", k.name},
        {"args", std::move(args)},
        {"params", std::move(params)},
        {"tune", std::move(tune)},
        {"grid", std::move(grid)},
        {"threads_per_block", llvm::json::Array{k.threadsPerBlock, 1, 1}},
        {"shared_memory_bytes", k.sharedMemoryBytes},
        {"dynamic_shared_memory", k.dynamicSharedMemory},
        {"asserts", std::move(asserts)},
        {"prints", std::move(prints)},
    };
    if (!k.mslEntry.empty())
      kernel["msl_entry"] = k.mslEntry;
    list.push_back(std::move(kernel));
  }
  llvm::json::Object root{
      {"target", target.str()},
      {"abi", target.isGPU()
                  ? (target.kind == Target::Kind::Vulkan || target.kind == Target::Kind::Metal
                         ? "one program per workgroup; each tensor argument is a storage buffer "
                           "binding in set 0, in order; the push constants start with six i32 "
                           "grid words: the program ids of the dispatch's first workgroup (x, y, "
                           "z), then the whole grid (x, y, z); each tensor's sizes and strides "
                           "(i32, elements) and every scalar argument follow as 32-bit words in "
                           "argument order, 64-bit scalars as two words, low first, in the push "
                           "constants while all fit in 128 bytes, else in an argument buffer "
                           "bound last; a kernel with asserts or prints takes one more binding "
                           "after the tensors: its debug buffer (kiln/KernelInfo.h)"
                         : "one program per block; each tensor argument is passed as its base "
                           "pointer followed by its sizes (i32) and strides (i32, in elements); "
                           "i1 scalars are passed as i32")
                  : "the _mlir_<kernel> entry takes a void** of argument pointers; tensors "
                    "expand to memref descriptors; six i32 program coordinates follow"},
      {"kernels", std::move(list)}};
  if (binary)
    root["checksum"] = binaryChecksum(*binary);
  std::string out;
  llvm::raw_string_ostream os(out);
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(root))) << "\n";
  return out;
}
