// RUN: kiln-opt %s --kiln-approximate-math | FileCheck %s

// erf has no SPIR-V instruction; it becomes a polynomial; exp2 becomes
// exp(x * ln 2) and log2 log(x) / ln 2, whose log is Kiln's own: a series in
// [1/2, 2], else GLSL's log (marked kiln.glsl_log, of subnormals scaled by
// 2^24); other functions stay.
// CHECK-LABEL: func @f
// CHECK-NOT: math.erf
// CHECK-NOT: math.exp2
// CHECK-NOT: math.log2
// CHECK-DAG: %[[LN2:.*]] = arith.constant 0.693147{{.*}} : f32
// CHECK-DAG: %[[INVLN2:.*]] = arith.constant 1.44269{{.*}} : f32
// CHECK-DAG: %[[X2:.*]] = arith.mulf %{{.*}}, %[[LN2]] : f32
// CHECK-DAG: math.exp %[[X2]] : f32
// CHECK-DAG: math.log %{{.*}} {kiln.glsl_log} : f32
// CHECK-DAG: arith.constant 0x4B800000 : f32
// CHECK-DAG: arith.mulf %{{.*}}, %[[INVLN2]] : f32
func.func @f(%x: f32) -> (f32, f32, f32, f32) {
  %e = math.erf %x : f32
  %x2 = math.exp %x : f32
  %p = math.exp2 %x : f32
  %l = math.log2 %x : f32
  return %e, %x2, %p, %l : f32, f32, f32, f32
}
