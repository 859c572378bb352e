// The CUDA peer for compile-latency measurements: the same row softmax as
// examples/softmax.kiln, one block per row, written by hand.
#include <cfloat>

__global__ void softmax(const float *x, float *y, int m, int n) {
  __shared__ float part[128];
  int row = blockIdx.x, t = threadIdx.x;
  float mx = -FLT_MAX;
  for (int c = t; c < n; c += 128)
    mx = fmaxf(mx, x[row * n + c]);
  part[t] = mx;
  __syncthreads();
  for (int s = 64; s > 0; s >>= 1) {
    if (t < s) part[t] = fmaxf(part[t], part[t + s]);
    __syncthreads();
  }
  mx = part[0];
  __syncthreads();
  float sum = 0;
  for (int c = t; c < n; c += 128)
    sum += __expf(x[row * n + c] - mx);
  part[t] = sum;
  __syncthreads();
  for (int s = 64; s > 0; s >>= 1) {
    if (t < s) part[t] += part[t + s];
    __syncthreads();
  }
  for (int c = t; c < n; c += 128)
    y[row * n + c] = __expf(x[row * n + c] - mx) / part[0];
}
