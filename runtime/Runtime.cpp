//===- Runtime.cpp - devices, buffers, modules and checked launches -------===//

#include "kiln/Runtime.h"

#include "lib/Support/Checksum.h"
#include "lib/Support/GridRule.h"
#include "lib/Support/ValidateArgs.h"
#include "runtime/Bundle.h"
#include "runtime/Driver.h"

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <sstream>

using namespace kiln;
using namespace kiln::rt;

const char *kiln::rt::backendName(Backend backend) {
  switch (backend) {
  case Backend::CPU: return "cpu";
  case Backend::CUDA: return "cuda";
  case Backend::HIP: return "hip";
  case Backend::Vulkan: return "vulkan";
  }
  return "?";
}

// Buffers and modules share their driver, so they may outlive the Device (and
// the Session) that made them: the driver goes with the last of them.
struct kiln::rt::BufferImpl {
  std::shared_ptr<Driver> driver;
  void *handle = nullptr;
  size_t bytes = 0;
  ~BufferImpl() {
    if (driver && handle)
      driver->release(handle);
  }
};

struct kiln::rt::ModuleImpl {
  std::shared_ptr<Driver> driver; // first: the driver outlives the handle
  ModuleMetadata metadata;
  std::shared_ptr<void> handle;
};

struct kiln::rt::BufferAccess {
  static BufferImpl *get(const Buffer &b) { return b.impl_.get(); }
};

size_t Buffer::size() const { return impl_ ? impl_->bytes : 0; }

/// What an empty (default-constructed) Module reports: no kernels, no target.
static const ModuleMetadata &noMetadata() {
  static const ModuleMetadata none;
  return none;
}

const std::vector<KernelInfo> &Module::kernels() const {
  return (impl_ ? impl_->metadata : noMetadata()).kernels;
}
const std::string &Module::target() const {
  return (impl_ ? impl_->metadata : noMetadata()).target;
}
const KernelInfo *Module::find(const std::string &name) const {
  for (const KernelInfo &k : kernels())
    if (k.name == name)
      return &k;
  return nullptr;
}

Arg Arg::tensor(const Buffer &buffer, DType dtype, std::vector<int64_t> sizes) {
  std::vector<int64_t> strides(sizes.size(), 1);
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * sizes[d + 1];
  return strided(buffer, dtype, std::move(sizes), std::move(strides));
}

Arg Arg::strided(const Buffer &buffer, DType dtype, std::vector<int64_t> sizes,
                 std::vector<int64_t> strides, int64_t offset) {
  Arg a;
  a.isTensor = true;
  a.buffer = buffer;
  a.dtype = dtype;
  a.sizes = std::move(sizes);
  a.strides = std::move(strides);
  a.offset = offset;
  return a;
}

Arg Arg::integer(int64_t v, DType dtype) {
  if (isFloat(dtype)) // an integer for a float argument is that number
    return floating(static_cast<double>(v), dtype);
  Arg a;
  a.dtype = dtype;
  a.scalar.i = v;
  return a;
}

Arg Arg::unsignedInteger(uint64_t v, DType dtype) {
  if (isFloat(dtype))
    return floating(static_cast<double>(v), dtype);
  Arg a = integer(static_cast<int64_t>(v), dtype);
  if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) && dtype != DType::U64) {
    a.scalar.i = 0;
    a.unrepresentable = std::to_string(v);
  }
  return a;
}

Arg Arg::floating(double v, DType dtype) {
  Arg a;
  a.dtype = dtype;
  a.scalar.f = v;
  // A float for an integer argument must be a whole number, and the launch
  // checks that it fits the type; one with a fraction, or with no 64-bit
  // integer of the type's sign (NaN included), is kept for the launch to report
  // (never rounded silently).
  if (!isFloat(dtype)) {
    bool fits = v == std::trunc(v) &&
                (dtype == DType::U64 ? v >= 0 && v < 0x1p64 : v >= -0x1p63 && v < 0x1p63);
    a.scalar.i = !fits                 ? 0
                 : dtype == DType::U64 ? static_cast<int64_t>(static_cast<uint64_t>(v))
                                       : static_cast<int64_t>(v);
    if (!fits) { // the shortest text that reads back as `v`
      std::ostringstream value;
      for (int digits = 1; digits <= 17; ++digits) {
        value.str("");
        value.precision(digits);
        value << v;
        if (std::strtod(value.str().c_str(), nullptr) == v || std::isnan(v))
          break;
      }
      a.unrepresentable = value.str();
    }
  }
  return a;
}

//===----------------------------------------------------------------------===//
// Device selection
//===----------------------------------------------------------------------===//

