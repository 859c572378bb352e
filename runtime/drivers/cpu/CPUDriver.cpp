//===- CPUDriver.cpp - kiln-rt on the host CPU ----------------------------===//
//
// Modules are shared objects linked from `kilnc --target=cpu --emit=so`. Each
// kernel exports `_mlir_<kernel>`, which takes one pointer per argument (memref
// descriptors expanded) followed by six i32 program coordinates; the grid runs on
// the thread pool.
//
//===----------------------------------------------------------------------===//

#include "runtime/Driver.h"

#include "lib/Support/PackedArgs.h"
#include "lib/Support/ThreadPool.h"

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

#include <dlfcn.h>
#include <elf.h>
#include <sys/mman.h>
#include <unistd.h>

using namespace kiln;
using namespace kiln::rt;

namespace {

/// Writes all of `bytes` to `fd`.
bool writeAll(int fd, const std::string &bytes) {
  for (size_t done = 0; done < bytes.size();) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

/// Why `binary` is not a whole 64-bit shared object for this host, or "": the
/// loader maps its segments and headers straight from the file, so one cut
/// short (a bundle entry truncated, checksum and all) would fault on first
/// touch instead of failing to load.
std::string elfProblem(const std::string &binary) {
  if (binary.size() < sizeof(Elf64_Ehdr) || binary.compare(0, 4, ELFMAG) != 0)
    return "not a host shared object (expected an ELF file from kilnc --target=cpu --emit=so)";
  Elf64_Ehdr header;
  std::memcpy(&header, binary.data(), sizeof header);
#if defined(__x86_64__)
  const uint16_t machine = EM_X86_64;
#elif defined(__aarch64__)
  const uint16_t machine = EM_AARCH64;
#else
  const uint16_t machine = header.e_machine;
#endif
  if (header.e_ident[EI_CLASS] != ELFCLASS64 || header.e_ident[EI_DATA] != ELFDATA2LSB ||
      header.e_type != ET_DYN || header.e_machine != machine)
    return "the module is not a shared object for this CPU (rebuild it with kilnc "
           "--target=cpu here)";
  uint64_t size = binary.size();
  auto within = [&](uint64_t offset, uint64_t count, uint64_t each) {
    return offset <= size && (each == 0 || count <= (size - offset) / each);
  };
  if (!within(header.e_phoff, header.e_phnum, header.e_phentsize) ||
      header.e_phentsize < sizeof(Elf64_Phdr) ||
      !within(header.e_shoff, header.e_shnum, header.e_shentsize))
    return "the module is truncated (its ELF headers reach past its " + std::to_string(size) +
           " bytes)";
  for (uint16_t i = 0; i < header.e_phnum; ++i) {
    Elf64_Phdr segment;
    std::memcpy(&segment, binary.data() + header.e_phoff + uint64_t(i) * header.e_phentsize,
                sizeof segment);
    if (!within(segment.p_offset, segment.p_filesz, 1))
      return "the module is truncated (segment " + std::to_string(i) + " reaches past its " +
             std::to_string(size) + " bytes)";
  }
  return "";
}

using PackedFn = void (*)(void **);

/// A stream on the CPU: one worker thread runs the queued launches in order
/// (each launch still spreads its programs over the thread pool).
class CPUStream : public DriverStream {
public:
  CPUStream() : worker([this] { run(); }) {}
  ~CPUStream() override {
    {
      std::lock_guard<std::mutex> lock(mutex);
      stopping = true;
    }
    wake.notify_all();
    worker.join();
  }
  void enqueue(std::function<Status()> work) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      queue.push_back(std::move(work));
    }
    wake.notify_all();
  }
  /// Waits until the queue is empty; returns (and clears) the first failure.
  Status drain() {
    std::unique_lock<std::mutex> lock(mutex);
    idle.wait(lock, [&] { return queue.empty() && !busy; });
    Status s = firstError;
    firstError = Status::success();
    return s;
  }

private:
  void run() {
    std::unique_lock<std::mutex> lock(mutex);
    while (true) {
      wake.wait(lock, [&] { return stopping || !queue.empty(); });
      if (queue.empty())
        return; // stopping, nothing left
      std::function<Status()> work = std::move(queue.front());
      queue.pop_front();
      busy = true;
      lock.unlock();
      Status s = work();
      lock.lock();
      busy = false;
      if (!s && firstError.ok())
        firstError = s;
      if (queue.empty())
        idle.notify_all();
    }
  }

