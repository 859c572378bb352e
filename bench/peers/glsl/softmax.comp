// Hand-written GLSL peer of examples/softmax.kiln: one workgroup per row, shared
// memory tree reductions for the max and the sum.
#version 450
layout(local_size_x = 128) in;
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Params {
  uint first[3]; uint grid[3]; // Kiln's grid words (kiln/KernelInfo.h)
  int m; int n; int sxr; int sxc; int my; int ny; int syr; int syc;
} p;
shared float part[128];
void main() {
  uint row = gl_WorkGroupID.x + p.first[0], t = gl_LocalInvocationID.x;
  float mx = -1.0 / 0.0;
  for (uint c = t; c < uint(p.n); c += 128u)
    mx = max(mx, x[row * p.sxr + c * p.sxc]);
  part[t] = mx;
  barrier();
  for (uint s = 64u; s > 0u; s >>= 1) {
    if (t < s) part[t] = max(part[t], part[t + s]);
    barrier();
  }
  mx = part[0];
  barrier();
  float sum = 0.0;
  for (uint c = t; c < uint(p.n); c += 128u)
    sum += exp(x[row * p.sxr + c * p.sxc] - mx);
  part[t] = sum;
  barrier();
  for (uint s = 64u; s > 0u; s >>= 1) {
    if (t < s) part[t] += part[t + s];
    barrier();
  }
  sum = part[0];
  for (uint c = t; c < uint(p.n); c += 128u)
    y[row * p.syr + c * p.syc] = exp(x[row * p.sxr + c * p.sxc] - mx) / sum;
}
