// RUN: kiln-opt %s --kiln-attach-spirv-target | FileCheck %s --check-prefix=V12
// RUN: kiln-opt %s --kiln-attach-spirv-target=client=vulkan1.1 | FileCheck %s --check-prefix=V11

// V12: gpu.module @m attributes {spirv.target_env = #spirv.target_env<#spirv.vce<v1.5, [Shader, GroupNonUniform, GroupNonUniformArithmetic, GroupNonUniformShuffle, GroupNonUniformBallot, Int8, Int16, Int64, Float16, Float64, StorageBuffer8BitAccess, StorageBuffer16BitAccess], []>, api=Vulkan
// V11: #spirv.vce<v1.3, {{.*}} [SPV_KHR_storage_buffer_storage_class, SPV_KHR_8bit_storage, SPV_KHR_16bit_storage]>
// Buffers and scalars get bindings 0, 1, ... in set 0; scalars live in storage buffers.
// V12: gpu.func @k(%{{.*}}: memref<?xf32> {spirv.interface_var_abi = #spirv.interface_var_abi<(0, 0)>}, %{{.*}}: i32 {spirv.interface_var_abi = #spirv.interface_var_abi<(0, 1), StorageBuffer>})
// V12-SAME: spirv.entry_point_abi = #spirv.entry_point_abi<workgroup_size = [256, 1, 1]>
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @k(%a: memref<?xf32>, %n: i32) kernel attributes {kiln_gpu.threads = 256 : i32} {
      gpu.return
    }
  }
}