Device::Device(std::unique_ptr<Driver> driver) : driver_(std::move(driver)) {}
Device::~Device() = default;

static std::unique_ptr<Driver> openBackend(const std::string &kind, int index, std::string &why) {
  if (kind == "cuda")
    return openCUDA(index, why);
  if (kind == "hip")
    return openHIP(index, why);
  if (kind == "vulkan")
    return openVulkan(index, why);
  if (kind == "cpu")
    return openCPU(index, why);
  why = "unknown device kind '" + kind + "' (expected cuda, hip, vulkan or cpu)";
  return nullptr;
}

Result<std::shared_ptr<Device>> Device::open(const std::string &specIn) {
  std::string spec = specIn;
  if (spec.empty())
    if (const char *env = std::getenv("KILN_DEVICE"))
      spec = env;
  if (spec.empty()) {
    // The best device present, in order of expected speed: a GPU (CUDA, HIP,
    // Vulkan's fastest), then the CPU backend, then a Vulkan device that runs on
    // the CPU (lavapipe), which runs kernels several times slower than the CPU
    // backend's native code.
    std::string why;
    std::unique_ptr<Driver> onHost;
    for (const char *kind : {"cuda", "hip", "vulkan", "cpu"}) {
      auto driver = openBackend(kind, std::string(kind) == "vulkan" ? -1 : 0, why);
      if (driver && driver->runsOnHost() && !onHost) {
        onHost = std::move(driver);
        continue;
      }
      if (driver)
        return std::shared_ptr<Device>(new Device(std::move(driver)));
    }
    if (onHost)
      return std::shared_ptr<Device>(new Device(std::move(onHost)));
    return Status::failure("no device available: " + why);
  }
  std::string kind = spec;
  int index = kind == "vulkan" ? -1 : 0; // without an index, the fastest Vulkan device
  if (size_t colon = spec.find(':'); colon != std::string::npos) {
    kind = spec.substr(0, colon);
    // Decimal digits only (no sign, space or empty index), small enough for an int.
    std::string digits = spec.substr(colon + 1);
    bool ok = !digits.empty() && digits.size() <= 6 &&
              digits.find_first_not_of("0123456789") == std::string::npos;
    if (!ok)
      return Status::failure("bad device index in '" + spec + "' (expected KIND:N, N from 0)");
    index = std::stoi(digits);
  }
  std::string why;
  auto driver = openBackend(kind, index, why);
  if (!driver)
    return Status::failure("cannot open device '" + spec + "': " + why);
  return std::shared_ptr<Device>(new Device(std::move(driver)));
}

std::vector<std::string> Device::available() {
  std::vector<std::string> found;
  for (const char *kind : {"cuda", "hip", "vulkan", "cpu"}) {
    std::string why;
    if (openBackend(kind, 0, why))
      found.push_back(kind);
  }
  return found;
}

Backend Device::backend() const { return driver_->backend(); }
std::string Device::name() const { return driver_->name(); }
std::string Device::target() const { return driver_->target(); }
int64_t Device::processors() const { return driver_->processors(); }

//===----------------------------------------------------------------------===//
// Memory
//===----------------------------------------------------------------------===//

Result<Buffer> Device::allocate(size_t bytes) {
  auto handle = driver_->allocate(bytes ? bytes : 1);
  if (!handle)
    return Status::failure("cannot allocate " + std::to_string(bytes) + " bytes on " +
                           name() + ": " + handle.status().message());
  Buffer b;
  b.impl_ = std::make_shared<BufferImpl>();
  b.impl_->driver = driver_;
  b.impl_->handle = *handle;
  b.impl_->bytes = bytes;
  return b;
}

/// A copy between the host and `buffer` on the device of `driver`: the buffer
/// must be that device's, and the bytes inside it.
static Status checkCopy(const Driver *driver, const Buffer &buffer, size_t bytes, size_t offset) {
  if (!buffer.valid())
    return Status::failure("the buffer is empty (not allocated)");
  if (BufferAccess::get(buffer)->driver.get() != driver)
    return Status::failure("the buffer was allocated on another device");
  if (offset > buffer.size() || bytes > buffer.size() - offset)
    return Status::failure("copy of " + std::to_string(bytes) + " bytes at offset " +
                           std::to_string(offset) + " exceeds the buffer's " +
                           std::to_string(buffer.size()) + " bytes");
  return Status::success();
}

/// An empty copy touches nothing (its host pointer may be null); any other needs one.
static bool nothingToCopy(const void *host, size_t bytes, Status &error) {
  if (bytes != 0 && !host)
    error = Status::failure("copy of " + std::to_string(bytes) + " bytes with a null host pointer");
  return bytes == 0 || !host;
}

