// RUN: kiln-opt %s --pass-pipeline="builtin.module(func.func(kiln-split-empty-tensors))" | FileCheck %s

// One tensor.empty that CSE shared between two guarded loads and an elementwise
// op: each top-level user gets its own copy, placed just before it; the two
// branches of one `scf.if` keep sharing theirs (one buffer per tile).
// CHECK-LABEL: func @f
// CHECK: %[[E0:.*]] = tensor.empty() : tensor<64xf32>
// CHECK-NEXT: scf.if
// CHECK: linalg.fill {{.*}} outs(%[[E0]]
// CHECK: } else {
// CHECK: linalg.fill {{.*}} outs(%[[E0]]
// CHECK: %[[E1:.*]] = tensor.empty() : tensor<64xf32>
// CHECK-NEXT: scf.if
// CHECK: linalg.fill {{.*}} outs(%[[E1]]
// CHECK: } else {
// CHECK: linalg.fill {{.*}} outs(%[[E1]]
// CHECK: %[[E2:.*]] = tensor.empty() : tensor<64xf32>
// CHECK-NEXT: linalg.fill {{.*}} outs(%[[E2]]
// CHECK-NOT: tensor.empty
func.func @f(%c: i1, %a: f32, %b: f32) -> (tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) {
  %e = tensor.empty() : tensor<64xf32>
  %0 = scf.if %c -> (tensor<64xf32>) {
    %t = linalg.fill ins(%a : f32) outs(%e : tensor<64xf32>) -> tensor<64xf32>
    scf.yield %t : tensor<64xf32>
  } else {
    %t = linalg.fill ins(%b : f32) outs(%e : tensor<64xf32>) -> tensor<64xf32>
    scf.yield %t : tensor<64xf32>
  }
  %1 = scf.if %c -> (tensor<64xf32>) {
    %t = linalg.fill ins(%b : f32) outs(%e : tensor<64xf32>) -> tensor<64xf32>
    scf.yield %t : tensor<64xf32>
  } else {
    %t = linalg.fill ins(%a : f32) outs(%e : tensor<64xf32>) -> tensor<64xf32>
    scf.yield %t : tensor<64xf32>
  }
  %2 = linalg.fill ins(%a : f32) outs(%e : tensor<64xf32>) -> tensor<64xf32>
  return %0, %1, %2 : tensor<64xf32>, tensor<64xf32>, tensor<64xf32>
}