  std::mutex mutex;
  std::condition_variable wake, idle;
  std::deque<std::function<Status()>> queue;
  bool busy = false, stopping = false;
  Status firstError = Status::success();
  std::thread worker; // last: starts after the members it uses exist
};

struct CPUModule {
  void *handle = nullptr;
  int memoryFile = -1; // the file dlopen mapped, open while loaded: its name stays unique
  std::map<std::string, PackedFn> entries;
  ~CPUModule() {
    if (handle)
      dlclose(handle);
    if (memoryFile >= 0)
      ::close(memoryFile);
  }

  /// dlopens the shared object `binary`, which exists only in memory: dlopen
  /// needs a file. An anonymous memory file leaves nothing behind, even when
  /// the process is killed, and works where /tmp is mounted noexec. dlopen
  /// knows objects by name, and /proc/self/fd/N names whatever file N is now,
  /// so the file stays open while the module is loaded, and a name already
  /// loaded is never reused. Otherwise (no memfd_create, no descriptors left) a
  /// file in $TMPDIR, else /tmp, is opened and its name removed at once.
  /// Returns why loading failed, or "".
  std::string open(const std::string &binary) {
    std::string memoryFileError; // the loader's, when the binary itself may be at fault
    int fd = memfd_create("kiln-module", MFD_CLOEXEC);
    if (fd >= 0) {
      std::string path = "/proc/self/fd/" + std::to_string(fd);
      void *loaded = dlopen(path.c_str(), RTLD_LAZY | RTLD_NOLOAD);
      if (loaded)
        dlclose(loaded);
      else if (writeAll(fd, binary) && !(handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)))
        if (const char *error = dlerror())
          memoryFileError = error;
      if (handle) {
        memoryFile = fd;
        return "";
      }
      ::close(fd);
    }
    const char *dir = std::getenv("TMPDIR");
    std::string path = std::string(dir && *dir ? dir : "/tmp") + "/kiln-module-XXXXXX";
    fd = mkstemp(path.data());
    if (fd < 0)
      return !memoryFileError.empty()
                 ? memoryFileError
                 : "cannot create a temporary file in " + path.substr(0, path.rfind('/')) +
                       ": " + std::strerror(errno);
    bool written = writeAll(fd, binary);
    ::close(fd);
    if (written)
      handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    const char *dlError = written && !handle ? dlerror() : nullptr;
    unlink(path.c_str());
    if (!written)
      return "short write to " + path;
    return handle ? "" : dlError ? dlError : "dlopen failed";
  }
};

struct CPUBuffer {
  void *data = nullptr; // 64-byte aligned, `stagger` bytes into `block`
  void *block = nullptr;
  size_t bytes = 0;
  ~CPUBuffer() { std::free(block); }
};

/// Large allocations come from mmap, page-aligned: every tensor would start at
/// the same offset in a 4 KiB page, and a kernel that stores to one tensor
/// while loading another at the same index suffers 4K aliasing (the load waits
/// on the store it falsely matches). Successive buffers start at different
/// offsets, 64 bytes times a step that cycles through the page.
static size_t nextStagger() {
  static std::atomic<unsigned> count{0};
  return (count.fetch_add(1, std::memory_order_relaxed) * 9 % 64) * 64;
}

class CPUDriver : public Driver {
public:
  Backend backend() const override { return Backend::CPU; }
  std::string name() const override {
    return "host CPU (" + std::to_string(defaultThreadCount()) + " threads)";
  }
  std::string target() const override { return "cpu"; }
  int64_t processors() const override { return defaultThreadCount(); }

  Result<void *> allocate(size_t bytes) override {
    if (bytes > SIZE_MAX - 8192) // the stagger and rounding must not wrap
      return Status::failure("out of host memory");
    auto *b = new CPUBuffer();
    b->bytes = bytes;
    size_t stagger = bytes >= 4096 ? nextStagger() : 0;
    b->block = std::aligned_alloc(64, (bytes + stagger + 63) / 64 * 64);
    if (!b->block) {
      delete b;
      return Status::failure("out of host memory");
    }
    b->data = static_cast<char *>(b->block) + stagger;
    return static_cast<void *>(b);
  }
  void release(void *buffer) override { delete static_cast<CPUBuffer *>(buffer); }
  Status write(void *buffer, size_t offset, const void *data, size_t bytes) override {
    std::memcpy(static_cast<char *>(static_cast<CPUBuffer *>(buffer)->data) + offset, data, bytes);
    return Status::success();
  }
  Status read(void *buffer, size_t offset, void *data, size_t bytes) override {
    std::memcpy(data, static_cast<char *>(static_cast<CPUBuffer *>(buffer)->data) + offset, bytes);
    return Status::success();
  }

