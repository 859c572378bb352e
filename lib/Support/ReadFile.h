//===- ReadFile.h - reading what users hand over, whole or not at all -*- C++ -*-===//
#pragma once

#include <cstddef>
#include <string>

namespace kiln {

/// The most a source file or bundle may hold: far past any real one, and what
/// keeps `/dev/zero` or a runaway pipe from filling memory.
constexpr size_t kMaxInputBytes = size_t(256) << 20;

/// Reads `path` ("-" is standard input) whole into `out`: a file, a pipe or a
/// device, up to `limit` bytes. False, with `error` saying why, when it cannot
/// be read, is a directory, or holds more than `limit` bytes (nothing is cut).
bool readInput(const std::string &path, std::string &out, std::string &error,
               size_t limit = kMaxInputBytes);

/// The bytes of `path` if it is a regular file (after symlinks): what a cache
/// folder may hand back. "" for anything else: a pipe there could block a
/// reader, a device never end (opened without blocking, then checked).
std::string readRegularFile(const std::string &path);

} // namespace kiln
