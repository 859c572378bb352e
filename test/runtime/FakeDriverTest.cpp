//===- FakeDriverTest.cpp - the CUDA and HIP drivers against fake libraries ===//
//
// kiln-rt's CUDA and HIP drivers, run here over test/fakes' libcuda.so.1 and
// libamdhip64.so (loaded first, by path, so the drivers' dlopen of the bare
// names finds them, whatever else is installed). No kernel runs: what is
// checked is everything around it. Every test kernel's binary loads; each
// launch passes the parameters the binary itself declares (count, sizes and
// values: device pointers into live allocations, sizes, strides, scalars),
// the block the kernel was built for, the grid its rule gives and the
// dynamic shared memory it asked for; out of memory, a faulting kernel and a
// grid past the device's limits are reported as such.
//
//===----------------------------------------------------------------------===//

#include "kiln/Runtime.h"
#include "lib/Support/Half.h"

#include "test/Common/ReadFile.h"
#include "test/fakes/FakeHooks.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <dirent.h>
#include <thread>

using namespace kiln;
using namespace kiln::rt;
using test::readFile;

namespace {

struct Backend {
  std::string device;    // as KILN_DEVICE spells it
  std::string target;    // what the device reports
  const char *library;   // the fake's file name, as the driver opens it
  std::string extension; // of the test kernels built for it
};

void PrintTo(const Backend &backend, std::ostream *os) { *os << backend.device; }

const Backend kCUDA = {"cuda", "cuda:sm_90", "libcuda.so.1", ".cuda.ptx"};
const Backend kHIP = {"hip", "amdgpu:gfx942", "libamdhip64.so", ".hip.hsaco"};

class FakeDriver : public ::testing::TestWithParam<Backend> {
protected:
  void SetUp() override {
    hooks = std::make_unique<test::FakeHooks>(GetParam().library);
    ASSERT_TRUE(hooks->ok()) << hooks->error;
    hooks->reset();
    auto opened = Device::open(GetParam().device);
    ASSERT_TRUE(opened.ok()) << opened.status().message();
    device = *opened;
    ASSERT_NE(device->name().find("fake"), std::string::npos)
        << "the driver opened another " << GetParam().library << ": " << device->name();
  }
  void TearDown() override {
    if (hooks && hooks->ok())
      hooks->reset();
  }

  Module load(const std::string &dir, const std::string &example) {
    std::string path = dir + "/" + example + GetParam().extension;
    auto module = device->load(readFile(path), readFile(path + ".json"));
    EXPECT_TRUE(module.ok()) << path << ": " << module.status().message()
                             << " (the fake: " << hooks->lastRefusal() << ")";
    return module.ok() ? *module : Module();
  }

