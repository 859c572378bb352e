// RUN: kiln-opt %s -split-input-file --convert-kiln-gpu-to-gpu --cse | FileCheck %s
// RUN: kiln-opt %s -split-input-file --convert-kiln-gpu-to-gpu="memory=spirv subgroup-reduce=native" --cse | FileCheck %s --check-prefix=SPIRV

#l = #kiln_gpu.blocked<vec = 4, warpSize = 32, numWarps = 1>
!mem = memref<?xf32, strided<[?], offset: ?>>

// A 256-element tile over 32 threads in runs of 4: 8 registers per thread.
// Tensors arrive as a global pointer plus i32 size and stride; element e of
// register r is thread_id * 4 + (r / 4) * 128 + r % 4.
// CHECK-LABEL: gpu.module @kiln_kernels
// CHECK: gpu.func @copy(%[[X:.*]]: !llvm.ptr<1>, %[[NX:.*]]: i32, %[[SX:.*]]: i32, %[[Y:.*]]: !llvm.ptr<1>, %{{.*}}: i32, %{{.*}}: i32) kernel
// CHECK-SAME: known_block_size = array<i32: 32, 1, 1>
// CHECK: %[[TID:.*]] = gpu.thread_id x
// CHECK: %[[T:.*]] = arith.index_cast %[[TID]] : index to i32
// CHECK: arith.muli %[[T]], %c4_i32
// Each element is bounds-checked with one unsigned compare against the size.
// CHECK: arith.cmpi ult, %{{.*}}, %[[NX]] : i32
// In-bounds, contiguous and 16-byte aligned runs take one vector access; other
// runs load element by element under their predicates.
// CHECK: llvm.ptrtoint
// CHECK: scf.if %{{.*}} -> (vector<4xf32>) {
// CHECK: llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<1> -> vector<4xf32>
// CHECK: } else {
// CHECK: scf.if %{{.*}} -> (f32) {
// CHECK: llvm.load %{{.*}} : !llvm.ptr<1> -> f32
// CHECK: llvm.store %{{.*}}, %{{.*}} {alignment = 16 : i64} : vector<4xf32>, !llvm.ptr<1>
// CHECK: gpu.return
// On SPIR-V, tensors are buffers and all sizes and strides share one push-constant
// block of i32 words after the 6 grid words: x's size and stride, then y's.
// SPIRV: gpu.func @copy(%[[SX:.*]]: memref<?xf32>, %[[SY:.*]]: memref<?xf32>, %[[PC:.*]]: memref<10xi32, #spirv.storage_class<PushConstant>>) kernel
// SPIRV: %[[C6:.*]] = arith.constant 6 : index
// SPIRV: %[[NX:.*]] = memref.load %[[PC]][%[[C6]]]
// SPIRV-NOT: vector<4xf32>
// SPIRV: arith.cmpi ult, %{{.*}}, %[[NX]] : i32
// SPIRV: memref.load %[[SX]]
func.func @copy(%x: !mem, %y: !mem) attributes {kiln.kernel, kiln_gpu.threads = 32 : i32} {
  %i = kiln.arange 0, 256 : tensor<256xi32, #l>
  %v = kiln.load %x[%i] : !mem[tensor<256xi32, #l>] -> tensor<256xf32, #l>
  kiln.store %y[%i], %v : !mem[tensor<256xi32, #l>], tensor<256xf32, #l>
  return
}

// -----

#l = #kiln_gpu.blocked<vec = 4, warpSize = 32, numWarps = 4>
!mem = memref<?xf32, strided<[?], offset: ?>>

// A whole-tile sum: per-thread partials, an xor-shuffle butterfly over the warp,
// one partial per warp through shared memory, and a barrier-fenced final combine.
// CHECK-LABEL: gpu.func @total
// CHECK-SAME: workgroup(%[[SH:.*]] : memref<128xf32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64})
// CHECK: gpu.shuffle  xor %{{.*}}, %c16_i32, %c32_i32 : f32
// CHECK: gpu.shuffle  xor %{{.*}}, %c8_i32, %c32_i32 : f32
// CHECK: gpu.shuffle  xor %{{.*}}, %c1_i32, %c32_i32 : f32
// CHECK: memref.store %{{.*}}, %[[SH]]
// CHECK: gpu.barrier
// CHECK: scf.for
// CHECK: memref.load %[[SH]]
// CHECK: gpu.barrier
// SPIRV-LABEL: gpu.func @total
// SPIRV: memref.alloc() : memref<128xf32, #spirv.storage_class<Workgroup>>
// SPIRV: gpu.subgroup_reduce  add %{{.*}} : (f32) -> f32
// SPIRV: gpu.num_subgroups
func.func @total(%x: !mem, %y: !mem) attributes {kiln.kernel, kiln_gpu.threads = 128 : i32, kiln_gpu.shared_elements = [[f32, 128]]} {
  %c0 = arith.constant 0 : i32
  %i = kiln.arange 0, 1024 : tensor<1024xi32, #l>
  %v = kiln.load %x[%i] : !mem[tensor<1024xi32, #l>] -> tensor<1024xf32, #l>
  %s = kiln.reduce sum %v, 0 : tensor<1024xf32, #l> -> f32
  kiln.store %y[%c0], %s : !mem[i32], f32
  return
}

// -----

#l = #kiln_gpu.blocked<vec = 1, warpSize = 32, numWarps = 1>
!mem = memref<?xf32, strided<[?], offset: ?>>

// Loop-carried tiles become one iter_arg per register; the loop counts in index.
// CHECK-LABEL: gpu.func @loop
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) -> (f32, f32)
func.func @loop(%x: !mem, %n: i32) attributes {kiln.kernel, kiln_gpu.threads = 32 : i32} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %z = arith.constant dense<0.0> : tensor<64xf32, #l>
  %i = kiln.arange 0, 64 : tensor<64xi32, #l>
  %r = scf.for %k = %c0 to %n step %c1 iter_args(%acc = %z) -> (tensor<64xf32, #l>) : i32 {
    %v = kiln.load %x[%i] : !mem[tensor<64xi32, #l>] -> tensor<64xf32, #l>
    %s = arith.addf %acc, %v : tensor<64xf32, #l>
    scf.yield %s : tensor<64xf32, #l>
  }
  kiln.store %x[%i], %r : !mem[tensor<64xi32, #l>], tensor<64xf32, #l>
  return
}

// -----

#l = #kiln_gpu.blocked<vec = 1, warpSize = 32, numWarps = 4>
!mem = memref<?xi8, strided<[?], offset: ?>>

// A narrow integer is reduced widened to i32, but with its own type's identity:
// warps 1-3 hold no element, and their partials go through shared memory as i8,
// where i32's largest value would read as -1.
// CHECK-LABEL: gpu.func @narrow_min
// CHECK: %[[ID:.*]] = arith.constant 127 : i8
// CHECK: %[[WIDE:.*]] = arith.extsi %[[ID]] : i8 to i32
// CHECK: arith.minsi %{{.*}}, %[[WIDE]] : i32
// CHECK: gpu.shuffle  xor %{{.*}}, %c16_i32, %c32_i32 : i32
// CHECK: arith.trunci %{{.*}} : i32 to i8
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %[[WIDE]]) -> (i32)
// CHECK-NOT: 2147483647
func.func @narrow_min(%x: !mem, %y: !mem) attributes {kiln.kernel, kiln_gpu.threads = 128 : i32, kiln_gpu.shared_elements = [[i8, 4]]} {
  %c0 = arith.constant 0 : i32
  %i = kiln.arange 0, 16 : tensor<16xi32, #l>
  %v = kiln.load %x[%i] : !mem[tensor<16xi32, #l>] -> tensor<16xi8, #l>
  %s = kiln.reduce min %v, 0 : tensor<16xi8, #l> -> i8
  kiln.store %y[%c0], %s : !mem[i32], i8
  return
}

// -----

!mem = memref<?xi32, strided<[?], offset: ?>>

// Program ids: the block id on LLVM targets. On SPIR-V, the block id plus the
// dispatch's first id (grid word 0-2: a grid past the device's workgroup count
// runs as several dispatches) and num_programs is the whole grid (words 3-5).
// CHECK-LABEL: gpu.func @ids
// CHECK: %[[B:.*]] = gpu.block_id  y
// CHECK: arith.index_cast %[[B]] : index to i32
// CHECK: gpu.grid_dim  x
// SPIRV-LABEL: gpu.func @ids
// SPIRV-SAME: %[[PC:[^ ]*]]: memref<8xi32, #spirv.storage_class<PushConstant>>
// SPIRV: %[[B:.*]] = gpu.block_id  y
// SPIRV: %[[ID:.*]] = arith.index_cast %[[B]] : index to i32
// SPIRV: %[[C1:.*]] = arith.constant 1 : index
// SPIRV: %[[FIRST:.*]] = memref.load %[[PC]][%[[C1]]]
// SPIRV: %[[PID:.*]] = arith.addi %[[ID]], %[[FIRST]] : i32
// SPIRV: %[[C3:.*]] = arith.constant 3 : index
// SPIRV: %[[N:.*]] = memref.load %[[PC]][%[[C3]]]
// SPIRV: arith.muli %[[PID]]
// SPIRV: memref.store %[[N]]
// SPIRV-NOT: gpu.grid_dim
func.func @ids(%x: !mem) attributes {kiln.kernel, kiln_gpu.threads = 32 : i32} {
  %p = kiln.program_id 1 : i32
  %n = kiln.num_programs 0 : i32
  kiln.store %x[%p], %n : !mem[i32], i32
  return
}
