// RUN: kiln-opt %s --kiln-approximate-math | FileCheck %s

// erf has no SPIR-V instruction; it becomes a polynomial, and +-0 itself (the
// polynomial gave +0 for -0); exp and exp2 are Kiln's own (passes/GPU/
// ExactMath.h: 2^k from exponent bits shifted into place), and log2 is
// log(x) / ln 2, whose log is Kiln's own: a series in [1/2, 2], else GLSL's log
// (marked kiln.glsl_log, of subnormals scaled by 2^24).
// RUN: kiln-opt %s --kiln-approximate-math | FileCheck %s --check-prefix=GONE
// GONE-NOT: math.{{erf|exp|log2}}
// CHECK-LABEL: func @f
// CHECK-DAG: %[[INVLN2:.*]] = arith.constant 1.44269{{.*}} : f32
// CHECK-DAG: arith.cmpf oeq, %arg0
// CHECK-DAG: arith.shli {{.*}} : i32
// CHECK-DAG: arith.bitcast {{.*}} : i32 to f32
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
