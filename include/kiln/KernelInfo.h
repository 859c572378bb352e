//===- KernelInfo.h - what a launcher must know about a kernel --*- C++ -*-===//
#pragma once

#include "kiln/DType.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kiln {

/// One kernel argument as the host sees it.
struct ArgInfo {
  std::string name;
  DType dtype = DType::F32;
  bool isTensor = false;
  /// For tensors, one entry per dimension: a size name (`M`) or a fixed size
  /// written in decimal. Arguments that share a name must agree at launch.
  std::vector<std::string> dims;
};

/// The compile-time params a kernel was specialized with.
struct ParamValue {
  std::string name;
  DType dtype = DType::I32;
  double value = 0;
  /// Values the kernel declares for autotuning (`tune [...]`), as -D spells them.
  std::vector<std::string> tune;
};

/// A device_assert a Vulkan kernel checks (CUDA and HIP kernels report their
/// own through the driver; the CPU's print and abort).
struct AssertInfo {
  /// As the CPU prints it after the ids: `f.kiln:18:3: device_assert failed: msg`.
  std::string message;
  /// The tested tile's shape; empty for a scalar condition.
  std::vector<int64_t> shape;
};

/// A Vulkan kernel with asserts takes one more storage buffer after its tensors:
/// this many i32 words, zeroed before the launch. The first failing element
/// writes which assert failed (its index in KernelInfo::asserts), its program's
/// ids (x, y, z) and its flat index in the tile; word 0 counts the failures.
inline constexpr int kAssertReportWords = 6;

struct KernelInfo {
  std::string name;
  std::vector<ArgInfo> args;
  std::vector<ParamValue> params;
  /// The grid rule as written, with params substituted, one entry per grid axis.
  std::vector<std::string> grid;
  /// GPU targets: threads in one program (block / workgroup) and the shared memory
  /// it uses; filled in by the GPU pipeline.
  int64_t threadsPerBlock = 1;
  int64_t sharedMemoryBytes = 0;
  /// The shared memory is requested at launch (CUDA dynamic shared memory, for
  /// kernels above the 48 KiB of static shared memory) rather than declared.
  bool dynamicSharedMemory = false;
  /// Vulkan: the asserts the kernel reports in its report buffer.
  std::vector<AssertInfo> asserts;
};

} // namespace kiln
