//===- HIPDriver.cpp - kiln-rt on AMD GPUs through the HIP module API ------===//
//
// libamdhip64 is opened at run time. Modules are hsaco code objects from
// `kilnc --target=amdgpu:gfxNNN --emit=hsaco`. The device's gfx target comes from
// the KFD topology in sysfs (KILN_HIP_ARCH overrides it). HIP's current
// device is per thread, so every call that needs the device selects it first:
// any thread may use the device.
//
//===----------------------------------------------------------------------===//

#include "runtime/Driver.h"
#include "runtime/drivers/GPUErrors.h"
#include "runtime/drivers/KernelParams.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <dirent.h>
#include <dlfcn.h>
#include <fstream>
#include <map>
#include <sstream>

using namespace kiln;
using namespace kiln::rt;

namespace {

using hipError = int;

struct HipApi {
  void *lib = nullptr;
  hipError (*hipInit)(unsigned);
  hipError (*hipGetDeviceCount)(int *);
  hipError (*hipSetDevice)(int);
  hipError (*hipDeviceGetName)(char *, int, int);
  hipError (*hipMalloc)(void **, size_t);
  hipError (*hipFree)(void *);
  hipError (*hipMemcpyHtoD)(void *, const void *, size_t);
  hipError (*hipMemcpyDtoH)(void *, void *, size_t);
  hipError (*hipModuleLoadData)(void **, const void *);
  hipError (*hipModuleUnload)(void *);
  hipError (*hipModuleGetFunction)(void **, void *, const char *);
  hipError (*hipModuleLaunchKernel)(void *, unsigned, unsigned, unsigned, unsigned, unsigned,
                                    unsigned, unsigned, void *, void **, void **);
  hipError (*hipDeviceSynchronize)();
  const char *(*hipGetErrorString)(hipError);
  hipError (*hipStreamCreate)(void **);
  hipError (*hipStreamDestroy)(void *);
  hipError (*hipStreamSynchronize)(void *);
  hipError (*hipEventCreate)(void **);
  hipError (*hipEventDestroy)(void *);
  hipError (*hipEventRecord)(void *, void *);
  hipError (*hipEventSynchronize)(void *);
  hipError (*hipEventElapsedTime)(float *, void *, void *);

  bool load(std::string &why) {
    for (const char *name : {"libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5"})
      if ((lib = dlopen(name, RTLD_NOW | RTLD_LOCAL)))
        break;
    if (!lib) {
      why = "libamdhip64.so not found (no ROCm HIP runtime on this machine)";
      return false;
    }
    bool ok = true;
    auto sym = [&](auto &fn, const char *name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
      ok &= fn != nullptr;
    };
    sym(hipInit, "hipInit");
    sym(hipGetDeviceCount, "hipGetDeviceCount");
    sym(hipSetDevice, "hipSetDevice");
    sym(hipDeviceGetName, "hipDeviceGetName");
    sym(hipMalloc, "hipMalloc");
    sym(hipFree, "hipFree");
    sym(hipMemcpyHtoD, "hipMemcpyHtoD");
    sym(hipMemcpyDtoH, "hipMemcpyDtoH");
    sym(hipModuleLoadData, "hipModuleLoadData");
    sym(hipModuleUnload, "hipModuleUnload");
    sym(hipModuleGetFunction, "hipModuleGetFunction");
    sym(hipModuleLaunchKernel, "hipModuleLaunchKernel");
    sym(hipDeviceSynchronize, "hipDeviceSynchronize");
    sym(hipGetErrorString, "hipGetErrorString");
    sym(hipStreamCreate, "hipStreamCreate");
    sym(hipStreamDestroy, "hipStreamDestroy");
    sym(hipStreamSynchronize, "hipStreamSynchronize");
    sym(hipEventCreate, "hipEventCreate");
    sym(hipEventDestroy, "hipEventDestroy");
    sym(hipEventRecord, "hipEventRecord");
    sym(hipEventSynchronize, "hipEventSynchronize");
    sym(hipEventElapsedTime, "hipEventElapsedTime");
    if (!ok)
      why = "libamdhip64 lacks a HIP entry point Kiln needs";
    return ok;
  }
};

/// What the KFD topology says of the `index`-th GPU: its gfx name (KILN_HIP_ARCH
/// overrides it) and how many compute units it has.
struct KfdGpu {
  std::string arch; // e.g. gfx942; empty when the GPU is not found
  int64_t computeUnits = 0;
};

KfdGpu kfdGpu(int index) {
  KfdGpu out;
  const char *root = "/sys/class/kfd/kfd/topology/nodes";
  std::vector<int> nodes;
  if (DIR *dir = opendir(root)) {
    while (dirent *e = readdir(dir))
      if (e->d_name[0] >= '0' && e->d_name[0] <= '9')
        nodes.push_back(std::atoi(e->d_name));
    closedir(dir);
  }
  std::sort(nodes.begin(), nodes.end());
  int gpu = 0;
  for (int node : nodes) {
    std::ifstream in(std::string(root) + "/" + std::to_string(node) + "/properties");
    std::string key;
    long long value, version = 0, simds = 0, simdsPerCU = 0;
    while (in >> key >> value) {
      if (key == "gfx_target_version")
        version = value;
      else if (key == "simd_count")
        simds = value;
      else if (key == "simd_per_cu")
        simdsPerCU = value;
    }
    if (simds == 0 || version == 0)
      continue; // a CPU node
    if (gpu++ != index)
      continue;
    // major * 10000 + minor * 100 + stepping; the stepping is a hex digit (gfx90a).
    std::ostringstream name;
    name << "gfx" << version / 10000 << (version / 100) % 100 << std::hex << version % 100;
    out.arch = name.str();
    out.computeUnits = simdsPerCU > 0 ? simds / simdsPerCU : simds / 4; // 4 SIMDs per CU
    break;
  }
  if (const char *env = std::getenv("KILN_HIP_ARCH"))
    out.arch = env;
  return out;
}

struct HipModule {
  HipApi *api = nullptr;
  int device = 0;
  void *module = nullptr;
  std::map<std::string, void *> functions;
  ~HipModule() {
    if (module && api->hipSetDevice(device) == 0)
      api->hipModuleUnload(module);
  }
};

class HIPDriver : public Driver {
public:
  ~HIPDriver() override {
    if (origin && makeCurrent())
      api.hipEventDestroy(origin);
  }

