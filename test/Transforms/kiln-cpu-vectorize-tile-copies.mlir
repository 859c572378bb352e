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

// 8 x 1000 f32 (16 pieces a row, 128 in all): a loop over rows, in it a loop
// over 15 chunks to 960, then 40 lanes; a 1 x 512 i8 row is two pieces of 256
// lanes, straight-line.
// CHECK-LABEL: func @remainder
// CHECK: scf.for %[[I:.*]] = %{{.*}} to %c8
// CHECK: scf.for %[[J:.*]] = %{{.*}} to %c960 step %c64
// CHECK: vector.load %{{.*}} vector<64xf32>
// CHECK: }
// CHECK: vector.load %{{.*}} vector<40xf32>
// CHECK: vector.store %{{.*}}[%[[I]], %c960{{.*}}] : memref<8x1000xf32>, vector<40xf32>
// CHECK: }
// CHECK-COUNT-2: vector.load %{{.*}} vector<256xi8>
func.func @remainder(%src: !rows, %bytes: memref<?x?xi8, strided<[?, 1], offset: ?>>,
                     %o: index) {
  %t = memref.alloca() : memref<8x1000xf32>
  linalg.generic {indexing_maps = [#id2], iterator_types = ["parallel", "parallel"]}
      outs(%t : memref<8x1000xf32>) {
  ^bb0(%out: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %r = arith.addi %o, %i : index
    %c = arith.addi %o, %j : index
    %v = memref.load %src[%r, %c] : !rows
    linalg.yield %v : f32
  }
  %b = memref.alloca() : memref<1x512xi8>
  linalg.generic {indexing_maps = [#id2], iterator_types = ["parallel", "parallel"]}
      outs(%b : memref<1x512xi8>) {
  ^bb0(%out: i8):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %r = arith.addi %o, %i : index
    %c = arith.addi %o, %j : index
    %v = memref.load %bytes[%r, %c] : memref<?x?xi8, strided<[?, 1], offset: ?>>
    linalg.yield %v : i8
  }
  return
}

// Left alone: a source whose inner stride is not known to be 1, a transposed
// read, a copy that also computes, a bool (i1) tile, a 0-d one, an empty one,
// one written through a transposed output map and an i24 one (its vectors are
// packed, its buffers are not).
// CHECK-LABEL: func @left_alone
// CHECK-NOT: vector.load
// CHECK-COUNT-8: linalg.generic
// CHECK-NOT: vector.load
// CHECK: return
func.func @left_alone(%any: memref<?x?xf32, strided<[?, ?], offset: ?>>, %src: !rows,
                      %bits: memref<?xi1, strided<[1], offset: ?>>, %o: index,
                      %wide: memref<?xi24, strided<[1], offset: ?>>) {
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
  %e = memref.alloca() : memref<4x0xf32>
  linalg.generic {indexing_maps = [#id2], iterator_types = ["parallel", "parallel"]}
      outs(%e : memref<4x0xf32>) {
  ^bb0(%out: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %r = arith.addi %o, %i : index
    %c = arith.addi %o, %j : index
    %v = memref.load %src[%r, %c] : !rows
    linalg.yield %v : f32
  }
  %sq = memref.alloca() : memref<8x8xf32>
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>],
                  iterator_types = ["parallel", "parallel"]}
      outs(%sq : memref<8x8xf32>) {
  ^bb0(%out: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %r = arith.addi %o, %i : index
    %c = arith.addi %o, %j : index
    %v = memref.load %src[%r, %c] : !rows
    linalg.yield %v : f32
  }
  %w = memref.alloca() : memref<64xi24>
  linalg.generic {indexing_maps = [#id1], iterator_types = ["parallel"]}
      outs(%w : memref<64xi24>) {
  ^bb0(%out: i24):
    %i = linalg.index 0 : index
    %c = arith.addi %o, %i : index
    %v = memref.load %wide[%c] : memref<?xi24, strided<[1], offset: ?>>
    linalg.yield %v : i24
  }
  return
}
