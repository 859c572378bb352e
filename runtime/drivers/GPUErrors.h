//===- GPUErrors.h - CUDA and HIP errors, explained -------------*- C++ -*-===//
//
// CUDA and HIP number their errors alike. A few of them mean more than the
// API's own text says: what happened to the kernel, and what the process can
// still do.
//
//===----------------------------------------------------------------------===//
#pragma once

namespace kiln::rt {

constexpr int kGPUOutOfMemory = 2;

/// What to add to the API's text for `error` (empty for most errors).
inline const char *gpuErrorNote(int error) {
  constexpr int kIllegalAddress = 700, kAssert = 710, kLaunchFailed = 719;
  switch (error) {
  case kIllegalAddress:
  case kLaunchFailed:
    return " (the kernel faulted; the context is unusable until the process restarts)";
  case kAssert:
    return " (a device_assert failed: the device printed which one on standard output; the "
           "context is unusable until the process restarts)";
  default: return "";
  }
}

} // namespace kiln::rt
