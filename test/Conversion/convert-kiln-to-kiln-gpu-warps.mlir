// RUN: kiln-opt %s -split-input-file --convert-kiln-to-kiln-gpu="num-warps=4 elementwise-warps=8 exchange-registers=32 warp-size=32" | FileCheck %s

// The vulkan:*:cpu options. An elementwise kernel gets elementwise-warps.
// CHECK-LABEL: func @elementwise
// CHECK-SAME: kiln_gpu.threads = 256 : i32
func.func @elementwise(%x: memref<?xf32, strided<[?], offset: ?>>) attributes {kiln.kernel} {
  %i = kiln.arange 0, 1024 : tensor<1024xi32>
  %v = kiln.load %x[%i] : memref<?xf32, strided<[?], offset: ?>>[tensor<1024xi32>] -> tensor<1024xf32>
  %w = arith.addf %v, %v : tensor<1024xf32>
  kiln.store %x[%i], %w : memref<?xf32, strided<[?], offset: ?>>[tensor<1024xi32>], tensor<1024xf32>
  return
}

// -----

// A kernel that exchanges (a reduction) gets the fewest warps that keep its
// largest tile at or under 32 elements a thread: 1024 elements, one warp.
// CHECK-LABEL: func @reduce_small
// CHECK-SAME: kiln_gpu.threads = 32 : i32
func.func @reduce_small(%x: memref<?xf32, strided<[?], offset: ?>>) attributes {kiln.kernel} {
  %i = kiln.arange 0, 1024 : tensor<1024xi32>
  %v = kiln.load %x[%i] : memref<?xf32, strided<[?], offset: ?>>[tensor<1024xi32>] -> tensor<1024xf32>
  %s = kiln.reduce sum %v, 0 : tensor<1024xf32> -> f32
  return
}

// -----

// 2048 elements: two warps; 8192: four (num-warps is the most).
// CHECK-LABEL: func @reduce_mid
// CHECK-SAME: kiln_gpu.threads = 64 : i32
func.func @reduce_mid(%x: memref<?xf32, strided<[?], offset: ?>>) attributes {kiln.kernel} {
  %i = kiln.arange 0, 2048 : tensor<2048xi32>
  %v = kiln.load %x[%i] : memref<?xf32, strided<[?], offset: ?>>[tensor<2048xi32>] -> tensor<2048xf32>
  %s = kiln.reduce max %v, 0 : tensor<2048xf32> -> f32
  return
}

// -----

// CHECK-LABEL: func @reduce_big
// CHECK-SAME: kiln_gpu.threads = 128 : i32
func.func @reduce_big(%x: memref<?xf32, strided<[?], offset: ?>>) attributes {kiln.kernel} {
  %i = kiln.arange 0, 8192 : tensor<8192xi32>
  %v = kiln.load %x[%i] : memref<?xf32, strided<[?], offset: ?>>[tensor<8192xi32>] -> tensor<8192xf32>
  %s = kiln.reduce max %v, 0 : tensor<8192xf32> -> f32
  return
}

// -----

// The kernel's NUM_WARPS (kiln.num_warps) wins over both.
// CHECK-LABEL: func @explicit
// CHECK-SAME: kiln_gpu.threads = 64 : i32
func.func @explicit(%x: memref<?xf32, strided<[?], offset: ?>>) attributes {kiln.kernel, kiln.num_warps = 2 : i32} {
  %i = kiln.arange 0, 1024 : tensor<1024xi32>
  %v = kiln.load %x[%i] : memref<?xf32, strided<[?], offset: ?>>[tensor<1024xi32>] -> tensor<1024xf32>
  kiln.store %x[%i], %v : memref<?xf32, strided<[?], offset: ?>>[tensor<1024xi32>], tensor<1024xf32>
  return
}
