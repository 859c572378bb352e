// RUN: kiln-opt %s --pass-pipeline="builtin.module(func.func(kiln-lower-outer-reductions))" | FileCheck %s

// A column sum (axis 0 of a 4 x 64 tile) becomes one elementwise add per row,
// in row order; a row sum (the innermost axis) is left for the inner-reduction
// lowering.
// CHECK-LABEL: func @column_sum
// CHECK-SAME: (%[[T:.*]]: vector<4x64xf32>, %[[ACC:.*]]: vector<64xf32>)
// CHECK-NOT: vector.multi_reduction
// CHECK-NOT: vector.transpose
// CHECK: %[[R0:.*]] = vector.extract %[[T]][0] : vector<64xf32> from vector<4x64xf32>
// CHECK: %[[S0:.*]] = arith.addf %[[R0]], %[[ACC]] : vector<64xf32>
// CHECK: %[[R1:.*]] = vector.extract %[[T]][1]
// CHECK: %[[S1:.*]] = arith.addf %[[R1]], %[[S0]]
// CHECK: %[[R2:.*]] = vector.extract %[[T]][2]
// CHECK: %[[S2:.*]] = arith.addf %[[R2]], %[[S1]]
// CHECK: %[[R3:.*]] = vector.extract %[[T]][3]
// CHECK: %[[S3:.*]] = arith.addf %[[R3]], %[[S2]]
// CHECK: return %[[S3]]
func.func @column_sum(%t: vector<4x64xf32>, %acc: vector<64xf32>) -> vector<64xf32> {
  %r = vector.multi_reduction <add>, %t, %acc [0] : vector<4x64xf32> to vector<64xf32>
  return %r : vector<64xf32>
}

// CHECK-LABEL: func @row_sum
// CHECK: vector.multi_reduction <maximumf>, %{{.*}}, %{{.*}} [1] : vector<4x64xf32> to vector<4xf32>
func.func @row_sum(%t: vector<4x64xf32>, %acc: vector<4xf32>) -> vector<4xf32> {
  %r = vector.multi_reduction <maximumf>, %t, %acc [1] : vector<4x64xf32> to vector<4xf32>
  return %r : vector<4xf32>
}
