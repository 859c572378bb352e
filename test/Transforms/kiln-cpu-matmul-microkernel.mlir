// RUN: kiln-opt %s -split-input-file --pass-pipeline="builtin.module(func.func(kiln-cpu-matmul-microkernel))" | FileCheck %s
// RUN: kiln-opt %s -split-input-file --pass-pipeline="builtin.module(func.func(kiln-cpu-matmul-microkernel{register-bits=256 registers=16}))" | FileCheck %s --check-prefix=AVX2
// RUN: kiln-opt %s -split-input-file --pass-pipeline="builtin.module(func.func(kiln-cpu-matmul-microkernel{x86-pmaddwd=1}))" | FileCheck %s --check-prefix=PAIRS
// RUN: kiln-opt %s -split-input-file --pass-pipeline="builtin.module(func.func(kiln-cpu-matmul-microkernel))" | FileCheck %s --check-prefix=NOPAIRS
// An option that leaves no register to block with is an error (register-bits=0
// divided by zero).
// RUN: not kiln-opt %s -split-input-file --pass-pipeline="builtin.module(func.func(kiln-cpu-matmul-microkernel{register-bits=0}))" 2>&1 | FileCheck %s --check-prefix=BADBITS
// BADBITS: error: kiln-cpu-matmul-microkernel: register-bits must be a positive multiple of 8 and registers positive (got 0 and 32)

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

// -----

// With x86-pmaddwd, int8 into i32 takes K two steps at a time: B is packed
// once into rows of (k, k + 1) pairs widened to i16, each A pair is broadcast as
// one 32-bit word, and pmaddwd sums both products per lane. Odd K keeps the
// widening multiply-add.
// PAIRS-LABEL: func @i8_pairs
// PAIRS: memref.alloca() : memref<8x64xi16>
// PAIRS: vector.shuffle %{{.*}}, %{{.*}} [0, 16, 1, 17, 2, 18
// PAIRS-SAME: : vector<16xi16>, vector<16xi16>
// PAIRS: scf.for %{{.*}} = %c0{{[_0-9]*}} to %c8{{[_0-9]*}} step %c1{{[_0-9]*}} iter_args
// PAIRS: vector.load %{{.*}} : memref<8x64xi16>, vector<32xi16>
// PAIRS: vector.from_elements %{{.*}}, %{{.*}} : vector<2xi16>
// PAIRS: vector.bitcast %{{.*}} : vector<2xi16> to vector<1xi32>
// PAIRS: vector.bitcast %{{.*}} : vector<16xi32> to vector<32xi16>
// PAIRS: llvm.call_intrinsic "llvm.x86.avx512.pmaddw.d.512"(%{{.*}}, %{{.*}}) : (vector<32xi16>, vector<32xi16>) -> vector<16xi32>
// PAIRS: arith.addi %{{.*}}, %{{.*}} : vector<16xi32>
// PAIRS-LABEL: func @i8_odd_k
// PAIRS-NOT: pmaddw
// PAIRS: arith.muli %{{.*}}, %{{.*}} : vector<16xi32>
// NOPAIRS-LABEL: func @i8_pairs
// NOPAIRS-NOT: pmaddw
// NOPAIRS: arith.muli %{{.*}}, %{{.*}} : vector<16xi32>
func.func @i8_pairs(%a: memref<16x16xi8>, %b: memref<16x32xi8>, %c: memref<16x32xi32>) {
  linalg.matmul ins(%a, %b : memref<16x16xi8>, memref<16x32xi8>) outs(%c : memref<16x32xi32>)
  return
}
func.func @i8_odd_k(%a: memref<16x15xi8>, %b: memref<15x32xi8>, %c: memref<16x32xi32>) {
  linalg.matmul ins(%a, %b : memref<16x15xi8>, memref<15x32xi8>) outs(%c : memref<16x32xi32>)
  return
}
