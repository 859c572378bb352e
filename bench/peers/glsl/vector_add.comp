// Hand-written GLSL peer of examples/vector_add.kiln, with Kiln's Vulkan ABI: one
// storage buffer per tensor (set 0, in order); the grid words, then sizes and strides,
// as push constants.
#version 450
layout(local_size_x = 256) in;
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) readonly buffer Y { float y[]; };
layout(set = 0, binding = 2) writeonly buffer Z { float z[]; };
layout(push_constant) uniform Params {
  uint first[3]; uint grid[3]; // Kiln's grid words (kiln/KernelInfo.h)
  int nx; int sx; int ny; int sy; int nz; int sz;
} p;
void main() {
  // 4 elements per invocation, like Kiln's 1024-element programs.
  uint base = ((gl_WorkGroupID.x + p.first[0]) * 256u + gl_LocalInvocationID.x) * 4u;
  for (uint k = 0u; k < 4u; ++k) {
    uint i = base + k;
    if (i < uint(p.nx))
      z[i * p.sz] = x[i * p.sx] + y[i * p.sy];
  }
}
