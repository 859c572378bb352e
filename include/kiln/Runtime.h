//===- Runtime.h - kiln-rt: load and launch Kiln kernels --------*- C++ -*-===//
//
// The runtime links neither LLVM nor MLIR. A Device is one GPU (CUDA, HIP,
// Vulkan) or the host CPU; it allocates Buffers, loads Modules (a binary plus
// kilnc's kernel metadata, or a .kbin bundle) and launches kernels, taking the
// grid from each kernel's own grid rule. Every launch checks its arguments against
// the kernel's metadata; failures are Status values with a message, never crashes.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "kiln/DType.h"
#include "kiln/KernelInfo.h"

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kiln::rt {

enum class Backend { CPU, CUDA, HIP, Vulkan };
const char *backendName(Backend backend);

/// Success, or an error message.
class Status {
public:
  static Status success() { return Status(); }
  static Status failure(std::string message) {
    Status s;
    s.message_ = message.empty() ? "unknown error" : std::move(message);
    return s;
  }
  bool ok() const { return message_.empty(); }
  explicit operator bool() const { return ok(); }
  const std::string &message() const { return message_; }

private:
  std::string message_;
};

/// A value or the Status saying why there is none.
template <typename T> class Result {
public:
  Result(T value) : value_(std::move(value)) {}
  Result(Status status) : status_(std::move(status)) {}
  bool ok() const { return value_.has_value(); }
  explicit operator bool() const { return ok(); }
  const Status &status() const { return status_; }
  T &operator*() { return *value_; }
  const T &operator*() const { return *value_; }
  T *operator->() { return &*value_; }
  const T *operator->() const { return &*value_; }

private:
  std::optional<T> value_;
  Status status_;
};

class Driver;
struct BufferImpl;
struct BufferAccess;
struct PreparedLaunch;
struct ModuleImpl;

/// Device memory; freed when the last copy of the handle goes away.
class Buffer {
public:
  Buffer() = default;
  size_t size() const;
  bool valid() const { return impl_ != nullptr; }

private:
  friend class Device;
  friend struct BufferAccess;
struct PreparedLaunch;
  std::shared_ptr<BufferImpl> impl_;
};

/// A kernel argument: a strided view of a Buffer (strides count elements), or a
/// scalar.
struct Arg {
  bool isTensor = false;
  Buffer buffer;
  DType dtype = DType::F32;
  std::vector<int64_t> sizes, strides;
  int64_t offset = 0; // elements from the start of the buffer
  union {
    int64_t i;
    double f;
  } scalar = {0};
  /// The value as given, written out, when it has no value of the argument's
  /// type that 64 bits can carry: set by `floating` for a float given for an
  /// integer argument (NaN, or past the range of i64, or of u64), and by
  /// `unsignedInteger` for one past i64 given for a narrower type. The launch
  /// reports it.
  std::optional<std::string> unrepresentable;

  /// A dense row-major view of `buffer`.
  static Arg tensor(const Buffer &buffer, DType dtype, std::vector<int64_t> sizes);
  static Arg strided(const Buffer &buffer, DType dtype, std::vector<int64_t> sizes,
                     std::vector<int64_t> strides, int64_t offset = 0);
  static Arg i32(int64_t v) { return integer(v, DType::I32); }
  static Arg f32(double v) { return floating(v, DType::F32); }
  static Arg integer(int64_t v, DType dtype);
  /// An integer given as unsigned: any 64 bits for u64 (and the number for a
  /// float type), values past i64's range an error for the other types.
  static Arg unsignedInteger(uint64_t v, DType dtype);
  static Arg floating(double v, DType dtype);
};

/// Kernels loaded on a device.
class Module {
public:
  const std::vector<KernelInfo> &kernels() const;
  const KernelInfo *find(const std::string &name) const;
  const std::string &target() const;

private:
  friend class Device;
  friend class Stream;
  std::shared_ptr<ModuleImpl> impl_;
};

/// A point in a device's stream of work, for timing.
struct Event {
  double milliseconds = 0; // on the device's clock
  /// Time from `start` to this event.
  double since(const Event &start) const { return milliseconds - start.milliseconds; }
};

class DriverStream;
class Device;

/// An in-order queue of launches on one device. `launch` checks the arguments
/// and returns once the work is queued; it may still be running. Launches on
/// one stream run in order; different streams (and the device's own queue used
/// by Device::launch) may overlap. Buffers passed to a queued launch are kept
/// alive until it has run, but their contents must not be read or written by
/// the host before `synchronize`.
class Stream {
public:
  Stream() = default;
  bool valid() const { return impl_ != nullptr; }
  Status launch(const Module &module, const std::string &kernel, const std::vector<Arg> &args);
  /// Waits for everything queued on this stream.
  Status synchronize();
  /// Waits for the queued work and records the device's time then: the time
  /// between two records is the device time of the launches between them.
  Result<Event> record();

private:
  friend class Device;
  std::shared_ptr<Device> device_; // before impl_: the stream drains before its device goes
  std::shared_ptr<DriverStream> impl_;
};

class Device : public std::enable_shared_from_this<Device> {
public:
  /// `spec` is `cuda`, `hip`, `vulkan` or `cpu`, optionally `:index`; empty means
  /// KILN_DEVICE when set, else the best device present (CUDA, HIP, a Vulkan GPU,
  /// the CPU backend, a Vulkan device that runs on the CPU).
  static Result<std::shared_ptr<Device>> open(const std::string &spec = "");
  /// Devices this machine has, as specs `open` accepts, best first.
  static std::vector<std::string> available();

  ~Device();
  Backend backend() const;
  /// A human-readable name (e.g. "llvmpipe (LLVM 15.0.6, 256 bits)").
  std::string name() const;
  /// The kilnc target that produces code for this device (e.g. "cuda:sm_90",
  /// "vulkan:1.2", or "vulkan:1.3:cpu" for a Vulkan implementation on the CPU).
  std::string target() const;
  /// The processors that run programs side by side, the grid rule's
  /// num_processors(): multiprocessors (SMs) on CUDA, compute units on HIP,
  /// worker threads on the CPU and on a Vulkan implementation on the CPU; a
  /// Vulkan GPU reports them through VK_NV_shader_sm_builtins or
  /// VK_AMD_shader_core_properties, else Kiln assumes 32.
  int64_t processors() const;

  Result<Buffer> allocate(size_t bytes);
  Status write(Buffer &buffer, const void *data, size_t bytes, size_t offset = 0);
  Status read(const Buffer &buffer, void *data, size_t bytes, size_t offset = 0);

  /// Loads a binary for this device with its kilnc metadata (the .json file).
  Result<Module> load(const std::string &binary, const std::string &metadataJson);
  /// Loads this device's entry of a .kbin bundle.
  Result<Module> loadBundle(const std::string &bundleBytes);

  /// Checks `args`, evaluates the grid rule and launches every program.
  Status launch(const Module &module, const std::string &kernel, const std::vector<Arg> &args);
  /// The grid `launch` would use.
  Result<std::array<int64_t, 3>> grid(const Module &module, const std::string &kernel,
                                      const std::vector<Arg> &args);
  Status synchronize();
  /// Waits for queued work and records the time.
  Result<Event> record();
  /// A new in-order queue on this device (see Stream).
  Result<Stream> createStream();

private:
  friend class Stream;
  explicit Device(std::unique_ptr<Driver> driver);
  /// Checks a launch's module, kernel and arguments and evaluates its grid.
  Status prepare(const Module &module, const std::string &kernel,
                 const std::vector<Arg> &args, PreparedLaunch &out);
  std::shared_ptr<Driver> driver_; // shared with the buffers and modules it made
};

} // namespace kiln::rt
