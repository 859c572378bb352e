//===- kiln.h - compile and launch Kiln kernels from C++ --------*- C++ -*-===//
//
//   kiln::Session s;                                   // best device, or KILN_DEVICE
//   auto softmax = s.compile(src, "softmax", {{"BLOCK", "1024"}});
//   auto x = s.upload(hostX, {M, N});
//   auto y = s.empty<float>({M, N});
//   softmax(x, y);                                     // grid from the kernel's rule
//   y.download(hostY);
//
// Nothing throws: every object carries a Status; using a failed one returns its
// error. Compiled kernels are cached in memory and on disk (KILN_CACHE_DIR, default
// ~/.cache/kiln), keyed by source, kernel, params, target, options and compiler.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "kiln/Runtime.h"

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <optional>
#include <type_traits>
#include <vector>

namespace kiln {

class Session;

namespace detail {
/// The dtype of host elements of type T, if Kiln has one for it.
template <typename T> constexpr std::optional<DType> hostDType() {
  if constexpr (std::is_same_v<T, float>) return DType::F32;
  else if constexpr (std::is_same_v<T, double>) return DType::F64;
  else if constexpr (std::is_same_v<T, int32_t>) return DType::I32;
  else if constexpr (std::is_same_v<T, int64_t>) return DType::I64;
  else if constexpr (std::is_same_v<T, int16_t>) return DType::I16;
  else if constexpr (std::is_same_v<T, int8_t>) return DType::I8;
  else if constexpr (std::is_same_v<T, uint64_t>) return DType::U64;
  else if constexpr (std::is_same_v<T, uint32_t>) return DType::U32;
  else if constexpr (std::is_same_v<T, uint16_t>) return DType::U16;
  else if constexpr (std::is_same_v<T, uint8_t>) return DType::U8;
  else if constexpr (std::is_same_v<T, bool>) return DType::I1;
  else return std::nullopt;
}
/// The dtype of host elements of type T (uploads of std::vector<T>).
template <typename T> constexpr DType dtypeOf() {
  static_assert(hostDType<T>().has_value(),
                "use upload(ptr, dtype, shape) for this element type");
  return *hostDType<T>();
}
} // namespace detail

/// A device tensor: a buffer with a dtype and a dense row-major shape.
class Tensor {
public:
  Tensor() = default;
  Tensor(const Tensor &) = default;
  Tensor &operator=(const Tensor &) = default;
  /// A moved-from tensor is empty again: its status is an error, as a
  /// default-constructed one's.
  Tensor(Tensor &&other) noexcept { swap(other); }
  Tensor &operator=(Tensor &&other) noexcept {
    Tensor(std::move(other)).swap(*this);
    return *this;
  }
  void swap(Tensor &other) noexcept;
  const rt::Status &status() const { return status_; }
  bool ok() const { return status_.ok(); }
  DType dtype() const { return dtype_; }
  const std::vector<int64_t> &shape() const { return shape_; }
  int64_t numel() const;
  /// Copies the whole tensor into `host` (numel() elements of dtype()).
  rt::Status download(void *host) const;
  /// Into a vector of the tensor's element type (float for f32, int32_t for
  /// i32, ...), or of the unsigned integers of its size for its bits (uint16_t
  /// for f16 and bf16, uint8_t for fp8 and i1); any other is an error, neither
  /// an overrun nor floats read as integers.
  template <typename T> rt::Status download(std::vector<T> &host) const {
    constexpr std::optional<DType> typed = detail::hostDType<T>();
    bool bits = std::is_integral_v<T> && std::is_unsigned_v<T> && !std::is_same_v<T, bool>;
    if (sizeof(T) != dtypeBytes(dtype_) || (typed && !bits && *typed != dtype_))
      return elementTypeMismatch(typed ? dtypeName(*typed)
                                       : std::to_string(sizeof(T)) + "-byte elements");
    host.resize(numel());
    return download(static_cast<void *>(host.data()));
  }
  /// An i1 tensor into bools (std::vector<bool> packs its bits: one byte each
  /// on the device).
  rt::Status download(std::vector<bool> &host) const {
    if (dtype_ != DType::I1)
      return elementTypeMismatch("bools");
    std::vector<uint8_t> bytes(numel());
    rt::Status s = download(static_cast<void *>(bytes.data()));
    host.assign(bytes.begin(), bytes.end());
    return s;
  }
  rt::Arg arg() const { return rt::Arg::tensor(buffer_, dtype_, shape_); }
  /// An argument that views this tensor's memory with other sizes and element
  /// strides, `offset` elements in: a transposed (`{1, M}`), padded or broadcast
  /// (stride 0) view, as torch's as_strided. The launch checks that the view
  /// stays inside the tensor, naming the argument otherwise.
  rt::Arg view(std::vector<int64_t> sizes, std::vector<int64_t> strides,
               int64_t offset = 0) const {
    return rt::Arg::strided(buffer_, dtype_, std::move(sizes), std::move(strides), offset);
  }

private:
  friend class Session;
  /// "cannot download a tensor of <dtype> into a vector of <host>".
  rt::Status elementTypeMismatch(const std::string &host) const;
  std::shared_ptr<rt::Device> device_; // shared: a tensor or kernel may outlive its Session
  rt::Buffer buffer_;
  DType dtype_ = DType::F32;
  std::vector<int64_t> shape_;
  rt::Status status_ = rt::Status::failure("the tensor is empty (not made by a Session)");
};

/// A kernel compiled for a session's device. Call it with tensors and scalars.
class Kernel {
public:
  Kernel() = default;
  Kernel(const Kernel &) = default;
  Kernel &operator=(const Kernel &) = default;
  /// A moved-from kernel is empty again, as a default-constructed one.
  Kernel(Kernel &&other) noexcept { swap(other); }
  Kernel &operator=(Kernel &&other) noexcept {
    Kernel(std::move(other)).swap(*this);
    return *this;
  }
  void swap(Kernel &other) noexcept;
  const rt::Status &status() const { return status_; }
  bool ok() const { return status_.ok(); }
  const KernelInfo *info() const { return ok() ? module_.find(name_) : nullptr; }

