//===- VulkanDriver.cpp - kiln-rt on Vulkan compute ------------------------===//
//
// Kernels are SPIR-V compute shaders from `kilnc --target=vulkan`. Each tensor
// argument is one storage-buffer binding in set 0, in argument order; every size,
// stride (i32) and scalar argument travels in one block of 32-bit words in
// argument order (64-bit scalars take two, low word first): push constants up
// to 128 bytes, else an argument buffer bound last (kiln/KernelInfo.h).
// A kernel with prints or device_asserts binds one more buffer after the
// tensors, its debug buffer (kiln/KernelInfo.h); once the kernel has run, the
// launch writes its printed lines to stdout and fails if an assert failed.
//
//===----------------------------------------------------------------------===//

#include "runtime/Driver.h"

#include "lib/Support/Half.h"

#include <vulkan/vulkan.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

using namespace kiln;
using namespace kiln::rt;

namespace {

std::string vkError(const char *what, VkResult r) {
  return std::string(what) + " failed (VkResult " + std::to_string(static_cast<int>(r)) + ")";
}

class VulkanDriver;

/// Process exit. A Vulkan driver loads libraries of its own (lavapipe: Mesa and
/// LLVM), whose exit-time destructors, registered as the instance, the device and
/// the first pipelines are made, run before those of a Session, Stream or Device
/// made earlier (a global): calls into the driver from those crashed ("double
/// free or corruption" with a launch in flight). Exit handlers run last
/// registered first, so Kiln registers its own again after each of those steps;
/// the first to run finishes every open stream's work (its prints and assertion
/// reports too) and waits for each device, and from then on Kiln's destructors
/// leave Vulkan alone (the process is ending, and its memory with it).
struct ExitGuard {
  std::mutex mutex;
  std::set<VulkanDriver *> open;
  std::atomic<bool> handled{false}; // the handler ran
  std::atomic<bool> exiting{false}; // ...and drained everything

  static ExitGuard &get() {
    static ExitGuard *guard = new ExitGuard; // never destroyed: destructors read it
    return *guard;
  }
  void add(VulkanDriver *driver) {
    std::lock_guard<std::mutex> lock(mutex);
    open.insert(driver);
  }
  void remove(VulkanDriver *driver) {
    std::lock_guard<std::mutex> lock(mutex);
    open.erase(driver);
  }
  /// Puts Kiln's exit handler ahead of every one registered so far.
  static void registerHandler() { std::atexit(onExit); }
  static void onExit();
  static bool processExiting() { return get().exiting.load(); }
};

struct VkBuf {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  void *mapped = nullptr;
  size_t size = 0;
};

/// The most dispatches one launch may take (a grid beyond the device's
/// workgroup counts runs as several).
constexpr int64_t kMaxDispatches = 1 << 20;

struct Pipeline {
  VkShaderModule shader = VK_NULL_HANDLE;
  VkDescriptorSetLayout setLayout = VK_NULL_HANDLE;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  VkPipeline pipeline = VK_NULL_HANDLE;
  uint32_t bindings = 0;  // storage buffers: tensors, then debug and argument buffers
  uint32_t pushBytes = 0; // the grid words, and the argument words when they fit...
  uint32_t argBytes = 0;  // ...else the argument words in the argument buffer
};

/// A kernel's storage-buffer bindings and where its argument words travel.
void kernelABI(const KernelInfo &k, Pipeline &p) {
  uint32_t bindings = 0, words = 0;
  for (const ArgInfo &a : k.args) {
    if (a.isTensor) {
      ++bindings;
      words += 2 * static_cast<uint32_t>(a.dims.size());
    } else {
      words += dtypeBits(a.dtype) > 32 ? 2 : 1;
    }
  }
  if (k.hasDebugBuffer())
    ++bindings;
  p.bindings = bindings;
  p.pushBytes = (kGridWords + words) * 4;
  if (p.pushBytes > kMaxPushConstantBytes) {
    ++p.bindings;
    p.pushBytes = kGridWords * 4;
    p.argBytes = words * 4;
  }
}

/// The strings of a SPIR-V module's OpString instructions (kilnc records each
/// kernel's abiSignature there).
/// A SPIR-V module's OpStrings (kilnc's ABI records among them), after a check
/// of its structure: every instruction within the words, each function closed,
/// each entry point's function present. lavapipe crashed on truncated modules
/// instead of failing; what passes is left to the driver's own checks. Sets
/// `problem` and returns nothing when the structure is broken.
std::vector<std::string> moduleStrings(const std::string &binary, std::string &problem) {
  std::vector<uint32_t> words(binary.size() / 4);
  std::memcpy(words.data(), binary.data(), words.size() * 4);
  std::vector<std::string> out;
  std::set<uint32_t> functions, entryPoints;
  const uint32_t bound = words[3];
  bool inFunction = false;
  auto broken = [&](const std::string &what) {
    problem = "not a valid SPIR-V module: " + what + " (is the file truncated or damaged?)";
    return std::vector<std::string>{};
  };
  for (size_t at = 5; at < words.size();) {
    uint32_t count = words[at] >> 16, op = words[at] & 0xffff;
    if (count == 0 || at + count > words.size())
      return broken("the instruction at word " + std::to_string(at) + " runs past the end");
    switch (op) {
    case 7: // OpString: id, text
      if (count >= 2) {
        const char *text = reinterpret_cast<const char *>(&words[at + 2]);
        out.emplace_back(text, strnlen(text, (count - 2) * 4));
      }
      break;
    case 15: // OpEntryPoint: model, function id, name, interface ids
      if (count < 4)
        return broken("a short OpEntryPoint");
      entryPoints.insert(words[at + 2]);
      break;
    case 54: // OpFunction: result type, result id, control, function type
      if (count != 5 || inFunction)
        return broken("an OpFunction inside another, or malformed");
      inFunction = true;
      functions.insert(words[at + 2]);
      break;
    case 56: // OpFunctionEnd
      if (!inFunction)
        return broken("an OpFunctionEnd outside a function");
      inFunction = false;
      break;
    default: break;
    }
    at += count;
  }
  if (inFunction)
    return broken("it ends inside a function");
  if (entryPoints.empty())
    return broken("it has no entry point");
  for (uint32_t id : entryPoints)
    if (id >= bound || !functions.count(id))
      return broken("an entry point's function %" + std::to_string(id) + " is missing");
  return out;
}

struct VkModule {
  VulkanDriver *driver = nullptr;
  std::map<std::string, Pipeline> pipelines;
  ~VkModule();
};

class VulkanDriver : public Driver {
public:
  ~VulkanDriver() override {
    ExitGuard::get().remove(this);
    if (ExitGuard::processExiting())
      return; // the driver's libraries may be gone

    if (device) {
      vkDeviceWaitIdle(device);
      if (queryPool)
        vkDestroyQueryPool(device, queryPool, nullptr);
      if (pipelineCache)
        vkDestroyPipelineCache(device, pipelineCache, nullptr);
      if (commandPool)
        vkDestroyCommandPool(device, commandPool, nullptr);
      vkDestroyDevice(device, nullptr);
    }
    if (instance)
      vkDestroyInstance(instance, nullptr);
  }