  bool init(int index, std::string &why) {
    if (!api.load(why))
      return false;
    int count = 0;
    if (api.hipInit(0) != 0 || api.hipGetDeviceCount(&count) != 0 || count == 0) {
      why = "HIP reports no AMD GPU";
      return false;
    }
    if (index >= count) {
      why = "HIP has " + std::to_string(count) + " device(s); index " + std::to_string(index) +
            " does not exist";
      return false;
    }
    this->index = index;
    if (api.hipSetDevice(index) != 0) {
      why = "cannot select HIP device " + std::to_string(index);
      return false;
    }
    char buf[256] = {0};
    api.hipDeviceGetName(buf, sizeof buf, index);
    deviceName = buf;
    KfdGpu gpu = kfdGpu(index);
    arch = gpu.arch;
    // Without the topology (KILN_HIP_ARCH alone), a guess as Vulkan's.
    computeUnits = gpu.computeUnits > 0 ? gpu.computeUnits : 32;
    if (arch.empty()) {
      why = "cannot tell the GPU's gfx target (set KILN_HIP_ARCH, e.g. gfx942)";
      return false;
    }
    return true;
  }

  /// Makes the device the calling thread's current one.
  Status makeCurrent() { return check(api.hipSetDevice(index), "hipSetDevice"); }

  Status check(hipError r, const std::string &what) {
    if (r == 0)
      return Status::success();
    const char *text = api.hipGetErrorString(r);
    return Status::failure(what + ": " + (text ? text : "HIP error " + std::to_string(r)) +
                           gpuErrorNote(r));
  }

  Backend backend() const override { return Backend::HIP; }
  std::string name() const override { return deviceName; }
  std::string target() const override { return "amdgpu:" + arch; }
  int64_t processors() const override { return computeUnits; }

  Result<void *> allocate(size_t bytes) override {
    if (Status s = makeCurrent(); !s)
      return s;
    void *ptr = nullptr;
    hipError r = api.hipMalloc(&ptr, bytes);
    if (r == kGPUOutOfMemory)
      return Status::failure("out of device memory");
    if (Status s = check(r, "hipMalloc"); !s)
      return s;
    return ptr;
  }
  void release(void *buffer) override {
    if (makeCurrent())
      api.hipFree(buffer);
  }
  Status write(void *buffer, size_t offset, const void *data, size_t bytes) override {
    if (Status s = makeCurrent(); !s)
      return s;
    return check(api.hipMemcpyHtoD(static_cast<char *>(buffer) + offset, data, bytes),
                 "hipMemcpyHtoD");
  }
  Status read(void *buffer, size_t offset, void *data, size_t bytes) override {
    if (Status s = makeCurrent(); !s)
      return s;
    return check(api.hipMemcpyDtoH(data, static_cast<char *>(buffer) + offset, bytes),
                 "hipMemcpyDtoH");
  }

