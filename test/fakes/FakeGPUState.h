//===- FakeGPUState.h - the device the fake libraries pretend to be -*- C++ -*-===//
//
// Memory, modules, launches and injected faults, behind one lock. The error
// codes are CUDA's; HIP numbers the same errors the same way.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "FakeGPU.h"

#include <array>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace fakegpu {

enum Error : int {
  kSuccess = 0,
  kInvalidValue = 1,
  kOutOfMemory = 2,
  kInvalidImage = 200,
  kInvalidHandle = 400,
  kNotFound = 500,
  kOutOfResources = 701,
};

/// A kernel as its binary declares it.
struct Kernel {
  std::string name;
  bool paramsKnown = false;
  std::vector<unsigned> paramBytes;
  /// Threads a block may have: in all, and along each dimension.
  unsigned maxThreads = 1024;
  std::array<unsigned, 3> maxBlock = {1024, 1024, 64};
  bool exactBlock = false; // PTX .reqntid: the block must be exactly maxBlock
  unsigned staticSharedBytes = 0;
  int dynamicSharedLimit = -1; // raised by the attribute call; -1: the default
};

struct Module {
  std::vector<std::unique_ptr<Kernel>> kernels;
  Kernel *find(const std::string &name) {
    for (auto &k : kernels)
      if (k->name == name)
        return k.get();
    return nullptr;
  }
};

/// What a device of the fake allows.
struct Limits {
  std::array<unsigned, 3> maxGrid;
  unsigned defaultDynamicSharedBytes; // without the kernel's opt-in
  unsigned maxSharedBytes;            // per block, static and dynamic together
};

class State {
public:
  static State &get();

  std::mutex mutex;

  /// Returns `code` after keeping `why` for fakeGpuLastRefusal.
  int refuse(int code, std::string why);
  /// A call that waits for the device: the fault a faulted launch left, or 0.
  int pendingFault() const { return fault_; }

  int allocate(size_t bytes, uint64_t *address);
  int release(uint64_t address);
  /// Whether [address, address + bytes) lies inside one allocation.
  bool inside(uint64_t address, size_t bytes) const;
  size_t allocationBytes(uint64_t address) const;
  int copy(void *to, const void *from, size_t bytes, uint64_t deviceAddress);

  bool isModule(void *handle) const { return modules_.count(static_cast<Module *>(handle)); }
  bool isKernel(void *handle) const;
  /// The most recently loaded kernel of this name; null when none is loaded.
  Kernel *findKernel(const std::string &name) const;
  int unloadModule(void *handle);

  /// Checks a launch as the real API would and records it.
  int launch(int device, Kernel *kernel, const Limits &limits, const unsigned grid[3],
             const unsigned block[3], unsigned dynamicSharedBytes, bool onStream, void **params);

  /// The module calls both APIs share.
  int loadModule(void **handle, std::unique_ptr<Module> module);
  int getFunction(void **function, void *module, const char *name);
  /// A launch's checks before the kernel's own: no `extra` (the fake reads
  /// `kernelParams`) and a stream that exists (null: the default one).
  int checkLaunch(void *stream, void **extra);

  /// Streams and events.
  int createStream(void **stream);
  int destroyStream(void *stream);
  int synchronizeStream(void *stream);
  int createEvent(void **event);
  int destroyEvent(void *event);
  int recordEvent(void *event, void *stream);
  int synchronizeEvent(void *event);
  int elapsedTime(float *ms, void *start, void *end);

  // The test hooks.
  void reset();
  std::vector<FakeLaunch> launches;
  std::string lastRefusal;
  size_t memoryLimit = 0;
  int faultNextLaunch = 0;

private:
  std::map<uint64_t, size_t> allocations_;
  size_t allocated_ = 0;
  std::set<Module *> modules_;
  std::vector<std::unique_ptr<Module>> owned_;
  int fault_ = 0;
  std::set<void *> streams_, events_;
  std::map<void *, double> eventTimes_;
  bool isStream(void *stream) const { return !stream || streams_.count(stream); }
};

/// The named sections and function symbols of an ELF64 image; empty when
/// `image` is not one.
struct ElfImage {
  struct Section {
    std::string name;
    uint32_t type = 0;
    const unsigned char *data = nullptr;
    size_t size = 0;       // bytes in the file
    size_t memorySize = 0; // bytes it takes when loaded (.bss-like sections have no data)
  };
  const Section *section(const std::string &name) const {
    for (const Section &s : sections)
      if (s.name == name)
        return &s;
    return nullptr;
  }
  std::vector<Section> sections;
  std::vector<std::string> functions; // global STT_FUNC symbols
  std::vector<std::string> objects;   // global STT_OBJECT symbols
  bool valid = false;
};
ElfImage readElf(const void *image);

/// Milliseconds on the host's steady clock: the fakes' device clock.
double nowMs();

} // namespace fakegpu
