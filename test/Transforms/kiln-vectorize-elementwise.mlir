// RUN: kiln-opt %s -split-input-file --pass-pipeline="builtin.module(func.func(kiln-vectorize-elementwise))" | FileCheck %s
// RUN: kiln-opt %s -split-input-file --pass-pipeline="builtin.module(func.func(kiln-vectorize-elementwise{max-elements=16}))" | FileCheck %s --check-prefix=SMALL

#id = affine_map<(d0) -> (d0)>

// Straight-line math on a tile becomes whole-tile vector ops.
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
