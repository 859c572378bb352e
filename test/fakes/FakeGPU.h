//===- FakeGPU.h - what the fake CUDA and HIP libraries share ---*- C++ -*-===//
//
// test/fakes builds stand-ins for libcuda.so.1 and libamdhip64.so: kiln-rt's
// CUDA and HIP drivers open them as they would the vendors' libraries, so the
// drivers' code runs in CI on machines without a GPU. A fake runs no kernel.
// It keeps memory on the host, reads the kernels' parameter lists from the
// binaries kilnc wrote (PTX or cubin, hsaco), and refuses what the real API
// refuses (an unknown function, a block larger than the kernel allows, too
// much shared memory, a grid past the device's limits, a pointer outside every
// allocation). Every launch is recorded with the parameter values the kernel
// would read, so a test checks the launch ABI against the binary itself.
//
// As the real libraries, a fake keeps the current context (CUDA) or device
// (HIP; the fake has two) per thread, and CUDA refuses calls on a thread with
// no current context.
//
// Tests reach a fake through the C functions below (dlsym on the library the
// driver loaded).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstddef>
#include <cstdint>

/// One launch as the kernel would see it.
struct FakeLaunch {
  char kernel[128];
  int device; // the calling thread's current device
  unsigned grid[3];
  unsigned block[3];
  unsigned dynamicSharedBytes;
  bool onStream; // queued on a created stream, not the default one
  /// The parameters, each read at the size the binary declares for it; -1 when
  /// the binary does not say (a cubin without .nv.info).
  int paramCount;
  uint64_t params[64];
  unsigned paramBytes[64];
};

extern "C" {
/// Forgets every launch, fault and limit (allocations and modules stay).
void fakeGpuReset();
int fakeGpuLaunchCount();
/// The `index`-th launch since the last reset; false when there is none.
bool fakeGpuLaunch(int index, FakeLaunch *out);
/// Why the last refused call was refused ("" when none was).
const char *fakeGpuLastRefusal();
/// The bytes of the allocation `address` points into; 0 when it is in none.
size_t fakeGpuAllocationBytes(uint64_t address);
/// Allocations past `bytes` in all fail as out of memory (0: no limit).
void fakeGpuSetMemoryLimit(size_t bytes);
/// The next launch "faults": it is accepted, and from then on every call that
/// waits for the device returns `error` (as a real context stays broken).
void fakeGpuFaultNextLaunch(int error);
/// The value the last `cuFuncSetAttribute`-like call gave a kernel's dynamic
/// shared memory limit; -1 when none did.
int fakeGpuDynamicSharedLimit(const char *kernel);
}