  rt::Status launch(const std::vector<rt::Arg> &args) const;
  /// Launches on Tensors and scalars; a Tensor with an error (a failed upload)
  /// is reported, naming its argument, and nothing runs.
  template <typename... Args> rt::Status operator()(const Args &...args) const {
    return launch({toArg(args)...}, {statusOf(args)...});
  }

private:
  friend class Session;
  /// `statuses` holds, per argument, its Tensor's status (null for others).
  rt::Status launch(const std::vector<rt::Arg> &args,
                    const std::vector<const rt::Status *> &statuses) const;
  static const rt::Status *statusOf(const Tensor &t) { return &t.status(); }
  template <typename T> static const rt::Status *statusOf(const T &) { return nullptr; }
  static rt::Arg toArg(const Tensor &t) { return t.arg(); }
  static rt::Arg toArg(const rt::Arg &a) { return a; }
  static rt::Arg toArg(bool v) { return rt::Arg::integer(v, DType::I1); }
  static rt::Arg toArg(float v) { return rt::Arg::f32(v); }
  static rt::Arg toArg(double v) { return rt::Arg::floating(v, DType::F64); }
  static rt::Arg toArg(int32_t v) { return rt::Arg::i32(v); }
  static rt::Arg toArg(int64_t v) { return rt::Arg::integer(v, DType::I64); }
  static rt::Arg toArg(uint32_t v) { return rt::Arg::integer(v, DType::U32); }
  static rt::Arg toArg(uint64_t v) { return rt::Arg::unsignedInteger(v, DType::U64); }

  std::shared_ptr<rt::Device> device_; // shared: a tensor or kernel may outlive its Session
  rt::Module module_;
  std::string name_;
  rt::Status status_ = rt::Status::failure("the kernel is empty (not compiled by a Session)");
};

/// Where compiled kernels came from, for tests and tuning.
struct CacheStats {
  int memoryHits = 0, diskHits = 0, compiles = 0, damagedEntries = 0;
  /// Entries this session removed to keep the disk cache under its size limit.
  int evictedEntries = 0;
  /// Autotuning: runs that timed candidates, and runs answered by a stored choice.
  int tuneRuns = 0, tuneHits = 0;
};

/// Candidate params for autotuning: one map of -D style overrides per candidate.
using ParamSet = std::map<std::string, std::string>;

struct TuneOptions {
  int warmup = 1;  // untimed launches per candidate (0 or more)
  int repeats = 5; // timed launches per candidate, 1 or more (the mean is kept)
  /// Progress lines on stderr: -1 when stderr is a terminal, 0 never, 1 always.
  int progress = -1;
};

/// One candidate's outcome in a tuning run.
struct TuneTrial {
  ParamSet params;
  double milliseconds = -1; // mean time per launch; -1 when it failed
  std::string error;        // why it failed to compile or launch
  /// The earlier trial that compiled to the same binary (a param this target
  /// ignores, such as `stages` off NVIDIA): not timed again, its time is shared.
  int sameCodeAs = -1;
};

struct TuneResult {
  Kernel kernel;      // compiled with `params`; carries the error when all failed
  ParamSet params;    // the fastest candidate
  bool fromCache = false;        // the choice was stored by an earlier run: no timing
  std::vector<TuneTrial> trials; // every candidate, when this run timed them
};

class Session {
public:
  /// `device` as rt::Device::open takes it ("" = KILN_DEVICE or the best present).
  explicit Session(const std::string &device = "");
  /// A moved-from session has no device: its status is an error, and what it
  /// makes carries that error.
  Session(Session &&other) noexcept;
  Session &operator=(Session &&other) noexcept;
  Session(const Session &) = default;
  Session &operator=(const Session &) = default;
  const rt::Status &status() const { return status_; }
  bool ok() const { return status_.ok(); }
  /// The device; only when ok(). On a Session that failed to open, this stops the
  /// program with the reason (there is no device to return).
  rt::Device &device();

