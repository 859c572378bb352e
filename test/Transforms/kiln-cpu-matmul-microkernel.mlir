// RUN: kiln-opt %s -split-input-file --pass-pipeline="builtin.module(func.func(kiln-cpu-matmul-microkernel))" | FileCheck %s
// RUN: kiln-opt %s -split-input-file --pass-pipeline="builtin.module(func.func(kiln-cpu-matmul-microkernel{register-bits=256 registers=16}))" | FileCheck %s --check-prefix=AVX2

// 512-bit registers: 8 x 32 blocks, 16 accumulators carried through the K loop,
// one B row as two vectors, eight broadcasts of A.
// CHECK-LABEL: func @f32
// CHECK: scf.for %[[I:.*]] = %c0 to %c32 step %c8
// CHECK: scf.for %[[J:.*]] = %c0 to %c64 step %c32
// CHECK-COUNT-16: vector.load %{{.*}} : memref<32x64xf32>, vector<16xf32>
// CHECK: scf.for %[[K:[^ ]*]] = %c0 to %c16{{[_0-9]*}} step %c1 iter_args({{.*}}) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
// CHECK-COUNT-2: vector.load %{{.*}}[%[[K]], %{{.*}}] : memref<16x64xf32>, vector<16xf32>
// CHECK: memref.load %{{.*}}[%[[I]], %[[K]]] : memref<32x16xf32>
// CHECK: vector.broadcast %{{.*}} : f32 to vector<16xf32>
// CHECK-COUNT-2: vector.fma
// CHECK-COUNT-16: vector.store
// CHECK-NOT: linalg.matmul
// 256-bit registers: 4 x 16 blocks of vector<8xf32> (8 accumulators + 2 + 1 <= 16).
// AVX2-LABEL: func @f32
// AVX2: scf.for %{{.*}} = %c0 to %c32 step %c4
// AVX2: scf.for %{{.*}} = %c0 to %c64 step %c16
// AVX2-COUNT-8: vector.load %{{.*}} : memref<32x64xf32>, vector<8xf32>
func.func @f32(%a: memref<32x16xf32>, %b: memref<16x64xf32>, %c: memref<32x64xf32>) {
  linalg.matmul ins(%a, %b : memref<32x16xf32>, memref<16x64xf32>) outs(%c : memref<32x64xf32>)
  return
}

// -----

// f16 inputs accumulate in f32: B vectors and A scalars are extended first.
// CHECK-LABEL: func @f16_to_f32
// CHECK: vector.load %{{.*}} : memref<8x32xf16>, vector<16xf16>
// CHECK: arith.extf %{{.*}} : vector<16xf16> to vector<16xf32>
// CHECK: memref.load %{{.*}} : memref<16x8xf16>
// CHECK: arith.extf %{{.*}} : f16 to f32
// CHECK: vector.fma
func.func @f16_to_f32(%a: memref<16x8xf16>, %b: memref<8x32xf16>, %c: memref<16x32xf32>) {
  linalg.matmul ins(%a, %b : memref<16x8xf16>, memref<8x32xf16>) outs(%c : memref<16x32xf32>)
  return
}

// -----

// Integers multiply and add (no fma); i8 inputs sign-extend to the i32 accumulator.
// CHECK-LABEL: func @i8_to_i32
// CHECK: arith.extsi %{{.*}} : vector<16xi8> to vector<16xi32>
// CHECK: arith.muli %{{.*}} : vector<16xi32>
// CHECK: arith.addi %{{.*}} : vector<16xi32>
// CHECK-NOT: vector.fma
func.func @i8_to_i32(%a: memref<8x4xi8>, %b: memref<4x16xi8>, %c: memref<8x16xi32>) {
  linalg.matmul ins(%a, %b : memref<8x4xi8>, memref<4x16xi8>) outs(%c : memref<8x16xi32>)
  return
}

// -----

// Left alone: a width that is no multiple of one vector, a buffer with unknown
// row stride, and tensors (the pass runs after bufferization).
// CHECK-LABEL: func @left_alone
// CHECK-COUNT-3: linalg.matmul
// CHECK-NOT: vector.fma
func.func @left_alone(%a: memref<8x8xf32>, %b: memref<8x12xf32>, %c: memref<8x12xf32>,
                      %s: memref<8x16xf32, strided<[?, ?]>>, %d: memref<8x16xf32>,
                      %ta: tensor<8x8xf32>, %tb: tensor<8x16xf32>, %tc: tensor<8x16xf32>) -> tensor<8x16xf32> {
  linalg.matmul ins(%a, %b : memref<8x8xf32>, memref<8x12xf32>) outs(%c : memref<8x12xf32>)
  linalg.matmul ins(%a, %s : memref<8x8xf32>, memref<8x16xf32, strided<[?, ?]>>) outs(%d : memref<8x16xf32>)
  %r = linalg.matmul ins(%ta, %tb : tensor<8x8xf32>, tensor<8x16xf32>) outs(%tc : tensor<8x16xf32>) -> tensor<8x16xf32>
  return %r : tensor<8x16xf32>
}
