// RUN: kiln-opt %s -split-input-file --kiln-gpu-coalesce | FileCheck %s

#l = #kiln_gpu.blocked<vec = 1, warpSize = 32, numWarps = 4>

// f32 memory: runs of 4 elements make 128-bit accesses.
// CHECK-LABEL: func @f32
// CHECK: tensor<256xf32, #kiln_gpu.blocked<vec = 4, warpSize = 32, numWarps = 4>>
func.func @f32(%x: memref<?xf32, strided<[?], offset: ?>>, %i: tensor<256xi32, #l>) attributes {kiln.kernel} {
  %v = kiln.load %x[%i] : memref<?xf32, strided<[?], offset: ?>>[tensor<256xi32, #l>] -> tensor<256xf32, #l>
  return
}

// -----

#l = #kiln_gpu.blocked<vec = 1, warpSize = 32, numWarps = 4>

// f16 only: runs of 8.
// CHECK-LABEL: func @f16
// CHECK: vec = 8
func.func @f16(%x: memref<?xf16, strided<[?], offset: ?>>, %i: tensor<256xi32, #l>) attributes {kiln.kernel} {
  %v = kiln.load %x[%i] : memref<?xf16, strided<[?], offset: ?>>[tensor<256xi32, #l>] -> tensor<256xf16, #l>
  return
}

// -----

#l = #kiln_gpu.blocked<vec = 1, warpSize = 32, numWarps = 4>

// Mixed widths: the widest element (f64) decides: 2 per run.
// CHECK-LABEL: func @mixed
// CHECK: vec = 2
func.func @mixed(%x: memref<?xf16, strided<[?], offset: ?>>, %y: memref<?xf64, strided<[?], offset: ?>>, %i: tensor<256xi32, #l>) attributes {kiln.kernel} {
  %v = kiln.load %x[%i] : memref<?xf16, strided<[?], offset: ?>>[tensor<256xi32, #l>] -> tensor<256xf16, #l>
  %w = kiln.load %y[%i] : memref<?xf64, strided<[?], offset: ?>>[tensor<256xi32, #l>] -> tensor<256xf64, #l>
  return
}
