//===- Bundle.cpp - the .kbin container of per-target binaries ------------===//

#include "runtime/Bundle.h"
#include "lib/Support/Checksum.h"

#include <cstring>

using namespace kiln::rt;

// The checksum is kiln::fnv1a64; version 1 bundles' started from a mistyped
// basis, 1469598103934665603.

template <typename T> static void put(std::string &out, T v) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &v, sizeof(T));
  out.append(bytes, sizeof(T));
}

std::string kiln::rt::writeBundle(const Bundle &bundle) {
  std::string out = "KILNKBIN";
  put<uint32_t>(out, kBundleVersion);
  put<uint32_t>(out, static_cast<uint32_t>(bundle.entries.size()));
  for (const BundleEntry &e : bundle.entries) {
    put<uint32_t>(out, static_cast<uint32_t>(e.target.size()));
    out += e.target;
    put<uint64_t>(out, e.binary.size());
    out += e.binary;
    put<uint64_t>(out, e.metadata.size());
    out += e.metadata;
  }
  put<uint64_t>(out, kiln::fnv1a64(out.data(), out.size()));
  return out;
}

bool kiln::rt::readBundle(const std::string &bytes, Bundle &out, std::string &error) {
  out.entries.clear();
  auto fail = [&](const std::string &why) {
    error = "invalid Kiln bundle: " + why;
    return false;
  };
  if (bytes.size() < 8 + 4 + 4 + 8)
    return fail("too short (" + std::to_string(bytes.size()) + " bytes; truncated?)");
  if (bytes.compare(0, 8, "KILNKBIN") != 0)
    return fail("not a .kbin file (bad magic)");
  size_t pos = 8;
  auto get = [&](auto &v) {
    if (bytes.size() - 8 - pos < sizeof(v))
      return false;
    std::memcpy(&v, bytes.data() + pos, sizeof(v));
    pos += sizeof(v);
    return true;
  };
  uint32_t version = 0, count = 0;
  get(version);
  if (version != kBundleVersion)
    return fail("version " + std::to_string(version) + ", but this runtime reads version " +
                std::to_string(kBundleVersion));
  uint64_t stored;
  std::memcpy(&stored, bytes.data() + bytes.size() - 8, 8);
  if (stored != kiln::fnv1a64(bytes.data(), bytes.size() - 8))
    return fail("checksum mismatch (the file is truncated or corrupt)");
  get(count);
  auto getString = [&](auto lengthTag, std::string &s) {
    decltype(lengthTag) n = 0;
    if (!get(n) || n > bytes.size() - 8 - pos)
      return false;
    s.assign(bytes.data() + pos, n);
    pos += n;
    return true;
  };
  for (uint32_t i = 0; i < count; ++i) {
    BundleEntry e;
    if (!getString(uint32_t(), e.target) || !getString(uint64_t(), e.binary) ||
        !getString(uint64_t(), e.metadata))
      return fail("entry " + std::to_string(i) + " runs past the end");
    if (e.target.empty())
      return fail("entry " + std::to_string(i) + " has no target");
    // Which of two entries for one target would run is nobody's guess.
    for (const BundleEntry &earlier : out.entries)
      if (earlier.target == e.target)
        return fail("two entries for target " + e.target);
    out.entries.push_back(std::move(e));
  }
  if (pos != bytes.size() - 8)
    return fail("trailing bytes after the last entry");
  return true;
}

/// Whether Vulkan target `target` carries option `option` (`loose-specials`,
/// `float-atomic-add`, or `:cpu` with its colon, which no other part contains).
static bool hasOption(const std::string &target, const char *option) {
  return target.find(option) != std::string::npos;
}

std::string kiln::rt::whyTargetDoesNotRun(const std::string &built, const std::string &device) {
  if (built == device)
    return "";
  auto split = [](const std::string &t, std::string &kind, std::string &rest) {
    size_t colon = t.find(':');
    kind = t.substr(0, colon);
    rest = colon == std::string::npos ? "" : t.substr(colon + 1);
  };
  std::string bk, bv, dk, dv;
  split(built, bk, bv);
  split(device, dk, dv);
  if (bk != dk)
    return "it is for another kind of device";
  if (bk == "vulkan") {
    // "1.1" < "1.2" < "1.3"; code for a CPU or GPU device runs on both; code that
    // uses more shared memory than Vulkan's 16 KiB needs a device with as much.
    auto shared = [](const std::string &rest) -> long long {
      size_t at = rest.find("shared=");
      return at == std::string::npos ? 16 * 1024 : std::atoll(rest.c_str() + at + 7);
    };
    // Code for Vulkan 1.2 and later asks for IEEE special values unless built
    // for a `loose-specials` device, and only such code runs on one. Code that
    // adds floats atomically needs a device that does.
    const char *loose = "loose-specials", *floatAdds = "float-atomic-add";
    bool asksForSpecials = bv.substr(0, 3) >= "1.2" && !hasOption(bv, loose);
    if (bv.substr(0, 3) > dv.substr(0, 3))
      return "it needs Vulkan " + bv.substr(0, 3) + ", the device has " + dv.substr(0, 3);
    if (shared(bv) > shared(dv))
      return "it needs " + std::to_string(shared(bv)) + " bytes of shared memory, the device has " +
             std::to_string(shared(dv));
    if (asksForSpecials && hasOption(dv, loose))
      return "it asks for IEEE infinities and NaN, which the device does not keep";
    if (hasOption(bv, floatAdds) && !hasOption(dv, floatAdds))
      return "it adds floats atomically, which the device cannot";
    return "";
  }
  if (bk == "cuda" && bv.size() > 3 && dv.size() > 3) {
    int b = std::atoi(bv.c_str() + 3), d = std::atoi(dv.c_str() + 3);
    if (b / 10 == d / 10 && b <= d) // cubins run within one major architecture
      return "";
    return "a cubin for " + bv + " does not run on " + dv;
  }
  return "it is for " + bv + ", the device is " + dv;
}

const BundleEntry *Bundle::find(const std::string &deviceTarget) const {
  for (const BundleEntry &e : entries)
    if (e.target == deviceTarget)
      return &e;
  // Of the compatible entries, the first closest to the device: built for a
  // Vulkan on the CPU where the device is one (its thread counts, and the check
  // of lavapipe's loop limit), then adding floats atomically where the device
  // does (one instruction, not swap loops).
  auto closeness = [&](const std::string &target) {
    auto same = [&](const char *option) {
      return hasOption(target, option) == hasOption(deviceTarget, option);
    };
    return 2 * same(":cpu") + same("float-atomic-add");
  };
  const BundleEntry *best = nullptr;
  for (const BundleEntry &e : entries)
    if (targetRuns(e.target, deviceTarget) &&
        (!best || closeness(e.target) > closeness(best->target)))
      best = &e;
  return best;
}
