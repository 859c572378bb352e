// RUN: kiln-opt %s --kiln-gpu-allocate-shared-memory=integer-atomics-only=1 | FileCheck %s

// A kernel without tiles still runs its kiln_gpu.threads threads: on a target
// with integer atomics only, a float atomic's swap loop keeps a flag per thread
// (i32 travels as f32 bits), and the old value goes from thread 0 to all. (It
// got 32 slots, one warp's, whatever the kernel's thread count; before that
// none, and kilnc crashed.)
// CHECK-LABEL: func @tickets
// CHECK-SAME: kiln_gpu.shared_bytes = 1024 : i64
// CHECK-SAME: kiln_gpu.shared_elements = {{\[\[}}f32, 256]]
func.func @tickets(%c: memref<?xf32, strided<[?], offset: ?>>, %o: memref<?xf32, strided<[?], offset: ?>>) attributes {kiln.kernel, kiln_gpu.threads = 256 : i32} {
  %one = arith.constant 1.0 : f32
  %z = arith.constant 0 : i32
  %p = kiln.program_id 0 : i32
  %old = kiln.atomic_rmw sum %c[%z], %one : memref<?xf32, strided<[?], offset: ?>>[i32], f32
  kiln.store %o[%p], %old : memref<?xf32, strided<[?], offset: ?>>[i32], f32
  return
}
