//===- CUDADriver.cpp - kiln-rt on NVIDIA GPUs through the driver API ------===//
//
// libcuda.so.1 is opened at run time, so kiln-rt builds and runs on machines
// without CUDA. Modules are cubins or PTX (which the driver JIT-compiles for the
// device when no cubin matches). A tensor argument is passed as its device
// pointer, then its sizes and strides as i32; i1 scalars as i32. The device's
// context is current per thread; GPUDriver makes it current for every call.
//
//===----------------------------------------------------------------------===//

#include "runtime/drivers/GPUDriver.h"

#include <algorithm>
#include <dlfcn.h>

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

  // The shape GPUDriver calls (runtime/drivers/GPUDriver.h).
  static constexpr const char *kName = "CUDA";
  using Current = CUcontext;
  GPUCall setCurrent(CUcontext c) { return {cuCtxSetCurrent(c), "cuCtxSetCurrent"}; }
  const char *errorText(CUresult r) {
    const char *text = nullptr;
    cuGetErrorString(r, &text);
    return text;
  }
  GPUCall allocate(void **ptr, size_t bytes) {
    CUdeviceptr address = 0;
    CUresult r = cuMemAlloc(&address, bytes);
    *ptr = reinterpret_cast<void *>(address);
    return {r, "cuMemAlloc"};
  }
  GPUCall deallocate(void *ptr) { return {cuMemFree(address(ptr)), "cuMemFree"}; }
  GPUCall copyToDevice(void *dst, const void *src, size_t bytes) {
    return {cuMemcpyHtoD(address(dst), src, bytes), "cuMemcpyHtoD"};
  }
  GPUCall copyToHost(void *dst, void *src, size_t bytes) {
    return {cuMemcpyDtoH(dst, address(src), bytes), "cuMemcpyDtoH"};
  }
  GPUCall loadModule(void **module, const void *image) {
    return {cuModuleLoadData(module, image), "cuModuleLoadData"};
  }
  GPUCall unloadModule(void *module) { return {cuModuleUnload(module), "cuModuleUnload"}; }
  GPUCall getFunction(void **fn, void *module, const char *name) {
    return {cuModuleGetFunction(fn, module, name), "cuModuleGetFunction"};
  }
  GPUCall launch(void *fn, const unsigned grid[3], unsigned threads, unsigned sharedBytes,
                 void *stream, void **params) {
    return {cuLaunchKernel(fn, grid[0], grid[1], grid[2], threads, 1, 1, sharedBytes, stream,
                           params, nullptr),
            "cuLaunchKernel"};
  }
  GPUCall synchronizeDevice() { return {cuCtxSynchronize(), "cuCtxSynchronize"}; }
  GPUCall createStream(void **stream) { return {cuStreamCreate(stream, 0), "cuStreamCreate"}; }
  GPUCall destroyStream(void *stream) { return {cuStreamDestroy(stream), "cuStreamDestroy"}; }
  GPUCall synchronizeStream(void *stream) {
    return {cuStreamSynchronize(stream), "cuStreamSynchronize"};
  }
  GPUCall createEvent(void **event) { return {cuEventCreate(event, 0), "cuEventCreate"}; }
  GPUCall destroyEvent(void *event) { return {cuEventDestroy(event), "cuEventDestroy"}; }
  GPUCall recordEvent(void *event, void *stream) {
    return {cuEventRecord(event, stream), "cuEventRecord"};
  }
  GPUCall synchronizeEvent(void *event) {
    return {cuEventSynchronize(event), "cuEventSynchronize"};
  }
  GPUCall elapsedTime(float *ms, void *start, void *end) {
    return {cuEventElapsedTime(ms, start, end), "cuEventElapsedTime"};
  }
  static CUdeviceptr address(const void *ptr) { return reinterpret_cast<CUdeviceptr>(ptr); }
};

constexpr int kComputeCapabilityMajor = 75, kComputeCapabilityMinor = 76;
constexpr int kMaxGridDimX = 5, kMaxGridDimY = 6, kMaxGridDimZ = 7;
constexpr int kMultiprocessorCount = 16;

class CUDADriver : public GPUDriver<CudaApi> {
public:
  ~CUDADriver() override {
    releaseOrigin(); // while the context is still ours
    if (current)
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
    if (api.cuDevicePrimaryCtxRetain(&current, device) != 0 || !makeCurrent()) {
      why = "cannot create a CUDA context";
      return false;
    }
    if (!recordOrigin()) {
      why = "cannot record a CUDA event";
      return false;
    }
    return true;
  }

  Backend backend() const override { return Backend::CUDA; }
  std::string name() const override { return deviceName; }
  std::string target() const override { return "cuda:sm_" + std::to_string(sm); }
  int64_t processors() const override { return std::max(multiprocessors, 1); }

protected:
  Status checkGrid(const KernelInfo &kernel, const std::array<int64_t, 3> &grid) override {
    for (int d = 0; d < 3; ++d)
      if (grid[d] > maxGrid[d])
        return Status::failure("kernel '" + kernel.name + "': grid of " +
                               std::to_string(grid[d]) + " programs along axis " +
                               std::to_string(d) + " exceeds the device limit " +
                               std::to_string(maxGrid[d]));
    return Status::success();
  }
  /// PTX must be NUL-terminated; a cubin is taken as is.
  Status prepareImage(std::string &image) override {
    if (image.compare(0, 4, "\x7f" "ELF") != 0)
      image.push_back('\0');
    return Status::success();
  }
  /// Dynamic shared memory above the default 48 KiB needs the function's opt-in.
  Status prepareFunction(void *fn, const KernelInfo &k) override {
    constexpr int kMaxDynamicSharedSizeBytes = 8; // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
    if (!k.dynamicSharedMemory)
      return Status::success();
    return check({api.cuFuncSetAttribute(fn, kMaxDynamicSharedSizeBytes,
                                         static_cast<int>(k.sharedMemoryBytes)),
                  "cuFuncSetAttribute"},
                 "kernel '" + k.name + "' needs " + std::to_string(k.sharedMemoryBytes) +
                     " bytes of shared memory; cuFuncSetAttribute");
  }

private:
  CUdevice device = 0;
  std::string deviceName;
  int sm = 0;
  int maxGrid[3] = {0, 0, 0};
  int multiprocessors = 0;
};

} // namespace

std::unique_ptr<Driver> kiln::rt::openCUDA(int index, std::string &why) {
  auto driver = std::make_unique<CUDADriver>();
  if (!driver->init(index, why))
    return nullptr;
  return driver;
}
