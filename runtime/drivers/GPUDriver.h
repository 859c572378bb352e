//===- GPUDriver.h - the Driver CUDA and HIP share --------------*- C++ -*-===//
//
// CUDA's driver API and HIP's module API are one API under two spellings:
// memory, modules, functions, launches, streams and events, each call returning
// an error code (0 for success), and a device that is current per thread.
// GPUDriver<Api> is the Driver written once against that shape. `Api` spells
// each call for its vendor and names it for error messages (CudaApi, HipApi):
//
//   static constexpr const char *kName = ...;   // "CUDA", "HIP": for error codes
//   using Current = ...;            // what makes the device current: a context, an index
//   GPUCall setCurrent(Current);
//   const char *errorText(int);     // null when the library has none
//   GPUCall allocate(void **, size_t), deallocate(void *),
//           copyToDevice(void *, const void *, size_t), copyToHost(void *, void *, size_t),
//           loadModule(void **, const void *), unloadModule(void *),
//           getFunction(void **, void *module, const char *),
//           launch(void *fn, const unsigned grid[3], unsigned threads, unsigned sharedBytes,
//                  void *stream, void **params),
//           synchronizeDevice(), createStream(void **), destroyStream(void *),
//           synchronizeStream(void *), createEvent(void **), destroyEvent(void *),
//           recordEvent(void *event, void *stream), synchronizeEvent(void *),
//           elapsedTime(float *, void *start, void *end);
//
// Every call that needs the device makes it current first, so any thread may
// use the device. A vendor's driver opens the device (setting `current`),
// records the clock's origin, and says what it alone knows: its grid limits, how
// a binary becomes a module image, and what a function needs before launch.
//
//===----------------------------------------------------------------------===//

#pragma once

#include "runtime/Driver.h"
#include "runtime/drivers/GPUErrors.h"
#include "runtime/drivers/KernelParams.h"

#include <map>

