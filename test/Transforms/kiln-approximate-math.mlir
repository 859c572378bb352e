// RUN: kiln-opt %s --kiln-approximate-math | FileCheck %s

// erf has no SPIR-V instruction; it becomes a polynomial; other functions stay.
// CHECK-LABEL: func @f
// CHECK-NOT: math.erf
// CHECK: math.exp
func.func @f(%x: f32) -> (f32, f32) {
  %e = math.erf %x : f32
  %x2 = math.exp %x : f32
  return %e, %x2 : f32, f32
}
