//===- FakeGPUState.cpp - memory, launches and faults of a fake GPU -------===//

#include "FakeGPUState.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <elf.h>

using namespace fakegpu;

State &State::get() {
  static State state;
  return state;
}

int State::refuse(int code, std::string why) {
  lastRefusal = std::move(why);
  return code;
}

int State::allocate(size_t bytes, uint64_t *address) {
  if (!address || bytes == 0)
    return refuse(kInvalidValue, "allocation of 0 bytes or to a null pointer");
  if (fault_)
    return fault_;
  if (memoryLimit && bytes > memoryLimit - std::min(memoryLimit, allocated_))
    return refuse(kOutOfMemory, "allocation of " + std::to_string(bytes) +
                                    " bytes past the memory limit");
  void *p = std::malloc(bytes);
  if (!p)
    return kOutOfMemory;
  *address = reinterpret_cast<uint64_t>(p);
  allocations_[*address] = bytes;
  allocated_ += bytes;
  return kSuccess;
}

int State::release(uint64_t address) {
  auto it = allocations_.find(address);
  if (it == allocations_.end())
    return refuse(kInvalidValue, "free of an address that is no allocation's start");
  allocated_ -= it->second;
  allocations_.erase(it);
  std::free(reinterpret_cast<void *>(address));
  return kSuccess;
}

size_t State::allocationBytes(uint64_t address) const {
  auto it = allocations_.upper_bound(address);
  if (it == allocations_.begin())
    return 0;
  --it;
  return address < it->first + it->second ? it->second : 0;
}

bool State::inside(uint64_t address, size_t bytes) const {
  auto it = allocations_.upper_bound(address);
  if (it == allocations_.begin())
    return false;
  --it;
  return address >= it->first && bytes <= it->second - (address - it->first);
}

int State::copy(void *to, const void *from, size_t bytes, uint64_t deviceAddress) {
  if (fault_)
    return fault_;
  if (bytes && !inside(deviceAddress, bytes))
    return refuse(kInvalidValue, "copy of " + std::to_string(bytes) +
                                     " bytes outside every allocation");
  if (bytes)
    std::memcpy(to, from, bytes);
  return kSuccess;
}


bool State::isKernel(void *handle) const {
  for (Module *m : modules_)
    for (auto &k : m->kernels)
      if (k.get() == handle)
        return true;
  return false;
}

Kernel *State::findKernel(const std::string &name) const {
  for (auto it = owned_.rbegin(); it != owned_.rend(); ++it)
    if (Kernel *k = (*it)->find(name))
      return k;
  return nullptr;
}

int State::unloadModule(void *handle) {
  auto *m = static_cast<Module *>(handle);
  if (!modules_.erase(m))
    return refuse(kInvalidHandle, "unload of a module that is not loaded");
  for (auto it = owned_.begin(); it != owned_.end(); ++it)
    if (it->get() == m) {
      owned_.erase(it);
      break;
    }
  return kSuccess;
}