  Result<std::shared_ptr<void>> loadModule(const std::string &binary,
                                           const ModuleMetadata &metadata) override {
    if (std::string problem = elfProblem(binary); !problem.empty())
      return Status::failure(problem);
    auto module = std::make_shared<CPUModule>();
    std::string problem = module->open(binary);
    if (!module->handle)
      return Status::failure("cannot load the module: " + problem);
    for (const KernelInfo &k : metadata.kernels) {
      auto fn = reinterpret_cast<PackedFn>(dlsym(module->handle, ("_mlir_" + k.name).c_str()));
      if (!fn)
        return Status::failure("the module has no entry point for kernel '" + k.name + "'");
      auto *abi = static_cast<const char *>(dlsym(module->handle, ("_kiln_abi_" + k.name).c_str()));
      std::string embedded = abi ? abi : "";
      if (std::string problem = abiMismatch(k, abi ? &embedded : nullptr); !problem.empty())
        return Status::failure(problem);
      module->entries[k.name] = fn;
    }
    return std::shared_ptr<void>(module);
  }

  Status launch(void *moduleHandle, const KernelInfo &kernel, const std::array<int64_t, 3> &grid,
                const std::vector<LaunchArg> &args) override {
    auto *module = static_cast<CPUModule *>(moduleHandle);
    PackedFn fn = module->entries.at(kernel.name);
    std::vector<KernelArg> host;
    for (const LaunchArg &a : args) {
      KernelArg k;
      k.dtype = a.info->dtype;
      k.scalar.i = a.scalar.i;
      if (a.info->isTensor) {
        auto *buf = static_cast<CPUBuffer *>(a.buffer);
        k = KernelArg::of(TensorRef{static_cast<char *>(buf->data) +
                                        a.offset * dtypeBytes(a.info->dtype),
                                    a.info->dtype, a.sizes, a.strides});
      }
      host.push_back(k);
    }
    PackedArgs packed(host);
    auto [gx, gy, gz] = grid;
    int64_t plane = 0, total = 0;
    if (__builtin_mul_overflow(gx, gy, &plane) || __builtin_mul_overflow(plane, gz, &total))
      return Status::failure("kernel '" + kernel.name + "': a grid of " + std::to_string(gx) +
                             " x " + std::to_string(gy) + " x " + std::to_string(gz) +
                             " programs is more than 2^63");
    unsigned workers = static_cast<unsigned>(std::min<int64_t>(defaultThreadCount(), total));
    std::vector<std::array<int64_t, 6>> ids(workers);
    std::vector<std::vector<void *>> perWorker;
    for (unsigned w = 0; w < workers; ++w)
      perWorker.push_back(packed.pointers(ids[w].data(), 6));
    parallelFor(total, workers, [&](int64_t p, unsigned w) {
      ids[w] = {p % gx, (p / gx) % gy, p / (gx * gy), gx, gy, gz};
      fn(perWorker[w].data());
    });
    return Status::success();
  }

  Status synchronize() override { return Status::success(); }
  Result<double> timestamp() override {
    auto now = std::chrono::steady_clock::now().time_since_epoch();
    return std::chrono::duration<double, std::milli>(now).count();
  }

  Result<std::shared_ptr<DriverStream>> createStream() override {
    return std::shared_ptr<DriverStream>(std::make_shared<CPUStream>());
  }
  Status launchOn(DriverStream &stream, void *module, const KernelInfo &kernel,
                  const std::array<int64_t, 3> &grid, const std::vector<LaunchArg> &args,
                  std::shared_ptr<void> keepAlive) override {
    static_cast<CPUStream &>(stream).enqueue(
        [this, module, &kernel, grid, args, keepAlive]() { return launch(module, kernel, grid, args); });
    return Status::success();
  }
  Status synchronize(DriverStream &stream) override {
    return static_cast<CPUStream &>(stream).drain();
  }
  Result<double> timestamp(DriverStream &stream) override {
    if (Status s = synchronize(stream); !s)
      return s;
    return timestamp();
  }
};

} // namespace

std::unique_ptr<Driver> kiln::rt::openCPU(int index, std::string &why) {
  if (index != 0) {
    why = "there is one CPU device (index 0)";
    return nullptr;
  }
  return std::make_unique<CPUDriver>();
}
