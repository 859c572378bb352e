//===- HIPDriver.cpp - kiln-rt on AMD GPUs through the HIP module API ------===//
//
// libamdhip64 is opened at run time. Modules are hsaco code objects from
// `kilnc --target=amdgpu:gfxNNN --emit=hsaco`. The device's gfx target comes from
// the KFD topology in sysfs (KILN_HIP_ARCH overrides it). HIP's current
// device is per thread; GPUDriver selects it for every call.
//
//===----------------------------------------------------------------------===//

#include "runtime/drivers/GPUDriver.h"

#include <algorithm>
#include <cstdlib>
#include <dirent.h>
#include <dlfcn.h>
#include <fstream>
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

  // The shape GPUDriver calls (runtime/drivers/GPUDriver.h).
  static constexpr const char *kName = "HIP";
  using Current = int; // the device's index
  GPUCall setCurrent(int device) { return {hipSetDevice(device), "hipSetDevice"}; }
  const char *errorText(hipError r) { return hipGetErrorString(r); }
  GPUCall allocate(void **ptr, size_t bytes) { return {hipMalloc(ptr, bytes), "hipMalloc"}; }
  GPUCall deallocate(void *ptr) { return {hipFree(ptr), "hipFree"}; }
  GPUCall copyToDevice(void *dst, const void *src, size_t bytes) {
    return {hipMemcpyHtoD(dst, src, bytes), "hipMemcpyHtoD"};
  }
  GPUCall copyToHost(void *dst, void *src, size_t bytes) {
    return {hipMemcpyDtoH(dst, src, bytes), "hipMemcpyDtoH"};
  }
  GPUCall loadModule(void **module, const void *image) {
    return {hipModuleLoadData(module, image), "hipModuleLoadData"};
  }
  GPUCall unloadModule(void *module) { return {hipModuleUnload(module), "hipModuleUnload"}; }
  GPUCall getFunction(void **fn, void *module, const char *name) {
    return {hipModuleGetFunction(fn, module, name), "hipModuleGetFunction"};
  }
  GPUCall launch(void *fn, const unsigned grid[3], unsigned threads, unsigned sharedBytes,
                 void *stream, void **params) {
    return {hipModuleLaunchKernel(fn, grid[0], grid[1], grid[2], threads, 1, 1, sharedBytes,
                                  stream, params, nullptr),
            "hipModuleLaunchKernel"};
  }
  GPUCall synchronizeDevice() { return {hipDeviceSynchronize(), "hipDeviceSynchronize"}; }
  GPUCall createStream(void **stream) { return {hipStreamCreate(stream), "hipStreamCreate"}; }
  GPUCall destroyStream(void *stream) { return {hipStreamDestroy(stream), "hipStreamDestroy"}; }
  GPUCall synchronizeStream(void *stream) {
    return {hipStreamSynchronize(stream), "hipStreamSynchronize"};
  }
  GPUCall createEvent(void **event) { return {hipEventCreate(event), "hipEventCreate"}; }
  GPUCall destroyEvent(void *event) { return {hipEventDestroy(event), "hipEventDestroy"}; }
  GPUCall recordEvent(void *event, void *stream) {
    return {hipEventRecord(event, stream), "hipEventRecord"};
  }
  GPUCall synchronizeEvent(void *event) {
    return {hipEventSynchronize(event), "hipEventSynchronize"};
  }
  GPUCall elapsedTime(float *ms, void *start, void *end) {
    return {hipEventElapsedTime(ms, start, end), "hipEventElapsedTime"};
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

class HIPDriver : public GPUDriver<HipApi> {
public:
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
    current = index;
    if (!makeCurrent()) {
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
    if (!recordOrigin()) {
      why = "cannot record a HIP event";
      return false;
    }
    return true;
  }

  Backend backend() const override { return Backend::HIP; }
  std::string name() const override { return deviceName; }
  std::string target() const override { return "amdgpu:" + arch; }
  int64_t processors() const override { return computeUnits; }

protected:
  /// The dispatch packet holds the grid in work-items, 32 bits per axis; a
  /// larger one would be cut to its low bits, and most programs never run.
  Status checkGrid(const KernelInfo &kernel, const std::array<int64_t, 3> &grid) override {
    for (int d = 0; d < 3; ++d) {
      int64_t limit = int64_t(UINT32_MAX) / (d == 0 ? kernel.threadsPerBlock : 1);
      if (grid[d] > limit)
        return Status::failure("kernel '" + kernel.name + "': grid of " +
                               std::to_string(grid[d]) + " programs along axis " +
                               std::to_string(d) + " exceeds the device limit " +
                               std::to_string(limit) + " (2^32 - 1 threads along an axis)");
    }
    return Status::success();
  }
  Status prepareImage(std::string &image) override {
    if (image.compare(0, 4, "\x7f" "ELF") != 0)
      return Status::failure("not an AMDGPU code object (expected an hsaco ELF)");
    return Status::success();
  }

private:
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
