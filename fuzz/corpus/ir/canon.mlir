// RUN: kiln-opt %s -split-input-file -canonicalize | FileCheck %s
// Folders and canonicalization patterns of the kiln dialect.

// CHECK-LABEL: func @splat_constant
// CHECK: %[[C:.*]] = arith.constant dense<2.500000e+00> : tensor<4x8xf32>
// CHECK-NOT: kiln.splat
// CHECK: return %[[C]]
func.func @splat_constant() -> tensor<4x8xf32> {
  %c = arith.constant 2.5 : f32
  %t = kiln.splat %c : tensor<4x8xf32>
  return %t : tensor<4x8xf32>
}

// -----

// CHECK-LABEL: func @broadcast_identity
// CHECK-SAME: (%[[T:.*]]: tensor<4x8xf32>)
// CHECK-NEXT: return %[[T]]
func.func @broadcast_identity(%t: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %b = kiln.broadcast %t : tensor<4x8xf32> -> tensor<4x8xf32>
  return %b : tensor<4x8xf32>
}

// -----

// CHECK-LABEL: func @broadcast_of_broadcast
// CHECK: kiln.broadcast %{{.*}} : tensor<1x1xf32> -> tensor<4x8xf32>
// CHECK-NOT: kiln.broadcast
func.func @broadcast_of_broadcast(%t: tensor<1x1xf32>) -> tensor<4x8xf32> {
  %a = kiln.broadcast %t : tensor<1x1xf32> -> tensor<1x8xf32>
  %b = kiln.broadcast %a : tensor<1x8xf32> -> tensor<4x8xf32>
  return %b : tensor<4x8xf32>
}

// -----

// CHECK-LABEL: func @broadcast_of_splat
// CHECK: %[[S:.*]] = kiln.splat %{{.*}} : tensor<4x8xf32>
// CHECK-NOT: kiln.broadcast
func.func @broadcast_of_splat(%x: f32) -> tensor<4x8xf32> {
  %a = kiln.splat %x : tensor<1x8xf32>
  %b = kiln.broadcast %a : tensor<1x8xf32> -> tensor<4x8xf32>
  return %b : tensor<4x8xf32>
}

// -----

// CHECK-LABEL: func @reshape_chain
// CHECK: %[[R:.*]] = kiln.reshape %{{.*}} : tensor<4x8xf32> -> tensor<2x16xf32>
// CHECK-NEXT: return %[[R]]
func.func @reshape_chain(%t: tensor<4x8xf32>) -> tensor<2x16xf32> {
  %a = kiln.reshape %t : tensor<4x8xf32> -> tensor<32xf32>
  %b = kiln.reshape %a : tensor<32xf32> -> tensor<2x16xf32>
  return %b : tensor<2x16xf32>
}

// -----

// CHECK-LABEL: func @reshape_identity
// CHECK-SAME: (%[[T:.*]]: tensor<4x8xf32>)
// CHECK-NEXT: return %[[T]]
func.func @reshape_identity(%t: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %a = kiln.reshape %t : tensor<4x8xf32> -> tensor<4x8xf32>
  return %a : tensor<4x8xf32>
}

// -----

// CHECK-LABEL: func @trans_twice
// CHECK-SAME: (%[[T:.*]]: tensor<4x8xf32>)
// CHECK-NEXT: return %[[T]]
func.func @trans_twice(%t: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %a = kiln.trans %t [1, 0] : tensor<4x8xf32> -> tensor<8x4xf32>
  %b = kiln.trans %a [1, 0] : tensor<8x4xf32> -> tensor<4x8xf32>
  return %b : tensor<4x8xf32>
}

// -----

// CHECK-LABEL: func @trans_identity
// CHECK-SAME: (%[[T:.*]]: tensor<2x3x4xf32>)
// CHECK-NEXT: return %[[T]]
func.func @trans_identity(%t: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %a = kiln.trans %t [0, 1, 2] : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  return %a : tensor<2x3x4xf32>
}

// -----

// A transposed constant splat is still a splat constant.
// CHECK-LABEL: func @trans_splat
// CHECK: arith.constant dense<1.000000e+00> : tensor<8x4xf32>
// CHECK-NOT: kiln.trans
func.func @trans_splat() -> tensor<8x4xf32> {
  %c = arith.constant dense<1.0> : tensor<4x8xf32>
  %a = kiln.trans %c [1, 0] : tensor<4x8xf32> -> tensor<8x4xf32>
  return %a : tensor<8x4xf32>
}

// -----

// Unused pure kiln ops disappear; loads and stores are kept.
// CHECK-LABEL: func @dead_code
// CHECK-NOT: kiln.arange
// CHECK: kiln.store
func.func @dead_code(%m: memref<?xf32, strided<[?], offset: ?>>, %i: i32, %v: f32) {
  %a = kiln.arange 0, 16 : tensor<16xi32>
  kiln.store %m[%i], %v : memref<?xf32, strided<[?], offset: ?>>[i32], f32
  return
}

// -----

// Scanning an axis of length 1 is the identity.
// CHECK-LABEL: func @scan_unit_axis
// CHECK-SAME: (%[[T:.*]]: tensor<1x8xf32>)
// CHECK-NEXT: return %[[T]]
func.func @scan_unit_axis(%t: tensor<1x8xf32>) -> tensor<1x8xf32> {
  %0 = kiln.scan sum %t, 0 : tensor<1x8xf32>
  return %0 : tensor<1x8xf32>
}
