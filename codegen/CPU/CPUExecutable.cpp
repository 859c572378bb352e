//===- CPUExecutable.cpp - JIT-compiled kernels on the host ---------------===//

#include "codegen/CPU/CPUExecutable.h"
#include "codegen/CPU/CPUPipeline.h"
#include "lib/Support/GridRule.h"
#include "lib/Support/PackedArgs.h"
#include "lib/Support/ValidateArgs.h"
#include "lib/Support/ThreadPool.h"

#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"

#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/AsmParser/Parser.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/GlobalVariable.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/Linker/Linker.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"

#include <limits>
#include <map>

using namespace kiln;
using namespace kiln::cpu;

static llvm::Error makeError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// The conversions to bf16 that LLVM's x86 backend may call rather than
/// inline: it keeps bf16 values in float registers where a subtarget has no
/// bf16 arithmetic (AVX-512 without AVX512_BF16), and truncates them back with
/// these libcalls. libgcc has them only from GCC 13, so an object calling them
/// would not load (`undefined symbol: __truncsfbf2`); every module carries its
/// own, hidden. Float to bf16 rounds to nearest even and quiets NaNs, as
/// Kiln's own casts do; double to bf16 first narrows to float rounding to odd
/// (toward zero, then the last bit set when inexact), which makes the second
/// rounding exact.
static constexpr const char *kBF16Conversions = R"(
define hidden bfloat @__truncsfbf2(float %x) {
  %bits = bitcast float %x to i32
  %high = lshr i32 %bits, 16
  %lsb = and i32 %high, 1
  %bias = add i32 %lsb, 32767
  %sum = add i32 %bits, %bias
  %rounded = lshr i32 %sum, 16
  %quiet = or i32 %high, 64
  %nan = fcmp uno float %x, 0.0
  %result = select i1 %nan, i32 %quiet, i32 %rounded
  %half = trunc i32 %result to i16
  %bf = bitcast i16 %half to bfloat
  ret bfloat %bf
}

define hidden bfloat @__truncdfbf2(double %x) {
  %near = fptrunc double %x to float
  %back = fpext float %near to double
  %bits = bitcast float %near to i32
  %absX = call double @llvm.fabs.f64(double %x)
  %absBack = call double @llvm.fabs.f64(double %back)
  %above = fcmp ogt double %absBack, %absX
  %lower = sub i32 %bits, 1
  %towardZero = select i1 %above, i32 %lower, i32 %bits
  %inexact = fcmp une double %back, %x
  %odd = or i32 %towardZero, 1
  %toOdd = select i1 %inexact, i32 %odd, i32 %towardZero
  %narrow = bitcast i32 %toOdd to float
  %bf = call bfloat @__truncsfbf2(float %narrow)
  ret bfloat %bf
}

declare double @llvm.fabs.f64(double)
)";

/// Links kBF16Conversions into `m`.
static llvm::Error addBF16Conversions(llvm::Module &m) {
  llvm::SMDiagnostic diag;
  std::unique_ptr<llvm::Module> helpers =
      llvm::parseAssemblyString(kBF16Conversions, diag, m.getContext());
  if (!helpers)
    return makeError("bf16 conversion helpers: " + diag.getMessage());
  helpers->setDataLayout(m.getDataLayout());
  helpers->setTargetTriple(m.getTargetTriple());
  if (llvm::Linker::linkModules(m, std::move(helpers)))
    return makeError("cannot link the bf16 conversion helpers");
  return llvm::Error::success();
}

/// Gives each kernel's function internal linkage: only its `_mlir_` entry is
/// the module's interface. Exported, a kernel named like a function of the C
/// library (`brk`, `index`, `exp`, `select`) was not what its entry called: in a
/// shared object loaded with dlopen the call binds to the first definition in
/// the global scope, so `_mlir_brk` called libc's brk(2) and corrupted the heap.
static void internalizeKernels(llvm::Module &m, const std::vector<KernelInfo> &kernels) {
  for (const KernelInfo &k : kernels)
    if (llvm::Function *f = m.getFunction(k.name); f && !f->isDeclaration())
      f->setLinkage(llvm::GlobalValue::InternalLinkage);
}

/// Adds each kernel's abiSignature as the exported C string
/// `_kiln_abi_<kernel>`, which kiln-rt checks against the metadata.
static void addABISignatures(llvm::Module &m, const std::vector<KernelInfo> &kernels) {
  for (const KernelInfo &k : kernels) {
    llvm::Constant *text = llvm::ConstantDataArray::getString(m.getContext(), abiSignature(k));
    new llvm::GlobalVariable(m, text->getType(), /*isConstant=*/true,
                             llvm::GlobalValue::ExternalLinkage, text, "_kiln_abi_" + k.name);
  }
}

Executable::~Executable() = default;

