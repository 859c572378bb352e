// JIT from C++: compile softmax.kiln for the best device (or KILN_DEVICE), run it,
// and check the result. Compiled kernels are cached on disk across runs.
#include <kiln/kiln.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <vector>

int main() {
  std::ifstream in(SOFTMAX_KILN);
  std::stringstream src;
  src << in.rdbuf();

  kiln::Session s;
  if (!s.ok()) {
    std::fprintf(stderr, "%s\n", s.status().message().c_str());
    return 1;
  }
  auto softmax = s.compile(src.str(), "softmax", {{"BLOCK", "1024"}}, SOFTMAX_KILN);
  if (!softmax.ok()) {
    std::fprintf(stderr, "%s\n", softmax.status().message().c_str());
    return 1;
  }
  const int64_t M = 64, N = 1000;
  std::vector<float> hostX(M * N), hostY;
  for (int64_t i = 0; i < M * N; ++i)
    hostX[i] = std::sin(0.01f * i);
  auto x = s.upload(hostX, {M, N});
  auto y = s.empty<float>({M, N});
  if (auto st = softmax(x, y); !st) { // the grid comes from the kernel's rule
    std::fprintf(stderr, "%s\n", st.message().c_str());
    return 1;
  }
  y.download(hostY);
  for (int64_t r = 0; r < M; ++r) {
    double sum = 0;
    for (int64_t c = 0; c < N; ++c)
      sum += hostY[r * N + c];
    if (std::abs(sum - 1.0) > 1e-4) {
      std::fprintf(stderr, "row %lld sums to %f\n", static_cast<long long>(r), sum);
      return 1;
    }
  }
  std::printf("jit_softmax: ok on %s (%s)\n", s.device().name().c_str(),
              s.device().target().c_str());
  return 0;
}
