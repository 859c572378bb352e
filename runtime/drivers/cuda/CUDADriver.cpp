//===- CUDADriver.cpp - kiln-rt on NVIDIA GPUs through the driver API ------===//
//
// libcuda.so.1 is opened at run time, so kiln-rt builds and runs on machines
// without CUDA. Modules are cubins or PTX (which the driver JIT-compiles for the
// device when no cubin matches). A tensor argument is passed as its device
// pointer, then its sizes and strides as i32; i1 scalars as i32. A context is
// current on one thread at a time, so every call that needs the device's makes
// it current first: any thread may use the device.
//
//===----------------------------------------------------------------------===//

#include "runtime/Driver.h"
#include "runtime/drivers/GPUErrors.h"
#include "runtime/drivers/KernelParams.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <dlfcn.h>
#include <map>

using namespace kiln;
using namespace kiln::rt;

namespace {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = void *;
using CUmodule = void *;
using CUfunction = void *;
using CUstream = void *;
using CUevent = void *;

/// The driver API entry points Kiln uses.
struct CudaApi {
  void *lib = nullptr;
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDeviceGetCount)(int *);
  CUresult (*cuDeviceGet)(CUdevice *, int);
  CUresult (*cuDeviceGetName)(char *, int, CUdevice);
  CUresult (*cuDeviceGetAttribute)(int *, int, CUdevice);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice);
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuCtxSynchronize)();
  CUresult (*cuMemAlloc)(CUdeviceptr *, size_t);
  CUresult (*cuMemFree)(CUdeviceptr);
  CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void *, size_t);
  CUresult (*cuMemcpyDtoH)(void *, CUdeviceptr, size_t);
  CUresult (*cuModuleLoadData)(CUmodule *, const void *);
  CUresult (*cuModuleUnload)(CUmodule);
  CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
  CUresult (*cuFuncSetAttribute)(CUfunction, int, int);
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned, unsigned, void *, void **, void **);
  CUresult (*cuGetErrorString)(CUresult, const char **);
  CUresult (*cuStreamCreate)(CUstream *, unsigned);
  CUresult (*cuStreamDestroy)(CUstream);
  CUresult (*cuStreamSynchronize)(CUstream);
  CUresult (*cuEventCreate)(CUevent *, unsigned);
  CUresult (*cuEventDestroy)(CUevent);
  CUresult (*cuEventRecord)(CUevent, CUstream);
  CUresult (*cuEventSynchronize)(CUevent);
  CUresult (*cuEventElapsedTime)(float *, CUevent, CUevent);

  bool load(std::string &why) {
    lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      why = "libcuda.so.1 not found (no NVIDIA driver on this machine)";
      return false;
    }
    bool ok = true;
    auto sym = [&](auto &fn, const char *name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
      ok &= fn != nullptr;
    };
    sym(cuInit, "cuInit");
    sym(cuDeviceGetCount, "cuDeviceGetCount");
    sym(cuDeviceGet, "cuDeviceGet");
    sym(cuDeviceGetName, "cuDeviceGetName");
    sym(cuDeviceGetAttribute, "cuDeviceGetAttribute");
    sym(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
    sym(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2");
    sym(cuCtxSetCurrent, "cuCtxSetCurrent");
    sym(cuCtxSynchronize, "cuCtxSynchronize");
    sym(cuMemAlloc, "cuMemAlloc_v2");
    sym(cuMemFree, "cuMemFree_v2");
    sym(cuMemcpyHtoD, "cuMemcpyHtoD_v2");
    sym(cuMemcpyDtoH, "cuMemcpyDtoH_v2");
    sym(cuModuleLoadData, "cuModuleLoadData");
    sym(cuModuleUnload, "cuModuleUnload");
    sym(cuModuleGetFunction, "cuModuleGetFunction");
    sym(cuFuncSetAttribute, "cuFuncSetAttribute");
    sym(cuLaunchKernel, "cuLaunchKernel");
    sym(cuGetErrorString, "cuGetErrorString");
    sym(cuStreamCreate, "cuStreamCreate");
    sym(cuStreamDestroy, "cuStreamDestroy_v2");
    sym(cuStreamSynchronize, "cuStreamSynchronize");
    sym(cuEventCreate, "cuEventCreate");
    sym(cuEventDestroy, "cuEventDestroy_v2");
    sym(cuEventRecord, "cuEventRecord");
    sym(cuEventSynchronize, "cuEventSynchronize");
    sym(cuEventElapsedTime, "cuEventElapsedTime");
    if (!ok)
      why = "libcuda.so.1 lacks a driver API entry point Kiln needs (driver too old?)";
    return ok;
  }
};