llvm::Expected<std::unique_ptr<Executable>>
Executable::create(mlir::ModuleOp module, std::vector<KernelInfo> kernels, unsigned optLevel) {
  initializeHostTarget();
  mlir::registerBuiltinDialectTranslation(*module.getContext());
  mlir::registerLLVMDialectTranslation(*module.getContext());
  std::unique_ptr<Executable> exe(new Executable());
  // The options hold a function_ref: the transformer must outlive create(),
  // which runs it. It also keeps the optimized module as bitcode, from which
  // machineCode emits an object file without the JIT's own (unchecked) dump.
  // The host's target machine gives the optimizer its cost models (vector width
  // above all); the JIT generates code for the same host.
  std::unique_ptr<llvm::TargetMachine> machine = createHostTargetMachine();
  if (!machine)
    return makeError("no LLVM target for the host");
  auto optimizeLLVM = mlir::makeOptimizingTransformer(optLevel, 0, machine.get());
  std::function<llvm::Error(llvm::Module *)> optimize = [&](llvm::Module *m) -> llvm::Error {
    if (llvm::Error err = addBF16Conversions(*m))
      return err;
    internalizeKernels(*m, kernels);
    addABISignatures(*m, kernels);
    if (llvm::Error err = optimizeLLVM(m))
      return err;
    moveBF16AsBits(*m);
    llvm::raw_string_ostream os(exe->bitcode);
    llvm::WriteBitcodeToFile(*m, os);
    return llvm::Error::success();
  };
  mlir::ExecutionEngineOptions options;
  options.transformer = optimize;
  options.jitCodeGenOptLevel = llvm::CodeGenOptLevel::Aggressive;
  // MLIR's default also registers perf's listener, which writes a jitdump under
  // $JITDUMPDIR or /tmp/.debug/jit on every compile and never removes it
  // (thousands of files after a test run), or warns where it cannot.
  options.enablePerfNotificationListener = false;
  auto engine = mlir::ExecutionEngine::create(module, options);
  if (!engine)
    return engine.takeError();
  exe->engine = std::move(*engine);
  exe->infos = std::move(kernels);
  return exe;
}

const KernelInfo *Executable::find(llvm::StringRef name) const {
  for (const KernelInfo &k : infos)
    if (k.name == name)
      return &k;
  return nullptr;
}

llvm::Expected<std::array<int64_t, 3>> Executable::grid(llvm::StringRef kernel,
                                                        const std::vector<KernelArg> &args,
                                                        unsigned threads) {
  const KernelInfo *info = find(kernel);
  if (!info)
    return makeError("no kernel named '" + kernel + "' in this module");
  std::string problem = kiln::validateArgs(*info, args);
  if (!problem.empty())
    return makeError(problem);
  std::array<int64_t, 3> g;
  std::string error;
  if (!evaluateGrid(*info, args, threads ? threads : defaultThreadCount(), g, error))
    return makeError("kernel '" + kernel + "': " + error);
  return g;
}

llvm::Error Executable::launch(llvm::StringRef kernel, const std::vector<KernelArg> &args,
                               unsigned threads) {
  if (threads == 0)
    threads = defaultThreadCount();
  auto g = grid(kernel, args, threads);
  if (!g)
    return g.takeError();
  auto fn = engine->lookupPacked(kernel);
  if (!fn)
    return fn.takeError();
  auto [gx, gy, gz] = *g;
  int64_t total = gx * gy * gz;
  if (total == 0)
    return llvm::Error::success();
  PackedArgs packed(args);
  // One argument vector per worker; only the program ids differ between them.
  unsigned workers = static_cast<unsigned>(std::min<int64_t>(threads, total));
  std::vector<std::array<int64_t, 6>> ids(workers);
  std::vector<std::vector<void *>> perWorker;
  for (unsigned w = 0; w < workers; ++w)
    perWorker.push_back(packed.pointers(ids[w].data(), 6));
  auto call = *fn;
  parallelFor(total, workers, [&](int64_t p, unsigned w) {
    // i32 arguments read the low half of each 8-byte slot.
    std::array<int64_t, 6> &id = ids[w];
    id = {p % gx, (p / gx) % gy, p / (gx * gy), gx, gy, gz};
    call(perWorker[w].data());
  });
  return llvm::Error::success();
}

llvm::Expected<std::string> Executable::machineCode(bool assembly) {
  // Code generation as the JIT does it (host CPU and features, -O3), but
  // position independent, into memory: callers write it with one checked write,
  // so a full disk is an error rather than LLVM's fatal "IO failure on output
  // stream".
  llvm::LLVMContext context;
  auto module = llvm::parseBitcodeFile(llvm::MemoryBufferRef(bitcode, "kiln-module"), context);
  if (!module)
    return module.takeError();
  auto builder = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!builder)
    return builder.takeError();
  builder->setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
  builder->setRelocationModel(llvm::Reloc::PIC_);
  keepSubnormals(builder->getFeatures());
  auto machine = builder->createTargetMachine();
  if (!machine)
    return machine.takeError();
  llvm::SmallVector<char, 0> code;
  llvm::raw_svector_ostream os(code);
  llvm::legacy::PassManager passes;
  auto type = assembly ? llvm::CodeGenFileType::AssemblyFile : llvm::CodeGenFileType::ObjectFile;
  if ((*machine)->addPassesToEmitFile(passes, os, nullptr, type))
    return makeError(llvm::Twine("the host target cannot emit ") +
                     (assembly ? "assembly" : "object files"));
  passes.run(**module);
  return std::string(code.data(), code.size());
}
