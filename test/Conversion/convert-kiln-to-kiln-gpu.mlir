// RUN: kiln-opt %s -split-input-file --convert-kiln-to-kiln-gpu="num-warps=8 warp-size=64" | FileCheck %s

// Every tile of a kernel, including loop-carried ones and constants, gets the layout;
// the program's thread count is recorded.
// CHECK-LABEL: func @k
// CHECK-SAME: kiln_gpu.threads = 512 : i32
// CHECK: kiln.arange 0, 64 : tensor<64xi32, #kiln_gpu.blocked<vec = 1, warpSize = 64, numWarps = 8>>
// CHECK: arith.constant dense<0.000000e+00> : tensor<64xf32, #kiln_gpu.blocked<vec = 1, warpSize = 64, numWarps = 8>>
// CHECK: scf.for {{.*}} -> (tensor<64xf32, #kiln_gpu.blocked<vec = 1, warpSize = 64, numWarps = 8>>)
func.func @k(%x: memref<?xf32, strided<[?], offset: ?>>, %n: i32) attributes {kiln.kernel} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %i = kiln.arange 0, 64 : tensor<64xi32>
  %z = arith.constant dense<0.0> : tensor<64xf32>
  %r = scf.for %k = %c0 to %n step %c1 iter_args(%acc = %z) -> (tensor<64xf32>) : i32 {
    %v = kiln.load %x[%i] : memref<?xf32, strided<[?], offset: ?>>[tensor<64xi32>] -> tensor<64xf32>
    %s = arith.addf %acc, %v : tensor<64xf32>
    scf.yield %s : tensor<64xf32>
  }
  kiln.store %x[%i], %r : memref<?xf32, strided<[?], offset: ?>>[tensor<64xi32>], tensor<64xf32>
  return
}

// -----

// Functions that are not kernels (grid rules) are left alone.
// CHECK-LABEL: func @grid
// CHECK-NOT: kiln_gpu
func.func @grid(%n: i32) -> i32 {
  return %n : i32
}
