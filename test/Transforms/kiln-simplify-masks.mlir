// RUN: kiln-opt %s -split-input-file --kiln-simplify-masks | FileCheck %s

!mem = memref<?xf32, strided<[?], offset: ?>>

// An all-true mask guards nothing and is dropped.
// CHECK-LABEL: func @true_mask
// CHECK: kiln.load %{{.*}}[%{{.*}}] : {{.*}}[tensor<16xi32>] -> tensor<16xf32>
// CHECK: kiln.store %{{.*}}[%{{.*}}], %{{.*}} : {{.*}}[tensor<16xi32>], tensor<16xf32>
func.func @true_mask(%m: !mem, %i: tensor<16xi32>) {
  %t = arith.constant dense<true> : tensor<16xi1>
  %v = kiln.load %m[%i] mask %t : tensor<16xi1> : !mem[tensor<16xi32>] -> tensor<16xf32>
  kiln.store %m[%i], %v mask %t : tensor<16xi1> : !mem[tensor<16xi32>], tensor<16xf32>
  return
}

// -----

!mem = memref<?xf32, strided<[?], offset: ?>>

// An all-false mask touches nothing: loads give `other` (or zero), stores vanish.
// CHECK-LABEL: func @false_mask
// CHECK-SAME: %[[O:[a-z0-9]+]]: tensor<16xf32>)
// CHECK-DAG: %[[Z:.*]] = arith.constant dense<0.000000e+00> : tensor<16xf32>
// CHECK-NOT: kiln.load
// CHECK-NOT: kiln.store
// CHECK: return %[[O]], %[[Z]]
func.func @false_mask(%m: !mem, %i: tensor<16xi32>, %o: tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>) {
  %f = arith.constant dense<false> : tensor<16xi1>
  %a = kiln.load %m[%i] mask %f : tensor<16xi1> other %o : tensor<16xf32> : !mem[tensor<16xi32>] -> tensor<16xf32>
  %b = kiln.load %m[%i] mask %f : tensor<16xi1> : !mem[tensor<16xi32>] -> tensor<16xf32>
  kiln.store %m[%i], %a mask %f : tensor<16xi1> : !mem[tensor<16xi32>], tensor<16xf32>
  return %a, %b : tensor<16xf32>, tensor<16xf32>
}

// -----

!mem = memref<?xf32, strided<[?], offset: ?>>

// Masks that are not constants stay.
// CHECK-LABEL: func @runtime_mask
// CHECK: kiln.load %{{.*}}[%{{.*}}] mask %{{.*}} : tensor<16xi1>
func.func @runtime_mask(%m: !mem, %i: tensor<16xi32>, %k: tensor<16xi1>) -> tensor<16xf32> {
  %a = kiln.load %m[%i] mask %k : tensor<16xi1> : !mem[tensor<16xi32>] -> tensor<16xf32>
  return %a : tensor<16xf32>
}
