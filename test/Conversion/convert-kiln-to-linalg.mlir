// RUN: kiln-opt %s -split-input-file --convert-kiln-to-linalg | FileCheck %s

// CHECK-LABEL: func @arange
// CHECK: linalg.generic
// CHECK: %[[I:.*]] = linalg.index 0 : index
// CHECK: %[[C:.*]] = arith.index_cast %[[I]] : index to i32
// CHECK: arith.addi %[[C]], %{{.*}} : i32
func.func @arange() -> tensor<8xi32> {
  %0 = kiln.arange 4, 12 : tensor<8xi32>
  return %0 : tensor<8xi32>
}

// -----

// CHECK-LABEL: func @splat
// CHECK-SAME: (%[[S:.*]]: f32)
// CHECK: linalg.generic
// CHECK: linalg.yield %[[S]] : f32
func.func @splat(%s: f32) -> tensor<4x4xf32> {
  %0 = kiln.splat %s : tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}

// -----

// Size-1 dimensions are read at index 0.
// CHECK: #[[MAP:.*]] = affine_map<(d0, d1) -> (0, d1)>
// CHECK-LABEL: func @broadcast
// CHECK: linalg.generic {indexing_maps = [#[[MAP]], #{{.*}}]
func.func @broadcast(%t: tensor<1x8xf32>) -> tensor<4x8xf32> {
  %0 = kiln.broadcast %t : tensor<1x8xf32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// CHECK: #[[MAP:.*]] = affine_map<(d0, d1) -> (d1, d0)>
// CHECK-LABEL: func @trans
// CHECK: linalg.generic {indexing_maps = [#[[MAP]], #{{.*}}]
func.func @trans(%t: tensor<4x8xf32>) -> tensor<8x4xf32> {
  %0 = kiln.trans %t [1, 0] : tensor<4x8xf32> -> tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}

// -----

// CHECK-LABEL: func @reshape
// CHECK: tensor.collapse_shape %{{.*}} {{\[\[}}0, 1]] : tensor<4x8xf32> into tensor<32xf32>
// CHECK: tensor.expand_shape %{{.*}} {{\[\[}}0, 1]] output_shape [2, 16] : tensor<32xf32> into tensor<2x16xf32>
// CHECK-LABEL: func @expand
// CHECK: tensor.expand_shape %{{.*}} {{\[\[}}0, 1]] output_shape [8, 1] : tensor<8xf32> into tensor<8x1xf32>
func.func @reshape(%t: tensor<4x8xf32>) -> tensor<2x16xf32> {
  %0 = kiln.reshape %t : tensor<4x8xf32> -> tensor<2x16xf32>
  return %0 : tensor<2x16xf32>
}
func.func @expand(%t: tensor<8xf32>) -> tensor<8x1xf32> {
  %0 = kiln.expand_dims %t, 1 : tensor<8xf32> -> tensor<8x1xf32>
  return %0 : tensor<8x1xf32>
}

// -----

// Max starts from -inf and propagates NaN (maximumf); the axis becomes a reduction.
// CHECK-LABEL: func @reduce_max
// CHECK: %[[NINF:.*]] = arith.constant 0xFF800000 : f32
// CHECK: linalg.fill ins(%[[NINF]] : f32)
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction", "parallel"]
// CHECK: arith.maximumf
func.func @reduce_max(%t: tensor<4x8xf32>) -> tensor<8xf32> {
  %0 = kiln.reduce max %t, 0 : tensor<4x8xf32> -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

// A rank-1 reduction yields a scalar through a rank-0 tensor.
// CHECK-LABEL: func @reduce_scalar
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction"]
// CHECK: arith.addi
// CHECK: tensor.extract %{{.*}}[] : tensor<i32>
func.func @reduce_scalar(%t: tensor<8xi32>) -> i32 {
  %0 = kiln.reduce sum %t, 0 : tensor<8xi32> -> i32
  return %0 : i32
}

// -----

// CHECK-LABEL: func @dot
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<4x8xf16>, tensor<8x2xf16>) outs(%{{.*}} : tensor<4x2xf32>)
func.func @dot(%a: tensor<4x8xf16>, %b: tensor<8x2xf16>, %c: tensor<4x2xf32>) -> tensor<4x2xf32> {
  %0 = kiln.dot %a, %b, %c : tensor<4x8xf16>, tensor<8x2xf16> -> tensor<4x2xf32>
  return %0 : tensor<4x2xf32>
}

// -----

!mem = memref<?xf32, strided<[?], offset: ?>>

// Each lane checks 0 <= i < size with one unsigned compare, ands in the mask, and
// reads memory only when the check passes; masked lanes yield `other`.
// CHECK-LABEL: func @load
// CHECK: %[[DIM:.*]] = memref.dim
// CHECK: %[[SIZE:.*]] = arith.index_cast %[[DIM]] : index to i32
// CHECK: linalg.generic
// CHECK: ^bb0(%[[I:.*]]: i32, %[[K:.*]]: i1, %[[O:.*]]: f32, %{{.*}}: f32):
// CHECK: %[[IN:.*]] = arith.cmpi ult, %[[I]], %[[SIZE]] : i32
// CHECK: %[[OK:.*]] = arith.andi %[[K]], %[[IN]] : i1
// CHECK: scf.if %[[OK]] -> (f32)
// CHECK: memref.load
// CHECK: } else {
// CHECK: scf.yield %[[O]] : f32
func.func @load(%m: !mem, %i: tensor<16xi32>, %k: tensor<16xi1>, %o: tensor<16xf32>) -> tensor<16xf32> {
  %0 = kiln.load %m[%i] mask %k : tensor<16xi1> other %o : tensor<16xf32> : !mem[tensor<16xi32>] -> tensor<16xf32>
  return %0 : tensor<16xf32>
}

// -----

!mem = memref<?x?xf32, strided<[?, ?], offset: ?>>

// A block wholly inside memory with contiguous rows is stored without guards
// through a unit-stride view; any other block walks the tile and writes only
// in-bounds elements.
// CHECK-LABEL: func @store_block
// CHECK: %{{.*}}, %[[STRIDES:.*]]:2 = memref.extract_strided_metadata
// CHECK: arith.cmpi eq, %[[STRIDES]]#1, %c1
// CHECK: %[[DENSE:.*]] = memref.cast %{{.*}} to memref<?x?xf32, strided<[?, 1], offset: ?>>
// CHECK-NEXT: %[[VIEW:.*]] = memref.reinterpret_cast %{{.*}} to offset: [%{{.*}}], sizes: [%{{.*}}, %{{.*}}], strides: [%{{.*}}, 1] : memref<f32> to memref<?x?xf32, strided<[?, 1], offset: ?>>
// CHECK: scf.if
// CHECK: scf.for
// CHECK: scf.for
// CHECK-NOT: scf.if
// CHECK: memref.store %{{.*}}, %[[DENSE]]
// CHECK: } else {
// CHECK: scf.for
// CHECK: scf.for
// CHECK: tensor.extract
// CHECK: arith.cmpi ult
// CHECK: arith.cmpi ult
// CHECK: scf.if
// CHECK: memref.store
func.func @store_block(%m: !mem, %r: i32, %c: i32, %v: tensor<4x8xf32>) {
  kiln.store_block %m[%r, %c], %v : !mem, tensor<4x8xf32>
  return
}

// -----

!mem = memref<?x?xf32, strided<[?, ?], offset: ?>>

// Block loads compute coordinates from the offsets and linalg.index; both the
// dense fast path and the guarded path fill one destination tile.
// CHECK-LABEL: func @load_block
// CHECK: %[[DENSE:.*]] = memref.cast %{{.*}} to memref<?x?xf32, strided<[?, 1], offset: ?>>
// CHECK-NEXT: %[[VIEW:.*]] = memref.reinterpret_cast %{{.*}} to offset: [%{{.*}}], sizes: [%{{.*}}, %{{.*}}], strides: [%{{.*}}, 1] : memref<f32> to memref<?x?xf32, strided<[?, 1], offset: ?>>
// CHECK: %[[INIT:.*]] = tensor.empty() : tensor<4x8xf32>
// CHECK: scf.if
// CHECK: linalg.generic {{.*}} outs(%[[INIT]]
// CHECK: linalg.index 0
// CHECK: linalg.index 1
// CHECK-NOT: scf.if
// CHECK: memref.load %[[VIEW]]
// CHECK: } else {
// CHECK: linalg.generic {{.*}} outs(%[[INIT]]
// CHECK: linalg.index 0
// CHECK: linalg.index 1
// CHECK: scf.if
// CHECK: memref.load
func.func @load_block(%m: !mem, %r: i32, %c: i32) -> tensor<4x8xf32> {
  %0 = kiln.load_block %m[%r, %c] : !mem -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

!mem = memref<?x?xf32, strided<[?, ?], offset: ?>>

// The marks count the loops that belong to the access: one per dimension longer
// than 1. A [1, 64] block has one loop left once canonicalization removes the one
// that runs once; counting two would reach the kernel's own loop around it.
// CHECK-LABEL: func @row_block
// CHECK: memref.load {{.*}} {kiln.loops_rolled = 1 : i64}
// CHECK: memref.load {{.*}} {kiln.loops_scalar = 1 : i64}
// CHECK: memref.store {{.*}} {kiln.loops_rolled = 1 : i64}
// CHECK: memref.store {{.*}} {kiln.loops_scalar = 1 : i64}
func.func @row_block(%m: !mem, %r: i32, %c: i32) {
  %0 = kiln.load_block %m[%r, %c] : !mem -> tensor<1x64xf32>
  kiln.store_block %m[%r, %c], %0 : !mem, tensor<1x64xf32>
  return
}

// -----

// kiln.scan folds along its axis as kiln.associative_scan does: one generic per
// row after the first, combining the previous row of results with this one.
// Along the innermost axis of a tile whose rows are a multiple of 2 KiB apart,
// the scan works in a copy whose rows are a cache line longer (512 + 16 f32), so
// that one step's accesses, one per row, do not all fall into one cache set; the
// result is copied out.
// CHECK-LABEL: func @scan
// CHECK-SAME: (%[[T:.*]]: tensor<4x512xf32>)
// CHECK: %[[PAD:.*]] = bufferization.alloc_tensor() : tensor<4x528xf32>
// CHECK: %[[PART:.*]] = tensor.extract_slice %[[PAD]][0, 0] [4, 512] [1, 1]
// CHECK: %[[COPY:.*]] = linalg.copy ins(%[[T]] : tensor<4x512xf32>) outs(%[[PART]] : tensor<4x512xf32>)
// CHECK: %[[IN:.*]] = tensor.insert_slice %[[COPY]] into %[[PAD]][0, 0] [4, 512] [1, 1]
// CHECK: %[[LOOP:.*]] = scf.for %[[J:.*]] = %{{.*}} to %c512 step %{{.*}} iter_args(%[[W:.*]] = %[[IN]]) -> (tensor<4x528xf32>)
// CHECK: %[[PREV:.*]] = arith.subi %[[J]], %{{.*}}
// CHECK: %[[E:.*]] = tensor.extract_slice %[[W]][0, %[[PREV]]] [4, 1] [1, 1]
// CHECK: %[[O:.*]] = tensor.extract_slice %[[W]][0, %[[J]]] [4, 1] [1, 1]
// CHECK: linalg.generic {{.*}} ins(%[[E]], %[[O]] : {{.*}})
// CHECK-NEXT: ^bb0(%[[A:[a-z0-9_]+]]: f32, %[[B:[a-z0-9_]+]]: f32,
// CHECK-NEXT: arith.addf %[[B]], %[[A]] : f32
// CHECK: tensor.insert_slice %{{.*}} into %[[W]][0, %[[J]]] [4, 1] [1, 1]
// CHECK: %[[OUT:.*]] = tensor.extract_slice %[[LOOP]][0, 0] [4, 512] [1, 1]
// CHECK: %[[R:.*]] = linalg.copy ins(%[[OUT]] : tensor<4x512xf32>)
// CHECK: return %[[R]]
func.func @scan(%t: tensor<4x512xf32>) -> tensor<4x512xf32> {
  %0 = kiln.scan sum %t, 1 : tensor<4x512xf32>
  return %0 : tensor<4x512xf32>
}

// -----

// A long rank-1 scan runs in 16 chunks side by side: the [16, 4] rows scanned
// along axis 1 (16 bytes apart: no copy), the chunks' totals (the last column)
// scanned, and chunks 1 .. 15 combined with the totals of chunks 0 .. 14.
// CHECK-LABEL: func @scan_chunks
// CHECK-SAME: (%[[T:.*]]: tensor<64xi32>)
// CHECK: %[[ROWS:.*]] = tensor.expand_shape %[[T]] {{\[\[}}0, 1]] output_shape [16, 4]
// CHECK-NOT: linalg.copy
// CHECK: %[[SCANNED:.*]] = scf.for %{{.*}} = %{{.*}} to %c4 step %{{.*}} iter_args(%{{.*}} = %[[ROWS]]) -> (tensor<16x4xi32>)
// CHECK: arith.maxsi
// CHECK: %[[TOTALS:.*]] = tensor.extract_slice %[[SCANNED]][0, 3] [16, 1] [1, 1] : tensor<16x4xi32> to tensor<16xi32>
// CHECK: %[[PREFIX:.*]] = scf.for %{{.*}} = %{{.*}} to %c16 step %{{.*}} iter_args(%{{.*}} = %[[TOTALS]]) -> (tensor<16xi32>)
// CHECK: %[[BEFORE:.*]] = tensor.extract_slice %[[PREFIX]][0] [15] [1] : tensor<16xi32> to tensor<15xi32>
// CHECK: %[[LATER:.*]] = tensor.extract_slice %[[SCANNED]][1, 0] [15, 4] [1, 1]
// CHECK: %[[FIXED:.*]] = linalg.generic {indexing_maps = [#[[BCAST:map[0-9]*]], #{{.*}}, #{{.*}}], {{.*}} ins(%[[BEFORE]], %[[LATER]] : {{.*}}) outs(%[[LATER]] : tensor<15x4xi32>)
// CHECK: arith.maxsi
// CHECK: %[[WHOLE:.*]] = tensor.insert_slice %[[FIXED]] into %[[SCANNED]][1, 0] [15, 4] [1, 1]
// CHECK: %[[R:.*]] = tensor.collapse_shape %[[WHOLE]] {{\[\[}}0, 1]] : tensor<16x4xi32> into tensor<64xi32>
// CHECK: return %[[R]]
func.func @scan_chunks(%t: tensor<64xi32>) -> tensor<64xi32> {
  %0 = kiln.scan max %t, 0 : tensor<64xi32>
  return %0 : tensor<64xi32>
}

// -----

// Reversed, in chunks: a chunk's total is its first column, the totals scan in
// reverse, and chunks 0 .. 14 combine with the totals of chunks 1 .. 15 (the
// later range first, as the op's reverse says). A tuple: both operands go
// through each step together.
// CHECK-LABEL: func @scan_chunks_reversed
// CHECK: %[[ROWS:.*]] = tensor.expand_shape %{{.*}} {{\[\[}}0, 1]] output_shape [16, 4] : tensor<64xf32> into tensor<16x4xf32>
// CHECK: tensor.expand_shape %{{.*}} {{\[\[}}0, 1]] output_shape [16, 4] : tensor<64xi32> into tensor<16x4xi32>
// CHECK: %[[SCANNED:.*]]:2 = scf.for
// CHECK: %[[TA:.*]] = tensor.extract_slice %[[SCANNED]]#0[0, 0] [16, 1] [1, 1] : tensor<16x4xf32> to tensor<16xf32>
// CHECK: %[[TB:.*]] = tensor.extract_slice %[[SCANNED]]#1[0, 0] [16, 1] [1, 1] : tensor<16x4xi32> to tensor<16xi32>
// CHECK: %[[PREFIX:.*]]:2 = scf.for {{.*}} iter_args(%{{.*}} = %[[TA]], %{{.*}} = %[[TB]])
// CHECK: %[[LA:.*]] = tensor.extract_slice %[[PREFIX]]#0[1] [15] [1]
// CHECK: %[[LB:.*]] = tensor.extract_slice %[[PREFIX]]#1[1] [15] [1]
// CHECK: %[[PA:.*]] = tensor.extract_slice %[[SCANNED]]#0[0, 0] [15, 4] [1, 1]
// CHECK: %[[PB:.*]] = tensor.extract_slice %[[SCANNED]]#1[0, 0] [15, 4] [1, 1]
// CHECK: linalg.generic {{.*}} ins(%[[LA]], %[[LB]], %[[PA]], %[[PB]] : {{.*}}) outs(%[[PA]], %[[PB]] :
// CHECK-NEXT: ^bb0(%[[L1:[a-z0-9_]+]]: f32, %[[L2:[a-z0-9_]+]]: i32, %[[O1:[a-z0-9_]+]]: f32, %[[O2:[a-z0-9_]+]]: i32,
// CHECK-NEXT: %[[M:.*]] = arith.maximumf %[[L1]], %[[O1]] : f32
// CHECK-NEXT: %[[S:.*]] = arith.addi %[[L2]], %[[O2]] : i32
// CHECK-NEXT: linalg.yield %[[M]], %[[S]]
// CHECK: tensor.insert_slice %{{.*}} into %[[SCANNED]]#0[0, 0] [15, 4] [1, 1]
// CHECK: tensor.collapse_shape
func.func private @max_add(%a1: f32, %b1: i32, %a2: f32, %b2: i32) -> (f32, i32) {
  %a = arith.maximumf %a1, %a2 : f32
  %b = arith.addi %b1, %b2 : i32
  return %a, %b : f32, i32
}
func.func private @max_add_tiles(tensor<64xf32>, tensor<64xi32>, tensor<64xf32>,
                                 tensor<64xi32>) -> (tensor<64xf32>, tensor<64xi32>)
func.func @scan_chunks_reversed(%a: tensor<64xf32>, %b: tensor<64xi32>) -> (tensor<64xf32>, tensor<64xi32>) {
  %s:2 = kiln.associative_scan @max_add, @max_add_tiles(%a, %b) axis 0 reverse : tensor<64xf32>, tensor<64xi32> -> tensor<64xf32>, tensor<64xi32>
  return %s#0, %s#1 : tensor<64xf32>, tensor<64xi32>
}

// -----

// Bools are stored in bytes: rows of 2048 are 2 KiB apart, and the copy adds 64.
// CHECK-LABEL: func @scan_bool_rows
// CHECK: bufferization.alloc_tensor() : tensor<2x2112xi1>
func.func private @any(%p: i1, %q: i1) -> i1 {
  %r = arith.ori %p, %q : i1
  return %r : i1
}
func.func private @any_tiles(tensor<2x2048xi1>, tensor<2x2048xi1>) -> tensor<2x2048xi1>
func.func @scan_bool_rows(%t: tensor<2x2048xi1>) -> tensor<2x2048xi1> {
  %s = kiln.associative_scan @any, @any_tiles(%t) axis 1 : tensor<2x2048xi1> -> tensor<2x2048xi1>
  return %s : tensor<2x2048xi1>
}

// -----

// A float sum keeps its sequential grouping (it rounds as a C++ loop does): no
// chunks.
// CHECK-LABEL: func @scan_float_sum
// CHECK-NOT: tensor.expand_shape
// CHECK: scf.for %{{.*}} = %{{.*}} to %c64 step
// CHECK-NOT: tensor.expand_shape
// CHECK: return
func.func @scan_float_sum(%t: tensor<64xf32>) -> tensor<64xf32> {
  %0 = kiln.scan sum %t, 0 : tensor<64xf32>
  return %0 : tensor<64xf32>
}

// -----

// Along the outermost axis rows are contiguous: no copy. max of floats is
// maximumf, which propagates NaN.
// CHECK-LABEL: func @scan_outer
// CHECK-SAME: (%[[T:.*]]: tensor<4x8xf32>)
// CHECK-NOT: linalg.copy
// CHECK: scf.for %{{.*}} = %{{.*}} to %c4 step %{{.*}} iter_args(%{{.*}} = %[[T]]) -> (tensor<4x8xf32>)
// CHECK: arith.maximumf
// CHECK-NOT: linalg.copy
// CHECK: return
func.func @scan_outer(%t: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = kiln.scan max %t, 0 : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

!mem = memref<?x?xf32, strided<[?, ?], offset: ?>>

// x[row, off + arange(0, 64)] reads one contiguous row segment: inside the tensor
// (with unit inner stride) it loads without guards. Across the tensor's edge with
// unit inner stride, each lane checks its bounds in index arithmetic and still
// reads through the unit-stride cast (LLVM makes masked vector loads of it); only
// other strides take the guarded path over the tensor itself. The accesses of those
// two paths carry the number of loops around them that kiln-annotate-access-loops
// keeps rolled (kiln.loops_rolled) or also scalar (kiln.loops_scalar).
// CHECK-LABEL: func @row_segment
// CHECK-SAME: (%[[M:.*]]: memref<{{.*}}>, %[[ROW:.*]]: i32, %[[OFF:.*]]: i32)
// CHECK: %[[START:.*]] = arith.addi %[[OFF]], %c0_i32
// CHECK: %[[UNIT:.*]] = arith.cmpi eq, %{{.*}}#1, %{{.*}} : index
// CHECK: %[[DENSE:.*]] = memref.cast %[[M]] {{.*}} to memref<?x?xf32, strided<[?, 1], offset: ?>>
// CHECK-NEXT: %[[VIEW:.*]] = memref.reinterpret_cast %{{.*}} to offset: [%{{.*}}], sizes: [%{{.*}}, %{{.*}}], strides: [%{{.*}}, 1] : memref<f32> to memref<?x?xf32, strided<[?, 1], offset: ?>>
// CHECK: scf.if
// CHECK: linalg.generic
// CHECK-NOT: scf.if
// CHECK: memref.load %[[VIEW]]
// CHECK: } else {
// CHECK-NEXT: scf.if %[[UNIT]]
// CHECK-NEXT: linalg.generic
// CHECK: %[[COLI:.*]] = arith.addi %{{.*}}, %{{.*}} : index
// CHECK: arith.cmpi ult, %{{.*}}, %{{.*}} : index
// CHECK: arith.cmpi ult, %[[COLI]], %{{.*}} : index
// CHECK: scf.if
// CHECK-NEXT: memref.load %[[DENSE]]{{.*}} {kiln.loops_rolled = 1 : i64}
// CHECK: } else {
// CHECK: scf.if
// CHECK: memref.load %[[M]]{{.*}} {kiln.loops_scalar = 1 : i64}
// A store to the same kind of segment: unguarded stores on the fast path, bounds
// checked per lane through the cast at the edge.
// CHECK: scf.if
// CHECK: scf.for
// CHECK-NOT: scf.if
// CHECK: memref.store %{{.*}}, %{{.*}} : memref<?x?xf32, strided<[?, 1], offset: ?>>
// CHECK: } else {
// CHECK-NEXT: scf.if
// CHECK: scf.for
// CHECK: arith.cmpi ult, %{{.*}}, %{{.*}} : index
// CHECK: scf.if
// CHECK-NEXT: memref.store %{{.*}}, %{{.*}} {kiln.loops_rolled = 1 : i64} : memref<?x?xf32, strided<[?, 1], offset: ?>>
// CHECK: } else {
// The guarded path computes each lane's column, the start plus the lane (the row is the
// splatted scalar), rather than reading the index tiles.
// CHECK: scf.for %[[LANE:.*]] = %{{.*}} to %c64
// CHECK-NEXT: %[[L32:.*]] = arith.index_cast %[[LANE]] : index to i32
// CHECK-NEXT: %[[COL:.*]] = arith.addi %{{.*}}, %[[L32]] : i32
// CHECK-NOT: tensor.extract %{{.*}} : tensor<64xi32>
// CHECK: arith.cmpi ult, %[[ROW]], %{{.*}} : i32
// CHECK: arith.cmpi ult, %[[COL]], %{{.*}} : i32
// CHECK: memref.store %{{.*}}, %[[M]][%{{.*}}, %{{.*}}] {kiln.loops_scalar = 1 : i64} : memref<?x?xf32, strided<[?, ?], offset: ?>>
func.func @row_segment(%m: !mem, %row: i32, %off: i32) {
  %r = kiln.splat %row : tensor<64xi32>
  %o = kiln.splat %off : tensor<64xi32>
  %a = kiln.arange 0, 64 : tensor<64xi32>
  %c = arith.addi %o, %a : tensor<64xi32>
  %v = kiln.load %m[%r, %c] : !mem[tensor<64xi32>, tensor<64xi32>] -> tensor<64xf32>
  kiln.store %m[%r, %c], %v : !mem[tensor<64xi32>, tensor<64xi32>], tensor<64xf32>
  return
}

// -----

!mem = memref<?x?xf32, strided<[?, ?], offset: ?>>

// A column (the arange in a leading dimension) keeps the guarded path only.
// CHECK-LABEL: func @not_a_segment
// CHECK-NOT: memref.cast
func.func @not_a_segment(%m: !mem, %col: i32) -> tensor<64xf32> {
  %c = kiln.splat %col : tensor<64xi32>
  %a = kiln.arange 0, 64 : tensor<64xi32>
  %v = kiln.load %m[%a, %c] : !mem[tensor<64xi32>, tensor<64xi32>] -> tensor<64xf32>
  return %v : tensor<64xf32>
}

// -----

!mem = memref<?x?xf32, strided<[?, ?], offset: ?>>

// A masked row segment inside the tensor whose mask is all set (an `and` over
// it) reads as if unmasked; else, with unit inner stride, each lane loads, or
// stores, through the cast only where it is set and in bounds.
// CHECK-LABEL: func @masked_segment
// CHECK-SAME: (%[[M:.*]]: memref<{{.*}}>, %[[ROW:.*]]: i32, %[[MASK:.*]]: tensor<64xi1>, %[[OTHER:.*]]: tensor<64xf32>)
// CHECK: memref.extract_strided_metadata %[[M]]
// CHECK: %[[UNIT:.*]] = arith.cmpi eq, %{{.*}}#1, %{{.*}} : index
// CHECK-NEXT: %[[INSIDE:.*]] = arith.andi {{.*}}, %[[UNIT]] : i1
// CHECK-NEXT: %[[DENSE:.*]] = memref.cast %[[M]]
// CHECK-NEXT: %[[VIEW:.*]] = memref.reinterpret_cast %{{.*}} to offset: [%{{.*}}], sizes: [%{{.*}}, %{{.*}}], strides: [%{{.*}}, 1] : memref<f32> to memref<?x?xf32, strided<[?, 1], offset: ?>>
// CHECK: %[[ALL:.*]] = linalg.generic {{.*}} iterator_types = ["reduction"]} ins(%[[MASK]] : tensor<64xi1>)
// CHECK: %[[SET:.*]] = tensor.extract %[[ALL]][]
// CHECK: %[[FULL:.*]] = arith.andi %[[INSIDE]], %[[SET]] : i1
// CHECK: scf.if %[[FULL]]
// CHECK-NEXT: linalg.generic {{.*}} outs(
// CHECK-NOT: scf.if
// CHECK: memref.load %[[VIEW]]
// CHECK: } else {
// CHECK-NEXT: scf.if %[[UNIT]]
// CHECK-NEXT: linalg.generic {{.*}} ins(%[[MASK]], %[[OTHER]] : tensor<64xi1>, tensor<64xf32>)
// CHECK-NEXT: ^bb0(%[[ON:.*]]: i1, %[[ELSE:.*]]: f32, %{{.*}}: f32):
// CHECK: %[[ROWIN:.*]] = arith.cmpi ult
// CHECK-NEXT: %[[ON2:.*]] = arith.andi %[[ON]], %[[ROWIN]] : i1
// CHECK-NEXT: %[[COLIN:.*]] = arith.cmpi ult
// CHECK-NEXT: %[[LANE:.*]] = arith.andi %[[ON2]], %[[COLIN]] : i1
// CHECK-NEXT: scf.if %[[LANE]]
// CHECK-NEXT: memref.load %[[DENSE]]
// CHECK: } else {
// CHECK-NEXT: scf.yield %[[ELSE]]
// CHECK: } else {
// CHECK: memref.store {{.*}} : memref<?x?xf32, strided<[?, 1], offset: ?>>
func.func @masked_segment(%m: !mem, %row: i32, %mask: tensor<64xi1>, %other: tensor<64xf32>) {
  %r = kiln.splat %row : tensor<64xi32>
  %a = kiln.arange 0, 64 : tensor<64xi32>
  %v = kiln.load %m[%r, %a] mask %mask : tensor<64xi1> other %other : tensor<64xf32> : !mem[tensor<64xi32>, tensor<64xi32>] -> tensor<64xf32>
  kiln.store %m[%r, %a], %v mask %mask : tensor<64xi1> : !mem[tensor<64xi32>, tensor<64xi32>], tensor<64xf32>
  return
}

// -----

!mem = memref<?x?xf32, strided<[?, ?], offset: ?>>

// x[r, c] with r = expand_dims(t0 + arange(0, 16), 1) and c = expand_dims(off +
// arange(0, 64), 0), both broadcast to the tile, reads one dense 16 x 64 block:
// rows from t0, columns from off.
// CHECK-LABEL: func @block_2d
// CHECK-SAME: (%[[M:.*]]: memref<{{.*}}>, %[[T0:.*]]: i32, %[[OFF:.*]]: i32)
// CHECK-DAG: %[[ROW0:.*]] = arith.addi %[[T0]], %c0_i32
// CHECK-DAG: %[[COL0:.*]] = arith.addi %[[OFF]], %c0_i32
// CHECK: %[[DENSE:.*]] = memref.cast %[[M]] {{.*}} to memref<?x?xf32, strided<[?, 1], offset: ?>>
// CHECK-NEXT: %[[VIEW:.*]] = memref.reinterpret_cast %{{.*}} to offset: [%{{.*}}], sizes: [%{{.*}}, %{{.*}}], strides: [%{{.*}}, 1] : memref<f32> to memref<?x?xf32, strided<[?, 1], offset: ?>>
// CHECK: scf.if
// CHECK: linalg.generic
// CHECK-NOT: scf.if
// CHECK: memref.load %[[VIEW]]
// CHECK: } else {
func.func @block_2d(%m: !mem, %t0: i32, %off: i32) -> tensor<16x64xf32> {
  %t = kiln.splat %t0 : tensor<16xi32>
  %ar = kiln.arange 0, 16 : tensor<16xi32>
  %rows = arith.addi %t, %ar : tensor<16xi32>
  %r1 = kiln.reshape %rows : tensor<16xi32> -> tensor<16x1xi32>
  %r = kiln.broadcast %r1 : tensor<16x1xi32> -> tensor<16x64xi32>
  %o = kiln.splat %off : tensor<64xi32>
  %ac = kiln.arange 0, 64 : tensor<64xi32>
  %cols = arith.addi %o, %ac : tensor<64xi32>
  %c1 = kiln.reshape %cols : tensor<64xi32> -> tensor<1x64xi32>
  %c = kiln.broadcast %c1 : tensor<1x64xi32> -> tensor<16x64xi32>
  %v = kiln.load %m[%r, %c] : !mem[tensor<16x64xi32>, tensor<16x64xi32>] -> tensor<16x64xf32>
  return %v : tensor<16x64xf32>
}

// -----

!mem = memref<?x?xf32, strided<[?, ?], offset: ?>>

// The transposed access x[c, r] (tile rows along memory columns) is no dense block.
// CHECK-LABEL: func @transposed_block
// CHECK-NOT: memref.cast
func.func @transposed_block(%m: !mem) -> tensor<16x64xf32> {
  %ar = kiln.arange 0, 16 : tensor<16xi32>
  %r1 = kiln.reshape %ar : tensor<16xi32> -> tensor<16x1xi32>
  %r = kiln.broadcast %r1 : tensor<16x1xi32> -> tensor<16x64xi32>
  %ac = kiln.arange 0, 64 : tensor<64xi32>
  %c1 = kiln.reshape %ac : tensor<64xi32> -> tensor<1x64xi32>
  %c = kiln.broadcast %c1 : tensor<1x64xi32> -> tensor<16x64xi32>
  %v = kiln.load %m[%c, %r] : !mem[tensor<16x64xi32>, tensor<16x64xi32>] -> tensor<16x64xf32>
  return %v : tensor<16x64xf32>
}

// -----

// A gather at each lane's own position minus a constant (a step of the trees
// `associative_scan` and `reduce` build) reads at an affine address behind a
// branch, no index tile: LLVM vectorizes it into masked loads.
// CHECK-LABEL: func @shifted_gather
// CHECK: linalg.generic {indexing_maps = [#[[M:[a-z0-9]+]]], iterator_types = ["parallel", "parallel"]} outs(
// CHECK: %[[R:.*]] = linalg.index 0 : index
// CHECK: %[[C:.*]] = linalg.index 1 : index
// CHECK: %[[AT:.*]] = arith.addi %[[C]], %c-2 : index
// CHECK: %[[OK:.*]] = arith.cmpi ult, %[[AT]], %c8 : index
// CHECK: scf.if %[[OK]] -> (f32)
// CHECK: tensor.extract %{{.*}}[%[[R]], %[[AT]]] : tensor<4x8xf32>
func.func @shifted_gather(%t: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %pos = kiln.arange 0, 8 : tensor<8xi32>
  %row = kiln.reshape %pos : tensor<8xi32> -> tensor<1x8xi32>
  %all = kiln.broadcast %row : tensor<1x8xi32> -> tensor<4x8xi32>
  %two = arith.constant dense<2> : tensor<4x8xi32>
  %at = arith.subi %all, %two : tensor<4x8xi32>
  %g = kiln.gather %t[%at] axis 1 : tensor<4x8xf32>, tensor<4x8xi32> -> tensor<4x8xf32>
  return %g : tensor<4x8xf32>
}

// -----

// One constant index for every lane (the last row of a tile) reads that row;
// one out of range gives zeros.
// CHECK-LABEL: func @constant_gather
// CHECK: linalg.generic
// CHECK-NOT: ins(
// CHECK: %[[C:.*]] = linalg.index 1 : index
// CHECK-NOT: scf.if
// CHECK: tensor.extract %{{.*}}[%c15, %[[C]]] : tensor<16x8xf32>
// CHECK: linalg.generic
// CHECK-NOT: tensor.extract
// CHECK: linalg.yield %cst{{.*}} : f32
func.func @constant_gather(%t: tensor<16x8xf32>) -> (tensor<1x8xf32>, tensor<1x8xf32>) {
  %last = arith.constant dense<15> : tensor<1x8xi32>
  %g = kiln.gather %t[%last] axis 0 : tensor<16x8xf32>, tensor<1x8xi32> -> tensor<1x8xf32>
  %past = arith.constant dense<16> : tensor<1x8xi32>
  %z = kiln.gather %t[%past] axis 0 : tensor<16x8xf32>, tensor<1x8xi32> -> tensor<1x8xf32>
  return %g, %z : tensor<1x8xf32>, tensor<1x8xf32>
}

// -----

// Any other index tile is read lane by lane.
// CHECK-LABEL: func @gather
// CHECK-SAME: (%[[T:.*]]: tensor<4x8xf32>, %[[I:.*]]: tensor<4x8xi32>)
// CHECK: linalg.generic {{.*}} ins(%[[I]] : tensor<4x8xi32>)
// CHECK: arith.index_cast
// CHECK: arith.select
func.func @gather(%t: tensor<4x8xf32>, %i: tensor<4x8xi32>) -> tensor<4x8xf32> {
  %g = kiln.gather %t[%i] axis 1 : tensor<4x8xf32>, tensor<4x8xi32> -> tensor<4x8xf32>
  return %g : tensor<4x8xf32>
}

// -----

// An associative scan folds along its axis: a loop over rows 1 .. n - 1 (here
// reversed: row i = 15 - j combines with row i + 1, which comes first), a
// generic over one row whose body is the combine function's, written over the
// row it replaces and inserted back.
// CHECK-LABEL: func @scan_rows
// CHECK-SAME: (%[[A:.*]]: tensor<16x8xf32>, %[[X:.*]]: tensor<16x8xf32>)
// CHECK: scf.for %[[J:.*]] = %{{.*}} to %c16 step %{{.*}} iter_args(%[[RA:.*]] = %[[A]], %[[RX:.*]] = %[[X]])
// CHECK: %[[I:.*]] = arith.subi %c15, %[[J]] : index
// CHECK: %[[PREV:.*]] = arith.addi %[[I]], %{{.*}} : index
// CHECK: %[[LA:.*]] = tensor.extract_slice %[[RA]][%[[PREV]], 0] [1, 8] [1, 1]
// CHECK: %[[LX:.*]] = tensor.extract_slice %[[RX]][%[[PREV]], 0] [1, 8] [1, 1]
// CHECK: %[[TA:.*]] = tensor.extract_slice %[[RA]][%[[I]], 0] [1, 8] [1, 1]
// CHECK: linalg.generic {{.*}} ins(%[[LA]], %[[LX]], %[[TA]], %{{.*}} : {{.*}}) outs(
// CHECK-NEXT: ^bb0(%[[A1:[a-z0-9_]+]]: f32, %[[X1:[a-z0-9_]+]]: f32, %[[A2:[a-z0-9_]+]]: f32, %[[X2:[a-z0-9_]+]]: f32,
// CHECK-NEXT: %[[NA:.*]] = arith.mulf %[[A1]], %[[A2]] : f32
// CHECK-NEXT: %[[P:.*]] = arith.mulf %[[X1]], %[[A2]] : f32
// CHECK-NEXT: %[[NX:.*]] = arith.addf %[[P]], %[[X2]] : f32
// CHECK-NEXT: linalg.yield %[[NA]], %[[NX]] : f32, f32
// CHECK: tensor.insert_slice %{{.*}}#0 into %[[RA]][%[[I]], 0] [1, 8] [1, 1]
// CHECK: tensor.insert_slice %{{.*}}#1 into %[[RX]][%[[I]], 0] [1, 8] [1, 1]
func.func private @compose(%a1: f32, %x1: f32, %a2: f32, %x2: f32) -> (f32, f32) {
  %a = arith.mulf %a1, %a2 : f32
  %p = arith.mulf %x1, %a2 : f32
  %x = arith.addf %p, %x2 : f32
  return %a, %x : f32, f32
}
func.func private @compose_tiles(tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>,
                                 tensor<16x8xf32>) -> (tensor<16x8xf32>, tensor<16x8xf32>)
func.func @scan_rows(%a: tensor<16x8xf32>, %x: tensor<16x8xf32>) -> (tensor<16x8xf32>, tensor<16x8xf32>) {
  %s:2 = kiln.associative_scan @compose, @compose_tiles(%a, %x) axis 0 reverse : tensor<16x8xf32>, tensor<16x8xf32> -> tensor<16x8xf32>, tensor<16x8xf32>
  return %s#0, %s#1 : tensor<16x8xf32>, tensor<16x8xf32>
}
