// RUN: kiln-opt %s -split-input-file --kiln-expand-associative-scans -verify-diagnostics | FileCheck %s

// A forward scan along the rows of a 2-D tile: positions along axis 1, the
// partner 1, 2, 4 lanes earlier, the combine function's body applied to whole
// tiles with its constant splatted, a select where the partner exists.
// CHECK-LABEL: func @forward
// CHECK-SAME: (%[[T:.*]]: tensor<2x8xf32>)
// CHECK: %[[R:.*]] = kiln.arange 0, 8 : tensor<8xi32>
// CHECK: %[[L:.*]] = kiln.reshape %[[R]] : tensor<8xi32> -> tensor<1x8xi32>
// CHECK: %[[POS:.*]] = kiln.broadcast %[[L]] : tensor<1x8xi32> -> tensor<2x8xi32>
// CHECK: %[[AT:.*]] = arith.subi %[[POS]], %{{.*}} : tensor<2x8xi32>
// CHECK: %[[OK:.*]] = arith.cmpi sge, %[[AT]], %{{.*}} : tensor<2x8xi32>
// CHECK: %[[P:.*]] = kiln.gather %[[T]][%[[AT]]] axis 1
// CHECK: %[[HALF:.*]] = arith.constant dense<5.000000e-01> : tensor<2x8xf32>
// CHECK: %[[X:.*]] = arith.mulf %[[P]], %[[HALF]] : tensor<2x8xf32>
// CHECK: %[[Y:.*]] = arith.addf %[[X]], %[[T]] : tensor<2x8xf32>
// CHECK: arith.select %[[OK]], %[[Y]], %[[T]] : tensor<2x8xi1>, tensor<2x8xf32>
// CHECK-COUNT-2: kiln.gather
// CHECK-NOT: kiln.gather
// CHECK-NOT: kiln.associative_scan
func.func private @decay(%a: f32, %b: f32) -> f32 {
  %half = arith.constant 0.5 : f32
  %x = arith.mulf %a, %half : f32
  %y = arith.addf %x, %b : f32
  return %y : f32
}
func.func @forward(%t: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %0 = kiln.associative_scan @decay(%t) axis 1 : tensor<2x8xf32> -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

// An op that does not apply lane by lane to whole tiles is an error.
func.func private @branchy(%a: f32, %b: f32) -> f32 {
  %c = arith.cmpf olt, %a, %b : f32
  // expected-error @+1 {{the combine function 'branchy' cannot be applied to whole tiles ('scf.if' is not elementwise)}}
  %r = scf.if %c -> f32 {
    scf.yield %a : f32
  } else {
    scf.yield %b : f32
  }
  return %r : f32
}
func.func @branch(%t: tensor<8xf32>) -> tensor<8xf32> {
  %0 = kiln.associative_scan @branchy(%t) axis 0 : tensor<8xf32> -> tensor<8xf32>
  return %0 : tensor<8xf32>
}
