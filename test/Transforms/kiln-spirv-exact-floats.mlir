// Every SPIR-V float add, subtract, multiply, divide, remainder, negation and
// fma is NoContraction, so a driver neither contracts nor reassociates them;
// integer arithmetic is left alone.
// RUN: kiln-opt %s --kiln-spirv-exact-floats | FileCheck %s
// CHECK: spirv.FAdd {{.*}} {no_contraction}
// CHECK: spirv.FSub {{.*}} {no_contraction}
// CHECK: spirv.FMul {{.*}} {no_contraction}
// CHECK: spirv.FDiv {{.*}} {no_contraction}
// CHECK: spirv.FNegate {{.*}} {no_contraction}
// CHECK: spirv.GL.Fma {{.*}} {no_contraction}
// CHECK: spirv.IAdd
// CHECK-NOT: no_contraction
spirv.module Logical GLSL450 requires #spirv.vce<v1.0, [Shader, Float64, Linkage], []> {
  spirv.func @f(%a: f64, %b: f64, %i: i32) -> i32 "None" {
    %0 = spirv.FAdd %a, %b : f64
    %1 = spirv.FSub %0, %b : f64
    %2 = spirv.FMul %1, %a : f64
    %3 = spirv.FDiv %2, %b : f64
    %4 = spirv.FNegate %3 : f64
    %5 = spirv.GL.Fma %4, %a, %b : f64
    %6 = spirv.IAdd %i, %i : i32
    spirv.ReturnValue %6 : i32
  }
}
