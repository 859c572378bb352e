//===- Driver.h - the small contract every kiln-rt backend meets -*- C++ -*-===//
//
// allocate, copy, load module, launch, sync, time: nothing more. Validation, grid
// rules and bundles live above this line, once, for every backend.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "kiln/Runtime.h"
#include "runtime/Metadata.h"

#include <array>
#include <memory>

namespace kiln::rt {

/// An argument after validation: buffers resolved to driver handles.
struct LaunchArg {
  const ArgInfo *info = nullptr;
  void *buffer = nullptr; // driver handle, tensors only
  int64_t offset = 0;     // elements
  std::vector<int64_t> sizes, strides;
  union {
    int64_t i;
    double f;
  } scalar = {0};
};

/// A driver's in-order queue of work. Every launch queued on one stream starts
/// after the launches queued before it have finished writing memory.
class DriverStream {
public:
  virtual ~DriverStream() = default;
};

class Driver {
public:
  virtual ~Driver() = default;
  virtual Backend backend() const = 0;
  virtual std::string name() const = 0;
  virtual std::string target() const = 0;
  /// How many programs the device runs at once, one per processor: SMs,
  /// compute units, worker threads (the grid rule's num_processors()).
  virtual int64_t processors() const = 0;
  /// A device whose programs run on the host's cores (a Vulkan driver such as
  /// lavapipe): the CPU backend's native code is the faster choice there.
  virtual bool runsOnHost() const { return false; }

  virtual Result<void *> allocate(size_t bytes) = 0;
  virtual void release(void *buffer) = 0;
  virtual Status write(void *buffer, size_t offset, const void *data, size_t bytes) = 0;
  virtual Status read(void *buffer, size_t offset, void *data, size_t bytes) = 0;

  /// Loads `binary` (as kilnc wrote it for `target()`); the handle is opaque.
  virtual Result<std::shared_ptr<void>> loadModule(const std::string &binary,
                                                   const ModuleMetadata &metadata) = 0;
  virtual Status launch(void *module, const KernelInfo &kernel,
                        const std::array<int64_t, 3> &grid,
                        const std::vector<LaunchArg> &args) = 0;
  virtual Status synchronize() = 0;
  /// Milliseconds on the device's clock after all queued work finished.
  virtual Result<double> timestamp() = 0;

  /// Streams. A driver without its own queues runs stream work synchronously on
  /// the device's queue, which is a valid (if serial) stream.
  virtual Result<std::shared_ptr<DriverStream>> createStream() {
    return std::shared_ptr<DriverStream>(std::make_shared<DriverStream>());
  }
  /// Queues a launch; `keepAlive` holds the argument buffers until it has run.
  virtual Status launchOn(DriverStream &stream, void *module, const KernelInfo &kernel,
                          const std::array<int64_t, 3> &grid, const std::vector<LaunchArg> &args,
                          std::shared_ptr<void> keepAlive) {
    return launch(module, kernel, grid, args);
  }
  virtual Status synchronize(DriverStream &stream) { return synchronize(); }
  /// Milliseconds on the device's clock once the stream's queued work finished.
  virtual Result<double> timestamp(DriverStream &stream) { return timestamp(); }
};

/// Backends compiled into this runtime. Each returns null (with `why` set) when the
/// machine lacks the hardware or the vendor library.
/// `index` -1: the fastest kind of Vulkan device present (discrete GPU, then
/// integrated, virtual and last one that runs on the CPU).
std::unique_ptr<Driver> openVulkan(int index, std::string &why);
std::unique_ptr<Driver> openCPU(int index, std::string &why);
std::unique_ptr<Driver> openCUDA(int index, std::string &why);
std::unique_ptr<Driver> openHIP(int index, std::string &why);

} // namespace kiln::rt