  /// At process exit: finishes every open stream's work, then waits for the device.
  void drainAtExit() {
    {
      std::lock_guard<std::mutex> lock(streamsMutex);
      for (DriverStream *stream : streams)
        (void)synchronize(*stream);
    }
    std::lock_guard<std::mutex> submitting(submitMutex); // vkDeviceWaitIdle needs the queue
    vkDeviceWaitIdle(device);
  }

  bool init(int index, std::string &why) {
    VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
    app.pApplicationName = "kiln-rt";
    app.apiVersion = VK_API_VERSION_1_2;
    VkInstanceCreateInfo ici{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
    ici.pApplicationInfo = &app;
    if (VkResult r = vkCreateInstance(&ici, nullptr, &instance); r != VK_SUCCESS) {
      why = vkError("vkCreateInstance", r) + "; is a Vulkan driver installed?";
      instance = VK_NULL_HANDLE;
      return false;
    }
    uint32_t count = 0;
    vkEnumeratePhysicalDevices(instance, &count, nullptr);
    std::vector<VkPhysicalDevice> devices(count);
    vkEnumeratePhysicalDevices(instance, &count, devices.data());
    if (index < 0 && count > 0) { // the fastest kind present, the first of that kind
      auto rank = [](VkPhysicalDevice d) {
        VkPhysicalDeviceProperties p;
        vkGetPhysicalDeviceProperties(d, &p);
        switch (p.deviceType) {
        case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return 0;
        case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return 1;
        case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return 2;
        case VK_PHYSICAL_DEVICE_TYPE_CPU: return 4;
        default: return 3;
        }
      };
      index = 0;
      for (uint32_t i = 1; i < count; ++i)
        if (rank(devices[i]) < rank(devices[index]))
          index = static_cast<int>(i);
    }
    if (index < 0 || index >= static_cast<int>(count)) {
      why = "Vulkan has " + std::to_string(count) + " device(s); index " +
            std::to_string(std::max(index, 0)) + " does not exist";
      return false;
    }
    physical = devices[index];
    vkGetPhysicalDeviceProperties(physical, &props);
    for (uint32_t &count : props.limits.maxComputeWorkGroupCount)
      count = std::max(count, 1u); // the spec says at least 65535; never divide by 0
    vkGetPhysicalDeviceMemoryProperties(physical, &memory);
    if (VK_API_VERSION_MAJOR(props.apiVersion) == 1 && VK_API_VERSION_MINOR(props.apiVersion) < 1) {
      why = "Vulkan 1.1 or newer is needed";
      return false;
    }
    processorCount = countProcessors();
    VkPhysicalDeviceMaintenance3Properties m3{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES};
    VkPhysicalDeviceProperties2 p2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
    p2.pNext = &m3;
    vkGetPhysicalDeviceProperties2(physical, &p2);
    maxAllocation = m3.maxMemoryAllocationSize;

    uint32_t families = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(physical, &families, nullptr);
    std::vector<VkQueueFamilyProperties> qf(families);
    vkGetPhysicalDeviceQueueFamilyProperties(physical, &families, qf.data());
    queueFamily = UINT32_MAX;
    for (uint32_t i = 0; i < families; ++i)
      if (qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT) {
        queueFamily = i;
        break;
      }
    if (queueFamily == UINT32_MAX) {
      why = "no compute queue";
      return false;
    }
    timestampBits = qf[queueFamily].timestampValidBits;

    // Enable the optional features Kiln's SPIR-V may declare, as far as present.
    VkPhysicalDeviceShaderAtomicFloatFeaturesEXT fFloat{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_FLOAT_FEATURES_EXT};
    bool atomicFloat = hasExtension(VK_EXT_SHADER_ATOMIC_FLOAT_EXTENSION_NAME);
    VkPhysicalDeviceVulkan12Features f12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
    f12.pNext = atomicFloat ? &fFloat : nullptr;
    VkPhysicalDeviceVulkan11Features f11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
    f11.pNext = &f12;
    VkPhysicalDeviceFeatures2 features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    features.pNext = &f11;
    vkGetPhysicalDeviceFeatures2(physical, &features);
    VkPhysicalDeviceVulkan12Features e12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
    e12.storageBuffer8BitAccess = f12.storageBuffer8BitAccess;
    e12.shaderInt8 = f12.shaderInt8;
    e12.shaderFloat16 = f12.shaderFloat16;
    e12.shaderBufferInt64Atomics = f12.shaderBufferInt64Atomics; // Int64Atomics
    // VK_EXT_shader_atomic_float: an f32 atomic_add is one OpAtomicFAddEXT.
    VkPhysicalDeviceShaderAtomicFloatFeaturesEXT eFloat{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_FLOAT_FEATURES_EXT};
    // KILN_VULKAN_FLOAT_ATOMIC_ADD=0 leaves it off: the swap loops run instead
    // (what devices without it, and Metal, run; the tests take both).
    const char *allow = std::getenv("KILN_VULKAN_FLOAT_ATOMIC_ADD");
    floatAtomicAdd = atomicFloat && fFloat.shaderBufferFloat32AtomicAdd &&
                     !(allow && std::string(allow) == "0");
    eFloat.shaderBufferFloat32AtomicAdd = floatAtomicAdd;
    e12.pNext = floatAtomicAdd ? &eFloat : nullptr;
    const char *floatExtension = VK_EXT_SHADER_ATOMIC_FLOAT_EXTENSION_NAME;
    VkPhysicalDeviceVulkan11Features e11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
    e11.storageBuffer16BitAccess = f11.storageBuffer16BitAccess;
    e11.pNext = &e12;
    VkPhysicalDeviceFeatures2 enabled{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    enabled.features.shaderInt64 = features.features.shaderInt64;
    enabled.features.shaderInt16 = features.features.shaderInt16;
    enabled.features.shaderFloat64 = features.features.shaderFloat64;
    enabled.pNext = &e11;

    float priority = 1.0f;
    VkDeviceQueueCreateInfo qci{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
    qci.queueFamilyIndex = queueFamily;
    qci.queueCount = 1;
    qci.pQueuePriorities = &priority;
    VkDeviceCreateInfo dci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
    dci.pNext = &enabled;
    dci.queueCreateInfoCount = 1;
    dci.pQueueCreateInfos = &qci;
    dci.enabledExtensionCount = floatAtomicAdd ? 1 : 0;
    dci.ppEnabledExtensionNames = floatAtomicAdd ? &floatExtension : nullptr;
    if (VkResult r = vkCreateDevice(physical, &dci, nullptr, &device); r != VK_SUCCESS) {
      why = vkError("vkCreateDevice", r);
      device = VK_NULL_HANDLE;
      return false;
    }
    vkGetDeviceQueue(device, queueFamily, 0, &queue);
    looseSpecials = !preservesSpecials(e12.shaderFloat16, enabled.features.shaderFloat64);
    VkCommandPoolCreateInfo pci{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    pci.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    pci.queueFamilyIndex = queueFamily;
    vkCreateCommandPool(device, &pci, nullptr, &commandPool);
    VkPipelineCacheCreateInfo cci{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
    vkCreatePipelineCache(device, &cci, nullptr, &pipelineCache);
    ExitGuard::get().add(this);
    ExitGuard::registerHandler(); // after the instance and the device
    return true;
  }

  Backend backend() const override { return Backend::Vulkan; }
  bool runsOnHost() const override { return props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU; }
  std::string name() const override { return props.deviceName; }
  std::string target() const override {
    // An implementation on the host CPU (lavapipe) gets code tuned for it, and
    // kernels may use all the shared memory the device has.
    unsigned minor = std::min(3u, VK_API_VERSION_MINOR(props.apiVersion));
    uint32_t shared = props.limits.maxComputeSharedMemorySize;
    return "vulkan:1." + std::to_string(minor) +
           (props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU ? ":cpu" : "") +
           (shared > 16 * 1024 ? ":shared=" + std::to_string(shared) : "") +
           (looseSpecials ? ":loose-specials" : "") +
           (floatAtomicAdd ? ":float-atomic-add" : "");
  }

  /// Whether kernels may declare SignedZeroInfNanPreserve (Vulkan 1.2 float
  /// controls) for f32 and for the f16 and f64 the device computes in.
  bool preservesSpecials(bool float16, bool float64) const {
    if (VK_API_VERSION_MINOR(props.apiVersion) < 2)
      return true; // Vulkan 1.1 kernels do not declare it
    VkPhysicalDeviceVulkan12Properties p12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_PROPERTIES};
    VkPhysicalDeviceProperties2 p{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
    p.pNext = &p12;
    vkGetPhysicalDeviceProperties2(physical, &p);
    return p12.shaderSignedZeroInfNanPreserveFloat32 &&
           (!float16 || p12.shaderSignedZeroInfNanPreserveFloat16) &&
           (!float64 || p12.shaderSignedZeroInfNanPreserveFloat64);
  }

  int64_t processors() const override { return processorCount; }

  /// Whether the physical device offers extension `name`.
  bool hasExtension(const char *name) const {
    uint32_t count = 0;
    vkEnumerateDeviceExtensionProperties(physical, nullptr, &count, nullptr);
    std::vector<VkExtensionProperties> extensions(count);
    vkEnumerateDeviceExtensionProperties(physical, nullptr, &count, extensions.data());
    return std::any_of(extensions.begin(), extensions.end(), [&](const auto &e) {
      return std::strcmp(e.extensionName, name) == 0;
    });
  }

  /// Workgroups the device runs side by side: a CPU implementation's worker
  /// threads (lavapipe: LP_NUM_THREADS, else a thread per core), the SMs or
  /// compute units that NVIDIA's and AMD's extensions report, else a guess.
  int64_t countProcessors() const {
    if (props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU) {
      const char *env = std::getenv("LP_NUM_THREADS");
      if (env && *env)
        return std::max(1, std::atoi(env)); // 0: lavapipe runs on the calling thread
      return std::max(1u, std::thread::hardware_concurrency());
    }
    auto has = [&](const char *name) { return hasExtension(name); };
    VkPhysicalDeviceShaderSMBuiltinsPropertiesNV nv{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_SM_BUILTINS_PROPERTIES_NV};
    VkPhysicalDeviceShaderCorePropertiesAMD amd{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_CORE_PROPERTIES_AMD};
    VkPhysicalDeviceShaderCoreProperties2AMD amd2{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_CORE_PROPERTIES_2_AMD};
    VkPhysicalDeviceProperties2 all{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
    if (has(VK_NV_SHADER_SM_BUILTINS_EXTENSION_NAME)) {
      all.pNext = &nv;
      vkGetPhysicalDeviceProperties2(physical, &all);
      return std::max<int64_t>(nv.shaderSMCount, 1);
    }
    if (has(VK_AMD_SHADER_CORE_PROPERTIES_2_EXTENSION_NAME)) { // the active ones
      all.pNext = &amd2;
      vkGetPhysicalDeviceProperties2(physical, &all);
      return std::max<int64_t>(amd2.activeComputeUnitCount, 1);
    }
    if (has(VK_AMD_SHADER_CORE_PROPERTIES_EXTENSION_NAME)) { // counting disabled ones too
      all.pNext = &amd;
      vkGetPhysicalDeviceProperties2(physical, &all);
      return std::max<int64_t>(int64_t(amd.shaderEngineCount) * amd.shaderArraysPerEngineCount *
                                   amd.computeUnitsPerShaderArray,
                               1);
    }
    return 32; // nothing to ask: a mid-sized GPU
  }

  Result<VkBuf *> createBuffer(size_t bytes) {
    // Rounded up to whole words below; the device's own limit is checked on the
    // request and on what the buffer needs, as drivers need not refuse cleanly.
    auto tooLarge = [&] {
      return Status::failure("out of device memory: more than this Vulkan device allocates "
                             "at once (" + std::to_string(maxAllocation) +
                             " bytes, maxMemoryAllocationSize)");
    };
    if (bytes > maxAllocation || bytes > SIZE_MAX - 3)
      return tooLarge();
    auto *b = new VkBuf();
    b->size = bytes;
    VkBufferCreateInfo bci{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
    // Whole 32-bit words: kernels read 16-bit floats that atomics update as the
    // words that hold them, the last one included.
    bci.size = (bytes + 3) / 4 * 4;
    bci.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                VK_BUFFER_USAGE_TRANSFER_DST_BIT;
    bci.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
    if (VkResult r = vkCreateBuffer(device, &bci, nullptr, &b->buffer); r != VK_SUCCESS) {
      delete b;
      return Status::failure(r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY
                                 ? "out of device memory"
                                 : vkError("vkCreateBuffer", r));
    }
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(device, b->buffer, &req);
    if (req.size > maxAllocation) {
      vkDestroyBuffer(device, b->buffer, nullptr);
      delete b;
      return tooLarge();
    }
    uint32_t type = UINT32_MAX;
    VkMemoryPropertyFlags want =
        VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    for (uint32_t i = 0; i < memory.memoryTypeCount; ++i)
      if ((req.memoryTypeBits & (1u << i)) &&
          (memory.memoryTypes[i].propertyFlags & want) == want) {
        type = i;
        break;
      }
    VkMemoryAllocateInfo mai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
    mai.allocationSize = req.size;
    mai.memoryTypeIndex = type;
    VkResult r = type == UINT32_MAX ? VK_ERROR_FEATURE_NOT_PRESENT
                                    : vkAllocateMemory(device, &mai, nullptr, &b->memory);
    if (r != VK_SUCCESS) {
      vkDestroyBuffer(device, b->buffer, nullptr);
      delete b;
      return Status::failure(r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY
                                 ? "out of device memory"
                                 : vkError("vkAllocateMemory", r));
    }
    vkBindBufferMemory(device, b->buffer, b->memory, 0);
    vkMapMemory(device, b->memory, 0, VK_WHOLE_SIZE, 0, &b->mapped);
    return b;
  }

  void destroyBuffer(VkBuf *b) {
    if (!b || ExitGuard::processExiting())
      return;
    vkUnmapMemory(device, b->memory);
    vkDestroyBuffer(device, b->buffer, nullptr);
    vkFreeMemory(device, b->memory, nullptr);
    delete b;
  }

  Result<void *> allocate(size_t bytes) override {
    auto b = createBuffer(bytes);
    if (!b)
      return b.status();
    return static_cast<void *>(*b);
  }
  void release(void *buffer) override { destroyBuffer(static_cast<VkBuf *>(buffer)); }

  Status write(void *buffer, size_t offset, const void *data, size_t bytes) override {
    std::memcpy(static_cast<char *>(static_cast<VkBuf *>(buffer)->mapped) + offset, data, bytes);
    return Status::success();
  }
  Status read(void *buffer, size_t offset, void *data, size_t bytes) override {
    std::memcpy(data, static_cast<char *>(static_cast<VkBuf *>(buffer)->mapped) + offset, bytes);
    return Status::success();
  }

  Result<std::shared_ptr<void>> loadModule(const std::string &binary,
                                           const ModuleMetadata &metadata) override {
    if (binary.size() % 4 != 0 || binary.size() < 20)
      return Status::failure("not a SPIR-V binary (" + std::to_string(binary.size()) + " bytes)");
    uint32_t magic;
    std::memcpy(&magic, binary.data(), 4);
    if (magic != 0x07230203)
      return Status::failure("not a SPIR-V binary (bad magic number)");
    std::string problem;
    std::vector<std::string> records = moduleStrings(binary, problem);
    if (!problem.empty())
      return Status::failure(problem);
    for (const KernelInfo &k : metadata.kernels) {
      // The record kilnc left for this kernel: `kiln-abi N name(...)`, the name
      // right after the version (a grid rule may hold ` cdiv(` too).
      const std::string *embedded = nullptr;
      for (const std::string &r : records) {
        size_t space = r.find(' ', 9); // after "kiln-abi "
        if (r.compare(0, 9, "kiln-abi ") == 0 && space != std::string::npos &&
            r.compare(space + 1, k.name.size() + 1, k.name + "(") == 0)
          embedded = &r;
      }
      if (std::string problem = abiMismatch(k, embedded); !problem.empty())
        return Status::failure(problem);
    }
    auto module = std::make_shared<VkModule>();
    module->driver = this;
    for (const KernelInfo &k : metadata.kernels) {
      Pipeline p;
      kernelABI(k, p);
      uint32_t threads = static_cast<uint32_t>(k.threadsPerBlock);
      if (threads > props.limits.maxComputeWorkGroupInvocations ||
          threads > props.limits.maxComputeWorkGroupSize[0])
        return Status::failure(
            "kernel '" + k.name + "' runs " + std::to_string(threads) +
            " threads per workgroup; " + name() + " allows " +
            std::to_string(std::min(props.limits.maxComputeWorkGroupInvocations,
                                    props.limits.maxComputeWorkGroupSize[0])) +
            " (lower its NUM_WARPS)");
      if (p.bindings > props.limits.maxPerStageDescriptorStorageBuffers)
        return Status::failure("kernel '" + k.name + "' needs " + std::to_string(p.bindings) +
                               " storage buffers; " + name() + " allows " +
                               std::to_string(props.limits.maxPerStageDescriptorStorageBuffers));
      VkShaderModuleCreateInfo smi{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
      smi.codeSize = binary.size();
      smi.pCode = reinterpret_cast<const uint32_t *>(binary.data());
      if (VkResult r = vkCreateShaderModule(device, &smi, nullptr, &p.shader); r != VK_SUCCESS)
        return Status::failure(vkError("vkCreateShaderModule", r));
      std::vector<VkDescriptorSetLayoutBinding> bindings(p.bindings);
      for (uint32_t i = 0; i < p.bindings; ++i)
        bindings[i] = {i, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT,
                       nullptr};
      VkDescriptorSetLayoutCreateInfo dli{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
      dli.bindingCount = p.bindings;
      dli.pBindings = bindings.data();
      vkCreateDescriptorSetLayout(device, &dli, nullptr, &p.setLayout);
      VkPipelineLayoutCreateInfo pli{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
      pli.setLayoutCount = 1;
      pli.pSetLayouts = &p.setLayout;
      VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, p.pushBytes};
      if (p.pushBytes) {
        pli.pushConstantRangeCount = 1;
        pli.pPushConstantRanges = &range;
      }
      vkCreatePipelineLayout(device, &pli, nullptr, &p.layout);
      VkComputePipelineCreateInfo cpi{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
      cpi.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
      cpi.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
      cpi.stage.module = p.shader;
      cpi.stage.pName = k.name.c_str();
      cpi.layout = p.layout;
      VkResult r = vkCreateComputePipelines(device, pipelineCache, 1, &cpi, nullptr, &p.pipeline);
      module->pipelines[k.name] = p;
      if (r != VK_SUCCESS)
        return Status::failure(vkError("vkCreateComputePipelines", r) + " for kernel '" +
                               k.name + "'");
      // The first compile is where a CPU driver's compiler (lavapipe's LLVM)
      // registers its exit-time destructors.
      static std::atomic<bool> compiled{false};
      if (!compiled.exchange(true))
        ExitGuard::registerHandler();
    }
    return std::shared_ptr<void>(module);
  }

  void destroyPipeline(Pipeline &p) {
    if (p.pipeline)
      vkDestroyPipeline(device, p.pipeline, nullptr);
    if (p.layout)
      vkDestroyPipelineLayout(device, p.layout, nullptr);
    if (p.setLayout)
      vkDestroyDescriptorSetLayout(device, p.setLayout, nullptr);
    if (p.shader)
      vkDestroyShaderModule(device, p.shader, nullptr);
  }

  /// A launch turned into Vulkan objects: its descriptor pool (freed once the
  /// work ran) and the commands that bind and dispatch it.
  struct Dispatch {
    VkDescriptorPool pool = VK_NULL_HANDLE;
    VkBuf *debugBuffer = nullptr; // kernels with prints or asserts
    VkBuf *argBuffer = nullptr;   // kernels with over 128 bytes of argument words
    std::function<void(VkCommandBuffer)> record;
  };

  /// Frees what a dispatch holds once its work has run (`r`), writes what it
  /// printed, and reports a failed device_assert as the launch's error.
  Status finish(const KernelInfo &kernel, Dispatch &d, VkResult r) {
    vkDestroyDescriptorPool(device, d.pool, nullptr);
    std::string failure;
    if (d.debugBuffer && r == VK_SUCCESS) {
      auto *words = static_cast<const int32_t *>(d.debugBuffer->mapped);
      // Print records exist only in a buffer sized for them.
      std::string dropped;
      std::string lines = kernel.prints.empty() ? "" : printedLines(kernel, words, dropped);
      std::fputs(lines.c_str(), stdout);
      std::fflush(stdout);
      if (!dropped.empty())
        std::fprintf(stderr, "kiln: warning: %s\n", dropped.c_str());
      failure = assertFailure(kernel, words);
    }
    destroyBuffer(d.debugBuffer);
    destroyBuffer(d.argBuffer);
    d = Dispatch();
    if (!failure.empty())
      return Status::failure(failure);
    return launchResult(kernel, r);
  }

  Status makeDispatch(void *moduleHandle, const KernelInfo &kernel,
                      const std::array<int64_t, 3> &grid, const std::vector<LaunchArg> &args,
                      Dispatch &out) {
    auto *module = static_cast<VkModule *>(moduleHandle);
    Pipeline &p = module->pipelines.at(kernel.name);
    // Past maxComputeWorkGroupCount the grid runs as several dispatches (record).
    int64_t dispatches = 1;
    for (int d = 0; d < 3; ++d)
      dispatches *= (grid[d] + props.limits.maxComputeWorkGroupCount[d] - 1) /
                    props.limits.maxComputeWorkGroupCount[d];
    if (dispatches > kMaxDispatches)
      return Status::failure("kernel '" + kernel.name + "': a grid of " +
                             std::to_string(grid[0]) + " x " + std::to_string(grid[1]) + " x " +
                             std::to_string(grid[2]) + " programs would take " +
                             std::to_string(dispatches) + " dispatches on " + name() +
                             " (at most " + std::to_string(kMaxDispatches) + ")");

    // Tensors bind storage buffers; sizes, strides and scalars become words.
    std::vector<VkDescriptorBufferInfo> infos;
    std::vector<uint32_t> words;
    auto pushScalar = [&](const void *bytes, size_t n) {
      uint32_t w[2] = {0, 0};
      std::memcpy(w, bytes, n);
      words.push_back(w[0]);
      if (n > 4)
        words.push_back(w[1]);
    };
    for (const LaunchArg &a : args) {
      if (a.info->isTensor) {
        size_t byteOffset = static_cast<size_t>(a.offset) * dtypeBytes(a.info->dtype);
        // Whole words at least: a 16-bit tensor that atomics update is bound as
        // words, its even elements in their low halves.
        VkDeviceSize alignment =
            std::max<VkDeviceSize>(props.limits.minStorageBufferOffsetAlignment, 4);
        if (byteOffset % alignment != 0)
          return Status::failure("kernel '" + kernel.name + "': argument '" + a.info->name +
                                 "' starts " + std::to_string(byteOffset) +
                                 " bytes into its buffer; tensors start at multiples of " +
                                 std::to_string(alignment) +
                                 " bytes (the device's minStorageBufferOffsetAlignment, "
                                 "and whole words)");
        // A storage buffer binding spans at most maxStorageBufferRange bytes:
        // the rest of the buffer when that fits, else what the tensor reaches.
        // An empty view reads nothing: it binds the buffer's first word, in range.
        auto *buffer = static_cast<VkBuf *>(a.buffer);
        bool empty = std::find(a.sizes.begin(), a.sizes.end(), 0) != a.sizes.end();
        VkDeviceSize range = empty ? 4 : (buffer->size + 3) / 4 * 4 - byteOffset;
        if (empty)
          byteOffset = 0;
        else if (range > props.limits.maxStorageBufferRange) {
          int64_t last = 0;
          for (size_t d = 0; d < a.sizes.size(); ++d)
            last += (a.sizes[d] - 1) * a.strides[d];
          range = std::min<VkDeviceSize>(
              range, ((last + 1) * dtypeBytes(a.info->dtype) + 3) / 4 * 4);
          if (range > props.limits.maxStorageBufferRange)
            return Status::failure(
                "kernel '" + kernel.name + "': argument '" + a.info->name + "' spans " +
                std::to_string(range) + " bytes; this Vulkan device binds at most " +
                std::to_string(props.limits.maxStorageBufferRange) +
                " bytes to a kernel argument (maxStorageBufferRange)");
        }
        infos.push_back({buffer->buffer, byteOffset, range});
        for (int64_t s : a.sizes)
          words.push_back(static_cast<uint32_t>(s));
        for (int64_t s : a.strides)
          words.push_back(static_cast<uint32_t>(s));
        continue;
      }
      switch (a.info->dtype) {
      case DType::I1: {
        uint32_t v = a.scalar.i != 0;
        pushScalar(&v, 4);
        break;
      }
      case DType::I8:
      case DType::I16:
      case DType::I32:
      case DType::U8:
      case DType::U16:
      case DType::U32: {
        uint32_t v = static_cast<uint32_t>(a.scalar.i);
        pushScalar(&v, 4);
        break;
      }
      case DType::I64:
      case DType::U64: pushScalar(&a.scalar.i, 8); break;
      case DType::F16: {
        uint32_t v = floatToHalfBits(static_cast<float>(a.scalar.f));
        pushScalar(&v, 4);
        break;
      }
      case DType::F8E4M3:
      case DType::F8E5M2: {
        uint32_t v = floatToF8Bits(a.scalar.f, a.info->dtype);
        pushScalar(&v, 4);
        break;
      }
      case DType::BF16: {
        uint32_t v = floatToBF16Bits(static_cast<float>(a.scalar.f));
        pushScalar(&v, 4);
        break;
      }
      case DType::F32: {
        float v = static_cast<float>(a.scalar.f);
        pushScalar(&v, 4);
        break;
      }
      case DType::F64: pushScalar(&a.scalar.f, 8); break;
      }
    }
    if (infos.size() + kernel.hasDebugBuffer() + (p.argBytes > 0) != p.bindings ||
        (kGridWords + words.size()) * 4 != p.pushBytes + p.argBytes)
      return Status::failure("kernel '" + kernel.name + "': the arguments do not match the "
                             "pipeline's bindings and push constants");
    auto bindNew = [&](size_t bytes, VkBuf *&slot) -> Status {
      auto buffer = createBuffer(bytes);
      if (!buffer)
        return buffer.status();
      slot = *buffer;
      infos.push_back({slot->buffer, 0, VK_WHOLE_SIZE});
      return Status::success();
    };
    if (kernel.hasDebugBuffer()) {
      if (Status s = bindNew(kernel.debugBufferWords() * 4, out.debugBuffer); !s)
        return s;
      std::memset(out.debugBuffer->mapped, 0, kDebugHeaderWords * 4);
    }
    if (p.argBytes) {
      if (Status s = bindNew(p.argBytes, out.argBuffer); !s) {
        destroyBuffer(out.debugBuffer);
        out.debugBuffer = nullptr;
        return s;
      }
      std::memcpy(out.argBuffer->mapped, words.data(), p.argBytes);
    }

    VkDescriptorPoolSize poolSize{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, std::max(1u, p.bindings)};
    VkDescriptorPoolCreateInfo dpi{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
    dpi.maxSets = 1;
    dpi.poolSizeCount = 1;
    dpi.pPoolSizes = &poolSize;
    VkDescriptorPool pool;
    vkCreateDescriptorPool(device, &dpi, nullptr, &pool);
    VkDescriptorSetAllocateInfo dsai{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
    dsai.descriptorPool = pool;
    dsai.descriptorSetCount = 1;
    dsai.pSetLayouts = &p.setLayout;
    VkDescriptorSet set;
    vkAllocateDescriptorSets(device, &dsai, &set);
    std::vector<VkWriteDescriptorSet> writes(infos.size());
    for (size_t i = 0; i < infos.size(); ++i) {
      writes[i] = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
      writes[i].dstSet = set;
      writes[i].dstBinding = static_cast<uint32_t>(i);
      writes[i].descriptorCount = 1;
      writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
      writes[i].pBufferInfo = &infos[i];
    }
    vkUpdateDescriptorSets(device, static_cast<uint32_t>(writes.size()), writes.data(), 0, nullptr);

    out.pool = pool;
    // The grid words, then the argument words where they are pushed too.
    std::vector<uint32_t> pushed(kGridWords);
    for (int d = 0; d < 3; ++d)
      pushed[3 + d] = static_cast<uint32_t>(grid[d]);
    if (!p.argBytes)
      pushed.insert(pushed.end(), words.begin(), words.end());
    out.record = [this, &p, set, pushed, grid](VkCommandBuffer cmd) mutable {
      // Earlier work on the queue (any submission) finishes its writes first.
      VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
      barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
      barrier.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
      vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                           VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &barrier, 0, nullptr, 0,
                           nullptr);
      vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p.pipeline);
      vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p.layout, 0, 1, &set, 0,
                              nullptr);
      // A grid wider than the device's limit on an axis runs as several
      // dispatches, each told the program ids of its first workgroup.
      const uint32_t *limit = props.limits.maxComputeWorkGroupCount;
      auto chunk = [&](int d, int64_t first) {
        return static_cast<uint32_t>(std::min<int64_t>(grid[d] - first, limit[d]));
      };
      for (int64_t z = 0; z < grid[2]; z += limit[2])
        for (int64_t y = 0; y < grid[1]; y += limit[1])
          for (int64_t x = 0; x < grid[0]; x += limit[0]) {
            pushed[0] = static_cast<uint32_t>(x);
            pushed[1] = static_cast<uint32_t>(y);
            pushed[2] = static_cast<uint32_t>(z);
            vkCmdPushConstants(cmd, p.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, p.pushBytes,
                               pushed.data());
            vkCmdDispatch(cmd, chunk(0, x), chunk(1, y), chunk(2, z));
          }
      // The host reads results (and the debug buffer) through mapped memory
      // once the fence signals: make the kernel's writes visible to it.
      VkMemoryBarrier toHost{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
      toHost.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
      toHost.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
      vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_HOST_BIT,
                           0, 1, &toHost, 0, nullptr, 0, nullptr);
    };
    return Status::success();
  }

  static Status launchResult(const KernelInfo &kernel, VkResult r) {
    if (r == VK_ERROR_DEVICE_LOST)
      return Status::failure("kernel '" + kernel.name + "' faulted: the Vulkan device was lost");
    if (r != VK_SUCCESS)
      return Status::failure(vkError("vkQueueSubmit", r));
    return Status::success();
  }

  Status launch(void *moduleHandle, const KernelInfo &kernel, const std::array<int64_t, 3> &grid,
                const std::vector<LaunchArg> &args) override {
    Dispatch d;
    if (Status s = makeDispatch(moduleHandle, kernel, grid, args, d); !s)
      return s;
    return finish(kernel, d, submitAndWait(d.record));
  }

  /// A stream: submissions that nobody waits for until synchronize.
  struct VkStream : DriverStream {
    struct Work {
      VkFence fence;
      VkCommandBuffer cmd;
      Dispatch dispatch;
      const KernelInfo *kernel;
      std::shared_ptr<void> keepAlive;
    };
    explicit VkStream(VulkanDriver &driver) : driver(driver) {
      std::lock_guard<std::mutex> lock(driver.streamsMutex);
      driver.streams.insert(this);
    }
    ~VkStream() override {
      {
        std::lock_guard<std::mutex> lock(driver.streamsMutex);
        driver.streams.erase(this);
      }
      if (!ExitGuard::processExiting()) // else drained at exit, and the driver may be gone
        (void)driver.synchronize(*this);
    }
    VulkanDriver &driver;
    std::vector<Work> inFlight;
  };

  Result<std::shared_ptr<DriverStream>> createStream() override {
    return std::shared_ptr<DriverStream>(std::make_shared<VkStream>(*this));
  }

  Status launchOn(DriverStream &stream, void *moduleHandle, const KernelInfo &kernel,
                  const std::array<int64_t, 3> &grid, const std::vector<LaunchArg> &args,
                  std::shared_ptr<void> keepAlive) override {
    Dispatch d;
    if (Status s = makeDispatch(moduleHandle, kernel, grid, args, d); !s)
      return s;
    std::unique_lock<std::mutex> submitting(submitMutex);
    VkCommandBufferAllocateInfo cbai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    cbai.commandPool = commandPool;
    cbai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    cbai.commandBufferCount = 1;
    VkCommandBuffer cmd;
    if (VkResult r = vkAllocateCommandBuffers(device, &cbai, &cmd); r != VK_SUCCESS) {
      submitting.unlock();
      (void)finish(kernel, d, r);
      return Status::failure(vkError("vkAllocateCommandBuffers", r));
    }
    VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    vkBeginCommandBuffer(cmd, &begin);
    d.record(cmd);
    vkEndCommandBuffer(cmd);
    VkFenceCreateInfo fci{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    VkFence fence;
    vkCreateFence(device, &fci, nullptr, &fence);
    VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    submit.commandBufferCount = 1;
    submit.pCommandBuffers = &cmd;
    VkResult r = vkQueueSubmit(queue, 1, &submit, fence);
    if (r != VK_SUCCESS) { // nothing was queued: no fence to wait for
      vkFreeCommandBuffers(device, commandPool, 1, &cmd);
      submitting.unlock();
      vkDestroyFence(device, fence, nullptr);
      (void)finish(kernel, d, r);
      (void)synchronize(stream);
      return launchResult(kernel, r);
    }
    submitting.unlock();
    static_cast<VkStream &>(stream).inFlight.push_back(
        {fence, cmd, std::move(d), &kernel, std::move(keepAlive)});
    return Status::success();
  }

  Status synchronize(DriverStream &stream) override {
    Status first = Status::success();
    auto &work = static_cast<VkStream &>(stream).inFlight;
    for (VkStream::Work &w : work) {
      VkResult r = vkWaitForFences(device, 1, &w.fence, VK_TRUE, UINT64_MAX);
      Status done = finish(*w.kernel, w.dispatch, r);
      if (first.ok())
        first = done;
      vkDestroyFence(device, w.fence, nullptr);
      std::lock_guard<std::mutex> freeing(submitMutex);
      vkFreeCommandBuffers(device, commandPool, 1, &w.cmd);
    }
    work.clear();
    return first;
  }

  Result<double> timestamp(DriverStream &stream) override {
    if (Status s = synchronize(stream); !s)
      return s;
    return timestamp();
  }

  /// Records one command buffer with `record`, submits it and waits for it.
  template <typename RecordFn> VkResult submitAndWait(RecordFn record) {
    std::unique_lock<std::mutex> submitting(submitMutex);
    VkCommandBufferAllocateInfo cbai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    cbai.commandPool = commandPool;
    cbai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    cbai.commandBufferCount = 1;
    VkCommandBuffer cmd;
    if (VkResult r = vkAllocateCommandBuffers(device, &cbai, &cmd); r != VK_SUCCESS)
      return r;
    VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    vkBeginCommandBuffer(cmd, &begin);
    record(cmd);
    vkEndCommandBuffer(cmd);
    VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    submit.commandBufferCount = 1;
    submit.pCommandBuffers = &cmd;
    VkFenceCreateInfo fci{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    VkFence fence;
    vkCreateFence(device, &fci, nullptr, &fence);
    VkResult r = vkQueueSubmit(queue, 1, &submit, fence);
    submitting.unlock();
    if (r == VK_SUCCESS)
      r = vkWaitForFences(device, 1, &fence, VK_TRUE, UINT64_MAX);
    vkDestroyFence(device, fence, nullptr);
    submitting.lock();
    vkFreeCommandBuffers(device, commandPool, 1, &cmd);
    return r;
  }

  /// Waits for everything submitted so far: an empty submission's fence signals
  /// after all earlier ones, and other threads may submit meanwhile.
  Status synchronize() override {
    VkFenceCreateInfo fci{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    VkFence fence;
    if (VkResult r = vkCreateFence(device, &fci, nullptr, &fence); r != VK_SUCCESS)
      return Status::failure(vkError("vkCreateFence", r));
    VkResult r;
    {
      std::lock_guard<std::mutex> submitting(submitMutex);
      r = vkQueueSubmit(queue, 0, nullptr, fence);
    }
    if (r == VK_SUCCESS)
      r = vkWaitForFences(device, 1, &fence, VK_TRUE, UINT64_MAX);
    vkDestroyFence(device, fence, nullptr);
    return r == VK_SUCCESS ? Status::success() : Status::failure(vkError("synchronize", r));
  }

  /// The device's clock, read with a timestamp query after all queued work; the
  /// host clock where the queue has no timestamps.
  Result<double> timestamp() override {
    std::lock_guard<std::mutex> timing(timestampMutex); // one query, one reader
    if (Status s = synchronize(); !s)
      return s;
    if (timestampBits == 0) {
      auto now = std::chrono::steady_clock::now().time_since_epoch();
      return std::chrono::duration<double, std::milli>(now).count();
    }
    if (!queryPool) {
      VkQueryPoolCreateInfo qpi{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
      qpi.queryType = VK_QUERY_TYPE_TIMESTAMP;
      qpi.queryCount = 1;
      if (VkResult r = vkCreateQueryPool(device, &qpi, nullptr, &queryPool); r != VK_SUCCESS)
        return Status::failure(vkError("vkCreateQueryPool", r));
    }
    VkResult r = submitAndWait([&](VkCommandBuffer cmd) {
      vkCmdResetQueryPool(cmd, queryPool, 0, 1);
      vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, queryPool, 0);
    });
    uint64_t ticks = 0;
    if (r == VK_SUCCESS)
      r = vkGetQueryPoolResults(device, queryPool, 0, 1, sizeof ticks, &ticks, sizeof ticks,
                                VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT);
    if (r != VK_SUCCESS)
      return Status::failure(vkError("timestamp query", r));
    if (timestampBits < 64)
      ticks &= (uint64_t(1) << timestampBits) - 1;
    return static_cast<double>(ticks) * props.limits.timestampPeriod / 1e6;
  }

  VkInstance instance = VK_NULL_HANDLE;
  VkPhysicalDevice physical = VK_NULL_HANDLE;
  VkDevice device = VK_NULL_HANDLE;
  VkQueue queue = VK_NULL_HANDLE;
  uint32_t queueFamily = 0;
  VkCommandPool commandPool = VK_NULL_HANDLE;
  // Vulkan leaves the command pool (and the buffers recorded from it) and the
  // queue to their users to synchronize: threads launching on one device take
  // turns recording and submitting, and wait for their fences apart.
  std::mutex submitMutex;
  std::mutex streamsMutex;
  std::set<DriverStream *> streams; // open streams, drained at process exit
  std::mutex timestampMutex;
  VkPipelineCache pipelineCache = VK_NULL_HANDLE;
  VkQueryPool queryPool = VK_NULL_HANDLE;
  uint32_t timestampBits = 0;
  VkPhysicalDeviceProperties props{};
  VkPhysicalDeviceMemoryProperties memory{};
  VkDeviceSize maxAllocation = 0; // maxMemoryAllocationSize
  int64_t processorCount = 1;
  bool looseSpecials = false; // see preservesSpecials
  bool floatAtomicAdd = false; // shaderBufferFloat32AtomicAdd, enabled
};

VkModule::~VkModule() {
  if (ExitGuard::processExiting())
    return;
  for (auto &[name, p] : pipelines)
    driver->destroyPipeline(p);
}

void ExitGuard::onExit() {
  ExitGuard &guard = get();
  if (guard.handled.exchange(true))
    return; // registered more than once; the first run did it all
  std::lock_guard<std::mutex> lock(guard.mutex);
  for (VulkanDriver *driver : guard.open)
    driver->drainAtExit();
  guard.exiting = true;
}

} // namespace

std::unique_ptr<Driver> kiln::rt::openVulkan(int index, std::string &why) {
  auto driver = std::make_unique<VulkanDriver>();
  if (!driver->init(index, why))
    return nullptr;
  return driver;
}
