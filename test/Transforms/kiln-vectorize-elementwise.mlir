// RUN: kiln-opt %s -split-input-file --pass-pipeline="builtin.module(func.func(kiln-vectorize-elementwise))" | FileCheck %s
// RUN: kiln-opt %s -split-input-file --pass-pipeline="builtin.module(func.func(kiln-vectorize-elementwise{max-elements=16}))" | FileCheck %s --check-prefix=SMALL

#id = affine_map<(d0) -> (d0)>

// Straight-line math on a tile of up to 64 elements becomes whole-tile vector ops.
// CHECK-LABEL: func @elementwise
// CHECK: vector.transfer_read %{{.*}} : tensor<64xf32>, vector<64xf32>
// CHECK: math.exp %{{.*}} : vector<64xf32>
// CHECK: arith.mulf %{{.*}} : vector<64xf32>
// CHECK: vector.transfer_write %{{.*}} : vector<64xf32>, tensor<64xf32>
// CHECK-NOT: linalg.generic
// SMALL-LABEL: func @elementwise
// SMALL: linalg.generic
func.func @elementwise(%a: tensor<64xf32>) -> tensor<64xf32> {
  %e = tensor.empty() : tensor<64xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%a : tensor<64xf32>) outs(%e : tensor<64xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = math.exp %x : f32
    %z = arith.mulf %y, %x : f32
    linalg.yield %z : f32
  } -> tensor<64xf32>
  return %r : tensor<64xf32>
}

// -----

#id = affine_map<(d0) -> (d0)>

// Bodies that read memory (masked loads) stay scalar.
// CHECK-LABEL: func @masked_load
// CHECK: linalg.generic
// CHECK: scf.if
// CHECK-NOT: vector.
func.func @masked_load(%m: memref<?xf32>, %i: tensor<64xindex>, %n: index) -> tensor<64xf32> {
  %e = tensor.empty() : tensor<64xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%i : tensor<64xindex>) outs(%e : tensor<64xf32>) {
  ^bb0(%x: index, %o: f32):
    %ok = arith.cmpi ult, %x, %n : index
    %v = scf.if %ok -> f32 {
      %l = memref.load %m[%x] : memref<?xf32>
      scf.yield %l : f32
    } else {
      %z = arith.constant 0.0 : f32
      scf.yield %z : f32
    }
    linalg.yield %v : f32
  } -> tensor<64xf32>
  return %r : tensor<64xf32>
}

// -----

#id = affine_map<(d0) -> (d0)>

// Bool tiles stay scalar: vector<Nxi1> is bit-packed in memory, tensor<Nxi1>
// buffers hold one byte per element.
// CHECK-LABEL: func @bool_result
// CHECK: linalg.generic
// CHECK-NOT: vector<64xi1>
func.func @bool_result(%a: tensor<64xf32>, %lo: f32) -> tensor<64xi1> {
  %e = tensor.empty() : tensor<64xi1>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%a : tensor<64xf32>) outs(%e : tensor<64xi1>) {
  ^bb0(%x: f32, %o: i1):
    %c = arith.cmpf oge, %x, %lo : f32
    linalg.yield %c : i1
  } -> tensor<64xi1>
  return %r : tensor<64xi1>
}

// -----

#id = affine_map<(d0) -> (d0)>
#all = affine_map<(d0) -> ()>

