//===- FakeHIP.cpp - a libamdhip64.so for tests: a gfx942 device, no GPU --===//
//
// The HIP entry points kiln-rt's HIP driver uses, over FakeGPUState. A code
// object is read as the runtime reads it: its AMDGPU metadata note (msgpack)
// gives the target, each kernel's arguments (hidden ones are the runtime's
// to fill; a launch's kernelParams hold the others, in order), its
// .max_flat_workgroup_size, .reqd_workgroup_size and static LDS.
//
//===----------------------------------------------------------------------===//

#include "FakeGPUState.h"

#include <elf.h>

using namespace fakegpu;

namespace {

constexpr const char *kDeviceTarget = "amdgcn-amd-amdhsa--gfx942";
constexpr int kNoBinaryForGpu = 209, kInvalidKernelFile = 218;

// hipModuleLaunchKernel takes the grid in blocks; the dispatch packet holds it
// in work-items, 32 bits per dimension (checked at the launch), and the LDS
// has 64 KiB.
const Limits kLimits = {{UINT32_MAX, UINT32_MAX, UINT32_MAX}, 65536u, 65536u};

/// A msgpack value: only what AMDGPU metadata uses.
struct Msg {
  enum Kind { Nil, Bool, Int, String, Array, Map } kind = Nil;
  int64_t integer = 0;
  std::string text;
  std::vector<Msg> items;                   // Array
  std::vector<std::pair<Msg, Msg>> entries; // Map

