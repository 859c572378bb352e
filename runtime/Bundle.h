//===- Bundle.h - the .kbin container of per-target binaries ----*- C++ -*-===//
//
// Layout (little-endian):
//   "KILNKBIN"  u32 version  u32 entry count
//   per entry:  u32 n + target spec, u64 n + binary, u64 n + metadata JSON
//   u64 FNV-1a checksum of every byte before it
// Readers reject truncated, corrupt and newer-version bundles with a message.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::rt {

/// 2: the checksum is standard FNV-1a (version 1's basis lacked a digit).
/// 3: Vulkan kernels take the grid words first in their push constants.
inline constexpr uint32_t kBundleVersion = 3;

struct BundleEntry {
  std::string target;   // e.g. "cuda:sm_90", "vulkan:1.2", "cpu"
  std::string binary;   // cubin/PTX, hsaco, SPIR-V words, or a host shared object
  std::string metadata; // kilnc's kernel metadata (JSON)
};

struct Bundle {
  std::vector<BundleEntry> entries;
  /// The entry that runs on `deviceTarget`: an exact match first, else a
  /// compatible one (an older Vulkan profile; an older SM of the same major),
  /// preferring one built for the device's float atomic adds.
  const BundleEntry *find(const std::string &deviceTarget) const;
};

std::string writeBundle(const Bundle &bundle);
bool readBundle(const std::string &bytes, Bundle &out, std::string &error);

/// Why code built for `built` does not run on a device whose target is
/// `device`, e.g. "it needs 65536 bytes of shared memory, the device has
/// 32768"; empty when it runs.
std::string whyTargetDoesNotRun(const std::string &built, const std::string &device);

/// Whether code built for `built` runs on a device whose target is `device`.
inline bool targetRuns(const std::string &built, const std::string &device) {
  return whyTargetDoesNotRun(built, device).empty();
}

} // namespace kiln::rt