namespace kiln::rt {

/// A vendor call's error code and its name, for messages.
struct GPUCall {
  int error;
  const char *name;
};

template <class Api> class GPUDriver : public Driver {
public:
  using Current = typename Api::Current;

  ~GPUDriver() override { releaseOrigin(); }

  Result<void *> allocate(size_t bytes) override {
    if (Status s = makeCurrent(); !s)
      return s;
    void *ptr = nullptr;
    GPUCall call = api.allocate(&ptr, bytes);
    if (call.error == kGPUOutOfMemory)
      return Status::failure("out of device memory");
    if (Status s = check(call); !s)
      return s;
    return ptr;
  }
  void release(void *buffer) override {
    if (makeCurrent())
      api.deallocate(buffer);
  }
  Status write(void *buffer, size_t offset, const void *data, size_t bytes) override {
    if (Status s = makeCurrent(); !s)
      return s;
    return check(api.copyToDevice(static_cast<char *>(buffer) + offset, data, bytes));
  }
  Status read(void *buffer, size_t offset, void *data, size_t bytes) override {
    if (Status s = makeCurrent(); !s)
      return s;
    return check(api.copyToHost(data, static_cast<char *>(buffer) + offset, bytes));
  }

  Result<std::shared_ptr<void>> loadModule(const std::string &binary,
                                           const ModuleMetadata &metadata) override {
    std::string image = binary;
    if (Status s = prepareImage(image); !s)
      return s;
    if (Status s = makeCurrent(); !s)
      return s;
    auto module = std::make_shared<Module>();
    module->api = &api;
    module->current = current;
    if (Status s = check(api.loadModule(&module->module, image.data())); !s)
      return s;
    for (const KernelInfo &k : metadata.kernels) {
      void *fn = nullptr;
      GPUCall call = api.getFunction(&fn, module->module, k.name.c_str());
      if (Status s = check(call, std::string(call.name) + "(" + k.name + ")"); !s)
        return s;
      if (Status s = prepareFunction(fn, k); !s)
        return s;
      module->functions[k.name] = fn;
    }
    return std::shared_ptr<void>(module);
  }

  Status launch(void *module, const KernelInfo &kernel, const std::array<int64_t, 3> &grid,
                const std::vector<LaunchArg> &args) override {
    return launchIn(nullptr, module, kernel, grid, args);
  }
  Status synchronize() override {
    if (Status s = makeCurrent(); !s)
      return s;
    return check(api.synchronizeDevice());
  }
  Result<double> timestamp() override { return eventTime(nullptr); }

  Result<std::shared_ptr<DriverStream>> createStream() override {
    if (Status s = makeCurrent(); !s)
      return s;
    void *stream = nullptr;
    if (Status s = check(api.createStream(&stream)); !s)
      return s;
    return std::shared_ptr<DriverStream>(std::make_shared<Stream>(api, current, stream));
  }
  Status launchOn(DriverStream &stream, void *module, const KernelInfo &kernel,
                  const std::array<int64_t, 3> &grid, const std::vector<LaunchArg> &args,
                  std::shared_ptr<void> keepAlive) override {
    auto &s = static_cast<Stream &>(stream);
    s.keepAlive.push_back(std::move(keepAlive));
    return launchIn(s.stream, module, kernel, grid, args);
  }
  Status synchronize(DriverStream &stream) override {
    auto &s = static_cast<Stream &>(stream);
    Status status = makeCurrent();
    if (status)
      status = check(api.synchronizeStream(s.stream));
    s.keepAlive.clear();
    return status;
  }
  Result<double> timestamp(DriverStream &stream) override {
    auto &s = static_cast<Stream &>(stream);
    auto t = eventTime(s.stream);
    s.keepAlive.clear();
    return t;
  }

protected:
  /// The grid's limits on this device: an error naming the kernel past them.
  virtual Status checkGrid(const KernelInfo &kernel, const std::array<int64_t, 3> &grid) = 0;
  /// Turns kilnc's binary into what the vendor's loader takes, or refuses it.
  virtual Status prepareImage(std::string &image) { return Status::success(); }
  /// What a loaded function needs before it may launch.
  virtual Status prepareFunction(void *fn, const KernelInfo &kernel) { return Status::success(); }

  /// Makes the device the calling thread's current one.
  Status makeCurrent() { return check(api.setCurrent(current)); }

  /// `call`'s error as a status: "WHAT: the library's text", WHAT being the call's
  /// name unless given, and a note for the errors that leave the context unusable.
  Status check(GPUCall call, const std::string &what = "") {
    if (call.error == 0)
      return Status::success();
    const char *text = api.errorText(call.error);
    return Status::failure((what.empty() ? std::string(call.name) : what) + ": " +
                           (text ? text
                                 : std::string(Api::kName) + " error " +
                                       std::to_string(call.error)) +
                           gpuErrorNote(call.error));
  }

  /// Records the zero of the clock timestamp() reports; false when it cannot.
  bool recordOrigin() {
    return check(api.createEvent(&origin)) && check(api.recordEvent(origin, nullptr)) &&
           check(api.synchronizeEvent(origin));
  }
  /// Destroys the origin event (before a subclass lets its context go).
  void releaseOrigin() {
    if (origin && makeCurrent())
      api.destroyEvent(origin);
    origin = nullptr;
  }

  Api api;
  Current current{};

private:
  struct Module {
    Api *api = nullptr;
    Current current{};
    void *module = nullptr;
    std::map<std::string, void *> functions;
    ~Module() {
      if (module && api->setCurrent(current).error == 0)
        api->unloadModule(module);
    }
  };

  struct Stream : DriverStream {
    Stream(Api &api, Current current, void *stream) : api(api), current(current), stream(stream) {}
    ~Stream() override {
      if (api.setCurrent(current).error != 0)
        return;
      api.synchronizeStream(stream);
      api.destroyStream(stream);
    }
    Api &api;
    Current current;
    void *stream;
    std::vector<std::shared_ptr<void>> keepAlive; // until the next synchronize
  };

  /// Queues the launch on `stream` (null: the default stream).
  Status launchIn(void *stream, void *moduleHandle, const KernelInfo &kernel,
                  const std::array<int64_t, 3> &grid, const std::vector<LaunchArg> &args) {
    if (Status s = checkGrid(kernel, grid); !s)
      return s;
    if (Status s = makeCurrent(); !s)
      return s;
    auto *module = static_cast<Module *>(moduleHandle);
    std::vector<uint64_t> storage = packKernelParams(
        args, [](void *buffer) { return reinterpret_cast<uint64_t>(buffer); });
    std::vector<void *> params = paramPointers(storage);
    const unsigned blocks[3] = {static_cast<unsigned>(grid[0]), static_cast<unsigned>(grid[1]),
                                static_cast<unsigned>(grid[2])};
    unsigned sharedBytes =
        kernel.dynamicSharedMemory ? static_cast<unsigned>(kernel.sharedMemoryBytes) : 0u;
    return check(api.launch(module->functions.at(kernel.name), blocks,
                            static_cast<unsigned>(kernel.threadsPerBlock), sharedBytes, stream,
                            params.data()),
                 "launch of '" + kernel.name + "'");
  }

  /// Device time: an event recorded on `stream` once its work is done, in
  /// milliseconds since the origin event.
  Result<double> eventTime(void *stream) {
    if (Status s = makeCurrent(); !s)
      return s;
    void *event = nullptr;
    if (Status s = check(api.createEvent(&event)); !s)
      return s;
    float ms = 0;
    Status s = check(api.recordEvent(event, stream));
    if (s)
      s = check(api.synchronizeEvent(event));
    if (s)
      s = check(api.elapsedTime(&ms, origin, event));
    api.destroyEvent(event);
    if (!s)
      return s;
    return static_cast<double>(ms);
  }

  void *origin = nullptr;
};

} // namespace kiln::rt
