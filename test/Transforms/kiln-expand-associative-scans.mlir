// RUN: kiln-opt %s -split-input-file --kiln-expand-associative-scans | FileCheck %s
// RUN: kiln-opt %s -split-input-file --kiln-expand-associative-scans=keep-foldable=1 | FileCheck %s --check-prefix=KEEP

// A forward scan along the rows of a 2-D tile over a tuple: positions along
// axis 1; at each of the three steps the partners 1, 2, 4 lanes earlier are
// gathered, the tile specialization called with (earlier..., this...), and a
// select keeps the combination where the partner exists; each step combines the
// last one's selections.
// CHECK-LABEL: func @forward
// CHECK-SAME: (%[[A:.*]]: tensor<2x8xf32>, %[[X:.*]]: tensor<2x8xi32>)
// CHECK: %[[R:.*]] = kiln.arange 0, 8 : tensor<8xi32>
// CHECK: %[[L:.*]] = kiln.reshape %[[R]] : tensor<8xi32> -> tensor<1x8xi32>
// CHECK: %[[POS:.*]] = kiln.broadcast %[[L]] : tensor<1x8xi32> -> tensor<2x8xi32>
// CHECK: %[[ONE:.*]] = arith.constant dense<1> : tensor<2x8xi32>
// CHECK: %[[AT:.*]] = arith.subi %[[POS]], %[[ONE]] : tensor<2x8xi32>
// CHECK: %[[OK:.*]] = arith.cmpi sge, %[[AT]], %{{.*}} : tensor<2x8xi32>
// CHECK: %[[PA:.*]] = kiln.gather %[[A]][%[[AT]]] axis 1
// CHECK: %[[PX:.*]] = kiln.gather %[[X]][%[[AT]]] axis 1
// CHECK: %[[C:.*]]:2 = call @step_tiles(%[[PA]], %[[PX]], %[[A]], %[[X]])
// CHECK: %[[A1:.*]] = arith.select %[[OK]], %[[C]]#0, %[[A]] : tensor<2x8xi1>, tensor<2x8xf32>
// CHECK: %[[X1:.*]] = arith.select %[[OK]], %[[C]]#1, %[[X]] : tensor<2x8xi1>, tensor<2x8xi32>
// CHECK: arith.constant dense<2> : tensor<2x8xi32>
// CHECK: kiln.gather %[[A1]]
// CHECK: kiln.gather %[[X1]]
// CHECK: call @step_tiles
// CHECK: arith.constant dense<4> : tensor<2x8xi32>
// CHECK-COUNT-2: kiln.gather
// CHECK: call @step_tiles
// CHECK-NOT: kiln.gather
// CHECK-NOT: kiln.associative_scan
// KEEP-LABEL: func @forward
// KEEP: kiln.associative_scan @step, @step_tiles
func.func private @step(%a1: f32, %x1: i32, %a2: f32, %x2: i32) -> (f32, i32) {
  %a = arith.addf %a1, %a2 : f32
  %x = arith.maxsi %x1, %x2 : i32
  return %a, %x : f32, i32
}
func.func private @step_tiles(%a1: tensor<2x8xf32>, %x1: tensor<2x8xi32>, %a2: tensor<2x8xf32>,
                              %x2: tensor<2x8xi32>) -> (tensor<2x8xf32>, tensor<2x8xi32>) {
  %a = arith.addf %a1, %a2 : tensor<2x8xf32>
  %x = arith.maxsi %x1, %x2 : tensor<2x8xi32>
  return %a, %x : tensor<2x8xf32>, tensor<2x8xi32>
}
func.func @forward(%a: tensor<2x8xf32>, %x: tensor<2x8xi32>) -> (tensor<2x8xf32>, tensor<2x8xi32>) {
  %s:2 = kiln.associative_scan @step, @step_tiles(%a, %x) axis 1 : tensor<2x8xf32>, tensor<2x8xi32> -> tensor<2x8xf32>, tensor<2x8xi32>
  return %s#0, %s#1 : tensor<2x8xf32>, tensor<2x8xi32>
}

// -----

// Reversed: the partner is s lanes later (valid below n), still the first
// operand. A combine function that prints (a kiln op in it, or in what it
// calls) is expanded even with keep-foldable, so the CPU keeps its effects.
// CHECK-LABEL: func @reverse
// CHECK: %[[POS:.*]] = kiln.arange 0, 5 : tensor<5xi32>
// CHECK: %[[AT:.*]] = arith.addi %[[POS]], %{{.*}} : tensor<5xi32>
// CHECK: arith.cmpi slt, %[[AT]], %{{.*}} : tensor<5xi32>
// CHECK: %[[P:.*]] = kiln.gather %[[T:.*]][%[[AT]]] axis 0
// CHECK: call @noisy_tiles(%[[P]], %[[T]])
// CHECK-COUNT-2: call @noisy_tiles
// CHECK-NOT: call @noisy_tiles
// KEEP-LABEL: func @reverse
// KEEP-NOT: kiln.associative_scan
// KEEP: call @noisy_tiles
func.func private @say(%a: f32) {
  %c0 = arith.constant 0 : i32
  kiln.print "a" %c0, %c0, %c0, %a : f32
  return
}
func.func private @noisy(%a: f32, %b: f32) -> f32 {
  call @say(%a) : (f32) -> ()
  %s = arith.addf %a, %b : f32
  return %s : f32
}
func.func private @noisy_tiles(%a: tensor<5xf32>, %b: tensor<5xf32>) -> tensor<5xf32> {
  %s = arith.addf %a, %b : tensor<5xf32>
  return %s : tensor<5xf32>
}
func.func @reverse(%t: tensor<5xf32>) -> tensor<5xf32> {
  %0 = kiln.associative_scan @noisy, @noisy_tiles(%t) axis 0 reverse : tensor<5xf32> -> tensor<5xf32>
  return %0 : tensor<5xf32>
}