  const Msg *get(const std::string &key) const {
    for (auto &[k, v] : entries)
      if (k.kind == String && k.text == key)
        return &v;
    return nullptr;
  }
};

/// Reads one msgpack value at `p` (advanced past it); false when malformed.
bool readMsg(const unsigned char *&p, const unsigned char *end, Msg &out, int depth = 0) {
  if (p >= end || depth > 32)
    return false;
  auto big = [&](int bytes, uint64_t &v) {
    if (end - p < bytes)
      return false;
    v = 0;
    for (int i = 0; i < bytes; ++i)
      v = v << 8 | *p++;
    return true;
  };
  auto sequence = [&](uint64_t count, bool map) {
    out.kind = map ? Msg::Map : Msg::Array;
    for (uint64_t i = 0; i < count; ++i) {
      Msg key, value;
      if (!readMsg(p, end, key, depth + 1) || (map && !readMsg(p, end, value, depth + 1)))
        return false;
      if (map)
        out.entries.emplace_back(std::move(key), std::move(value));
      else
        out.items.push_back(std::move(key));
    }
    return true;
  };
  auto string = [&](uint64_t length) {
    if (static_cast<uint64_t>(end - p) < length)
      return false;
    out.kind = Msg::String;
    out.text.assign(reinterpret_cast<const char *>(p), length);
    p += length;
    return true;
  };
  unsigned char b = *p++;
  uint64_t v = 0;
  if (b <= 0x7f || b >= 0xe0) {
    out.kind = Msg::Int;
    out.integer = static_cast<int8_t>(b);
    if (b <= 0x7f)
      out.integer = b;
    return true;
  }
  if ((b & 0xf0) == 0x80)
    return sequence(b & 0x0f, true);
  if ((b & 0xf0) == 0x90)
    return sequence(b & 0x0f, false);
  if ((b & 0xe0) == 0xa0)
    return string(b & 0x1f);
  switch (b) {
  case 0xc0: out.kind = Msg::Nil; return true;
  case 0xc2:
  case 0xc3: out.kind = Msg::Bool; out.integer = b == 0xc3; return true;
  case 0xcc: case 0xcd: case 0xce: case 0xcf:
    out.kind = Msg::Int;
    if (!big(1 << (b - 0xcc), v))
      return false;
    out.integer = static_cast<int64_t>(v);
    return true;
  case 0xd0: case 0xd1: case 0xd2: case 0xd3: {
    int bytes = 1 << (b - 0xd0);
    if (!big(bytes, v))
      return false;
    out.kind = Msg::Int;
    out.integer = bytes == 8 ? static_cast<int64_t>(v)
                             : static_cast<int64_t>(v << (64 - 8 * bytes)) >> (64 - 8 * bytes);
    return true;
  }
  case 0xd9: return big(1, v) && string(v);
  case 0xda: return big(2, v) && string(v);
  case 0xdb: return big(4, v) && string(v);
  case 0xdc: return big(2, v) && sequence(v, false);
  case 0xdd: return big(4, v) && sequence(v, false);
  case 0xde: return big(2, v) && sequence(v, true);
  case 0xdf: return big(4, v) && sequence(v, true);
  default: return false; // floats, binary and extensions do not occur
  }
}

/// The NT_AMDGPU_METADATA note's document.
bool amdgpuMetadata(const ElfImage &elf, Msg &out) {
  for (const ElfImage::Section &s : elf.sections) {
    if (s.type != SHT_NOTE)
      continue;
    for (size_t at = 0; at + 12 <= s.size;) {
      uint32_t nameBytes, descBytes, type;
      std::memcpy(&nameBytes, s.data + at, 4);
      std::memcpy(&descBytes, s.data + at + 4, 4);
      std::memcpy(&type, s.data + at + 8, 4);
      size_t desc = at + 12 + ((nameBytes + 3) & ~3u);
      constexpr uint32_t kNtAmdgpuMetadata = 32;
      if (type == kNtAmdgpuMetadata && nameBytes == 7 &&
          std::memcmp(s.data + at + 12, "AMDGPU", 6) == 0 && desc + descBytes <= s.size) {
        const unsigned char *p = s.data + desc;
        return readMsg(p, s.data + desc + descBytes, out);
      }
      at = desc + ((descBytes + 3) & ~3u);
    }
  }
  return false;
}

int readCodeObject(const void *image, Module &module) {
  State &state = State::get();
  ElfImage elf = readElf(image);
  Msg metadata;
  if (!elf.valid || !amdgpuMetadata(elf, metadata))
    return state.refuse(kInvalidKernelFile, "not an AMDGPU code object with metadata");
  const Msg *target = metadata.get("amdhsa.target");
  if (!target || target->text != kDeviceTarget)
    return state.refuse(kNoBinaryForGpu, "code object for " + (target ? target->text : "?") +
                                             ", the device is " + kDeviceTarget);
  const Msg *kernels = metadata.get("amdhsa.kernels");
  if (!kernels || kernels->kind != Msg::Array)
    return state.refuse(kInvalidKernelFile, "no amdhsa.kernels");
  for (const Msg &k : kernels->items) {
    auto kernel = std::make_unique<Kernel>();
    const Msg *name = k.get(".name");
    if (!name)
      return state.refuse(kInvalidKernelFile, "a kernel without .name");
    kernel->name = name->text;
    kernel->paramsKnown = true;
    if (const Msg *args = k.get(".args"))
      for (const Msg &arg : args->items) {
        const Msg *kind = arg.get(".value_kind"), *size = arg.get(".size");
        if (!kind || !size)
          return state.refuse(kInvalidKernelFile, kernel->name + ": an argument without " +
                                                      ".value_kind or .size");
        if (kind->text.compare(0, 7, "hidden_") != 0)
          kernel->paramBytes.push_back(static_cast<unsigned>(size->integer));
      }
    if (const Msg *flat = k.get(".max_flat_workgroup_size"))
      kernel->maxThreads = static_cast<unsigned>(flat->integer);
    kernel->maxBlock = {1024, 1024, 1024};
    if (const Msg *required = k.get(".reqd_workgroup_size"); required && required->items.size() == 3) {
      kernel->exactBlock = true;
      for (int d = 0; d < 3; ++d)
        kernel->maxBlock[d] = static_cast<unsigned>(required->items[d].integer);
    }
    if (const Msg *lds = k.get(".group_segment_fixed_size"))
      kernel->staticSharedBytes = static_cast<unsigned>(lds->integer);
    module.kernels.push_back(std::move(kernel));
  }
  return kSuccess;
}

constexpr int kDevices = 2;
bool initialized = false;
thread_local int current = 0; // HIP's current device is per thread, 0 at first

#define LOCKED std::lock_guard<std::mutex> lock(State::get().mutex)

} // namespace