Status Device::write(Buffer &buffer, const void *data, size_t bytes, size_t offset) {
  if (Status s = checkCopy(driver_.get(), buffer, bytes, offset); !s)
    return s;
  if (Status s; nothingToCopy(data, bytes, s))
    return s;
  return driver_->write(buffer.impl_->handle, offset, data, bytes);
}

Status Device::read(const Buffer &buffer, void *data, size_t bytes, size_t offset) {
  if (Status s = checkCopy(driver_.get(), buffer, bytes, offset); !s)
    return s;
  if (Status s; nothingToCopy(data, bytes, s))
    return s;
  return driver_->read(buffer.impl_->handle, offset, data, bytes);
}

//===----------------------------------------------------------------------===//
// Modules
//===----------------------------------------------------------------------===//

Result<Module> Device::load(const std::string &binary, const std::string &metadataJson) {
  auto impl = std::make_shared<ModuleImpl>();
  std::string error;
  if (!parseMetadata(metadataJson, impl->metadata, error))
    return Status::failure(error);
  if (std::string why = whyTargetDoesNotRun(impl->metadata.target, target()); !why.empty())
    return Status::failure("module was compiled for " + impl->metadata.target +
                           " but the device is " + target() + " (" + name() + "): " + why);
  // A damaged binary can crash the loader that reads it (ld.so, a Vulkan
  // driver's compiler) rather than fail; its checksum is checked first.
  if (!impl->metadata.checksum.empty() && impl->metadata.checksum != binaryChecksum(binary))
    return Status::failure("the binary does not match the checksum in its metadata (" +
                           impl->metadata.checksum + "): it is truncated or damaged, or the metadata " +
                           "belongs to another build");
  auto handle = driver_->loadModule(binary, impl->metadata);
  if (!handle)
    return handle.status();
  impl->driver = driver_;
  impl->handle = *handle;
  Module m;
  m.impl_ = impl;
  return m;
}

Result<Module> Device::loadBundle(const std::string &bytes) {
  Bundle bundle;
  std::string error;
  if (!readBundle(bytes, bundle, error))
    return Status::failure(error);
  const BundleEntry *entry = bundle.find(target());
  if (!entry) {
    std::string targets;
    for (const BundleEntry &e : bundle.entries)
      targets += (targets.empty() ? "" : "; ") + e.target + ": " +
                 whyTargetDoesNotRun(e.target, target());
    return Status::failure("the bundle has no code for " + target() +
                           (targets.empty() ? std::string(" (it has no entries)")
                                            : " (it has " + targets + ")"));
  }
  return load(entry->binary, entry->metadata);
}

//===----------------------------------------------------------------------===//
// Launch
//===----------------------------------------------------------------------===//

/// Checks the arguments and builds the driver's view of them.
static Status resolve(Driver *driver, const KernelInfo &kernel, const std::vector<Arg> &args,
                      std::vector<KernelArg> &checked, std::vector<LaunchArg> &resolved) {
  for (const Arg &a : args) {
    KernelArg k;
    k.isTensor = a.isTensor;
    k.dtype = a.dtype;
    k.scalar.i = a.scalar.i;
    if (a.isTensor) {
      k.tensor.dtype = a.dtype;
      k.tensor.sizes = a.sizes;
      k.tensor.strides = a.strides;
      k.tensor.data = a.buffer.valid() ? reinterpret_cast<void *>(1) : nullptr;
    }
    checked.push_back(k);
  }
  std::string problem = validateArgs(kernel, checked);
  if (!problem.empty())
    return Status::failure(problem);
  for (size_t i = 0; i < args.size(); ++i)
    if (args[i].unrepresentable) {
      return Status::failure("kernel '" + kernel.name + "': argument '" + kernel.args[i].name +
                             "' is " + *args[i].unrepresentable + ", which does not fit in " +
                             dtypeName(args[i].dtype));
    }
  for (size_t i = 0; i < args.size(); ++i) {
    const Arg &a = args[i];
    LaunchArg l;
    l.info = &kernel.args[i];
    l.scalar.i = a.scalar.i;
    if (a.isTensor) {
      std::string which = "kernel '" + kernel.name + "': argument '" + kernel.args[i].name + "'";
      if (!a.buffer.valid())
        return Status::failure(which + " has no buffer");
      if (BufferAccess::get(a.buffer)->driver.get() != driver)
        return Status::failure(which + " lives on another device");
      // The furthest element the view can reach must lie inside the buffer.
      int64_t last = a.offset, empty = 0;
      bool overflow = a.offset < 0;
      for (size_t d = 0; d < a.sizes.size(); ++d) {
        if (a.sizes[d] == 0)
          empty = 1;
        if (a.strides[d] < 0)
          return Status::failure(which + " has a negative stride");
        int64_t reach;
        overflow |= __builtin_mul_overflow(a.sizes[d] - 1, a.strides[d], &reach) ||
                    __builtin_add_overflow(last, reach, &last);
      }
      uint64_t need = 0;
      if (!empty)
        overflow |= __builtin_mul_overflow(static_cast<uint64_t>(last) + 1,
                                           static_cast<uint64_t>(dtypeBytes(a.dtype)), &need);
      if (overflow && !empty)
        return Status::failure(which + " has an offset or strides that overflow");
      // GPU kernels index a tensor (from its offset) with 32-bit integers.
      if (!empty && driver->backend() != Backend::CPU && last - a.offset > INT32_MAX)
        return Status::failure(which + " reaches element " + std::to_string(last - a.offset) +
                               " past its offset; " + backendName(driver->backend()) +
                               " kernels index with 32-bit integers (at most 2^31 - 1)");
      if (need > a.buffer.size())
        return Status::failure(which + " needs " + std::to_string(need) +
                               " bytes but its buffer has " + std::to_string(a.buffer.size()));
      l.buffer = BufferAccess::get(a.buffer)->handle;
      l.offset = a.offset;
      l.sizes = a.sizes;
      l.strides = a.strides;
    }
    resolved.push_back(std::move(l));
  }
  return Status::success();
}

