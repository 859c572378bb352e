//===- FakeCUDA.cpp - a libcuda.so.1 for tests: an sm_90 device, no GPU ---===//
//
// The driver API entry points kiln-rt's CUDA driver uses, over FakeGPUState.
// PTX is read for what the driver's JIT would check: the .target (sm_90a runs
// only on sm_90, sm_XX on sm_XX and newer), each .entry's parameters (their
// sizes, so a launch records what the kernel reads), its .maxntid/.reqntid
// and the static .shared it uses. A cubin gives the same from its
// .nv.info.<kernel> attributes (each parameter's ordinal and size, the
// .maxntid) and its .nv.shared.<kernel> section.
//
//===----------------------------------------------------------------------===//

#include "FakeGPUState.h"

#include <algorithm>
#include <cctype>
#include <sstream>

using namespace fakegpu;

namespace {

constexpr int kDeviceSm = 90;
constexpr int kMultiprocessors = 132;
constexpr unsigned kOptInSharedBytes = 232448; // 227 KiB, as an H100/H200
constexpr int kInvalidPtx = 218, kUnsupportedPtxVersion = 222, kInvalidContext = 201;

const Limits kLimits = {{2147483647u, 65535u, 65535u}, 49152u, kOptInSharedBytes};

/// Bytes of a PTX parameter or variable type (.u32, .b8, ...); 0 if not one.
unsigned typeBytes(const std::string &type) {
  if (type.size() < 3 || type[0] != '.')
    return 0;
  char kind = type[1];
  if (kind != 'u' && kind != 's' && kind != 'b' && kind != 'f')
    return 0;
  std::string bits = type.substr(type[1] == 'b' && type[2] == 'f' ? 3 : 2); // .bf16
  if (bits.empty() || !std::all_of(bits.begin(), bits.end(), ::isdigit))
    return 0;
  return static_cast<unsigned>(std::stoi(bits) / 8);
}

/// `[N]` at the end of a declaration: N (1 without one, 0 for `[]`).
unsigned arrayCount(const std::string &declaration) {
  size_t open = declaration.rfind('[');
  if (open == std::string::npos)
    return 1;
  return static_cast<unsigned>(std::strtoul(declaration.c_str() + open + 1, nullptr, 10));
}

std::vector<std::string> words(const std::string &text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string w; in >> w;)
    out.push_back(w);
  return out;
}

/// The text of `{ ... }` starting at `open` (a '{'), braces balanced.
std::string bracedBody(const std::string &ptx, size_t open) {
  int depth = 0;
  for (size_t i = open; i < ptx.size(); ++i) {
    if (ptx[i] == '{')
      ++depth;
    else if (ptx[i] == '}' && --depth == 0)
      return ptx.substr(open, i + 1 - open);
  }
  return ptx.substr(open);
}