extern "C" {

int hipInit(unsigned flags) {
  LOCKED;
  if (flags != 0)
    return State::get().refuse(kInvalidValue, "hipInit flags must be 0");
  initialized = true;
  return kSuccess;
}
int hipGetDeviceCount(int *count) {
  *count = kDevices;
  return kSuccess;
}
int hipSetDevice(int device) {
  LOCKED;
  if (device < 0 || device >= kDevices)
    return State::get().refuse(kInvalidValue, "no HIP device " + std::to_string(device));
  current = device;
  return kSuccess;
}
int hipDeviceGetName(char *name, int length, int device) {
  std::snprintf(name, static_cast<size_t>(length), "Kiln fake HIP device %d (gfx942, no GPU)",
                device);
  return device >= 0 && device < kDevices ? kSuccess : kInvalidValue;
}

int hipMalloc(void **address, size_t bytes) {
  LOCKED;
  uint64_t a = 0;
  int r = State::get().allocate(bytes, &a);
  *address = reinterpret_cast<void *>(a);
  return r;
}
int hipFree(void *address) {
  LOCKED;
  return State::get().release(reinterpret_cast<uint64_t>(address));
}
int hipMemcpyHtoD(void *to, const void *from, size_t bytes) {
  LOCKED;
  return State::get().copy(to, from, bytes, reinterpret_cast<uint64_t>(to));
}
int hipMemcpyDtoH(void *to, void *from, size_t bytes) {
  LOCKED;
  return State::get().copy(to, from, bytes, reinterpret_cast<uint64_t>(from));
}

int hipModuleLoadData(void **handle, const void *image) {
  LOCKED;
  auto module = std::make_unique<Module>();
  int r = readCodeObject(image, *module);
  return r != kSuccess ? r : State::get().loadModule(handle, std::move(module));
}
int hipModuleUnload(void *module) {
  LOCKED;
  return State::get().unloadModule(module);
}
int hipModuleGetFunction(void **function, void *module, const char *name) {
  LOCKED;
  return State::get().getFunction(function, module, name);
}

int hipModuleLaunchKernel(void *function, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                          unsigned by, unsigned bz, unsigned sharedBytes, void *stream,
                          void **params, void **extra) {
  LOCKED;
  State &state = State::get();
  if (int r = state.checkLaunch(stream, extra); r != kSuccess)
    return r;
  unsigned grid[3] = {gx, gy, gz}, block[3] = {bx, by, bz};
  for (int d = 0; d < 3; ++d)
    if (static_cast<uint64_t>(grid[d]) * block[d] > UINT32_MAX)
      return state.refuse(kInvalidValue, "grid of " + std::to_string(grid[d]) +
                                             " blocks along dimension " + std::to_string(d) +
                                             " has more than 2^32 - 1 work-items");
  return state.launch(current, static_cast<Kernel *>(function), kLimits, grid, block,
                      sharedBytes, stream != nullptr, params);
}

int hipDeviceSynchronize() {
  LOCKED;
  return State::get().pendingFault();
}

const char *hipGetErrorString(int error) {
  switch (error) {
  case 0: return "no error";
  case 1: return "invalid argument";
  case 2: return "out of memory";
  case 209: return "no kernel image is available for execution on the device";
  case 218: return "invalid kernel file";
  case 400: return "invalid resource handle";
  case 500: return "named symbol not found";
  case 700: return "an illegal memory access was encountered";
  case 719: return "unspecified launch failure";
  default: return "unknown error";
  }
}

int hipStreamCreate(void **stream) {
  LOCKED;
  return State::get().createStream(stream);
}
int hipStreamDestroy(void *stream) {
  LOCKED;
  return State::get().destroyStream(stream);
}
int hipStreamSynchronize(void *stream) {
  LOCKED;
  return State::get().synchronizeStream(stream);
}
int hipEventCreate(void **event) {
  LOCKED;
  return State::get().createEvent(event);
}
int hipEventDestroy(void *event) {
  LOCKED;
  return State::get().destroyEvent(event);
}
int hipEventRecord(void *event, void *stream) {
  LOCKED;
  return State::get().recordEvent(event, stream);
}
int hipEventSynchronize(void *event) {
  LOCKED;
  return State::get().synchronizeEvent(event);
}
int hipEventElapsedTime(float *ms, void *start, void *end) {
  LOCKED;
  return State::get().elapsedTime(ms, start, end);
}

} // extern "C"
