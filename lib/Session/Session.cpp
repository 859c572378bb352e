//===- Session.cpp - compile and launch Kiln kernels from C++ -------------===//

#include "kiln/kiln.h"

#include "codegen/Common/Target.h"
#include "kiln/BuildId.h"
#include "kiln/Version.h"
#include "lib/Compiler/Build.h"
#include "lib/Frontend/Lexer.h"
#include "lib/Session/SessionImpl.h"
#include "lib/Support/ReadFile.h"
#include "runtime/Bundle.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Error.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

using namespace kiln;
using session::readFile;

namespace {

uint64_t fnv1a(const std::string &data, uint64_t seed) {
  uint64_t h = seed;
  for (unsigned char c : data) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

bool makeDirs(const std::string &path) {
  std::string partial;
  std::stringstream ss(path);
  std::string part;
  if (!path.empty() && path[0] == '/')
    partial = "/";
  while (std::getline(ss, part, '/')) {
    if (part.empty())
      continue;
    partial += part + "/";
    mkdir(partial.c_str(), 0755);
  }
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string defaultCacheDir() {
  // A variable set to nothing counts as unset, as the XDG rules say.
  auto get = [](const char *name) -> const char * {
    const char *value = std::getenv(name);
    return value && *value ? value : nullptr;
  };
  if (const char *dir = get("KILN_CACHE_DIR"))
    return dir;
  if (const char *xdg = get("XDG_CACHE_HOME"))
    return std::string(xdg) + "/kiln";
  if (const char *home = get("HOME"))
    return std::string(home) + "/.cache/kiln";
  return "";
}

/// The disk cache's size limit in bytes: KILN_CACHE_MAX_SIZE, a whole number of
/// bytes with an optional K, M or G (binary) suffix, 0 for none; 1G when unset.
/// A value Kiln cannot read is said once, and the default holds.
uint64_t cacheSizeLimit() {
  constexpr uint64_t kDefault = uint64_t(1) << 30;
  const char *env = std::getenv("KILN_CACHE_MAX_SIZE");
  if (!env || !*env)
    return kDefault;
  llvm::StringRef text(env);
  unsigned shift = 0;
  if (char unit = llvm::toUpper(text.back()); unit == 'K' || unit == 'M' || unit == 'G') {
    shift = unit == 'K' ? 10 : unit == 'M' ? 20 : 30;
    text = text.drop_back();
  }
  uint64_t value;
  if (text.getAsInteger(10, value) || value > (UINT64_MAX >> shift)) {
    static std::atomic<bool> warned{false};
    if (!warned.exchange(true))
      std::fprintf(stderr,
                   "kiln: warning: KILN_CACHE_MAX_SIZE='%s' is not a size (bytes, or a number "
                   "with K, M or G; 0 for no limit); using 1G\n",
                   env);
    return kDefault;
  }
  return value << shift;
}

} // namespace

std::string session::hashKey(const std::string &material) {
  char key[40];
  std::snprintf(key, sizeof key, "%016llx%016llx",
                static_cast<unsigned long long>(fnv1a(material, 1469598103934665603ull)),
                static_cast<unsigned long long>(fnv1a(material, 0x9e3779b97f4a7c15ull)));
  return key;
}

rt::Result<session::Binary> session::compileBinary(const std::string &source,
                                                   const std::string &filename,
                                                   const std::string &kernel,
                                                   const ParamSet &params,
                                                   const std::string &target,
                                                   const std::string &matrixUnits) {
  auto parsed = Target::parse(target);
  if (!parsed)
    return rt::Status::failure(llvm::toString(parsed.takeError()));
  if (auto error = parsed->setMatrixUnits(matrixUnits))
    return rt::Status::failure("KILN_MATRIX_UNITS: " + llvm::toString(std::move(error)));
  GenOptions options;
  options.kernel = kernel;
  for (auto &[name, value] : params)
    options.defines[name] = value;
  auto artifact = compileSource(source, filename, options, *parsed);
  if (!artifact)
    return rt::Status::failure(llvm::toString(artifact.takeError()));
  return Binary{std::move(artifact->bytes), std::move(artifact->metadata)};
}

std::string session::readFile(const std::string &path) {
  // A cache entry is a regular file; anything else there (a pipe that would
  // block, a link to a device that never ends) reads as a missing entry.
  return readRegularFile(path);
}

//===----------------------------------------------------------------------===//
// Tensor and Kernel
//===----------------------------------------------------------------------===//

void Tensor::swap(Tensor &other) noexcept {
  std::swap(device_, other.device_);
  std::swap(buffer_, other.buffer_);
  std::swap(dtype_, other.dtype_);
  std::swap(shape_, other.shape_);
  std::swap(status_, other.status_);
}

int64_t Tensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape_)
    n *= d;
  return n;
}

