// AOT: the kernels were compiled by kilnc at build time into softmax_bundle.h
// (cuda, amdgpu, vulkan and cpu code in one embedded .kbin). This program links
// only kiln-rt: no compiler at run time.
#include "softmax_bundle.h"

#include <cmath>
#include <cstdio>
#include <vector>

int main() {
  auto device = kiln::rt::Device::open(); // KILN_DEVICE, or the best present
  if (!device) {
    std::fprintf(stderr, "%s\n", device.status().message().c_str());
    return 1;
  }
  kiln_aot::softmax_bundle::Kernels kernels(**device);
  if (!kernels.status()) {
    std::fprintf(stderr, "%s\n", kernels.status().message().c_str());
    return 1;
  }
  const int64_t M = 32, N = 777;
  std::vector<float> host(M * N), out(M * N);
  for (int64_t i = 0; i < M * N; ++i)
    host[i] = std::cos(0.02f * i);
  auto x = (*device)->allocate(host.size() * sizeof(float));
  auto y = (*device)->allocate(out.size() * sizeof(float));
  (*device)->write(*x, host.data(), host.size() * sizeof(float));
  auto st = kernels.softmax(kiln::rt::Arg::tensor(*x, kiln::DType::F32, {M, N}),
                            kiln::rt::Arg::tensor(*y, kiln::DType::F32, {M, N}));
  if (!st) {
    std::fprintf(stderr, "%s\n", st.message().c_str());
    return 1;
  }
  (*device)->read(*y, out.data(), out.size() * sizeof(float));
  for (int64_t r = 0; r < M; ++r) {
    double sum = 0;
    for (int64_t c = 0; c < N; ++c)
      sum += out[r * N + c];
    if (std::abs(sum - 1.0) > 1e-4) {
      std::fprintf(stderr, "row %lld sums to %f\n", static_cast<long long>(r), sum);
      return 1;
    }
  }
  std::printf("aot_softmax: ok on %s (%s)\n", (*device)->name().c_str(),
              (*device)->target().c_str());
  return 0;
}