  Result<std::shared_ptr<void>> loadModule(const std::string &binary,
                                           const ModuleMetadata &metadata) override {
    if (binary.compare(0, 4, "\x7f" "ELF") != 0)
      return Status::failure("not an AMDGPU code object (expected an hsaco ELF)");
    if (Status s = makeCurrent(); !s)
      return s;
    auto module = std::make_shared<HipModule>();
    module->api = &api;
    module->device = index;
    if (Status s = check(api.hipModuleLoadData(&module->module, binary.data()),
                         "hipModuleLoadData");
        !s)
      return s;
    for (const KernelInfo &k : metadata.kernels) {
      void *fn = nullptr;
      if (Status s = check(api.hipModuleGetFunction(&fn, module->module, k.name.c_str()),
                           "hipModuleGetFunction(" + k.name + ")");
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

  /// Queues the launch on `stream` (null: the default stream).
  Status launchIn(void *stream, void *moduleHandle, const KernelInfo &kernel,
                  const std::array<int64_t, 3> &grid, const std::vector<LaunchArg> &args) {
    auto *module = static_cast<HipModule *>(moduleHandle);
    // The dispatch packet holds the grid in work-items, 32 bits per axis; a
    // larger one would be cut to its low bits, and most programs never run.
    for (int d = 0; d < 3; ++d) {
      int64_t limit = int64_t(UINT32_MAX) / (d == 0 ? kernel.threadsPerBlock : 1);
      if (grid[d] > limit)
        return Status::failure("kernel '" + kernel.name + "': grid of " +
                               std::to_string(grid[d]) + " programs along axis " +
                               std::to_string(d) + " exceeds the device limit " +
                               std::to_string(limit) + " (2^32 - 1 threads along an axis)");
    }
    if (Status s = makeCurrent(); !s)
      return s;
    std::vector<uint64_t> storage = packKernelParams(
        args, [](void *buffer) { return reinterpret_cast<uint64_t>(buffer); });
    std::vector<void *> params = paramPointers(storage);
    return check(api.hipModuleLaunchKernel(module->functions.at(kernel.name),
                                           static_cast<unsigned>(grid[0]),
                                           static_cast<unsigned>(grid[1]),
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
    return check(api.hipDeviceSynchronize(), "hipDeviceSynchronize");
  }
  Result<double> timestamp() override { return eventTime(nullptr); }

  /// Device time: an event recorded on `stream` once its work is done, in
  /// milliseconds since an origin event recorded when the device was opened.
  Result<double> eventTime(void *stream) {
    if (Status s = makeCurrent(); !s)
      return s;
    if (!origin) {
      if (Status s = check(api.hipEventCreate(&origin), "hipEventCreate"); !s)
        return s;
      if (Status s = check(api.hipEventRecord(origin, nullptr), "hipEventRecord"); !s)
        return s;
    }
    void *event = nullptr;
    if (Status s = check(api.hipEventCreate(&event), "hipEventCreate"); !s)
      return s;
    float ms = 0;
    Status s = check(api.hipEventRecord(event, stream), "hipEventRecord");
    if (s)
      s = check(api.hipEventSynchronize(event), "hipEventSynchronize");
    if (s)
      s = check(api.hipEventElapsedTime(&ms, origin, event), "hipEventElapsedTime");
    api.hipEventDestroy(event);
    if (!s)
      return s;
    return static_cast<double>(ms);
  }

  struct HipStream : DriverStream {
    HipStream(HipApi &api, int device, void *stream) : api(api), device(device), stream(stream) {}
    ~HipStream() override {
      if (api.hipSetDevice(device) != 0)
        return;
      api.hipStreamSynchronize(stream);
      api.hipStreamDestroy(stream);
    }
    HipApi &api;
    int device;
    void *stream;
    std::vector<std::shared_ptr<void>> keepAlive; // until the next synchronize
  };

  Result<std::shared_ptr<DriverStream>> createStream() override {
    if (Status s = makeCurrent(); !s)
      return s;
    void *stream = nullptr;
    if (Status s = check(api.hipStreamCreate(&stream), "hipStreamCreate"); !s)
      return s;
    return std::shared_ptr<DriverStream>(std::make_shared<HipStream>(api, index, stream));
  }
  Status launchOn(DriverStream &stream, void *module, const KernelInfo &kernel,
                  const std::array<int64_t, 3> &grid, const std::vector<LaunchArg> &args,
                  std::shared_ptr<void> keepAlive) override {
    auto &hs = static_cast<HipStream &>(stream);
    hs.keepAlive.push_back(std::move(keepAlive));
    return launchIn(hs.stream, module, kernel, grid, args);
  }
  Status synchronize(DriverStream &stream) override {
    auto &hs = static_cast<HipStream &>(stream);
    Status s = makeCurrent();
    if (s)
      s = check(api.hipStreamSynchronize(hs.stream), "hipStreamSynchronize");
    hs.keepAlive.clear();
    return s;
  }
  Result<double> timestamp(DriverStream &stream) override {
    auto &hs = static_cast<HipStream &>(stream);
    auto t = eventTime(hs.stream);
    hs.keepAlive.clear();
    return t;
  }

private:
  HipApi api;
  int index = 0;
  void *origin = nullptr; // the zero of the device clock timestamp() reports
  std::string deviceName, arch;
  int64_t computeUnits = 1;
};

} // namespace

std::unique_ptr<Driver> kiln::rt::openHIP(int index, std::string &why) {
  auto driver = std::make_unique<HIPDriver>();
  if (!driver->init(index, why))
    return nullptr;
  return driver;
}