constexpr int kComputeCapabilityMajor = 75, kComputeCapabilityMinor = 76;
constexpr int kMaxGridDimX = 5, kMaxGridDimY = 6, kMaxGridDimZ = 7;
constexpr int kMultiprocessorCount = 16;

struct CudaModule {
  CudaApi *api = nullptr;
  CUcontext context = nullptr;
  CUmodule module = nullptr;
  std::map<std::string, CUfunction> functions;
  ~CudaModule() {
    if (module && api->cuCtxSetCurrent(context) == 0)
      api->cuModuleUnload(module);
  }
};

class CUDADriver : public Driver {
public:
  ~CUDADriver() override {
    if (origin && makeCurrent())
      api.cuEventDestroy(origin);
    if (context)
      api.cuDevicePrimaryCtxRelease(device);
  }

  bool init(int index, std::string &why) {
    if (!api.load(why))
      return false;
    int count = 0;
    if (api.cuInit(0) != 0 || api.cuDeviceGetCount(&count) != 0 || count == 0) {
      why = "the NVIDIA driver reports no CUDA device";
      return false;
    }
    if (index >= count) {
      why = "CUDA has " + std::to_string(count) + " device(s); index " + std::to_string(index) +
            " does not exist";
      return false;
    }
    api.cuDeviceGet(&device, index);
    char buf[256] = {0};
    api.cuDeviceGetName(buf, sizeof buf, device);
    deviceName = buf;
    int major = 0, minor = 0;
    api.cuDeviceGetAttribute(&major, kComputeCapabilityMajor, device);
    api.cuDeviceGetAttribute(&minor, kComputeCapabilityMinor, device);
    sm = major * 10 + minor;
    for (int d = 0; d < 3; ++d)
      api.cuDeviceGetAttribute(&maxGrid[d], kMaxGridDimX + d, device);
    api.cuDeviceGetAttribute(&multiprocessors, kMultiprocessorCount, device);
    if (api.cuDevicePrimaryCtxRetain(&context, device) != 0 || api.cuCtxSetCurrent(context) != 0) {
      why = "cannot create a CUDA context";
      return false;
    }
    if (api.cuEventCreate(&origin, 0) != 0 || api.cuEventRecord(origin, nullptr) != 0 ||
        api.cuEventSynchronize(origin) != 0) {
      why = "cannot record a CUDA event";
      return false;
    }
    return true;
  }

  /// Makes the device's context the calling thread's.
  Status makeCurrent() { return check(api.cuCtxSetCurrent(context), "cuCtxSetCurrent"); }

  Status check(CUresult r, const std::string &what) {
    if (r == 0)
      return Status::success();
    const char *text = nullptr;
    api.cuGetErrorString(r, &text);
    return Status::failure(what + ": " + (text ? text : "CUDA error " + std::to_string(r)) +
                           gpuErrorNote(r));
  }

  Backend backend() const override { return Backend::CUDA; }
  std::string name() const override { return deviceName; }
  std::string target() const override { return "cuda:sm_" + std::to_string(sm); }
  int64_t processors() const override { return std::max(multiprocessors, 1); }