rt::Status Tensor::download(void *host) const {
  if (!ok())
    return status_;
  return device_->read(buffer_, host, numel() * dtypeBytes(dtype_));
}

rt::Status Tensor::elementTypeMismatch(const std::string &host) const {
  return rt::Status::failure(std::string("cannot download a tensor of ") + dtypeName(dtype_) +
                             " into a vector of " + host +
                             " (use its element type, or unsigned integers of " +
                             std::to_string(dtypeBytes(dtype_)) + " bytes for its bits)");
}

/// The element count of `shape`, or nothing when a dimension is negative or
/// the count overflows.
static std::optional<int64_t> elementCount(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    if (d < 0 || __builtin_mul_overflow(n, d, &n))
      return std::nullopt;
  return n;
}

void Kernel::swap(Kernel &other) noexcept {
  std::swap(device_, other.device_);
  std::swap(module_, other.module_);
  std::swap(name_, other.name_);
  std::swap(status_, other.status_);
}

rt::Status Kernel::launch(const std::vector<rt::Arg> &args) const {
  if (!ok())
    return status_;
  return device_->launch(module_, name_, args);
}

rt::Status Kernel::launch(const std::vector<rt::Arg> &args,
                          const std::vector<const rt::Status *> &statuses) const {
  if (!ok())
    return status_;
  const KernelInfo *kernel = info();
  for (size_t i = 0; i < statuses.size(); ++i)
    if (statuses[i] && !statuses[i]->ok()) {
      std::string which = kernel && i < kernel->args.size()
                              ? "argument '" + kernel->args[i].name + "'"
                              : "argument " + std::to_string(i + 1);
      return rt::Status::failure("kernel '" + name_ + "': " + which + ": " +
                                 statuses[i]->message());
    }
  return launch(args);
}

//===----------------------------------------------------------------------===//
// Session
//===----------------------------------------------------------------------===//

rt::Device &Session::device() {
  if (!device_) {
    std::fprintf(stderr, "kiln: Session::device() on a session without a device: %s\n",
                 status_.message().c_str());
    std::abort();
  }
  return *device_;
}

Session::Session(Session &&other) noexcept { *this = std::move(other); }

Session &Session::operator=(Session &&other) noexcept {
  if (this == &other)
    return *this;
  device_ = std::move(other.device_);
  status_ = std::move(other.status_);
  cacheDir_ = std::move(other.cacheDir_);
  cacheLimit_ = other.cacheLimit_;
  cacheBytes_ = other.cacheBytes_;
  cacheCounted_ = other.cacheCounted_;
  matrixUnits_ = std::move(other.matrixUnits_);
  stats_ = other.stats_;
  memory_ = std::move(other.memory_);
  tuned_ = std::move(other.tuned_);
  other.device_.reset();
  other.status_ = rt::Status::failure("the session was moved from");
  other.memory_.clear();
  other.tuned_.clear();
  return *this;
}

