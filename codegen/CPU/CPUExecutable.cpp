//===- CPUExecutable.cpp - JIT-compiled kernels on the host ---------------===//

#include "codegen/CPU/CPUExecutable.h"
#include "codegen/CPU/CPUPipeline.h"
#include "lib/Frontend/MLIRGen.h"
#include "lib/Support/PackedArgs.h"
#include "lib/Support/ValidateArgs.h"
#include "lib/Support/ThreadPool.h"

#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"

#include "llvm/Support/FileSystem.h"

#include <limits>
#include <map>

using namespace kiln;
using namespace kiln::cpu;

static llvm::Error makeError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

Executable::~Executable() = default;

llvm::Expected<std::unique_ptr<Executable>>
Executable::create(mlir::ModuleOp module, std::vector<KernelInfo> kernels, unsigned optLevel) {
  initializeHostTarget();
  mlir::registerBuiltinDialectTranslation(*module.getContext());
  mlir::registerLLVMDialectTranslation(*module.getContext());
  // The options hold a function_ref: the transformer must outlive create().
  std::function<llvm::Error(llvm::Module *)> optimize =
      mlir::makeOptimizingTransformer(optLevel, 0, nullptr);
  mlir::ExecutionEngineOptions options;
  options.transformer = optimize;
  options.jitCodeGenOptLevel = llvm::CodeGenOptLevel::Aggressive;
  options.enableObjectDump = true;
  auto engine = mlir::ExecutionEngine::create(module, options);
  if (!engine)
    return engine.takeError();
  std::unique_ptr<Executable> exe(new Executable());
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
                                                        const std::vector<KernelArg> &args) {
  const KernelInfo *info = find(kernel);
  if (!info)
    return makeError("no kernel named '" + kernel + "' in this module");
  std::string problem = kiln::validateArgs(*info, args);
  if (!problem.empty())
    return makeError(problem);
  auto fn = engine->lookupPacked(gridFunctionName(kernel));
  if (!fn)
    return fn.takeError();
  PackedArgs packed(args);
  struct {
    int32_t x, y, z;
  } result = {0, 0, 0};
  std::vector<void *> ptrs = packed.pointers(nullptr, 0);
  ptrs.push_back(&result);
  (*fn)(ptrs.data());
  std::array<int64_t, 3> g = {result.x, result.y, result.z};
  for (int d = 0; d < 3; ++d)
    if (g[d] < 0)
      return makeError("kernel '" + kernel + "': grid rule gave " + std::to_string(g[d]) +
                       " programs along axis " + std::to_string(d) + " (" +
                       info->grid[d] + ")");
  return g;
}

llvm::Error Executable::launch(llvm::StringRef kernel, const std::vector<KernelArg> &args,
                               unsigned threads) {
  auto g = grid(kernel, args);
  if (!g)
    return g.takeError();
  auto fn = engine->lookupPacked(kernel);
  if (!fn)
    return fn.takeError();
  auto [gx, gy, gz] = *g;
  int64_t total = gx * gy * gz;
  if (total == 0)
    return llvm::Error::success();
  if (threads == 0)
    threads = defaultThreadCount();
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

llvm::Error Executable::writeObject(llvm::StringRef path) {
  // The JIT compiles on first lookup; make sure the object exists before dumping it.
  for (const KernelInfo &k : infos)
    if (auto fn = engine->lookupPacked(k.name); !fn)
      return fn.takeError();
  engine->dumpToObjectFile(path);
  if (!llvm::sys::fs::exists(path))
    return makeError("could not write object file '" + path + "'");
  return llvm::Error::success();
}