  Result<void *> allocate(size_t bytes) override {
    if (Status s = makeCurrent(); !s)
      return s;
    CUdeviceptr ptr = 0;
    CUresult r = api.cuMemAlloc(&ptr, bytes);
    if (r == kGPUOutOfMemory)
      return Status::failure("out of device memory");
    if (Status s = check(r, "cuMemAlloc"); !s)
      return s;
    return reinterpret_cast<void *>(ptr);
  }
  void release(void *buffer) override {
    if (makeCurrent())
      api.cuMemFree(reinterpret_cast<CUdeviceptr>(buffer));
  }
  Status write(void *buffer, size_t offset, const void *data, size_t bytes) override {
    if (Status s = makeCurrent(); !s)
      return s;
    return check(api.cuMemcpyHtoD(reinterpret_cast<CUdeviceptr>(buffer) + offset, data, bytes),
                 "cuMemcpyHtoD");
  }
  Status read(void *buffer, size_t offset, void *data, size_t bytes) override {
    if (Status s = makeCurrent(); !s)
      return s;
    return check(api.cuMemcpyDtoH(data, reinterpret_cast<CUdeviceptr>(buffer) + offset, bytes),
                 "cuMemcpyDtoH");
  }

  Result<std::shared_ptr<void>> loadModule(const std::string &binary,
                                           const ModuleMetadata &metadata) override {
    if (Status s = makeCurrent(); !s)
      return s;
    auto module = std::make_shared<CudaModule>();
    module->api = &api;
    module->context = context;
    // PTX must be NUL-terminated; a cubin is taken as is.
    std::string image = binary;
    if (image.compare(0, 4, "\x7f" "ELF") != 0)
      image.push_back('\0');
    if (Status s = check(api.cuModuleLoadData(&module->module, image.data()), "cuModuleLoadData");
        !s)
      return s;
    for (const KernelInfo &k : metadata.kernels) {
      CUfunction fn = nullptr;
      if (Status s = check(api.cuModuleGetFunction(&fn, module->module, k.name.c_str()),
                           "cuModuleGetFunction(" + k.name + ")");
          !s)
        return s;
      // Dynamic shared memory above the default 48 KiB needs the function's opt-in.
      constexpr int kMaxDynamicSharedSizeBytes = 8; // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
      if (k.dynamicSharedMemory)
        if (Status s = check(api.cuFuncSetAttribute(fn, kMaxDynamicSharedSizeBytes,
                                                    static_cast<int>(k.sharedMemoryBytes)),
                             "kernel '" + k.name + "' needs " +
                                 std::to_string(k.sharedMemoryBytes) +
                                 " bytes of shared memory; cuFuncSetAttribute");
            !s)
          return s;
      module->functions[k.name] = fn;
    }
    return std::shared_ptr<void>(module);
  }

  Status launch(void *moduleHandle, const KernelInfo &kernel, const std::array<int64_t, 3> &grid,
                const std::vector<LaunchArg> &args) override {
    return launchIn(nullptr, moduleHandle, kernel, grid, args);
  }

  /// Queues the launch on `stream` (null: the context's default stream).
  Status launchIn(CUstream stream, void *moduleHandle, const KernelInfo &kernel,
                  const std::array<int64_t, 3> &grid, const std::vector<LaunchArg> &args) {
    auto *module = static_cast<CudaModule *>(moduleHandle);
    for (int d = 0; d < 3; ++d)
      if (grid[d] > maxGrid[d])
        return Status::failure("kernel '" + kernel.name + "': grid of " +
                               std::to_string(grid[d]) + " programs along axis " +
                               std::to_string(d) + " exceeds the device limit " +
                               std::to_string(maxGrid[d]));
    if (Status s = makeCurrent(); !s)
      return s;
    std::vector<uint64_t> storage = packKernelParams(
        args, [](void *buffer) { return reinterpret_cast<CUdeviceptr>(buffer); });
    std::vector<void *> params = paramPointers(storage);
    return check(api.cuLaunchKernel(module->functions.at(kernel.name),
                                    static_cast<unsigned>(grid[0]), static_cast<unsigned>(grid[1]),
                                    static_cast<unsigned>(grid[2]),
                                    static_cast<unsigned>(kernel.threadsPerBlock), 1, 1,
                                    kernel.dynamicSharedMemory
                                        ? static_cast<unsigned>(kernel.sharedMemoryBytes)
                                        : 0u,
                                    stream, params.data(), nullptr),
                 "launch of '" + kernel.name + "'");
  }