Session::Session(const std::string &device) {
  auto opened = rt::Device::open(device);
  if (!opened) {
    status_ = opened.status();
    return;
  }
  device_ = *opened;
  // KILN_MATRIX_UNITS=none (or mma-sync, ...) overrides the matrix instructions
  // dots use, as kilnc --matrix-units does; checked when a kernel compiles.
  if (const char *units = std::getenv("KILN_MATRIX_UNITS"); units && *units)
    matrixUnits_ = units;
  cacheDir_ = defaultCacheDir();
  cacheLimit_ = cacheSizeLimit();
  // A cache folder that cannot be written falls back to memory, with one warning
  // per process.
  std::string probe = cacheDir_ + "/.kiln-write-test-" + std::to_string(getpid());
  bool writable = !cacheDir_.empty() && makeDirs(cacheDir_) && std::ofstream(probe).good();
  std::remove(probe.c_str());
  if (!writable) {
    static std::atomic<bool> warned{false};
    if (!warned.exchange(true))
      std::fprintf(stderr,
                   "kiln: warning: cannot write the kernel cache in '%s'; caching in memory "
                   "only (set KILN_CACHE_DIR)\n",
                   cacheDir_.c_str());
    cacheDir_.clear();
  }
}

std::string Session::cachePath(const std::string &key) const {
  return cacheDir_.empty() ? "" : cacheDir_ + "/" + key + ".kbin";
}

std::string Session::cacheKey(const std::string &source, const std::string &kernel,
                              const ParamSet &params, const std::string &filename) const {
  // Everything that changes the binary is part of the key.
  std::string material = std::string("kiln-cache-v1\n") + KILN_VERSION_STRING + "\n" +
                         KILN_LLVM_VERSION_STRING + "\n" + KILN_BUILD_ID + "\n" +
                         device_->target() + "\n" + "matrix-units=" + matrixUnits_ + "\n" +
                         kernel + "\n";
  for (auto &[name, value] : params)
    material += name + "=" + value + "\n";
  material += "O3\nfile=" + filename + "\n" + source;
  return session::hashKey(material);
}

/// What a cache entry's metadata holds beyond the compiler's: the key it was
/// stored under, so that an entry found under another key's name (a copied or
/// renamed file) is not trusted.
static std::string keyRecord(const std::string &key) {
  return "\"cache_key\": \"" + key + "\"";
}

std::string Session::nameOrFirst(const std::string &source, const std::string &kernel) {
  // As Session::load picks a bundle's first kernel. Where the lexer finds none,
  // the whole source compiles and the compiler says why.
  return kernel.empty() ? firstKernelName(source) : kernel;
}

bool Session::findCached(const std::string &key, const std::string &kernel, rt::Module &out) {
  if (auto it = memory_.find(key); it != memory_.end()) {
    ++stats_.memoryHits;
    out = it->second;
    return true;
  }
  std::string path = cachePath(key);
  if (path.empty())
    return false;
  std::string bytes = readFile(path);
  if (bytes.empty()) {
    // No entry is a miss. Anything else in its place that reads as nothing (an
    // empty or unreadable file, a folder) is damage; the write that follows
    // replaces it.
    struct stat st;
    if (lstat(path.c_str(), &st) == 0)
      ++stats_.damagedEntries;
    return false;
  }
  rt::Bundle bundle;
  std::string error;
  const rt::BundleEntry *entry =
      rt::readBundle(bytes, bundle, error) ? bundle.find(device_->target()) : nullptr;
  auto module = entry && entry->metadata.find(keyRecord(key)) != std::string::npos
                    ? device_->load(entry->binary, entry->metadata)
                    : rt::Result<rt::Module>(rt::Status::failure("damaged"));
  if (module && module->find(kernel)) {
    ++stats_.diskHits;
    // The entry's time is its last use: the size limit removes the oldest.
    std::error_code ignored;
    std::filesystem::last_write_time(path, std::filesystem::file_time_type::clock::now(),
                                     ignored);
    memory_[key] = *module;
    out = *module;
    return true;
  }
  ++stats_.damagedEntries; // recompiled by the caller and overwritten
  return false;
}

