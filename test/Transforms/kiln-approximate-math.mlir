// RUN: kiln-opt %s --kiln-approximate-math | FileCheck %s

// erf has no SPIR-V instruction; it becomes a polynomial, and +-0 itself (the
// polynomial gave +0 for -0); exp, exp2 and log2 are Kiln's own
// (passes/GPU/ExactMath.h: 2^k from exponent bits shifted into place, log2 from
// the exponent bits and a series in the significand).
// RUN: kiln-opt %s --kiln-approximate-math | FileCheck %s --check-prefix=GONE
// GONE-NOT: math.{{erf|exp|log}}
// CHECK-LABEL: func @f
// CHECK-DAG: arith.cmpf oeq, %arg0
// CHECK-DAG: arith.shli {{.*}} : i32
// CHECK-DAG: arith.shrsi {{.*}} : i32
// CHECK-DAG: arith.bitcast {{.*}} : i32 to f32
func.func @f(%x: f32) -> (f32, f32, f32, f32) {
  %e = math.erf %x : f32
  %x2 = math.exp %x : f32
  %p = math.exp2 %x : f32
  %l = math.log2 %x : f32
  return %e, %x2, %p, %l : f32, f32, f32, f32
}
