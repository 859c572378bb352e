// RUN: kiln-opt %s --pass-pipeline="builtin.module(func.func(kiln-cpu-vectorize-tile-copies))" | FileCheck %s

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#id1 = affine_map<(d0) -> (d0)>
!rows = memref<?x?xf32, strided<[?, 1], offset: ?>>

// A 4 x 80 f32 tile copied from a view with unit inner stride: straight-line
// vector loads and stores of each row, 64 lanes (256 bytes) and the 16 left.
// CHECK-LABEL: func @small
// CHECK-SAME: (%[[SRC:.*]]: memref<?x?xf32, strided<[?, 1], offset: ?>>, %[[R0:.*]]: index, %[[C0:.*]]: index)
// CHECK-NOT: linalg.generic
// CHECK: %[[R:.*]] = arith.addi %[[R0]], %c0
// CHECK-NEXT: %[[C:.*]] = arith.addi %[[C0]], %c0
// CHECK-NEXT: %[[V:.*]] = vector.load %[[SRC]][%[[R]], %[[C]]] : {{.*}}, vector<64xf32>
// CHECK-NEXT: vector.store %[[V]], %[[TILE:.*]][%c0{{.*}}, %c0{{.*}}] : memref<4x80xf32>, vector<64xf32>
// CHECK: vector.load %[[SRC]]{{.*}} vector<16xf32>
// CHECK-COUNT-3: vector.load %[[SRC]]{{.*}} vector<64xf32>
// CHECK-NOT: scf.for
// CHECK: return
func.func @small(%src: !rows, %r0: index, %c0: index) -> memref<4x80xf32> {
  %tile = memref.alloca() : memref<4x80xf32>
  linalg.generic {indexing_maps = [#id2], iterator_types = ["parallel", "parallel"]}
      outs(%tile : memref<4x80xf32>) {
  ^bb0(%out: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %r = arith.addi %r0, %i : index
    %c = arith.addi %c0, %j : index
    %v = memref.load %src[%r, %c] : !rows
    linalg.yield %v : f32
  }
  return %tile : memref<4x80xf32>
}

// A 64 x 1024 tile: a loop over rows around a loop over 64-lane chunks. The
// 2-D tile of a 3-D source at a fixed outer index reads source dims 1 and 2
// (the columns from 0: the index alone).
// CHECK-LABEL: func @large
// CHECK: scf.for %[[I:.*]] = %{{.*}} to %c64{{.*}} step %c1
// CHECK: scf.for %[[J:.*]] = %{{.*}} to %c1024{{.*}} step %c64
// CHECK-NEXT: %[[R:.*]] = arith.addi %{{.*}}, %[[I]]
// CHECK-NEXT: %[[V:.*]] = vector.load %{{.*}}[%{{.*}}, %[[R]], %[[J]]] : memref<?x?x?xf32, strided<[?, ?, 1], offset: ?>>, vector<64xf32>
// CHECK-NEXT: vector.store %[[V]], %{{.*}}[%[[I]], %[[J]]] : memref<64x1024xf32>, vector<64xf32>
func.func @large(%src: memref<?x?x?xf32, strided<[?, ?, 1], offset: ?>>, %z: index,
                 %r0: index) -> memref<64x1024xf32> {
  %tile = memref.alloca() : memref<64x1024xf32>
  linalg.generic {indexing_maps = [#id2], iterator_types = ["parallel", "parallel"]}
      outs(%tile : memref<64x1024xf32>) {
  ^bb0(%out: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %r = arith.addi %r0, %i : index
    %v = memref.load %src[%z, %r, %j] : memref<?x?x?xf32, strided<[?, ?, 1], offset: ?>>
    linalg.yield %v : f32
  }
  return %tile : memref<64x1024xf32>
}

// Left alone: a source whose inner stride is not known to be 1, a transposed
// read, a copy that also computes, a bool (i1) tile and a 0-d one.
// CHECK-LABEL: func @left_alone
// CHECK-NOT: vector.load
// CHECK-COUNT-5: linalg.generic
// CHECK-NOT: vector.load
// CHECK: return
func.func @left_alone(%any: memref<?x?xf32, strided<[?, ?], offset: ?>>, %src: !rows,
                      %bits: memref<?xi1, strided<[1], offset: ?>>, %o: index) {
  %t = memref.alloca() : memref<8x64xf32>
  %b = memref.alloca() : memref<64xi1>
  linalg.generic {indexing_maps = [#id2], iterator_types = ["parallel", "parallel"]}
      outs(%t : memref<8x64xf32>) {
  ^bb0(%out: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %c = arith.addi %o, %j : index
    %v = memref.load %any[%i, %c] : memref<?x?xf32, strided<[?, ?], offset: ?>>
    linalg.yield %v : f32
  }
  linalg.generic {indexing_maps = [#id2], iterator_types = ["parallel", "parallel"]}
      outs(%t : memref<8x64xf32>) {
  ^bb0(%out: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %r = arith.addi %o, %j : index
    %c = arith.addi %o, %i : index
    %v = memref.load %src[%r, %c] : !rows
    linalg.yield %v : f32
  }
  linalg.generic {indexing_maps = [#id2], iterator_types = ["parallel", "parallel"]}
      outs(%t : memref<8x64xf32>) {
  ^bb0(%out: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %r = arith.addi %o, %i : index
    %c = arith.addi %o, %j : index
    %v = memref.load %src[%r, %c] : !rows
    %w = arith.addf %v, %v : f32
    linalg.yield %w : f32
  }
  linalg.generic {indexing_maps = [#id1], iterator_types = ["parallel"]}
      outs(%b : memref<64xi1>) {
  ^bb0(%out: i1):
    %i = linalg.index 0 : index
    %c = arith.addi %o, %i : index
    %v = memref.load %bits[%c] : memref<?xi1, strided<[1], offset: ?>>
    linalg.yield %v : i1
  }
  %s = memref.alloca() : memref<f32>
  linalg.generic {indexing_maps = [affine_map<() -> ()>], iterator_types = []}
      outs(%s : memref<f32>) {
  ^bb0(%out: f32):
    %v = memref.load %src[%o, %o] : !rows
    linalg.yield %v : f32
  }
  return
}
