// RUN: kiln-opt %s --pass-pipeline="builtin.module(func.func(kiln-expand-f8))" | FileCheck %s

// fp8 conversions become integer arithmetic on the bits (scalars and vectors);
// other float conversions are left alone. test/e2e/F8Test.cpp runs them.
// CHECK-LABEL: func @decode
// CHECK: arith.bitcast %{{.*}} : vector<8xf8E4M3FN> to vector<8xi8>
// CHECK: arith.extui %{{.*}} : vector<8xi8> to vector<8xi32>
// CHECK: arith.bitcast %{{.*}} : vector<8xi32> to vector<8xf32>
// CHECK-NOT: arith.extf %{{.*}} : vector<8xf8E4M3FN>
func.func @decode(%x: vector<8xf8E4M3FN>) -> vector<8xf32> {
  %y = arith.extf %x : vector<8xf8E4M3FN> to vector<8xf32>
  return %y : vector<8xf32>
}

// The e5m2 encoder rounds subnormal results with the FPU: adding 2^7 (0x43000000),
// whose f32 ulp is e5m2's smallest subnormal; the result saturates at 0x7b.
// CHECK-LABEL: func @encode
// CHECK: arith.constant 1124073472 : i32
// CHECK: arith.addf
// CHECK: arith.constant 123 : i32
// CHECK: arith.minui
// CHECK: arith.trunci %{{.*}} : i32 to i8
// CHECK: arith.bitcast %{{.*}} : i8 to f8E5M2
// CHECK: arith.truncf %{{.*}} : f32 to f16
func.func @encode(%x: f32) -> (f8E5M2, f16) {
  %y = arith.truncf %x : f32 to f8E5M2
  %h = arith.truncf %x : f32 to f16
  return %y, %h : f8E5M2, f16
}