  /// Compiles `kernel` from `source` for this device; `params` override the
  /// kernel's params like kilnc's -D. `filename` appears in diagnostics. An
  /// empty `kernel` is the first kernel the source declares (autotune too).
  Kernel compile(const std::string &source, const std::string &kernel,
                 const std::map<std::string, std::string> &params = {},
                 const std::string &filename = "<source>");

  /// Kernel `kernel` (empty: the first) of a .kbin bundle (`kilnc --target=... -o
  /// F.kbin`), from its entry for this device; nothing is compiled. An error
  /// status when the bundle is damaged, has no entry this device runs, or has no
  /// such kernel.
  Kernel load(const std::string &bundleBytes, const std::string &kernel = "");

  /// Compiles every candidate (in parallel), times each on `args` and returns
  /// the fastest. The choice is stored in the cache, keyed by source, kernel,
  /// candidates, device and shape bucket (each tensor size rounded up to a power
  /// of two), so a later run with similar shapes compiles only the winner and
  /// times nothing. `args` are scratch: the kernel runs on them several times.
  TuneResult autotune(const std::string &source, const std::string &kernel,
                      const std::vector<ParamSet> &candidates,
                      const std::vector<rt::Arg> &args, const TuneOptions &options = {},
                      const std::string &filename = "<source>");
  /// The same, over every combination of the values the kernel declares with
  /// `tune [...]` in its params (an error when it declares none).
  TuneResult autotune(const std::string &source, const std::string &kernel,
                      const std::vector<rt::Arg> &args, const TuneOptions &options = {},
                      const std::string &filename = "<source>");
  /// Every combination of per-param choices: {{"BM", {"32", "64"}}, {"BN",
  /// {"32", "64"}}} gives four candidates.
  static std::vector<ParamSet> combinations(const std::map<std::string, std::vector<std::string>> &choices);

  Tensor empty(DType dtype, std::vector<int64_t> shape);
  template <typename T> Tensor empty(std::vector<int64_t> shape) {
    return empty(detail::dtypeOf<T>(), std::move(shape));
  }
  Tensor upload(const void *host, DType dtype, std::vector<int64_t> shape);
  /// The same, from `count` host elements, which must be exactly the shape's
  /// (else a tensor with an error status, and nothing is read).
  Tensor upload(const void *host, size_t count, DType dtype, std::vector<int64_t> shape);
  template <typename T> Tensor upload(const std::vector<T> &host, std::vector<int64_t> shape) {
    return upload(host.data(), host.size(), detail::dtypeOf<T>(), std::move(shape));
  }
  /// Bools as an i1 tensor (a byte each).
  Tensor upload(const std::vector<bool> &host, std::vector<int64_t> shape) {
    std::vector<uint8_t> bytes(host.begin(), host.end());
    return upload(bytes.data(), bytes.size(), DType::I1, std::move(shape));
  }

  const CacheStats &cacheStats() const { return stats_; }
  /// The on-disk cache folder, or "" when the cache lives only in memory.
  const std::string &cacheDir() const { return cacheDir_; }

private:
  /// `kernel`, or when it is empty the first kernel `source` declares.
  static std::string nameOrFirst(const std::string &source, const std::string &kernel);
  std::string cachePath(const std::string &key) const;
  /// The key of a binary: everything that changes it, `filename` too (print and
  /// device_assert messages name it).
  std::string cacheKey(const std::string &source, const std::string &kernel,
                       const ParamSet &params, const std::string &filename) const;
  /// A cached module for `key` holding `kernel` (memory, then disk), counted in stats_.
  bool findCached(const std::string &key, const std::string &kernel, rt::Module &out);
  /// Loads a freshly compiled binary and stores it under `key` in memory and on disk.
  rt::Result<rt::Module> addToCache(const std::string &key, const std::string &binary,
                                    const std::string &metadata);
  /// Writes `bytes` to `path` atomically (write, then rename); false on failure.
  static bool writeAtomically(const std::string &path, const std::string &bytes);

  std::shared_ptr<rt::Device> device_;
  rt::Status status_;
  /// Counts the disk cache's binaries and removes the least recently used until
  /// they are within cacheLimit_, sparing `keep` (the entry just written).
  void pruneCache(const std::string &keep);

  std::string cacheDir_;
  uint64_t cacheLimit_ = 0;          // KILN_CACHE_MAX_SIZE in bytes; 0: no limit
  uint64_t cacheBytes_ = 0;          // the binaries' size as last counted, plus writes since
  bool cacheCounted_ = false;        // whether this session has counted them
  std::string matrixUnits_ = "auto"; // KILN_MATRIX_UNITS
  CacheStats stats_;
  std::map<std::string, rt::Module> memory_;
  std::map<std::string, ParamSet> tuned_; // tuning decisions made or read by this session
};

} // namespace kiln
