// RUN: kiln-opt %s -split-input-file --pass-pipeline="builtin.module(func.func(kiln-reuse-input-buffers))" | FileCheck %s

#id = affine_map<(d0) -> (d0)>

// `acc + x` writes over `acc`, an input used only here.
// CHECK-LABEL: func @dead_input
// CHECK-SAME: (%[[A:.*]]: tensor<64xf32>, %[[B:.*]]: tensor<64xf32>)
// CHECK: linalg.generic {{.*}} ins(%[[A]], %[[B]] : {{.*}}) outs(%[[A]] : tensor<64xf32>)
func.func @dead_input(%a: tensor<64xf32>, %b: tensor<64xf32>) -> tensor<64xf32> {
  %e = tensor.empty() : tensor<64xf32>
  %r = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%a, %b : tensor<64xf32>, tensor<64xf32>) outs(%e : tensor<64xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<64xf32>
  return %r : tensor<64xf32>
}

// -----

#id = affine_map<(d0) -> (d0)>

// `state = a[t] * state + x[t]`: the loop-carried `state` is overwritten, not
// the tile loaded in the body (listed first), so the loop updates one buffer
// in place instead of yielding a buffer allocated in every iteration.
// CHECK-LABEL: func @loop_carried_first
// CHECK: scf.for {{.*}} iter_args(%[[S:.*]] = %{{.*}})
// CHECK: %[[L:.*]] = tensor.extract_slice
// CHECK: linalg.generic {{.*}} ins(%[[L]], %[[S]] : {{.*}}) outs(%[[S]] : tensor<8xf32>)
func.func @loop_carried_first(%a: tensor<64x8xf32>, %init: tensor<8xf32>) -> tensor<8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %r = scf.for %t = %c0 to %c64 step %c1 iter_args(%s = %init) -> tensor<8xf32> {
    %row = tensor.extract_slice %a[%t, 0] [1, 8] [1, 1] : tensor<64x8xf32> to tensor<8xf32>
    %e = tensor.empty() : tensor<8xf32>
    %n = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
        ins(%row, %s : tensor<8xf32>, tensor<8xf32>) outs(%e : tensor<8xf32>) {
    ^bb0(%x: f32, %y: f32, %o: f32):
      %m = arith.mulf %x, %y : f32
      linalg.yield %m : f32
    } -> tensor<8xf32>
    scf.yield %n : tensor<8xf32>
  }
  return %r : tensor<8xf32>
}

// -----

#id = affine_map<(d0) -> (d0)>

// An input read elsewhere too is not overwritten.
// CHECK-LABEL: func @live_input
// CHECK: %[[E:.*]] = tensor.empty
// CHECK: linalg.generic {{.*}} outs(%[[E]] : tensor<64xf32>)
func.func @live_input(%a: tensor<64xf32>) -> (tensor<64xf32>, tensor<64xf32>) {
  %e = tensor.empty() : tensor<64xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%a : tensor<64xf32>) outs(%e : tensor<64xf32>) {
  ^bb0(%x: f32, %o: f32):
    %s = arith.mulf %x, %x : f32
    linalg.yield %s : f32
  } -> tensor<64xf32>
  return %r, %a : tensor<64xf32>, tensor<64xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// A row combined into the next (a scan's step): the result is inserted where
// `this` was extracted from, so it writes over `this`, not over `prev` (listed
// first); with two results, each takes its own input.
// CHECK-LABEL: func @row_step
// CHECK: %[[PREV:.*]] = tensor.extract_slice %{{.*}}[0, 0]
// CHECK: %[[THIS:.*]] = tensor.extract_slice %{{.*}}[1, 0]
// CHECK: %[[OTHER:.*]] = tensor.extract_slice %{{.*}}[1, 0]
// CHECK: linalg.generic {{.*}} outs(%[[THIS]], %[[OTHER]] : tensor<1x8xf32>, tensor<1x8xf32>)
func.func @row_step(%t: tensor<4x8xf32>, %u: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %prev = tensor.extract_slice %t[0, 0] [1, 8] [1, 1] : tensor<4x8xf32> to tensor<1x8xf32>
  %this = tensor.extract_slice %t[1, 0] [1, 8] [1, 1] : tensor<4x8xf32> to tensor<1x8xf32>
  %other = tensor.extract_slice %u[1, 0] [1, 8] [1, 1] : tensor<4x8xf32> to tensor<1x8xf32>
  %e = tensor.empty() : tensor<1x8xf32>
  %r:2 = linalg.generic {indexing_maps = [#id, #id, #id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%prev, %this, %other : tensor<1x8xf32>, tensor<1x8xf32>, tensor<1x8xf32>)
      outs(%e, %e : tensor<1x8xf32>, tensor<1x8xf32>) {
  ^bb0(%p: f32, %x: f32, %o: f32, %r0: f32, %r1: f32):
    %s = arith.addf %p, %x : f32
    %m = arith.mulf %s, %o : f32
    linalg.yield %s, %m : f32, f32
  } -> (tensor<1x8xf32>, tensor<1x8xf32>)
  %t2 = tensor.insert_slice %r#0 into %t[1, 0] [1, 8] [1, 1] : tensor<1x8xf32> into tensor<4x8xf32>
  %u2 = tensor.insert_slice %r#1 into %u[1, 0] [1, 8] [1, 1] : tensor<1x8xf32> into tensor<4x8xf32>
  return %t2, %u2 : tensor<4x8xf32>, tensor<4x8xf32>
}
