//===- CPUExecutable.cpp - JIT-compiled kernels on the host ---------------===//

#include "codegen/CPU/CPUExecutable.h"
#include "codegen/CPU/CPUPipeline.h"
#include "lib/Frontend/MLIRGen.h"
#include "lib/Support/Half.h"
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

std::string kiln::cpu::validateArgs(const KernelInfo &info,
                                    const std::vector<KernelArg> &args) {
  auto prefix = "kernel '" + info.name + "': ";
  if (args.size() != info.args.size())
    return prefix + "takes " + std::to_string(info.args.size()) + " arguments, got " +
           std::to_string(args.size());
  std::map<std::string, std::pair<int64_t, std::string>> bound; // size name -> (value, arg)
  for (size_t i = 0; i < args.size(); ++i) {
    const ArgInfo &expected = info.args[i];
    const KernelArg &arg = args[i];
    std::string which = prefix + "argument '" + expected.name + "'";
    if (expected.isTensor != arg.isTensor)
      return which + (expected.isTensor ? " must be a tensor" : " must be a scalar");
    if (arg.dtype != expected.dtype)
      return which + " has dtype " + dtypeName(arg.dtype) + " but the kernel expects " +
             dtypeName(expected.dtype);
    if (!arg.isTensor)
      continue;
    const TensorRef &t = arg.tensor;
    if (t.dtype != expected.dtype)
      return which + " has dtype " + dtypeName(t.dtype) + " but the kernel expects " +
             dtypeName(expected.dtype);
    if (t.sizes.size() != expected.dims.size() || t.strides.size() != t.sizes.size())
      return which + " has rank " + std::to_string(t.sizes.size()) +
             " but the kernel expects rank " + std::to_string(expected.dims.size());
    bool empty = false;
    for (size_t d = 0; d < t.sizes.size(); ++d) {
      int64_t size = t.sizes[d];
      if (size < 0 || size > std::numeric_limits<int32_t>::max())
        return which + " dimension " + std::to_string(d) + " has size " +
               std::to_string(size) + " (must be in [0, 2^31))";
      empty |= size == 0;
      const std::string &dim = expected.dims[d];
      if (!dim.empty() && isdigit(static_cast<unsigned char>(dim[0]))) {
        if (std::to_string(size) != dim)
          return which + " dimension " + std::to_string(d) + " must be " + dim + ", got " +
                 std::to_string(size);
        continue;
      }
      auto [it, inserted] = bound.try_emplace(dim, size, expected.name);
      if (!inserted && it->second.first != size)
        return which + " dimension " + std::to_string(d) + " (" + dim + ") is " +
               std::to_string(size) + " but argument '" + it->second.second + "' has " +
               dim + " = " + std::to_string(it->second.first);
    }
    if (!t.data && !empty)
      return which + " has no data (null pointer)";
  }
  return "";
}

Executable::~Executable() = default;

llvm::Expected<std::unique_ptr<Executable>>
Executable::create(mlir::ModuleOp module, std::vector<KernelInfo> kernels, unsigned optLevel) {
  initializeHostTarget();
  mlir::registerBuiltinDialectTranslation(*module.getContext());
  mlir::registerLLVMDialectTranslation(*module.getContext());
  mlir::ExecutionEngineOptions options;
  options.transformer = mlir::makeOptimizingTransformer(optLevel, 0, nullptr);
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

namespace {
/// Storage for one launch's arguments in the layout the packed wrappers expect:
/// each memref expands to (allocated, aligned, offset, sizes..., strides...).
struct PackedArgs {
  std::vector<int64_t> words; // every argument's storage, 8 bytes apiece
  std::vector<size_t> slots;  // index into words of each LLVM-level argument

  void push(int64_t w) {
    slots.push_back(words.size());
    words.push_back(w);
  }
  void pushScalar(const KernelArg &a) {
    int64_t w = 0;
    switch (a.dtype) {
    case DType::I1: w = a.scalar.i != 0; break;
    case DType::I8:
    case DType::I16:
    case DType::I32:
    case DType::I64: w = a.scalar.i; break; // little-endian: low bytes come first
    case DType::F16: w = floatToHalfBits(static_cast<float>(a.scalar.f)); break;
    case DType::BF16: w = floatToBF16Bits(static_cast<float>(a.scalar.f)); break;
    case DType::F32: {
      float f = static_cast<float>(a.scalar.f);
      std::memcpy(&w, &f, 4);
      break;
    }
    case DType::F64: std::memcpy(&w, &a.scalar.f, 8); break;
    }
    push(w);
  }
  explicit PackedArgs(const std::vector<KernelArg> &args) {
    for (const KernelArg &a : args) {
      if (!a.isTensor) {
        pushScalar(a);
        continue;
      }
      push(reinterpret_cast<intptr_t>(a.tensor.data));
      push(reinterpret_cast<intptr_t>(a.tensor.data));
      push(0);
      for (int64_t s : a.tensor.sizes)
        push(s);
      for (int64_t s : a.tensor.strides)
        push(s);
    }
  }
  /// Pointers to each argument, with `extra` words appended (program ids).
  std::vector<void *> pointers(int64_t *extra, size_t numExtra) {
    std::vector<void *> ptrs;
    for (size_t s : slots)
      ptrs.push_back(&words[s]);
    for (size_t i = 0; i < numExtra; ++i)
      ptrs.push_back(&extra[i]);
    return ptrs;
  }
};
} // namespace

llvm::Expected<std::array<int64_t, 3>> Executable::grid(llvm::StringRef kernel,
                                                        const std::vector<KernelArg> &args) {
  const KernelInfo *info = find(kernel);
  if (!info)
    return makeError("no kernel named '" + kernel + "' in this module");
  std::string problem = validateArgs(*info, args);
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