int State::launch(int device, Kernel *kernel, const Limits &limits, const unsigned grid[3],
                  const unsigned block[3], unsigned dynamicSharedBytes, bool onStream,
                  void **params) {
  if (fault_)
    return fault_;
  if (!isKernel(kernel))
    return refuse(kInvalidHandle, "launch of a function no loaded module has");
  const std::string name = "kernel '" + kernel->name + "': ";
  unsigned threads = 1;
  for (int d = 0; d < 3; ++d) {
    if (grid[d] == 0 || grid[d] > limits.maxGrid[d])
      return refuse(kInvalidValue, name + "grid dimension " + std::to_string(d) + " is " +
                                       std::to_string(grid[d]) + ", the device allows 1 to " +
                                       std::to_string(limits.maxGrid[d]));
    if (block[d] == 0 || block[d] > kernel->maxBlock[d] ||
        (kernel->exactBlock && block[d] != kernel->maxBlock[d]))
      return refuse(kInvalidValue, name + "block dimension " + std::to_string(d) + " is " +
                                       std::to_string(block[d]) + ", the kernel allows " +
                                       std::to_string(kernel->maxBlock[d]));
    threads *= block[d];
  }
  if (threads > kernel->maxThreads)
    return refuse(kInvalidValue, name + std::to_string(threads) + " threads per block, the " +
                                     "kernel allows " + std::to_string(kernel->maxThreads));
  unsigned dynamicLimit = kernel->dynamicSharedLimit >= 0
                              ? static_cast<unsigned>(kernel->dynamicSharedLimit)
                              : limits.defaultDynamicSharedBytes;
  if (dynamicSharedBytes > dynamicLimit ||
      kernel->staticSharedBytes + dynamicSharedBytes > limits.maxSharedBytes)
    return refuse(kInvalidValue, name + std::to_string(dynamicSharedBytes) +
                                     " bytes of dynamic shared memory, the kernel allows " +
                                     std::to_string(dynamicLimit));
  FakeLaunch record{};
  std::snprintf(record.kernel, sizeof record.kernel, "%s", kernel->name.c_str());
  record.device = device;
  for (int d = 0; d < 3; ++d) {
    record.grid[d] = grid[d];
    record.block[d] = block[d];
  }
  record.dynamicSharedBytes = dynamicSharedBytes;
  record.onStream = onStream;
  record.paramCount = -1;
  if (kernel->paramsKnown) {
    if (kernel->paramBytes.size() > std::size(record.params))
      return refuse(kInvalidValue, name + "more parameters than the fake records");
    if (!kernel->paramBytes.empty() && !params)
      return refuse(kInvalidValue, name + "parameters expected, none given");
    record.paramCount = static_cast<int>(kernel->paramBytes.size());
    for (size_t i = 0; i < kernel->paramBytes.size(); ++i) {
      if (!params[i])
        return refuse(kInvalidValue, name + "parameter " + std::to_string(i) + " is null");
      record.paramBytes[i] = kernel->paramBytes[i];
      std::memcpy(&record.params[i], params[i], std::min<size_t>(kernel->paramBytes[i], 8));
    }
  }
  launches.push_back(record);
  if (faultNextLaunch) {
    fault_ = faultNextLaunch;
    faultNextLaunch = 0;
  }
  return kSuccess;
}

int State::loadModule(void **handle, std::unique_ptr<Module> module) {
  *handle = module.get();
  modules_.insert(module.get());
  owned_.push_back(std::move(module));
  return kSuccess;
}

int State::getFunction(void **function, void *module, const char *name) {
  if (!isModule(module))
    return refuse(kInvalidHandle, "a function looked up in no loaded module");
  Kernel *k = static_cast<Module *>(module)->find(name);
  if (!k)
    return refuse(kNotFound, std::string("no kernel named ") + name);
  *function = k;
  return kSuccess;
}

int State::checkLaunch(void *stream, void **extra) {
  if (extra)
    return refuse(kInvalidValue, "the fake reads kernelParams, not extra");
  if (!isStream(stream))
    return refuse(kInvalidHandle, "launch on a stream that does not exist");
  return kSuccess;
}

int State::createStream(void **stream) {
  *stream = std::malloc(1);
  streams_.insert(*stream);
  return kSuccess;
}

int State::destroyStream(void *stream) {
  if (!streams_.erase(stream))
    return refuse(kInvalidHandle, "destroy of a stream that does not exist");
  std::free(stream);
  return kSuccess;
}

int State::synchronizeStream(void *stream) {
  if (!isStream(stream))
    return refuse(kInvalidHandle, "synchronize of a stream that does not exist");
  return fault_;
}

int State::createEvent(void **event) {
  *event = std::malloc(1);
  events_.insert(*event);
  return kSuccess;
}

int State::destroyEvent(void *event) {
  if (!events_.erase(event))
    return refuse(kInvalidHandle, "destroy of an event that does not exist");
  eventTimes_.erase(event);
  std::free(event);
  return kSuccess;
}

int State::recordEvent(void *event, void *stream) {
  if (!events_.count(event) || !isStream(stream))
    return refuse(kInvalidHandle, "record of an unknown event or on an unknown stream");
  eventTimes_[event] = nowMs();
  return kSuccess;
}

int State::synchronizeEvent(void *event) {
  if (!events_.count(event))
    return refuse(kInvalidHandle, "synchronize of an unknown event");
  return fault_;
}

