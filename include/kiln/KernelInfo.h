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
};

} // namespace kiln
