// RUN: kiln-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(kiln-widen-bool-tiles))' | FileCheck %s

#id = affine_map<(d0) -> (d0)>

// The mask is produced as bytes; the select's generic truncates its argument,
// the store loop truncates the byte it extracts, and the returned tile (a user
// that needs bools) comes from a narrowing generic.
// CHECK-LABEL: func @mask
// CHECK: %[[BYTES:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<64xi8>)
// CHECK: %[[BIT:.*]] = arith.cmpi slt
// CHECK: %[[BYTE:.*]] = arith.extui %[[BIT]] : i1 to i8
// CHECK: linalg.yield %[[BYTE]] : i8
// CHECK: %[[BOOLS:.*]] = linalg.generic {{.*}} ins(%[[BYTES]] : tensor<64xi8>) outs(%{{.*}} : tensor<64xi1>)
// CHECK: arith.trunci %{{.*}} : i8 to i1
// CHECK: linalg.generic {{.*}} ins(%[[BYTES]], %{{.*}} : tensor<64xi8>, tensor<64xf32>)
// CHECK-NEXT: ^bb0(%[[M:.*]]: i8, %{{.*}}: f32, %{{.*}}: f32):
// CHECK-NEXT: %[[MB:.*]] = arith.trunci %[[M]] : i8 to i1
// CHECK-NEXT: arith.select %[[MB]]
// CHECK: scf.for
// CHECK: %[[E:.*]] = tensor.extract %[[BYTES]]
// CHECK: %[[EB:.*]] = arith.trunci %[[E]] : i8 to i1
// CHECK: scf.if %[[EB]]
// CHECK: return %{{.*}}, %[[BOOLS]]
func.func @mask(%i: tensor<64xi32>, %a: tensor<64xf32>, %n: i32, %m: memref<64xf32>)
    -> (tensor<64xf32>, tensor<64xi1>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<64xi1>
  %ef = tensor.empty() : tensor<64xf32>
  %mask = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%i : tensor<64xi32>) outs(%e1 : tensor<64xi1>) {
  ^bb0(%x: i32, %o: i1):
    %b = arith.cmpi slt, %x, %n : i32
    linalg.yield %b : i1
  } -> tensor<64xi1>
  %r = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%mask, %a : tensor<64xi1>, tensor<64xf32>) outs(%ef : tensor<64xf32>) {
  ^bb0(%b: i1, %x: f32, %o: f32):
    %s = arith.select %b, %x, %zero : f32
    linalg.yield %s : f32
  } -> tensor<64xf32>
  scf.for %k = %c0 to %c64 step %c1 {
    %on = tensor.extract %mask[%k] : tensor<64xi1>
    scf.if %on {
      %v = tensor.extract %r[%k] : tensor<64xf32>
      memref.store %v, %m[%k] : memref<64xf32>
    }
  }
  return %r, %mask : tensor<64xf32>, tensor<64xi1>
}

// -----

#id = affine_map<(d0) -> (d0)>

// A bool accumulator (its init is read) stays a bool tile.
// CHECK-LABEL: func @accumulates
// CHECK-NOT: i8
func.func @accumulates(%i: tensor<64xi1>, %acc: tensor<64xi1>) -> tensor<64xi1> {
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%i : tensor<64xi1>) outs(%acc : tensor<64xi1>) {
  ^bb0(%x: i1, %o: i1):
    %b = arith.ori %x, %o : i1
    linalg.yield %b : i1
  } -> tensor<64xi1>
  return %r : tensor<64xi1>
}
