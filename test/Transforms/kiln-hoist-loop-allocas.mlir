// RUN: kiln-opt %s --pass-pipeline="builtin.module(func.func(kiln-hoist-loop-allocas))" | FileCheck %s

// Static allocas in loops move to the entry block; dynamic ones, those in an
// alloca_scope and those already in the entry block stay where they are.
// CHECK-LABEL: func @f
// CHECK-NEXT: memref.alloca() : memref<vector<4x64xi32>>
// CHECK-NEXT: memref.alloca() {alignment = 64 : i64} : memref<8xf32>
// CHECK-NEXT: memref.alloca() : memref<16xf32>
// CHECK: scf.for
// CHECK-NEXT: memref.alloca(%{{.*}}) : memref<?xf32>
// CHECK: memref.alloca_scope
// CHECK-NEXT: memref.alloca() : memref<32xf32>
func.func @f(%n: index) {
  %e = memref.alloca() : memref<16xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {
    %d = memref.alloca(%n) : memref<?xf32>
    scf.for %j = %c0 to %n step %c1 {
      %v = memref.alloca() : memref<vector<4x64xi32>>
      %w = memref.alloca() {alignment = 64 : i64} : memref<8xf32>
    }
    memref.alloca_scope {
      %s = memref.alloca() : memref<32xf32>
    }
  }
  return
}
