// RUN: kiln-opt %s --kiln-spirv-unbind-push-constants | FileCheck %s

// Push-constant variables lose the descriptor binding Vulkan forbids on them;
// storage buffers keep theirs.
// CHECK: spirv.GlobalVariable @buffer bind(0, 0) : !spirv.ptr<!spirv.struct<(!spirv.rtarray<f32, stride=4> [0])>, StorageBuffer>
// CHECK: spirv.GlobalVariable @words : !spirv.ptr<!spirv.struct<(!spirv.array<4 x i32, stride=4> [0])>, PushConstant>
spirv.module Logical GLSL450 {
  spirv.GlobalVariable @buffer bind(0, 0) : !spirv.ptr<!spirv.struct<(!spirv.rtarray<f32, stride=4> [0])>, StorageBuffer>
  spirv.GlobalVariable @words bind(0, 1) : !spirv.ptr<!spirv.struct<(!spirv.array<4 x i32, stride=4> [0])>, PushConstant>
}