  Status synchronize() override {
    if (Status s = makeCurrent(); !s)
      return s;
    return check(api.cuCtxSynchronize(), "cuCtxSynchronize");
  }
  Result<double> timestamp() override { return eventTime(nullptr); }

  /// Device time: an event recorded on `stream` once its work is done, in
  /// milliseconds since an origin event recorded when the device was opened.
  Result<double> eventTime(CUstream stream) {
    if (Status s = makeCurrent(); !s)
      return s;
    CUevent event = nullptr;
    if (Status s = check(api.cuEventCreate(&event, 0), "cuEventCreate"); !s)
      return s;
    float ms = 0;
    Status s = check(api.cuEventRecord(event, stream), "cuEventRecord");
    if (s)
      s = check(api.cuEventSynchronize(event), "cuEventSynchronize");
    if (s)
      s = check(api.cuEventElapsedTime(&ms, origin, event), "cuEventElapsedTime");
    api.cuEventDestroy(event);
    if (!s)
      return s;
    return static_cast<double>(ms);
  }

  struct CudaStream : DriverStream {
    CudaStream(CudaApi &api, CUcontext context, CUstream stream)
        : api(api), context(context), stream(stream) {}
    ~CudaStream() override {
      if (api.cuCtxSetCurrent(context) != 0)
        return;
      api.cuStreamSynchronize(stream);
      api.cuStreamDestroy(stream);
    }
    CudaApi &api;
    CUcontext context;
    CUstream stream;
    std::vector<std::shared_ptr<void>> keepAlive; // until the next synchronize
  };

  Result<std::shared_ptr<DriverStream>> createStream() override {
    if (Status s = makeCurrent(); !s)
      return s;
    CUstream stream = nullptr;
    if (Status s = check(api.cuStreamCreate(&stream, 0), "cuStreamCreate"); !s)
      return s;
    return std::shared_ptr<DriverStream>(std::make_shared<CudaStream>(api, context, stream));
  }
  Status launchOn(DriverStream &stream, void *module, const KernelInfo &kernel,
                  const std::array<int64_t, 3> &grid, const std::vector<LaunchArg> &args,
                  std::shared_ptr<void> keepAlive) override {
    auto &cs = static_cast<CudaStream &>(stream);
    cs.keepAlive.push_back(std::move(keepAlive));
    return launchIn(cs.stream, module, kernel, grid, args);
  }
  Status synchronize(DriverStream &stream) override {
    auto &cs = static_cast<CudaStream &>(stream);
    Status s = makeCurrent();
    if (s)
      s = check(api.cuStreamSynchronize(cs.stream), "cuStreamSynchronize");
    cs.keepAlive.clear();
    return s;
  }
  Result<double> timestamp(DriverStream &stream) override {
    auto &cs = static_cast<CudaStream &>(stream);
    auto t = eventTime(cs.stream);
    cs.keepAlive.clear();
    return t;
  }

private:
  CudaApi api;
  CUdevice device = 0;
  CUcontext context = nullptr;
  std::string deviceName;
  int sm = 0;
  int maxGrid[3] = {0, 0, 0};
  int multiprocessors = 0;
  CUevent origin = nullptr; // the zero of the device clock timestamp() reports
};

} // namespace

std::unique_ptr<Driver> kiln::rt::openCUDA(int index, std::string &why) {
  auto driver = std::make_unique<CUDADriver>();
  if (!driver->init(index, why))
    return nullptr;
  return driver;
}