/// What a launch needs once its arguments have been checked.
struct kiln::rt::PreparedLaunch {
  const KernelInfo *kernel = nullptr;
  std::vector<LaunchArg> args;
  std::array<int64_t, 3> grid = {0, 0, 0};
};

Status Device::prepare(const Module &module, const std::string &name,
                       const std::vector<Arg> &args, PreparedLaunch &out) {
  if (!module.impl_)
    return Status::failure("the module is empty (not loaded)");
  if (module.impl_->driver != driver_)
    return Status::failure("the module was loaded on another device");
  out.kernel = module.find(name);
  if (!out.kernel)
    return Status::failure("no kernel named '" + name + "' in this module");
  std::vector<KernelArg> checked;
  if (Status s = resolve(driver_.get(), *out.kernel, args, checked, out.args); !s)
    return s;
  std::string error;
  if (!evaluateGrid(*out.kernel, checked, driver_->processors(), out.grid, error))
    return Status::failure("kernel '" + name + "': " + error);
  return Status::success();
}

Result<std::array<int64_t, 3>> Device::grid(const Module &module, const std::string &name,
                                            const std::vector<Arg> &args) {
  PreparedLaunch launch;
  if (Status s = prepare(module, name, args, launch); !s)
    return s;
  return launch.grid;
}

Status Device::launch(const Module &module, const std::string &name,
                      const std::vector<Arg> &args) {
  PreparedLaunch launch;
  if (Status s = prepare(module, name, args, launch); !s)
    return s;
  const auto &g = launch.grid;
  if (g[0] == 0 || g[1] == 0 || g[2] == 0)
    return Status::success();
  return driver_->launch(module.impl_->handle.get(), *launch.kernel, g, launch.args);
}

Status Device::synchronize() { return driver_->synchronize(); }

Result<Stream> Device::createStream() {
  auto impl = driver_->createStream();
  if (!impl)
    return impl.status();
  Stream stream;
  stream.device_ = shared_from_this();
  stream.impl_ = *impl;
  return stream;
}

Status Stream::launch(const Module &module, const std::string &name,
                      const std::vector<Arg> &args) {
  if (!impl_)
    return Status::failure("the stream is empty (not created by Device::createStream)");
  PreparedLaunch launch;
  if (Status s = device_->prepare(module, name, args, launch); !s)
    return s;
  const auto &g = launch.grid;
  if (g[0] == 0 || g[1] == 0 || g[2] == 0)
    return Status::success();
  // The arguments (and so their buffers) and the module live until the launch ran.
  auto keepAlive = std::make_shared<std::pair<std::vector<Arg>, Module>>(args, module);
  return device_->driver_->launchOn(*impl_, module.impl_->handle.get(), *launch.kernel, g,
                                    launch.args, keepAlive);
}

Status Stream::synchronize() {
  if (!impl_)
    return Status::failure("the stream is empty (not created by Device::createStream)");
  return device_->driver_->synchronize(*impl_);
}

Result<Event> Stream::record() {
  if (!impl_)
    return Status::failure("the stream is empty (not created by Device::createStream)");
  auto t = device_->driver_->timestamp(*impl_);
  if (!t)
    return t.status();
  return Event{*t};
}

Result<Event> Device::record() {
  auto t = driver_->timestamp();
  if (!t)
    return t.status();
  return Event{*t};
}
