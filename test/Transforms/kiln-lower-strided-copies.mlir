// RUN: kiln-opt %s --pass-pipeline="builtin.module(func.func(kiln-lower-strided-copies))" | FileCheck %s

// A copy from a column of a tile (strided) into a buffer of its own becomes a
// linalg.copy; one between two contiguous buffers stays a memref.copy (a memcpy
// once lowered), as does a copy of a buffer onto itself (canonicalization's).
// CHECK-LABEL: func @copies
// CHECK-SAME: (%[[T:.*]]: memref<8x64xi1>, %[[C:.*]]: memref<8x1xi1>, %[[D:.*]]: memref<8x1xi1>)
// CHECK: %[[COL:.*]] = memref.subview %[[T]][0, 3] [8, 1] [1, 1]
// CHECK-NEXT: linalg.copy ins(%[[COL]] : memref<8x1xi1, strided<[64, 1], offset: 3>>) outs(%[[C]] : memref<8x1xi1>)
// CHECK-NEXT: linalg.copy ins(%[[C]] : memref<8x1xi1>) outs(%[[COL]] : memref<8x1xi1, strided<[64, 1], offset: 3>>)
// CHECK-NEXT: memref.copy %[[C]], %[[D]] : memref<8x1xi1> to memref<8x1xi1>
// CHECK-NEXT: memref.copy %[[COL]], %[[COL]]
// CHECK-NEXT: return
func.func @copies(%t: memref<8x64xi1>, %c: memref<8x1xi1>, %d: memref<8x1xi1>) {
  %col = memref.subview %t[0, 3] [8, 1] [1, 1]
      : memref<8x64xi1> to memref<8x1xi1, strided<[64, 1], offset: 3>>
  memref.copy %col, %c : memref<8x1xi1, strided<[64, 1], offset: 3>> to memref<8x1xi1>
  memref.copy %c, %col : memref<8x1xi1> to memref<8x1xi1, strided<[64, 1], offset: 3>>
  memref.copy %c, %d : memref<8x1xi1> to memref<8x1xi1>
  memref.copy %col, %col : memref<8x1xi1, strided<[64, 1], offset: 3>>
      to memref<8x1xi1, strided<[64, 1], offset: 3>>
  return
}
