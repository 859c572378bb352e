// RUN: kiln-opt %s --kiln-expand-min-max | FileCheck %s

// NVIDIA before sm_80: bf16 and f32 maximumf/minimumf become compares and
// selects (LLVM narrowed emulated bf16 maxima to a bf16 fmaximum that NVPTX
// cannot select there, and aborted): the larger (smaller) or a NaN x, else y;
// of equal values the one whose sign max (min) wants; a NaN y.
// CHECK-LABEL: func.func @max_bf16
// CHECK-SAME: (%[[X:.*]]: bf16, %[[Y:.*]]: bf16)
// CHECK: %[[GT:.*]] = arith.cmpf ugt, %[[X]], %[[Y]] : bf16
// CHECK: %[[R:.*]] = arith.select %[[GT]], %[[X]], %[[Y]] : bf16
// CHECK: %[[BITS:.*]] = arith.bitcast %[[X]] : bf16 to i16
// CHECK: %[[NEG:.*]] = arith.cmpi slt, %[[BITS]], %{{.*}} : i16
// CHECK: %[[ZERO:.*]] = arith.select %[[NEG]], %[[Y]], %[[X]] : bf16
// CHECK: %[[EQ:.*]] = arith.cmpf oeq, %[[X]], %[[Y]] : bf16
// CHECK: %[[R2:.*]] = arith.select %[[EQ]], %[[ZERO]], %[[R]] : bf16
// CHECK: %[[NAN:.*]] = arith.cmpf uno, %[[Y]], %[[Y]] : bf16
// CHECK: %[[R3:.*]] = arith.select %[[NAN]], %[[Y]], %[[R2]] : bf16
// CHECK: return %[[R3]]
func.func @max_bf16(%x: bf16, %y: bf16) -> bf16 {
  %0 = arith.maximumf %x, %y : bf16
  return %0 : bf16
}

// CHECK-LABEL: func.func @min_f32_vector
// CHECK: arith.cmpf ult, {{.*}} : vector<4xf32>
// CHECK: arith.bitcast {{.*}} : vector<4xf32> to vector<4xi32>
// CHECK: arith.cmpi slt, {{.*}} : vector<4xi32>
// CHECK-NOT: arith.minimumf
func.func @min_f32_vector(%x: vector<4xf32>, %y: vector<4xf32>) -> vector<4xf32> {
  %0 = arith.minimumf %x, %y : vector<4xf32>
  return %0 : vector<4xf32>
}

// f16 and f64 keep their instructions.
// CHECK-LABEL: func.func @others
// CHECK: arith.maximumf {{.*}} : f16
// CHECK: arith.minimumf {{.*}} : f64
func.func @others(%a: f16, %b: f64) -> (f16, f64) {
  %0 = arith.maximumf %a, %a : f16
  %1 = arith.minimumf %b, %b : f64
  return %0, %1 : f16, f64
}