rt::Result<rt::Module> Session::addToCache(const std::string &key, const std::string &binary,
                                           const std::string &metadata) {
  ++stats_.compiles;
  auto module = device_->load(binary, metadata);
  if (!module)
    return module.status();
  memory_[key] = *module;
  if (std::string path = cachePath(key); !path.empty()) {
    // The compiler's metadata is a non-empty JSON object: the key goes first.
    rt::Bundle bundle;
    bundle.entries.push_back(
        {device_->target(), binary, "{" + keyRecord(key) + ", " + metadata.substr(1)});
    // A full disk only costs the entry. The cache's size is counted at this
    // session's first write and again when its own writes may have passed the
    // limit (other processes' writes are seen then).
    std::string bytes = rt::writeBundle(bundle);
    if (writeAtomically(path, bytes) && cacheLimit_ > 0) {
      cacheBytes_ += bytes.size();
      if (!cacheCounted_ || cacheBytes_ > cacheLimit_)
        pruneCache(path);
    }
  }
  return *module;
}

/// Whether `name` is one Kiln's cache gives a file: a key (32 hex digits, as
/// hashKey writes it) followed by `suffix`, e.g. ".kbin". Anything else in the
/// folder is not Kiln's to remove.
static bool isCacheName(llvm::StringRef name, llvm::StringRef suffix) {
  return name.size() > 32 && llvm::all_of(name.take_front(32), llvm::isHexDigit) &&
         name.drop_front(32).starts_with(suffix);
}

void Session::pruneCache(const std::string &keep) {
  namespace fs = std::filesystem;
  struct Entry {
    fs::path path;
    uint64_t bytes;
    fs::file_time_type used;
  };
  std::vector<Entry> entries;
  uint64_t total = 0;
  std::error_code error;
  auto now = fs::file_time_type::clock::now();
  for (fs::directory_iterator it(cacheDir_, error), end; !error && it != end;
       it.increment(error)) {
    std::error_code ignored;
    if (!it->is_regular_file(ignored))
      continue;
    std::string name = it->path().filename().string();
    auto used = it->last_write_time(ignored);
    // A temporary an hour old was left by a process that died mid-write.
    if (isCacheName(name, ".kbin.tmp.") || isCacheName(name, ".tune.tmp.")) {
      if (!ignored && now - used > std::chrono::hours(1))
        fs::remove(it->path(), ignored);
      continue;
    }
    // Binaries only: an autotuning choice (.tune) is small and costly to redo.
    if (name.size() != 37 || !isCacheName(name, ".kbin"))
      continue;
    uint64_t bytes = it->file_size(ignored);
    if (ignored)
      continue;
    total += bytes;
    if (it->path() != fs::path(keep))
      entries.push_back({it->path(), bytes, used});
  }
  std::sort(entries.begin(), entries.end(),
            [](const Entry &a, const Entry &b) { return a.used < b.used; });
  for (const Entry &e : entries) {
    if (total <= cacheLimit_)
      break;
    // A process still reading the entry keeps its open file. One that another
    // process removed first is gone too; one this process may not remove (a
    // shared folder's other owner) still counts.
    std::error_code failed;
    if (fs::remove(e.path, failed))
      ++stats_.evictedEntries;
    if (!failed)
      total -= e.bytes;
  }
  cacheBytes_ = total;
  cacheCounted_ = true;
}

