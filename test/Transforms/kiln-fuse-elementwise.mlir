// RUN: kiln-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(kiln-fuse-elementwise))' | FileCheck %s

#id = affine_map<(d0) -> (d0)>

// A mask shared by two selects is recomputed in each: no i1 tile is left.
// CHECK-LABEL: func @shared_mask
// CHECK-NOT: tensor<64xi1>
// CHECK: linalg.generic
// CHECK: arith.cmpi
// CHECK: arith.select
// CHECK: linalg.generic
// CHECK: arith.cmpi
// CHECK: arith.select
// CHECK-NOT: linalg.generic
func.func @shared_mask(%i: tensor<64xi32>, %a: tensor<64xf32>, %b: tensor<64xf32>)
    -> (tensor<64xf32>, tensor<64xf32>) {
  %c0 = arith.constant 0 : i32
  %e1 = tensor.empty() : tensor<64xi1>
  %ef = tensor.empty() : tensor<64xf32>
  %mask = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%i : tensor<64xi32>) outs(%e1 : tensor<64xi1>) {
  ^bb0(%x: i32, %o: i1):
    %m = arith.cmpi sge, %x, %c0 : i32
    linalg.yield %m : i1
  } -> tensor<64xi1>
  %r1 = linalg.generic {indexing_maps = [#id, #id, #id, #id], iterator_types = ["parallel"]}
      ins(%mask, %a, %b : tensor<64xi1>, tensor<64xf32>, tensor<64xf32>) outs(%ef : tensor<64xf32>) {
  ^bb0(%m: i1, %x: f32, %y: f32, %o: f32):
    %s = arith.select %m, %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<64xf32>
  %r2 = linalg.generic {indexing_maps = [#id, #id, #id, #id], iterator_types = ["parallel"]}
      ins(%mask, %b, %a : tensor<64xi1>, tensor<64xf32>, tensor<64xf32>) outs(%ef : tensor<64xf32>) {
  ^bb0(%m: i1, %x: f32, %y: f32, %o: f32):
    %s = arith.select %m, %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<64xf32>
  return %r1, %r2 : tensor<64xf32>, tensor<64xf32>
}

// -----

#id = affine_map<(d0) -> (d0)>

// A shared producer that calls math (or divides) is computed once, and a consumer
// that reads memory (a guarded load stays a scalar loop) reads a shared tile.
// CHECK-LABEL: func @kept
// CHECK: math.exp
// CHECK: linalg.generic
// CHECK-NOT: math.exp
// CHECK: linalg.generic
// CHECK-NOT: math.exp
// CHECK: %[[AT:.*]] = linalg.generic
// CHECK: arith.addi
// CHECK: linalg.generic {{.*}} ins(%[[AT]]
// CHECK-NOT: arith.addi
// CHECK: memref.load
func.func @kept(%a: tensor<64xf32>, %i: tensor<64xi32>, %m: memref<64xf32>)
    -> (tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xi32>) {
  %c3 = arith.constant 3 : i32
  %ef = tensor.empty() : tensor<64xf32>
  %ei = tensor.empty() : tensor<64xi32>
  %e = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%a : tensor<64xf32>) outs(%ef : tensor<64xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = math.exp %x : f32
    linalg.yield %y : f32
  } -> tensor<64xf32>
  %r1 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%e : tensor<64xf32>) outs(%ef : tensor<64xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.addf %x, %x : f32
    linalg.yield %y : f32
  } -> tensor<64xf32>
  %r2 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%e : tensor<64xf32>) outs(%ef : tensor<64xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.mulf %x, %x : f32
    linalg.yield %y : f32
  } -> tensor<64xf32>
  %at = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%i : tensor<64xi32>) outs(%ei : tensor<64xi32>) {
  ^bb0(%x: i32, %o: i32):
    %y = arith.addi %x, %c3 : i32
    linalg.yield %y : i32
  } -> tensor<64xi32>
  %r3 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%at : tensor<64xi32>) outs(%ef : tensor<64xf32>) {
  ^bb0(%x: i32, %o: f32):
    %k = arith.index_cast %x : i32 to index
    %v = memref.load %m[%k] : memref<64xf32>
    linalg.yield %v : f32
  } -> tensor<64xf32>
  return %r1, %r2, %r3, %at : tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xi32>
}

// -----

#id = affine_map<(d0) -> (d0)>

// A chain of elementwise steps fuses up to max-fused-ops ops per body (each
// fusion clones both bodies: a long unrolled chain made one body at n^2 cost).
// RUN: kiln-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(kiln-fuse-elementwise{max-fused-ops=4}))' | FileCheck %s --check-prefix=CAPPED
// CHECK-LABEL: func @chain
// CHECK: linalg.generic
// CHECK: arith.addf
// CHECK-NOT: linalg.generic
// CHECK: arith.addf
// CHECK-NOT: linalg.generic
// CHECK: arith.addf
// CHECK-NOT: linalg.generic
// CAPPED-LABEL: func @chain
// CAPPED: linalg.generic
// CAPPED-COUNT-2: arith.addf
// CAPPED: linalg.generic
// CAPPED: arith.addf
// CAPPED-NOT: linalg.generic
func.func @chain(%a: tensor<64xf32>) -> tensor<64xf32> {
  %e = tensor.empty() : tensor<64xf32>
  %1 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%a : tensor<64xf32>) outs(%e : tensor<64xf32>) {
  ^bb0(%x: f32, %o: f32):
    %s = arith.addf %x, %x : f32
    linalg.yield %s : f32
  } -> tensor<64xf32>
  %2 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%1 : tensor<64xf32>) outs(%e : tensor<64xf32>) {
  ^bb0(%x: f32, %o: f32):
    %s = arith.addf %x, %x : f32
    linalg.yield %s : f32
  } -> tensor<64xf32>
  %3 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%2 : tensor<64xf32>) outs(%e : tensor<64xf32>) {
  ^bb0(%x: f32, %o: f32):
    %s = arith.addf %x, %x : f32
    linalg.yield %s : f32
  } -> tensor<64xf32>
  return %3 : tensor<64xf32>
}
