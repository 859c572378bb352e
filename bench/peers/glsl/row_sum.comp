// Hand-written GLSL peer of row_sum in examples/reduce.kiln.
#version 450
layout(local_size_x = 128) in;
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) writeonly buffer O { float o[]; };
layout(push_constant) uniform Params {
  uint first[3]; uint grid[3]; // Kiln's grid words (kiln/KernelInfo.h)
  int m; int n; int sxr; int sxc; int mo; int so; } p;
shared float part[128];
void main() {
  uint row = gl_WorkGroupID.x + p.first[0], t = gl_LocalInvocationID.x;
  float s = 0.0;
  for (uint c = t; c < uint(p.n); c += 128u)
    s += x[row * p.sxr + c * p.sxc];
  part[t] = s;
  barrier();
  for (uint k = 64u; k > 0u; k >>= 1) {
    if (t < k) part[t] += part[t + k];
    barrier();
  }
  if (t == 0u) o[row * p.so] = part[0];
}
