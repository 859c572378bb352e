// RUN: kiln-opt %s --pass-pipeline="builtin.module(func.func(kiln-cpu-prefetch-tiles))" | FileCheck %s

#id = affine_map<(d0, d1) -> (d0, d1)>

// The K loop of a dot: the unguarded copy of the `a` tile (columns k...) is
// followed by prefetches of the tile the next iteration copies (columns k + 32,
// its offset rebuilt from the induction variable), guarded by k + 32 < K, after
// the scf.if that holds it; one prefetch per 16 f32 (a cache line) and the row's
// last element. The guarded copy (the edge path) gets none of its own; the `b`
// tile does not move (no prefetch).
// CHECK-LABEL: func @k_loop
// CHECK-SAME: (%[[A:.*]]: memref<?x?xf32>, %[[B:.*]]: memref<?x?xf32>, %[[M0:.*]]: index, %[[K:.*]]: i32
// CHECK: scf.for %[[IV:.*]] = %{{.*}} to %[[K]] step %[[STEP:.*]] : i32 {
// CHECK: %[[COL:.*]] = arith.index_cast %[[IV]] : i32 to index
// CHECK: scf.if %{{.*}} {
// CHECK: linalg.generic
// CHECK: memref.load %[[A]]
// CHECK: } else {
// CHECK: linalg.generic
// CHECK: scf.if
// CHECK: memref.load %[[A]]
// CHECK-NOT: memref.prefetch
// CHECK: %[[NEXT:.*]] = arith.addi %[[IV]], %[[STEP]] : i32
// CHECK-NEXT: %[[NCOL:.*]] = arith.index_cast %[[NEXT]] : i32 to index
// CHECK-NEXT: %[[MORE:.*]] = arith.cmpi slt, %[[NEXT]], %[[K]] : i32
// CHECK-NEXT: scf.if %[[MORE]] {
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG: %[[C16:.*]] = arith.constant 16 : index
// CHECK-DAG: %[[C31:.*]] = arith.constant 31 : index
// CHECK-DAG: %[[C8:.*]] = arith.constant 8 : index
// CHECK: scf.for %[[R:.*]] = %[[C0]] to %[[C8]] step %[[C1]]
// CHECK-NEXT: %[[ROW:.*]] = arith.addi %[[M0]], %[[R]] : index
// CHECK-NEXT: %[[C47:.*]] = arith.constant 47 : index
// CHECK-NEXT: scf.for %[[C:.*]] = %[[C0]] to %[[C47]] step %[[C16]]
// CHECK-NEXT: %[[LAST:.*]] = arith.minsi %[[C]], %[[C31]] : index
// CHECK-NEXT: %[[X:.*]] = arith.addi %[[NCOL]], %[[LAST]] : index
// CHECK-NEXT: memref.prefetch %[[A]][%[[ROW]], %[[X]]], read, locality<2>, data
// CHECK: linalg.generic
// CHECK: memref.load %[[B]]
// CHECK-NOT: memref.prefetch
// CHECK: linalg.matmul
// CHECK-NOT: memref.prefetch
// CHECK: return
func.func @k_loop(%a: memref<?x?xf32>, %b: memref<?x?xf32>, %m0: index, %k: i32,
                  %fast: i1) {
  %c0 = arith.constant 0 : i32
  %c32 = arith.constant 32 : i32
  %cst = arith.constant 0.0 : f32
  %ta = memref.alloca() : memref<8x32xf32>
  %tb = memref.alloca() : memref<32x16xf32>
  %acc = memref.alloca() : memref<8x16xf32>
  scf.for %iv = %c0 to %k step %c32 : i32 {
    %col = arith.index_cast %iv : i32 to index
    scf.if %fast {
      linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]}
          outs(%ta : memref<8x32xf32>) {
      ^bb0(%out: f32):
        %i = linalg.index 0 : index
        %j = linalg.index 1 : index
        %r = arith.addi %m0, %i : index
        %c = arith.addi %col, %j : index
        %v = memref.load %a[%r, %c] : memref<?x?xf32>
        linalg.yield %v : f32
      }
    } else {
      // The guarded edge path: not a plain copy.
      linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]}
          outs(%ta : memref<8x32xf32>) {
      ^bb0(%out: f32):
        %i = linalg.index 0 : index
        %j = linalg.index 1 : index
        %r = arith.addi %m0, %i : index
        %c = arith.addi %col, %j : index
        %inside = arith.cmpi ult, %c, %m0 : index
        %v = scf.if %inside -> (f32) {
          %l = memref.load %a[%r, %c] : memref<?x?xf32>
          scf.yield %l : f32
        } else {
          scf.yield %cst : f32
        }
        linalg.yield %v : f32
      }
    }
    // The same tile every iteration: nothing to prefetch.
    linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]}
        outs(%tb : memref<32x16xf32>) {
    ^bb0(%out: f32):
      %i = linalg.index 0 : index
      %j = linalg.index 1 : index
      %c = arith.addi %m0, %j : index
      %v = memref.load %b[%i, %c] : memref<?x?xf32>
      linalg.yield %v : f32
    }
    linalg.matmul ins(%ta, %tb : memref<8x32xf32>, memref<32x16xf32>)
        outs(%acc : memref<8x16xf32>)
  }
  return
}

