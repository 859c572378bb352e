// RUN: kiln-opt %s --kiln-retype-unsupported-floats | FileCheck %s

// After kiln-expand-f8, fp8 values are loaded, stored, selected, carried by loops
// and reinterpreted as i8; all of it becomes i8, constants keep their bits, and
// the i8 <-> fp8 bitcasts disappear.
// CHECK-NOT: f8E
// CHECK-LABEL: gpu.func @k
// CHECK-SAME: (%[[A:.*]]: memref<?xi8>, %[[B:.*]]: memref<?xi8>, %[[OUT:.*]]: memref<?xi32>)
// CHECK-SAME: workgroup(%[[SHARED:.*]] : memref<64xi8, 3>)
// CHECK: %[[NAN:.*]] = arith.constant 127 : i8
// CHECK: %[[ONE:.*]] = arith.constant 56 : i8
// CHECK: %[[X:.*]] = memref.load %[[A]][%{{.*}}] : memref<?xi8>
// CHECK: %[[PICK:.*]] = arith.select %{{.*}}, %[[X]], %[[ONE]] : i8
// CHECK: memref.store %[[PICK]], %[[SHARED]][%{{.*}}] : memref<64xi8, 3>
// CHECK: scf.for {{.*}} iter_args(%[[C:.*]] = %[[NAN]]) -> (i8)
// CHECK: %[[Y:.*]] = memref.load %[[SHARED]][%{{.*}}] : memref<64xi8, 3>
// CHECK: scf.yield %[[Y]] : i8
// CHECK: memref.store %{{.*}}, %[[B]][%{{.*}}] : memref<?xi8>
// CHECK: arith.extui %{{.*}} : i8 to i32
gpu.module @m {
  gpu.func @k(%a: memref<?xf8E4M3FN>, %b: memref<?xf8E5M2>, %out: memref<?xi32>)
      workgroup(%shared : memref<64xf8E4M3FN, 3>) kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %nan = arith.constant 0x7F : f8E4M3FN
    %one = arith.constant 1.0 : f8E4M3FN
    %x = memref.load %a[%c0] : memref<?xf8E4M3FN>
    %cond = arith.constant true
    %pick = arith.select %cond, %x, %one : f8E4M3FN
    memref.store %pick, %shared[%c0] : memref<64xf8E4M3FN, 3>
    %last = scf.for %i = %c0 to %c4 step %c1 iter_args(%carry = %nan) -> (f8E4M3FN) {
      %y = memref.load %shared[%i] : memref<64xf8E4M3FN, 3>
      scf.yield %y : f8E4M3FN
    }
    %bits = arith.bitcast %last : f8E4M3FN to i8
    %wide = arith.bitcast %bits : i8 to f8E5M2
    memref.store %wide, %b[%c0] : memref<?xf8E5M2>
    %code = arith.bitcast %last : f8E4M3FN to i8
    %ext = arith.extui %code : i8 to i32
    memref.store %ext, %out[%c0] : memref<?xi32>
    gpu.return
  }
}
