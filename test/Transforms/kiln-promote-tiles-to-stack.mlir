// RUN: kiln-opt %s --pass-pipeline="builtin.module(func.func(kiln-promote-tiles-to-stack))" | FileCheck %s
// RUN: kiln-opt %s --pass-pipeline="builtin.module(func.func(kiln-promote-tiles-to-stack{max-bytes=1024}))" | FileCheck %s --check-prefix=SMALL

// Function-level static buffers go to the stack; buffers in loops, dynamic
// shapes and returned buffers stay on the heap; the byte budget is respected.
// CHECK-LABEL: func @f
// CHECK: memref.alloca() {alignment = 64 : i64} : memref<256xf32>
// CHECK: memref.alloca() {alignment = 64 : i64} : memref<64x64xf32>
// CHECK: memref.alloc(%{{.*}}) : memref<?xf32>
// CHECK: scf.for
// CHECK: memref.alloc() : memref<16xf32>
// CHECK: memref.alloc() : memref<8xf32>
// SMALL-LABEL: func @f
// SMALL: memref.alloca() {alignment = 64 : i64} : memref<256xf32>
// SMALL: memref.alloc() {alignment = 64 : i64} : memref<64x64xf32>
func.func @f(%n: index) -> memref<8xf32> {
  %a = memref.alloc() {alignment = 64 : i64} : memref<256xf32>
  %b = memref.alloc() {alignment = 64 : i64} : memref<64x64xf32>
  %d = memref.alloc(%n) : memref<?xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {
    %l = memref.alloc() : memref<16xf32>
    memref.dealloc %l : memref<16xf32>
  }
  %r = memref.alloc() : memref<8xf32>
  return %r : memref<8xf32>
}