// A whole-tile reduction above the chunk size accumulates 64-wide partial
// results in a loop, then reduces those once.
// CHECK-LABEL: func @sum_1024
// CHECK: linalg.fill {{.*}} -> tensor<64xf32>
// CHECK: scf.for {{.*}} step %c64
// CHECK: arith.addf %{{.*}} : vector<64xf32>
// CHECK: vector.multi_reduction <add>, %{{.*}} [0] : vector<64xf32> to f32
// CHECK-NOT: vector<1024xf32>
func.func @sum_1024(%a: tensor<1024xf32>, %init: tensor<f32>) -> tensor<f32> {
  %r = linalg.generic {indexing_maps = [#id, #all], iterator_types = ["reduction"]}
      ins(%a : tensor<1024xf32>) outs(%init : tensor<f32>) {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.addf %x, %acc : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  return %r : tensor<f32>
}

// -----

#id = affine_map<(d0) -> (d0)>

// Elementwise math on a 256-element tile becomes a loop of 64-wide vector ops.
// An input that is also the output buffer (kiln-reuse-input-buffers' doing) is
// read through the loop's iteration argument, so that bufferization updates
// it in place instead of copying the tile.
// CHECK-LABEL: func @update_in_place
// CHECK: scf.for %{{.*}} = %c0 to %c256 step %c64 iter_args(%[[ACC:.*]] = %arg0)
// CHECK: %[[OLD:.*]] = tensor.extract_slice %[[ACC]]
// CHECK: vector.transfer_read %[[OLD]]
// CHECK: arith.addf %{{.*}} : vector<64xf32>
// CHECK-NOT: vector<256xf32>
func.func @update_in_place(%acc: tensor<256xf32>, %x: tensor<256xf32>) -> tensor<256xf32> {
  %r = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%acc, %x : tensor<256xf32>, tensor<256xf32>) outs(%acc : tensor<256xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<256xf32>
  return %r : tensor<256xf32>
}

// -----

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>

// Row reductions of a 2-D tile: rows go one at a time (each row, 64 wide, is
// one chunk), the reduction stays whole inside it.
// CHECK-LABEL: func @row_max
// CHECK: scf.for {{.*}} step %c1
// CHECK: vector.multi_reduction <maximumf>, %{{.*}} [1] : vector<1x64xf32> to vector<1xf32>
func.func @row_max(%a: tensor<32x64xf32>, %init: tensor<32xf32>) -> tensor<32xf32> {
  %r = linalg.generic {indexing_maps = [#id2, #row], iterator_types = ["parallel", "reduction"]}
      ins(%a : tensor<32x64xf32>) outs(%init : tensor<32xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %m = arith.maximumf %x, %acc : f32
    linalg.yield %m : f32
  } -> tensor<32xf32>
  return %r : tensor<32xf32>
}

// -----

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>

// Above max-elements (16 x 1024), a reduction along the inner dimension is still
// vectorized row by row (one row is 1024 elements): LLVM would keep a float
// reduction loop scalar, one chain of dependent additions. Along the outer
// dimension it is left to LLVM, whose loop vectorizer adds across the rows.
// Rows longer than a chunk (64 lanes; here 128) go one at a time at any tile size
// (this split used the last dimension's extent and kept 32 x 128 whole).
// CHECK-LABEL: func @wide_row_sum
// CHECK: scf.for {{.*}} step %c1
// CHECK: vector.multi_reduction <add>, %{{.*}} [1] : vector<1x1024xf32> to vector<1xf32>
func.func @wide_row_sum(%a: tensor<16x1024xf32>, %init: tensor<16xf32>) -> tensor<16xf32> {
  %r = linalg.generic {indexing_maps = [#id2, #row], iterator_types = ["parallel", "reduction"]}
      ins(%a : tensor<16x1024xf32>) outs(%init : tensor<16xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.addf %x, %acc : f32
    linalg.yield %s : f32
  } -> tensor<16xf32>
  return %r : tensor<16xf32>
}
// CHECK-LABEL: func @long_rows_max
// CHECK: scf.for {{.*}} step %c1
// CHECK: vector.multi_reduction <maximumf>, %{{.*}} [1] : vector<1x128xf32> to vector<1xf32>
func.func @long_rows_max(%a: tensor<32x128xf32>, %init: tensor<32xf32>) -> tensor<32xf32> {
  %r = linalg.generic {indexing_maps = [#id2, #row], iterator_types = ["parallel", "reduction"]}
      ins(%a : tensor<32x128xf32>) outs(%init : tensor<32xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %m = arith.maximumf %x, %acc : f32
    linalg.yield %m : f32
  } -> tensor<32xf32>
  return %r : tensor<32xf32>
}
// CHECK-LABEL: func @tall_column_sum
// CHECK-NOT: vector.
// CHECK: linalg.generic
// CHECK-NOT: vector.
// CHECK: return
func.func @tall_column_sum(%a: tensor<1024x16xf32>, %init: tensor<16xf32>) -> tensor<16xf32> {
  %r = linalg.generic {indexing_maps = [#id2, #col], iterator_types = ["reduction", "parallel"]}
      ins(%a : tensor<1024x16xf32>) outs(%init : tensor<16xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.addf %x, %acc : f32
    linalg.yield %s : f32
  } -> tensor<16xf32>
  return %r : tensor<16xf32>
}

// -----

#id = affine_map<(d0) -> (d0)>
#all = affine_map<(d0) -> ()>

// A reduction that reads its element index (an arange fused into it) is not
// split: MLIR 19's reduction tiling would restart the index at 0 in every chunk.
// CHECK-LABEL: func @indexed_max
// CHECK-NOT: scf.for
// CHECK: vector.step : vector<1024xindex>
// CHECK: vector.multi_reduction <maxsi>
func.func @indexed_max(%a: tensor<1024xf32>, %m: f32, %init: tensor<i32>) -> tensor<i32> {
  %r = linalg.generic {indexing_maps = [#id, #all], iterator_types = ["reduction"]}
      ins(%a : tensor<1024xf32>) outs(%init : tensor<i32>) {
  ^bb0(%x: f32, %acc: i32):
    %i = linalg.index 0 : index
    %ii = arith.index_cast %i : index to i32
    %hit = arith.cmpf oeq, %x, %m : f32
    %none = arith.constant -1 : i32
    %v = arith.select %hit, %ii, %none : i32
    %best = arith.maxsi %v, %acc : i32
    linalg.yield %best : i32
  } -> tensor<i32>
  return %r : tensor<i32>
}

// -----

#id = affine_map<(d0) -> (d0)>

// A generic with several results (a scan step over a tuple) is vectorized too.
// CHECK-LABEL: func @two_results
// CHECK: arith.mulf %{{.*}} : vector<64xf32>
// CHECK: arith.addf %{{.*}} : vector<64xf32>
// CHECK-COUNT-2: vector.transfer_write
// CHECK-NOT: linalg.generic
func.func @two_results(%a: tensor<64xf32>, %b: tensor<64xf32>) -> (tensor<64xf32>, tensor<64xf32>) {
  %e = tensor.empty() : tensor<64xf32>
  %r:2 = linalg.generic {indexing_maps = [#id, #id, #id, #id], iterator_types = ["parallel"]}
      ins(%a, %b : tensor<64xf32>, tensor<64xf32>) outs(%e, %e : tensor<64xf32>, tensor<64xf32>) {
  ^bb0(%x: f32, %y: f32, %o0: f32, %o1: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %x, %y : f32
    linalg.yield %m, %s : f32, f32
  } -> (tensor<64xf32>, tensor<64xf32>)
  return %r#0, %r#1 : tensor<64xf32>, tensor<64xf32>
}

// -----

#id = affine_map<(d0) -> (d0)>

// Past one chunk (64 elements) the generic is split into a loop over chunks;
// with several results, an input that is also a result's buffer (written over
// by kiln-reuse-input-buffers) is read through that result's loop argument, so
// the chunks not yet written keep their values and nothing is copied.
// CHECK-LABEL: func @two_results_chunked
// CHECK-SAME: (%[[A:.*]]: tensor<128xf32>, %[[B:.*]]: tensor<128xf32>)
// CHECK: scf.for %{{.*}} = %c0 to %c128 step %c64 iter_args(%[[RA:.*]] = %[[A]], %[[RB:.*]] = %[[B]])
// CHECK-NOT: tensor.extract_slice %[[A]]
// CHECK-NOT: tensor.extract_slice %[[B]]
// CHECK: arith.mulf %{{.*}} : vector<64xf32>
// CHECK: arith.addf %{{.*}} : vector<64xf32>
// CHECK-NOT: linalg.generic
func.func @two_results_chunked(%a: tensor<128xf32>, %b: tensor<128xf32>) -> (tensor<128xf32>, tensor<128xf32>) {
  %r:2 = linalg.generic {indexing_maps = [#id, #id, #id, #id], iterator_types = ["parallel"]}
      ins(%a, %b : tensor<128xf32>, tensor<128xf32>) outs(%a, %b : tensor<128xf32>, tensor<128xf32>) {
  ^bb0(%x: f32, %y: f32, %o0: f32, %o1: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %x, %y : f32
    linalg.yield %m, %s : f32, f32
  } -> (tensor<128xf32>, tensor<128xf32>)
  return %r#0, %r#1 : tensor<128xf32>, tensor<128xf32>
}
