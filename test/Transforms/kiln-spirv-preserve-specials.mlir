// On Vulkan 1.2 (SPIR-V 1.5) targets each entry point declares
// SignedZeroInfNanPreserve for every float width the module computes in, so a
// driver keeps infinities, NaNs and signed zeros (x * 0.0 stays NaN for an
// infinite x); the module keeps its SPIR-V version and gains the capability and
// SPV_KHR_float_controls. Vulkan 1.1 targets and `preserve-specials=0` (the
// `:loose-specials` devices) get none.
// RUN: kiln-opt %s --split-input-file --kiln-spirv-exact-floats | FileCheck %s
// RUN: kiln-opt %s --split-input-file --kiln-spirv-exact-floats="preserve-specials=0" \
// RUN:   | FileCheck %s --check-prefix=LOOSE

// CHECK: spirv.module Logical GLSL450 requires #spirv.vce<v1.0, [Shader, Float16, SignedZeroInfNanPreserve], [SPV_KHR_storage_buffer_storage_class, SPV_KHR_float_controls]>
// CHECK: spirv.EntryPoint "GLCompute" @k
// CHECK-DAG: spirv.ExecutionMode @k "SignedZeroInfNanPreserve", 16
// CHECK-DAG: spirv.ExecutionMode @k "SignedZeroInfNanPreserve", 32
// CHECK-NOT: "SignedZeroInfNanPreserve", 64
// LOOSE-NOT: SignedZeroInfNanPreserve
module attributes {spirv.target_env = #spirv.target_env<#spirv.vce<v1.5, [Shader, Float16], []>, #spirv.resource_limits<>>} {
spirv.module Logical GLSL450 requires #spirv.vce<v1.0, [Shader, Float16], [SPV_KHR_storage_buffer_storage_class]> {
  spirv.func @k() "None" {
    %a = spirv.Constant 2.0 : f32
    %h = spirv.Constant 2.0 : f16
    %0 = spirv.FMul %a, %a : f32
    %1 = spirv.FAdd %h, %h : f16
    spirv.Return
  }
  spirv.EntryPoint "GLCompute" @k
  spirv.ExecutionMode @k "LocalSize", 128, 1, 1
}
}

// -----

// CHECK-LABEL: #spirv.target_env<#spirv.vce<v1.3
// CHECK-NOT: SignedZeroInfNanPreserve
module attributes {spirv.target_env = #spirv.target_env<#spirv.vce<v1.3, [Shader], []>, #spirv.resource_limits<>>} {
spirv.module Logical GLSL450 requires #spirv.vce<v1.0, [Shader], []> {
  spirv.func @k() "None" {
    %a = spirv.Constant 2.0 : f32
    %0 = spirv.FMul %a, %a : f32
    spirv.Return
  }
  spirv.EntryPoint "GLCompute" @k
}
}