// A loop without a dot is left alone, as is a copy whose offset comes from a
// loop-carried value (its next value is not known before the iteration ends).
// CHECK-LABEL: func @no_dot
// CHECK-NOT: memref.prefetch
// CHECK: return
// CHECK-LABEL: func @carried
// CHECK-NOT: memref.prefetch
// CHECK: return
func.func @no_dot(%a: memref<?x?xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c32 = arith.constant 32 : index
  %t = memref.alloca() : memref<8x32xf32>
  scf.for %iv = %c0 to %n step %c32 {
    linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]}
        outs(%t : memref<8x32xf32>) {
    ^bb0(%out: f32):
      %i = linalg.index 0 : index
      %j = linalg.index 1 : index
      %c = arith.addi %iv, %j : index
      %v = memref.load %a[%i, %c] : memref<?x?xf32>
      linalg.yield %v : f32
    }
  }
  return
}
func.func @carried(%a: memref<?x?xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c32 = arith.constant 32 : index
  %ta = memref.alloca() : memref<8x32xf32>
  %tb = memref.alloca() : memref<32x16xf32>
  %acc = memref.alloca() : memref<8x16xf32>
  %r = scf.for %iv = %c0 to %n step %c32 iter_args(%off = %c0) -> (index) {
    linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]}
        outs(%ta : memref<8x32xf32>) {
    ^bb0(%out: f32):
      %i = linalg.index 0 : index
      %j = linalg.index 1 : index
      %c = arith.addi %off, %j : index
      %v = memref.load %a[%i, %c] : memref<?x?xf32>
      linalg.yield %v : f32
    }
    linalg.matmul ins(%ta, %tb : memref<8x32xf32>, memref<32x16xf32>)
        outs(%acc : memref<8x16xf32>)
    %next = arith.addi %off, %c32 : index
    scf.yield %next : index
  }
  return
}

// As the CPU pipeline emits it: the source is a unit-stride view made in the
// loop body (loop-invariant) and the K loop's induction variable is an index;
// the prefetches read the same view at the next step's columns.
// CHECK-LABEL: func @view_in_body
// CHECK: scf.for %[[IV:.*]] = %{{.*}} to %[[K:.*]] step %[[STEP:.*]] {
// CHECK: %[[VIEW:.*]] = memref.reinterpret_cast
// CHECK: linalg.generic
// CHECK: %[[NEXT:.*]] = arith.addi %[[IV]], %[[STEP]] : index
// CHECK-NEXT: %[[MORE:.*]] = arith.cmpi slt, %[[NEXT]], %[[K]] : index
// CHECK: memref.prefetch %[[VIEW]][%{{.*}}, %{{.*}}], read, locality<2>, data
// CHECK: linalg.matmul
func.func @view_in_body(%a: memref<?x?xf32, strided<[?, ?], offset: ?>>, %k: index) {
  %c0 = arith.constant 0 : index
  %c32 = arith.constant 32 : index
  %ta = memref.alloca() : memref<8x32xf32>
  %tb = memref.alloca() : memref<32x16xf32>
  %acc = memref.alloca() : memref<8x16xf32>
  scf.for %iv = %c0 to %k step %c32 {
    %base, %offset, %sizes:2, %strides:2 = memref.extract_strided_metadata %a
        : memref<?x?xf32, strided<[?, ?], offset: ?>> -> memref<f32>, index, index, index,
          index, index
    %view = memref.reinterpret_cast %base to offset: [%offset],
        sizes: [%sizes#0, %sizes#1], strides: [%strides#0, 1]
        : memref<f32> to memref<?x?xf32, strided<[?, 1], offset: ?>>
    linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]}
        outs(%ta : memref<8x32xf32>) {
    ^bb0(%out: f32):
      %i = linalg.index 0 : index
      %j = linalg.index 1 : index
      %c = arith.addi %iv, %j : index
      %v = memref.load %view[%i, %c] : memref<?x?xf32, strided<[?, 1], offset: ?>>
      linalg.yield %v : f32
    }
    linalg.matmul ins(%ta, %tb : memref<8x32xf32>, memref<32x16xf32>)
        outs(%acc : memref<8x16xf32>)
  }
  return
}
