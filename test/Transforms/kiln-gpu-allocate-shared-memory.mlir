// RUN: kiln-opt %s -split-input-file --kiln-gpu-allocate-shared-memory -verify-diagnostics | FileCheck %s

#l = #kiln_gpu.blocked<vec = 4, warpSize = 32, numWarps = 4>

// One buffer per storage type, as large as the largest exchange: a whole-tile
// reduction needs one slot per thread; a 2-D reduction the whole tile; a dot both
// operands. i32 (and i1) tiles travel as f32 bits, in the same buffer.
// CHECK-LABEL: func @k
// CHECK-SAME: kiln_gpu.shared_bytes = 8192 : i64
// CHECK-SAME: kiln_gpu.shared_elements = {{\[\[}}f32, 2048]]
func.func @k(%v: tensor<512xf32, #l>, %m: tensor<16x64xf32, #l>, %a: tensor<32x32xf32, #l>, %c: tensor<32x32xf32, #l>, %b: tensor<256xi1, #l>) attributes {kiln.kernel} {
  %s = kiln.reduce sum %v, 0 : tensor<512xf32, #l> -> f32
  %r = kiln.reduce max %m, 1 : tensor<16x64xf32, #l> -> tensor<16xf32, #l>
  %d = kiln.dot %a, %a, %c : tensor<32x32xf32, #l>, tensor<32x32xf32, #l> -> tensor<32x32xf32, #l>
  %bi = arith.extui %b : tensor<256xi1, #l> to tensor<256xi32, #l>
  %n = kiln.reduce sum %bi, 0 : tensor<256xi32, #l> -> i32
  return
}

// -----

#l = #kiln_gpu.blocked<vec = 4, warpSize = 32, numWarps = 4>

// expected-error @+1 {{kernel needs 131072 bytes of shared memory for the tiles its threads share; the target allows 49152}}
func.func @too_big(%a: tensor<128x128xf32, #l>, %c: tensor<128x128xf32, #l>) attributes {kiln.kernel} {
  // expected-note @+1 {{the largest user (131072 bytes) is here: this dot's operand tiles [128, 128] f32 and [128, 128] f32 pass between threads through it; use smaller tiles}}
  %d = kiln.dot %a, %a, %c : tensor<128x128xf32, #l>, tensor<128x128xf32, #l> -> tensor<128x128xf32, #l>
  return
}
