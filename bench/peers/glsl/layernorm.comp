// Hand-written GLSL peer of examples/layernorm.kiln: one workgroup per row, mean
// and variance by shared-memory tree reductions, then the normalized row.
#version 450
layout(local_size_x = 128) in;
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) readonly buffer W { float w[]; };
layout(set = 0, binding = 2) readonly buffer B { float b[]; };
layout(set = 0, binding = 3) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Params {
  uint first[3]; uint grid[3]; // Kiln's grid words (kiln/KernelInfo.h)
  int m; int n; int sxr; int sxc; int nw; int sw; int nb; int sb;
  int my; int ny; int syr; int syc; float eps;
} p;
shared float part[128];
float rowSum(float v, uint t) {
  part[t] = v;
  barrier();
  for (uint s = 64u; s > 0u; s >>= 1) {
    if (t < s) part[t] += part[t + s];
    barrier();
  }
  float total = part[0];
  barrier();
  return total;
}
void main() {
  uint row = gl_WorkGroupID.x + p.first[0];
  uint t = gl_LocalInvocationID.x;
  float s = 0.0;
  for (uint c = t; c < uint(p.n); c += 128u)
    s += x[row * p.sxr + c * p.sxc];
  float mean = rowSum(s, t) / float(p.n);
  float q = 0.0;
  for (uint c = t; c < uint(p.n); c += 128u) {
    float d = x[row * p.sxr + c * p.sxc] - mean;
    q += d * d;
  }
  float rstd = inversesqrt(rowSum(q, t) / float(p.n) + p.eps);
  for (uint c = t; c < uint(p.n); c += 128u)
    y[row * p.syr + c * p.syc] = (x[row * p.sxr + c * p.sxc] - mean) * rstd * w[c * p.sw] + b[c * p.sb];
}
