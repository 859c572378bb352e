// Hand-written GLSL peer of matmul in examples/matmul.kiln: the textbook tiled
// SGEMM. A workgroup of 16 x 16 invocations owns a 64 x 64 block of c; each
// invocation accumulates a 4 x 4 micro-tile in registers from 16-deep slices of a
// and b staged in shared memory. Edges are zero-padded on load and masked on store.
#version 450
layout(local_size_x = 16, local_size_y = 16) in;
layout(set = 0, binding = 0) readonly buffer A { float a[]; };
layout(set = 0, binding = 1) readonly buffer B { float b[]; };
layout(set = 0, binding = 2) writeonly buffer C { float c[]; };
layout(push_constant) uniform Params {
  uint first[3]; uint grid[3]; // Kiln's grid words (kiln/KernelInfo.h)
  int m; int k; int sam; int sak; int kb; int n; int sbk; int sbn; int mc; int nc; int scm; int scn;
} p;
shared float as[16][64];
shared float bs[16][64];
void main() {
  uint tx = gl_LocalInvocationID.x, ty = gl_LocalInvocationID.y;
  uint t = ty * 16u + tx;
  uint m0 = (gl_WorkGroupID.x + p.first[0]) * 64u, n0 = (gl_WorkGroupID.y + p.first[1]) * 64u;
  float acc[4][4];
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j)
      acc[i][j] = 0.0;
  for (uint k0 = 0u; k0 < uint(p.k); k0 += 16u) {
    // 256 invocations stage 16 x 64 of each operand, 4 elements apiece.
    for (uint e = t; e < 1024u; e += 256u) {
      uint kk = e / 64u, mm = e % 64u;
      uint row = m0 + mm, col = k0 + kk;
      as[kk][mm] = row < uint(p.m) && col < uint(p.k) ? a[row * p.sam + col * p.sak] : 0.0;
      uint kr = k0 + kk, nn = n0 + mm;
      bs[kk][mm] = kr < uint(p.k) && nn < uint(p.n) ? b[kr * p.sbk + nn * p.sbn] : 0.0;
    }
    barrier();
    for (uint kk = 0u; kk < 16u; ++kk) {
      float x[4], y[4];
      for (int i = 0; i < 4; ++i) x[i] = as[kk][ty * 4u + uint(i)];
      for (int j = 0; j < 4; ++j) y[j] = bs[kk][tx * 4u + uint(j)];
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j)
          acc[i][j] = fma(x[i], y[j], acc[i][j]);
    }
    barrier();
  }
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) {
      uint row = m0 + ty * 4u + uint(i), col = n0 + tx * 4u + uint(j);
      if (row < uint(p.m) && col < uint(p.n))
        c[row * p.scm + col * p.scn] = acc[i][j];
    }
}