bool Session::writeAtomically(const std::string &path, const std::string &bytes) {
  // Readers never see half a file, and concurrent writers of the same key race
  // harmlessly (same bytes).
  static std::atomic<unsigned> counter{0};
  std::string tmp = path + ".tmp." + std::to_string(getpid()) + "." +
                    std::to_string(counter.fetch_add(1));
  std::ofstream out(tmp, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  // A folder in the entry's place is not Kiln's to keep (rename fails onto it).
  std::error_code ignored;
  if (out && std::filesystem::is_directory(std::filesystem::symlink_status(path, ignored)))
    std::filesystem::remove_all(path, ignored);
  if (!out || std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return false;
  }
  return true;
}

Kernel Session::compile(const std::string &source, const std::string &kernelName,
                        const ParamSet &params, const std::string &filename) {
  Kernel k;
  if (!ok()) {
    k.status_ = status_;
    return k;
  }
  const std::string kernel = nameOrFirst(source, kernelName);
  k.device_ = device_;
  k.name_ = kernel;
  k.status_ = rt::Status::success();
  std::string key = cacheKey(source, kernel, params, filename);
  if (findCached(key, kernel, k.module_))
    return k;
  auto built =
      session::compileBinary(source, filename, kernel, params, device_->target(), matrixUnits_);
  if (!built) {
    k.status_ = built.status();
    return k;
  }
  auto module = addToCache(key, built->binary, built->metadata);
  if (!module)
    k.status_ = module.status();
  else
    k.module_ = *module;
  return k;
}

Kernel Session::load(const std::string &bundleBytes, const std::string &kernel) {
  Kernel k;
  k.status_ = status_;
  if (!ok())
    return k;
  auto module = device_->loadBundle(bundleBytes);
  if (!module) {
    k.status_ = module.status();
    return k;
  }
  k.device_ = device_;
  k.module_ = *module;
  k.name_ = kernel;
  if (kernel.empty() && !module->kernels().empty())
    k.name_ = module->kernels().front().name;
  if (!module->find(k.name_)) {
    std::string names;
    for (const KernelInfo &info : module->kernels())
      names += (names.empty() ? "" : ", ") + info.name;
    k.status_ = rt::Status::failure(
        names.empty() ? std::string("the bundle has no kernels")
                      : "the bundle has no kernel '" + kernel + "' (it has " + names + ")");
  }
  return k;
}

Tensor Session::empty(DType dtype, std::vector<int64_t> shape) {
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  if (!ok()) {
    t.status_ = status_;
    return t;
  }
  t.device_ = device_;
  t.status_ = rt::Status::success();
  if (!isDType(dtype)) {
    t.status_ = rt::Status::failure("not a dtype: " +
                                    std::to_string(static_cast<unsigned>(dtype)));
    return t;
  }
  for (int64_t d : t.shape_)
    if (d < 0) {
      t.status_ = rt::Status::failure("negative dimension in tensor shape");
      return t;
    }
  std::optional<int64_t> numel = elementCount(t.shape_);
  int64_t bytes = 0;
  if (!numel || __builtin_mul_overflow(*numel, int64_t(dtypeBytes(dtype)), &bytes)) {
    t.status_ = rt::Status::failure("tensor shape too large (its size overflows 64 bits)");
    return t;
  }
  auto buffer = device_->allocate(bytes);
  if (!buffer)
    t.status_ = buffer.status();
  else
    t.buffer_ = *buffer;
  return t;
}

Tensor Session::upload(const void *host, DType dtype, std::vector<int64_t> shape) {
  Tensor t = empty(dtype, std::move(shape));
  if (t.ok())
    t.status_ = device_->write(t.buffer_, host, t.numel() * dtypeBytes(dtype));
  return t;
}

Tensor Session::upload(const void *host, size_t count, DType dtype, std::vector<int64_t> shape) {
  std::optional<int64_t> numel = elementCount(shape);
  if (numel && static_cast<uint64_t>(*numel) != count) {
    Tensor t;
    t.dtype_ = dtype;
    t.shape_ = std::move(shape);
    t.status_ = rt::Status::failure("upload: the host data holds " + std::to_string(count) +
                                    " elements but the shape needs " + std::to_string(*numel));
    return t;
  }
  return upload(host, dtype, std::move(shape));
}