  std::shared_ptr<Device> device;
  std::unique_ptr<test::FakeHooks> hooks;
};

/// A dense tensor argument of `dims` (size names become `named`).
Arg tensorArg(Device &device, const ArgInfo &info, int64_t named) {
  std::vector<int64_t> sizes;
  int64_t elements = 1;
  for (const std::string &d : info.dims) {
    bool number = !d.empty() && std::all_of(d.begin(), d.end(), ::isdigit);
    sizes.push_back(number ? std::stoll(d) : named);
    elements *= sizes.back();
  }
  auto buffer = device.allocate(static_cast<size_t>(elements) * dtypeBytes(info.dtype));
  EXPECT_TRUE(buffer.ok()) << buffer.status().message();
  return Arg::tensor(*buffer, info.dtype, sizes);
}

Arg scalarArg(const ArgInfo &info) {
  switch (info.dtype) {
  case DType::F16:
  case DType::BF16:
  case DType::F32:
  case DType::F64:
  case DType::F8E4M3:
  case DType::F8E5M2: return Arg::floating(0.5, info.dtype);
  default: return Arg::integer(3, info.dtype);
  }
}

/// The bits a kernel reads for scalar `arg`, as the launch should pass them.
uint64_t scalarBits(const Arg &arg) {
  uint64_t bits = 0;
  switch (arg.dtype) {
  case DType::F32: {
    float f = static_cast<float>(arg.scalar.f);
    std::memcpy(&bits, &f, 4);
    return bits;
  }
  case DType::F64: std::memcpy(&bits, &arg.scalar.f, 8); return bits;
  case DType::F16: return floatToHalfBits(static_cast<float>(arg.scalar.f));
  case DType::BF16: return floatToBF16Bits(static_cast<float>(arg.scalar.f));
  default: return static_cast<uint64_t>(arg.scalar.i);
  }
}

/// Checks `record` against the launch of `kernel` with `args` on `grid`.
void expectLaunchMatches(const test::FakeHooks &hooks, const FakeLaunch &record, const KernelInfo &kernel,
                         const std::vector<Arg> &args, const std::array<int64_t, 3> &grid) {
  SCOPED_TRACE("kernel '" + kernel.name + "'");
  EXPECT_EQ(std::string(record.kernel), kernel.name);
  for (int d = 0; d < 3; ++d)
    EXPECT_EQ(record.grid[d], static_cast<unsigned>(grid[d])) << "grid axis " << d;
  EXPECT_EQ(record.block[0], static_cast<unsigned>(kernel.threadsPerBlock));
  EXPECT_EQ(record.block[1] * record.block[2], 1u);
  EXPECT_EQ(record.dynamicSharedBytes,
            kernel.dynamicSharedMemory ? static_cast<unsigned>(kernel.sharedMemoryBytes) : 0u);
  if (kernel.dynamicSharedMemory) {
    EXPECT_EQ(hooks.dynamicSharedLimit(kernel.name.c_str()), kernel.sharedMemoryBytes)
        << "the kernel's opt-in to more than 48 KiB of dynamic shared memory";
  }

  // What the binary declares, parameter by parameter, against what kiln-rt means
  // to pass: each tensor as its base pointer, then its sizes and strides as i32.
  ASSERT_GE(record.paramCount, 0) << "the binary's parameters are unknown";
  int p = 0;
  auto next = [&](unsigned bytes, const std::string &what) -> std::optional<uint64_t> {
    if (p >= record.paramCount) {
      ADD_FAILURE() << what << ": the binary declares only " << record.paramCount
                    << " parameters";
      return std::nullopt;
    }
    EXPECT_EQ(record.paramBytes[p], bytes) << what << " (parameter " << p << ")";
    return record.params[p++];
  };
  for (size_t i = 0; i < args.size(); ++i) {
    const Arg &a = args[i];
    const std::string name = "argument '" + kernel.args[i].name + "'";
    if (!a.isTensor) {
      unsigned bytes = a.dtype == DType::I1 ? 4u : static_cast<unsigned>(dtypeBytes(a.dtype));
      if (auto v = next(bytes, name)) {
        EXPECT_EQ(*v, scalarBits(a)) << name;
      }
      continue;
    }
    if (auto pointer = next(8, name + "'s pointer")) {
      EXPECT_EQ(hooks.allocationBytes(*pointer), a.buffer.size())
          << name << "'s pointer is not its buffer";
    }
    for (int64_t s : a.sizes) {
      if (auto v = next(4, name + "'s size")) {
        EXPECT_EQ(*v, static_cast<uint64_t>(s)) << name << "'s size";
      }
    }
    for (int64_t s : a.strides) {
      if (auto v = next(4, name + "'s stride")) {
        EXPECT_EQ(*v, static_cast<uint64_t>(s)) << name << "'s stride";
      }
    }
  }
  EXPECT_EQ(p, record.paramCount) << "the binary declares parameters kiln-rt does not pass";
}

/// The folders of test kernels built for `backend`: kernels/, and for CUDA the
/// builds with mma.sync and with no matrix instructions.
std::vector<std::string> kernelDirs(const Backend &backend) {
  std::vector<std::string> dirs = {KILN_KERNELS_DIR};
  if (backend.device == "cuda")
    for (const char *variant : {"-mma-sync", "-none"})
      dirs.push_back(std::string(KILN_KERNELS_DIR) + variant);
  return dirs;
}

std::vector<std::string> examplesIn(const std::string &dir, const std::string &extension) {
  std::vector<std::string> out;
  if (DIR *d = opendir(dir.c_str())) {
    while (dirent *e = readdir(d)) {
      std::string name = e->d_name;
      if (name.size() > extension.size() &&
          name.compare(name.size() - extension.size(), extension.size(), extension) == 0)
        out.push_back(name.substr(0, name.size() - extension.size()));
    }
    closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST_P(FakeDriver, OpensWithTheFakesTarget) { EXPECT_EQ(device->target(), GetParam().target); }

TEST_P(FakeDriver, EveryTestKernelLaunchesWithTheParametersItsBinaryDeclares) {
  int launched = 0;
  for (const std::string &dir : kernelDirs(GetParam())) {
    std::vector<std::string> examples = examplesIn(dir, GetParam().extension);
    EXPECT_GE(examples.size(), 20u) << "test kernels missing in " << dir;
    for (const std::string &example : examples) {
      SCOPED_TRACE(dir + "/" + example);
      Module module = load(dir, example);
      for (const KernelInfo &kernel : module.kernels()) {
        std::vector<Arg> args;
        for (const ArgInfo &info : kernel.args)
          args.push_back(info.isTensor ? tensorArg(*device, info, 64) : scalarArg(info));
        auto grid = device->grid(module, kernel.name, args);
        ASSERT_TRUE(grid.ok()) << kernel.name << ": " << grid.status().message();
        Status s = device->launch(module, kernel.name, args);
        ASSERT_TRUE(s.ok()) << kernel.name << ": " << s.message()
                            << " (the fake: " << hooks->lastRefusal() << ")";
        expectLaunchMatches(*hooks, hooks->last(), kernel, args, *grid);
        ++launched;
      }
    }
  }
  EXPECT_TRUE(device->synchronize().ok());
  std::printf("%d kernels launched on the fake %s\n", launched, GetParam().device.c_str());
}

TEST_P(FakeDriver, AnOffsetViewPassesItsFirstElementsAddress) {
  Module module = load(KILN_KERNELS_DIR, "vector_add");
  auto buffer = device->allocate(64 * sizeof(float));
  ASSERT_TRUE(buffer.ok());
  Arg x = Arg::strided(*buffer, DType::F32, {8}, {2}, 5), y = Arg::tensor(*buffer, DType::F32, {8});
  ASSERT_TRUE(device->launch(module, "vector_add", {x, y, y}).ok()) << hooks->lastRefusal();
  FakeLaunch record = hooks->last();
  ASSERT_GE(record.paramCount, 9);
  EXPECT_EQ(record.params[0], record.params[3] + 5 * sizeof(float)) << "the view's base";
  EXPECT_EQ(record.params[2], 2u) << "the view's stride";
}

TEST_P(FakeDriver, MemoryRoundTripsAndOutOfMemoryLeavesTheDeviceUsable) {
  hooks->setMemoryLimit(1 << 20);
  auto tooBig = device->allocate(2 << 20);
  ASSERT_FALSE(tooBig.ok());
  EXPECT_NE(tooBig.status().message().find("out of device memory"), std::string::npos)
      << tooBig.status().message();

  auto buffer = device->allocate(4096);
  ASSERT_TRUE(buffer.ok()) << buffer.status().message();
  std::vector<uint8_t> in(4096), out(4096);
  for (size_t i = 0; i < in.size(); ++i)
    in[i] = static_cast<uint8_t>(i * 7);
  ASSERT_TRUE(device->write(*buffer, in.data(), in.size()).ok());
  ASSERT_TRUE(device->read(*buffer, out.data(), out.size()).ok());
  EXPECT_EQ(in, out);
  Module module = load(KILN_KERNELS_DIR, "vector_add");
  Arg v = Arg::tensor(*buffer, DType::F32, {1024});
  EXPECT_TRUE(device->launch(module, "vector_add", {v, v, v}).ok()) << hooks->lastRefusal();
}

TEST_P(FakeDriver, AFaultingKernelIsReportedAsAFault) {
  Module module = load(KILN_KERNELS_DIR, "vector_add");
  auto buffer = device->allocate(1024 * sizeof(float));
  ASSERT_TRUE(buffer.ok());
  Arg v = Arg::tensor(*buffer, DType::F32, {1024});
  hooks->faultNextLaunch(700); // an illegal address, as the device reports it
  ASSERT_TRUE(device->launch(module, "vector_add", {v, v, v}).ok()) << "launches are queued";
  Status s = device->synchronize();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("illegal memory access"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("the kernel faulted"), std::string::npos) << s.message();
}

TEST_P(FakeDriver, GridsAreCheckedAgainstTheDevicesLimits) {
  Module module = load(KILN_KERNELS_DIR, "bmm");
  auto buffer = device->allocate(70000 * sizeof(float));
  ASSERT_TRUE(buffer.ok());
  // bmm's grid is (cdiv(M, 32), cdiv(N, 32), Z): Z = 70000 programs along z.
  Arg t = Arg::tensor(*buffer, DType::F32, {70000, 1, 1});
  Status s = device->launch(module, "bmm", {t, t, t});
  if (GetParam().device == "hip") {
    // AMD's limit is 2^32 - 1 work-items along each axis.
    ASSERT_TRUE(s.ok()) << s.message() << " (the fake: " << hooks->lastRefusal() << ")";
    EXPECT_EQ(hooks->last().grid[2], 70000u);
    return;
  }
  // CUDA's is 65535 blocks along y and z.
  ASSERT_FALSE(s.ok()) << "launched " << hooks->launchCount() << " times";
  EXPECT_NE(s.message().find("grid of 70000 programs along axis 2 exceeds the device limit 65535"),
            std::string::npos)
      << s.message();
  EXPECT_EQ(hooks->launchCount(), 0);
}

TEST_P(FakeDriver, StreamsQueueLaunchesAndEventsTimeThem) {
  Module module = load(KILN_KERNELS_DIR, "vector_add");
  auto buffer = device->allocate(1024 * sizeof(float));
  ASSERT_TRUE(buffer.ok());
  Arg v = Arg::tensor(*buffer, DType::F32, {1024});
  auto stream = device->createStream();
  ASSERT_TRUE(stream.ok()) << stream.status().message();
  auto start = stream->record();
  ASSERT_TRUE(start.ok()) << start.status().message();
  ASSERT_TRUE(stream->launch(module, "vector_add", {v, v, v}).ok()) << hooks->lastRefusal();
  auto end = stream->record();
  ASSERT_TRUE(end.ok()) << end.status().message();
  EXPECT_GE(end->since(*start), 0.0);
  EXPECT_TRUE(stream->synchronize().ok());
  EXPECT_TRUE(hooks->last().onStream);
}

TEST_P(FakeDriver, AnyThreadMayUseTheDevice) {
  // A CUDA context, and HIP's current device, belong to one thread at a time:
  // a device used from a thread other than the one that opened it must make
  // itself current there (before, CUDA failed and HIP used device 0).
  bool hip = GetParam().device == "hip";
  auto opened = Device::open(hip ? "hip:1" : "cuda:0");
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  std::shared_ptr<Device> d = *opened;
  // HIP: the worker also uses device 0 just before each launch on device 1, so
  // a launch that does not select its own device runs on device 0.
  std::shared_ptr<Device> other;
  if (hip) {
    auto zero = Device::open("hip:0");
    ASSERT_TRUE(zero.ok()) << zero.status().message();
    other = *zero;
  }
  auto useOther = [&] {
    if (other)
      (void)other->allocate(16);
  };
  std::string path = std::string(KILN_KERNELS_DIR) + "/vector_add" + GetParam().extension;
  std::vector<std::string> failures;
  std::vector<int> launchDevices;
  std::thread worker([&] {
    auto check = [&](const Status &s) {
      if (!s.ok())
        failures.push_back(s.message() + " (the fake: " + hooks->lastRefusal() + ")");
      return s.ok();
    };
    auto module = d->load(readFile(path), readFile(path + ".json"));
    auto buffer = d->allocate(1024 * sizeof(float));
    if (!check(module.status()) || !check(buffer.status()))
      return;
    std::vector<float> in(1024, 1.5f), out(1024);
    Arg v = Arg::tensor(*buffer, DType::F32, {1024});
    check(d->write(*buffer, in.data(), in.size() * sizeof(float)));
    useOther();
    check(d->launch(*module, "vector_add", {v, v, v}));
    launchDevices.push_back(hooks->last().device);
    check(d->synchronize());
    check(d->read(*buffer, out.data(), out.size() * sizeof(float)));
    check(d->record().status());
    auto stream = d->createStream();
    if (check(stream.status())) {
      useOther();
      check(stream->launch(*module, "vector_add", {v, v, v}));
      launchDevices.push_back(hooks->last().device);
      check(stream->synchronize());
    }
  });
  worker.join();
  EXPECT_TRUE(failures.empty()) << failures.front();
  ASSERT_GE(hooks->launchCount(), 2);
  EXPECT_EQ(launchDevices, std::vector<int>(2, hip ? 1 : 0)) << "a launch ran on another device";
}

TEST_P(FakeDriver, ABundleLoadsItsBinaryForThisDevice) {
  auto module = device->loadBundle(readFile(std::string(KILN_KERNELS_DIR) + "/cpp_names.kbin"));
  ASSERT_TRUE(module.ok()) << module.status().message();
  EXPECT_EQ(module->target(), GetParam().target);
  EXPECT_FALSE(module->kernels().empty());
}

INSTANTIATE_TEST_SUITE_P(Drivers, FakeDriver, ::testing::Values(kCUDA, kHIP),
                         [](const auto &info) { return info.param.device; });

} // namespace
