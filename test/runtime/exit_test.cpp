// Handles that outlive main: a global Device, Stream, Module and Buffers, with a
// launch still in flight when main returns. A Vulkan driver's own libraries
// (lavapipe's Mesa and LLVM) are loaded with the first instance, so their
// exit-time destructors ran before these globals', whose calls into the driver
// then crashed ("double free or corruption"). The device is opened and closed
// a few times first: each instance may load the driver again, and Kiln's exit
// handler must still run ahead of the driver's. Exit status 0 is the test; 77
// (ctest's skip) when the device is not present.
#include "kiln/Runtime.h"
#include "test/Common/ReadFile.h"

#include <cstdio>

using namespace kiln;
using namespace kiln::rt;
using kiln::test::readFile;

std::shared_ptr<Device> device;
Module module;
Buffer x, y, z;
Stream stream;

int main(int argc, char **argv) {
  std::string spec = argc > 1 ? argv[1] : "vulkan";
  for (int i = 0; i < 3; ++i)
    (void)Device::open(spec); // opened and closed again
  auto opened = Device::open(spec);
  if (!opened) {
    std::printf("skip %s: %s\n", spec.c_str(), opened.status().message().c_str());
    return 77;
  }
  device = *opened;
  std::string base = std::string(KILN_KERNELS_DIR) + "/vector_add." + spec +
                     (spec == "cpu" ? ".so" : ".spv");
  auto loaded = device->load(readFile(base), readFile(base + ".json"));
  int64_t n = 1 << 22; // long enough to be running when main returns
  auto a = device->allocate(n * 4), b = device->allocate(n * 4), c = device->allocate(n * 4);
  auto s = device->createStream();
  if (!loaded || !a || !b || !c || !s) {
    std::printf("FAIL %s: could not set up\n", spec.c_str());
    return 1;
  }
  module = *loaded;
  x = *a, y = *b, z = *c, stream = *s;
  for (int i = 0; i < 8; ++i) {
    Status launched = stream.launch(
        module, "vector_add",
        {Arg::tensor(x, DType::F32, {n}), Arg::tensor(y, DType::F32, {n}),
         Arg::tensor(z, DType::F32, {n})});
    if (!launched) {
      std::printf("FAIL %s: %s\n", spec.c_str(), launched.message().c_str());
      return 1;
    }
  }
  std::printf("%s: returning from main with launches in flight\n", spec.c_str());
  return 0; // no synchronize: the globals' destructors meet the work
}