/// Reads a PTX module; the error is the JIT's when it would refuse it.
int readPtx(const std::string &ptx, Module &module) {
  State &state = State::get();
  std::vector<std::string> all = words(ptx);
  for (size_t i = 0; i + 1 < all.size(); ++i) {
    if (all[i] == ".version" && std::stod(all[i + 1]) >= 10.0)
      return state.refuse(kUnsupportedPtxVersion, "PTX ISA " + all[i + 1] + " is too new");
    if (all[i] == ".target") {
      std::string target = all[i + 1];
      if (!target.empty() && target.back() == ',')
        target.pop_back();
      if (target.compare(0, 3, "sm_") != 0)
        return state.refuse(kInvalidPtx, "unknown .target " + target);
      int sm = std::atoi(target.c_str() + 3);
      bool archSpecific = !target.empty() && (target.back() == 'a' || target.back() == 'f');
      if (archSpecific ? sm != kDeviceSm : sm > kDeviceSm)
        return state.refuse(kInvalidPtx, ".target " + target + " does not run on sm_90");
    }
  }

  // Module-scope static shared variables: name -> bytes.
  std::map<std::string, unsigned> shared;
  std::istringstream lines(ptx);
  for (std::string line; std::getline(lines, line);) {
    std::vector<std::string> w = words(line);
    if (w.size() < 3 || w[0] != ".shared")
      continue; // `.extern .shared` is dynamic
    std::string name = w.back();
    if (name.back() == ';')
      name.pop_back();
    unsigned bytes = 0;
    for (const std::string &t : w)
      bytes = std::max(bytes, typeBytes(t));
    shared[name.substr(0, name.find('['))] = bytes * arrayCount(name);
  }

  for (size_t at = ptx.find(".entry"); at != std::string::npos; at = ptx.find(".entry", at + 1)) {
    size_t open = ptx.find('(', at), close = ptx.find(')', open), body = ptx.find('{', close);
    if (open == std::string::npos || close == std::string::npos || body == std::string::npos)
      return state.refuse(kInvalidPtx, "malformed .entry");
    auto kernel = std::make_unique<Kernel>();
    kernel->name = words(ptx.substr(at + 6, open - at - 6)).at(0);
    kernel->paramsKnown = true;
    std::istringstream params(ptx.substr(open + 1, close - open - 1));
    for (std::string param; std::getline(params, param, ',');) {
      std::vector<std::string> w = words(param);
      if (w.empty())
        continue;
      unsigned bytes = 0;
      for (const std::string &t : w)
        if (unsigned b = typeBytes(t))
          bytes = b;
      if (w[0] != ".param" || bytes == 0)
        return state.refuse(kInvalidPtx, "kernel " + kernel->name + ": unreadable parameter '" +
                                             param + "'");
      kernel->paramBytes.push_back(bytes * arrayCount(w.back()));
    }
    // Performance directives between the parameters and the body.
    std::vector<std::string> directives = words(ptx.substr(close + 1, body - close - 1));
    for (size_t i = 0; i < directives.size(); ++i) {
      if (directives[i] != ".maxntid" && directives[i] != ".reqntid")
        continue;
      kernel->exactBlock = directives[i] == ".reqntid";
      kernel->maxBlock = {1, 1, 1};
      unsigned total = 1;
      for (int d = 0; d < 3 && i + 1 + d < directives.size(); ++d) {
        const std::string &v = directives[i + 1 + d];
        if (v.empty() || !std::isdigit(static_cast<unsigned char>(v[0])))
          break;
        kernel->maxBlock[d] = static_cast<unsigned>(std::stoul(v));
        total *= kernel->maxBlock[d];
      }
      kernel->maxThreads = std::min(kernel->maxThreads, total);
    }
    std::string text = bracedBody(ptx, body);
    for (auto &[name, bytes] : shared)
      if (text.find(name) != std::string::npos)
        kernel->staticSharedBytes += bytes;
    module.kernels.push_back(std::move(kernel));
  }
  if (module.kernels.empty())
    return state.refuse(kInvalidPtx, "the PTX has no .entry");
  return kSuccess;
}

/// Reads a kernel's .nv.info attributes: records of a format byte, an
/// attribute byte and (for format 4) a 16-bit size and that many bytes; the
/// other formats hold a 16-bit value or nothing.
void readKernelInfo(const ElfImage::Section &info, Kernel &kernel) {
  constexpr unsigned char kSizedValue = 4, kMaxThreads = 0x05, kParamInfo = 0x17;
  std::map<unsigned, unsigned> params; // ordinal -> bytes
  for (size_t at = 0; at + 4 <= info.size;) {
    unsigned char format = info.data[at], attribute = info.data[at + 1];
    uint16_t bytes = 0;
    std::memcpy(&bytes, info.data + at + 2, 2);
    const unsigned char *data = info.data + at + 4;
    at += 4 + (format == kSizedValue ? bytes : 0);
    if (format != kSizedValue || at > info.size)
      continue;
    if (attribute == kParamInfo && bytes >= 12) {
      // u32 index, u16 ordinal, u16 offset, u32 whose bits 18-31 are the size
      uint16_t ordinal;
      uint32_t flags;
      std::memcpy(&ordinal, data + 4, 2);
      std::memcpy(&flags, data + 8, 4);
      params[ordinal] = (flags >> 18) & 0x3fff;
    } else if (attribute == kMaxThreads && bytes >= 12) {
      std::memcpy(kernel.maxBlock.data(), data, 12);
      kernel.maxThreads = kernel.maxBlock[0] * kernel.maxBlock[1] * kernel.maxBlock[2];
    }
  }
  kernel.paramsKnown = true;
  for (auto [ordinal, bytes] : params)
    kernel.paramBytes.push_back(bytes);
}

