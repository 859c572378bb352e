//===- FakeHooks.h - tests' handle on a fake GPU library ------*- C++ -*-===//
//
// Loads a fake from test/fakes by its path before a driver opens the bare
// name (the loader then hands the driver the same library), and reaches its
// test hooks.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "test/fakes/FakeGPU.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <dlfcn.h>
#include <string>

namespace kiln::test {

/// A fake GPU library's test hooks.
struct FakeHooks {
  decltype(&fakeGpuReset) reset = nullptr;
  decltype(&fakeGpuLaunchCount) launchCount = nullptr;
  decltype(&fakeGpuLaunch) launch = nullptr;
  decltype(&fakeGpuLastRefusal) lastRefusal = nullptr;
  decltype(&fakeGpuAllocationBytes) allocationBytes = nullptr;
  decltype(&fakeGpuSetMemoryLimit) setMemoryLimit = nullptr;
  decltype(&fakeGpuFaultNextLaunch) faultNextLaunch = nullptr;
  decltype(&fakeGpuDynamicSharedLimit) dynamicSharedLimit = nullptr;

  std::string error; // why the fake could not be loaded

  /// Loads the fake `library` from test/fakes (KILN_FAKES_DIR); null members
  /// when that fails.
  explicit FakeHooks(const char *library) {
    // The fake HIP device has no KFD topology to read its gfx target from.
    setenv("KILN_HIP_ARCH", "gfx942", 1);
    // Never closed: the driver opens the same library by its bare name.
    std::string path = std::string(KILN_FAKES_DIR) + "/" + library;
    void *lib = dlopen(path.c_str(), RTLD_NOW);
    if (!lib) {
      error = "cannot load the fake " + path + ": " + dlerror();
      return;
    }
    auto sym = [&](auto &fn, const char *name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
    };
    sym(reset, "fakeGpuReset");
    sym(launchCount, "fakeGpuLaunchCount");
    sym(launch, "fakeGpuLaunch");
    sym(lastRefusal, "fakeGpuLastRefusal");
    sym(allocationBytes, "fakeGpuAllocationBytes");
    sym(setMemoryLimit, "fakeGpuSetMemoryLimit");
    sym(faultNextLaunch, "fakeGpuFaultNextLaunch");
    sym(dynamicSharedLimit, "fakeGpuDynamicSharedLimit");
  }
  bool ok() const { return reset && dynamicSharedLimit; }

  FakeLaunch last() const {
    FakeLaunch record{};
    EXPECT_TRUE(launch(launchCount() - 1, &record)) << "no launch was recorded";
    return record;
  }
};

} // namespace kiln::test