int State::elapsedTime(float *ms, void *start, void *end) {
  if (!eventTimes_.count(start) || !eventTimes_.count(end))
    return refuse(kInvalidHandle, "elapsed time between unrecorded events");
  *ms = static_cast<float>(eventTimes_[end] - eventTimes_[start]);
  return kSuccess;
}

void State::reset() {
  launches.clear();
  lastRefusal.clear();
  memoryLimit = 0;
  faultNextLaunch = 0;
  fault_ = 0;
}

double fakegpu::nowMs() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

ElfImage fakegpu::readElf(const void *image) {
  ElfImage out;
  auto *bytes = static_cast<const unsigned char *>(image);
  if (!bytes || std::memcmp(bytes, ELFMAG, SELFMAG) != 0 || bytes[EI_CLASS] != ELFCLASS64)
    return out;
  Elf64_Ehdr header;
  std::memcpy(&header, bytes, sizeof header);
  if (header.e_shentsize != sizeof(Elf64_Shdr) || header.e_shstrndx >= header.e_shnum)
    return out;
  std::vector<Elf64_Shdr> headers(header.e_shnum);
  std::memcpy(headers.data(), bytes + header.e_shoff, header.e_shnum * sizeof(Elf64_Shdr));
  const char *names = reinterpret_cast<const char *>(bytes + headers[header.e_shstrndx].sh_offset);
  for (const Elf64_Shdr &h : headers)
    out.sections.push_back({names + h.sh_name, h.sh_type, bytes + h.sh_offset,
                            h.sh_type == SHT_NOBITS ? 0 : h.sh_size, h.sh_size});
  for (const Elf64_Shdr &h : headers) {
    if (h.sh_type != SHT_SYMTAB || h.sh_link >= headers.size())
      continue;
    const char *strings = reinterpret_cast<const char *>(bytes + headers[h.sh_link].sh_offset);
    for (size_t i = 0; i < h.sh_size / sizeof(Elf64_Sym); ++i) {
      Elf64_Sym sym;
      std::memcpy(&sym, bytes + h.sh_offset + i * sizeof sym, sizeof sym);
      if (ELF64_ST_BIND(sym.st_info) != STB_GLOBAL)
        continue;
      if (ELF64_ST_TYPE(sym.st_info) == STT_FUNC)
        out.functions.push_back(strings + sym.st_name);
      else if (ELF64_ST_TYPE(sym.st_info) == STT_OBJECT)
        out.objects.push_back(strings + sym.st_name);
    }
  }
  out.valid = true;
  return out;
}

// The test hooks, one set per fake library.
extern "C" {
void fakeGpuReset() {
  std::lock_guard<std::mutex> lock(State::get().mutex);
  State::get().reset();
}
int fakeGpuLaunchCount() {
  std::lock_guard<std::mutex> lock(State::get().mutex);
  return static_cast<int>(State::get().launches.size());
}
bool fakeGpuLaunch(int index, FakeLaunch *out) {
  std::lock_guard<std::mutex> lock(State::get().mutex);
  auto &launches = State::get().launches;
  if (index < 0 || static_cast<size_t>(index) >= launches.size())
    return false;
  *out = launches[index];
  return true;
}
const char *fakeGpuLastRefusal() {
  std::lock_guard<std::mutex> lock(State::get().mutex);
  return State::get().lastRefusal.c_str();
}
size_t fakeGpuAllocationBytes(uint64_t address) {
  std::lock_guard<std::mutex> lock(State::get().mutex);
  return State::get().allocationBytes(address);
}
void fakeGpuSetMemoryLimit(size_t bytes) {
  std::lock_guard<std::mutex> lock(State::get().mutex);
  State::get().memoryLimit = bytes;
}
void fakeGpuFaultNextLaunch(int error) {
  std::lock_guard<std::mutex> lock(State::get().mutex);
  State::get().faultNextLaunch = error;
}
int fakeGpuDynamicSharedLimit(const char *kernel) {
  std::lock_guard<std::mutex> lock(State::get().mutex);
  Kernel *k = State::get().findKernel(kernel);
  return k ? k->dynamicSharedLimit : -1;
}
}
