// RUN: kiln-opt %s --kiln-spirv-sign-extensions | FileCheck %s

// i32 -> i64 sign extensions become (zext(x) ^ 2^31) - 2^31, scalar or vector
// (lavapipe read OpSConvert's result as non-negative in comparisons); other
// widths keep arith.extsi.
// CHECK-LABEL: func @f
// CHECK-SAME: (%[[X:.*]]: i32, %[[V:.*]]: vector<4xi32>, %[[H:.*]]: i16)
// CHECK: %[[C:.*]] = arith.constant 2147483648 : i64
// CHECK-NEXT: %[[Z:.*]] = arith.extui %[[X]] : i32 to i64
// CHECK-NEXT: %[[F:.*]] = arith.xori %[[Z]], %[[C]] : i64
// CHECK-NEXT: %[[S:.*]] = arith.subi %[[F]], %[[C]] : i64
// CHECK-NEXT: %[[CV:.*]] = arith.constant dense<2147483648> : vector<4xi64>
// CHECK-NEXT: %[[ZV:.*]] = arith.extui %[[V]] : vector<4xi32> to vector<4xi64>
// CHECK-NEXT: %[[FV:.*]] = arith.xori %[[ZV]], %[[CV]] : vector<4xi64>
// CHECK-NEXT: %[[SV:.*]] = arith.subi %[[FV]], %[[CV]] : vector<4xi64>
// CHECK: %[[SH:.*]] = arith.extsi %[[H]] : i16 to i64
// CHECK: return %[[S]], %[[SV]], %[[SH]]
func.func @f(%x: i32, %v: vector<4xi32>, %h: i16) -> (i64, vector<4xi64>, i64) {
  %0 = arith.extsi %x : i32 to i64
  %1 = arith.extsi %v : vector<4xi32> to vector<4xi64>
  %2 = arith.extsi %h : i16 to i64
  return %0, %1, %2 : i64, vector<4xi64>, i64
}
