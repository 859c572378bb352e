//===- Checksum.h - 64-bit FNV-1a, for bundles and binaries -----*- C++ -*-===//
//
// The checksum a .kbin bundle ends with, and the one kilnc writes into a
// binary's metadata ("checksum": "fnv1a64:<16 hex digits>") so that the runtime
// can tell a damaged binary from a good one before a driver (ld.so, a Vulkan
// compiler) reads it: those crash on some corrupt inputs instead of failing.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

namespace kiln {

/// 64-bit FNV-1a (offset basis 0xcbf29ce484222325, prime 0x100000001b3).
inline uint64_t fnv1a64(const char *data, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; ++i) {
    h ^= static_cast<unsigned char>(data[i]);
    h *= 1099511628211ull;
  }
  return h;
}

/// The metadata's form of a binary's checksum: "fnv1a64:" and 16 hex digits.
inline std::string binaryChecksum(const std::string &binary) {
  char text[32];
  std::snprintf(text, sizeof text, "fnv1a64:%016llx",
                static_cast<unsigned long long>(fnv1a64(binary.data(), binary.size())));
  return text;
}

} // namespace kiln