int readCubin(const void *image, Module &module) {
  ElfImage elf = readElf(image);
  if (!elf.valid)
    return State::get().refuse(kInvalidImage, "neither PTX nor an ELF cubin");
  for (const std::string &name : elf.functions) {
    auto kernel = std::make_unique<Kernel>();
    kernel->name = name;
    if (const ElfImage::Section *info = elf.section(".nv.info." + name))
      readKernelInfo(*info, *kernel);
    if (const ElfImage::Section *shared = elf.section(".nv.shared." + name))
      kernel->staticSharedBytes = static_cast<unsigned>(shared->memorySize);
    module.kernels.push_back(std::move(kernel));
  }
  return kSuccess;
}

void *const kContext = reinterpret_cast<void *>(0x1000);
bool initialized = false;
thread_local void *currentContext = nullptr;

#define LOCKED std::lock_guard<std::mutex> lock(State::get().mutex)
/// Calls on a thread without the context current fail, as CUDA's do.
#define IN_CONTEXT                                                                                 \
  LOCKED;                                                                                          \
  if (currentContext != kContext)                                                                  \
  return State::get().refuse(kInvalidContext, std::string(__func__) +                             \
                                                  " on a thread with no current context")

} // namespace

extern "C" {

int cuInit(unsigned flags) {
  LOCKED;
  if (flags != 0)
    return State::get().refuse(kInvalidValue, "cuInit flags must be 0");
  initialized = true;
  return kSuccess;
}

int cuDeviceGetCount(int *count) {
  *count = initialized ? 1 : 0;
  return initialized ? kSuccess : 3; // CUDA_ERROR_NOT_INITIALIZED
}

int cuDeviceGet(int *device, int ordinal) {
  LOCKED;
  if (ordinal != 0)
    return State::get().refuse(kInvalidValue, "no CUDA device " + std::to_string(ordinal));
  *device = 0;
  return kSuccess;
}

int cuDeviceGetName(char *name, int length, int device) {
  std::snprintf(name, static_cast<size_t>(length), "Kiln fake CUDA device (sm_90, no GPU)");
  return device == 0 ? kSuccess : kInvalidValue;
}

int cuDeviceGetAttribute(int *value, int attribute, int device) {
  LOCKED;
  switch (attribute) {
  case 5: *value = static_cast<int>(kLimits.maxGrid[0]); break;
  case 6: *value = static_cast<int>(kLimits.maxGrid[1]); break;
  case 7: *value = static_cast<int>(kLimits.maxGrid[2]); break;
  case 8: *value = static_cast<int>(kLimits.defaultDynamicSharedBytes); break;
  case 16: *value = kMultiprocessors; break;
  case 75: *value = kDeviceSm / 10; break;
  case 76: *value = kDeviceSm % 10; break;
  case 97: *value = static_cast<int>(kOptInSharedBytes); break;
  default:
    return State::get().refuse(kInvalidValue,
                               "device attribute " + std::to_string(attribute) + " is not faked");
  }
  return device == 0 ? kSuccess : kInvalidValue;
}

int cuDevicePrimaryCtxRetain(void **context, int device) {
  *context = kContext;
  return device == 0 ? kSuccess : kInvalidValue;
}
int cuDevicePrimaryCtxRelease_v2(int device) { return device == 0 ? kSuccess : kInvalidValue; }
int cuCtxSetCurrent(void *context) {
  if (context != kContext && context != nullptr)
    return kInvalidContext;
  currentContext = context;
  return kSuccess;
}
int cuCtxSynchronize() {
  IN_CONTEXT;
  return State::get().pendingFault();
}

int cuMemAlloc_v2(uint64_t *address, size_t bytes) {
  IN_CONTEXT;
  return State::get().allocate(bytes, address);
}
int cuMemFree_v2(uint64_t address) {
  IN_CONTEXT;
  return State::get().release(address);
}
int cuMemcpyHtoD_v2(uint64_t to, const void *from, size_t bytes) {
  IN_CONTEXT;
  return State::get().copy(reinterpret_cast<void *>(to), from, bytes, to);
}
int cuMemcpyDtoH_v2(void *to, uint64_t from, size_t bytes) {
  IN_CONTEXT;
  return State::get().copy(to, reinterpret_cast<const void *>(from), bytes, from);
}

int cuModuleLoadData(void **handle, const void *image) {
  IN_CONTEXT;
  auto module = std::make_unique<Module>();
  auto *bytes = static_cast<const char *>(image);
  int r = std::memcmp(bytes, "\x7f" "ELF", 4) == 0 ? readCubin(image, *module)
                                                   : readPtx(std::string(bytes), *module);
  return r != kSuccess ? r : State::get().loadModule(handle, std::move(module));
}
int cuModuleUnload(void *module) {
  IN_CONTEXT;
  return State::get().unloadModule(module);
}
int cuModuleGetFunction(void **function, void *module, const char *name) {
  IN_CONTEXT;
  return State::get().getFunction(function, module, name);
}
int cuFuncSetAttribute(void *function, int attribute, int value) {
  IN_CONTEXT;
  State &state = State::get();
  if (!state.isKernel(function))
    return state.refuse(kInvalidHandle, "cuFuncSetAttribute on no loaded function");
  auto *k = static_cast<Kernel *>(function);
  constexpr int kMaxDynamicSharedSizeBytes = 8;
  if (attribute != kMaxDynamicSharedSizeBytes)
    return state.refuse(kInvalidValue, "function attribute " + std::to_string(attribute) +
                                           " is not faked");
  if (value < 0 || static_cast<unsigned>(value) + k->staticSharedBytes > kOptInSharedBytes)
    return state.refuse(kInvalidValue, "kernel '" + k->name + "': " + std::to_string(value) +
                                           " bytes of dynamic shared memory is past the limit");
  k->dynamicSharedLimit = value;
  return kSuccess;
}

int cuLaunchKernel(void *function, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                   unsigned by, unsigned bz, unsigned sharedBytes, void *stream, void **params,
                   void **extra) {
  IN_CONTEXT;
  State &state = State::get();
  if (int r = state.checkLaunch(stream, extra); r != kSuccess)
    return r;
  unsigned grid[3] = {gx, gy, gz}, block[3] = {bx, by, bz};
  return state.launch(0, static_cast<Kernel *>(function), kLimits, grid, block, sharedBytes,
                      stream != nullptr, params);
}

int cuGetErrorString(int error, const char **text) {
  static const std::map<int, const char *> names = {
      {0, "no error"},
      {1, "invalid argument"},
      {2, "out of memory"},
      {200, "device kernel image is invalid"},
      {218, "a PTX JIT compilation failed"},
      {222, "the provided PTX was compiled with an unsupported toolchain."},
      {400, "invalid resource handle"},
      {500, "named symbol not found"},
      {700, "an illegal memory access was encountered"},
      {701, "too many resources requested for launch"},
      {710, "device-side assert triggered"},
      {719, "unspecified launch failure"},
  };
  auto it = names.find(error);
  *text = it == names.end() ? nullptr : it->second;
  return it == names.end() ? kInvalidValue : kSuccess;
}

int cuStreamCreate(void **stream, unsigned) {
  IN_CONTEXT;
  return State::get().createStream(stream);
}
int cuStreamDestroy_v2(void *stream) {
  IN_CONTEXT;
  return State::get().destroyStream(stream);
}
int cuStreamSynchronize(void *stream) {
  IN_CONTEXT;
  return State::get().synchronizeStream(stream);
}
int cuEventCreate(void **event, unsigned) {
  IN_CONTEXT;
  return State::get().createEvent(event);
}
int cuEventDestroy_v2(void *event) {
  IN_CONTEXT;
  return State::get().destroyEvent(event);
}
int cuEventRecord(void *event, void *stream) {
  IN_CONTEXT;
  return State::get().recordEvent(event, stream);
}
int cuEventSynchronize(void *event) {
  IN_CONTEXT;
  return State::get().synchronizeEvent(event);
}
int cuEventElapsedTime(float *ms, void *start, void *end) {
  IN_CONTEXT;
  return State::get().elapsedTime(ms, start, end);
}

} // extern "C"
