//===- HIPDriver.cpp - kiln-rt on AMD GPUs (not yet available) ------------===//

#include "runtime/Driver.h"

#include <dlfcn.h>

using namespace kiln::rt;

std::unique_ptr<Driver> kiln::rt::openHIP(int index, std::string &why) {
  // Report what the machine has, so `Device::available()` and error messages are
  // accurate; launching hsaco through HIP is not implemented in this version.
  void *lib = dlopen("libamdhip64.so", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    why = "libamdhip64.so not found (no ROCm HIP runtime on this machine)";
    return nullptr;
  }
  dlclose(lib);
  why = "this kiln-rt cannot launch on HIP yet; use KILN_DEVICE=vulkan on AMD GPUs";
  return nullptr;
}
