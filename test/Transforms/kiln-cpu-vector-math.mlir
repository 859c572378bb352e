// RUN: kiln-opt %s --pass-pipeline="builtin.module(func.func(kiln-cpu-vector-math))" | FileCheck %s

// f32 vector exp, log and tanh become polynomial vector arithmetic; scalars
// and other element types keep their math ops (libm calls later).
// CHECK-LABEL: func @vector_math
// CHECK-NOT: math.exp %{{.*}} : vector<16xf32>
// CHECK-NOT: math.log %{{.*}} : vector<16xf32>
// CHECK-NOT: math.tanh %{{.*}} : vector<16xf32>
// CHECK: math.fma %{{.*}} : vector<16xf32>
// CHECK: math.exp %{{.*}} : f32
// CHECK: math.exp %{{.*}} : vector<16xf64>
func.func @vector_math(%v: vector<16xf32>, %s: f32, %d: vector<16xf64>)
    -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, f32, vector<16xf64>) {
  %e = math.exp %v : vector<16xf32>
  %l = math.log %v : vector<16xf32>
  %t = math.tanh %v : vector<16xf32>
  %se = math.exp %s : f32
  %de = math.exp %d : vector<16xf64>
  return %e, %l, %t, %se, %de : vector<16xf32>, vector<16xf32>, vector<16xf32>, f32, vector<16xf64>
}

// An f16 fma (scalar or vector) is rounded to odd in f32, then once to f16: no
// math.fma on f16 is left for LLVM to widen and round twice.
// CHECK-LABEL: func @f16_fma
// CHECK-NOT: math.fma {{.*}} : f16
// CHECK: arith.extf {{.*}} : f16 to f32
// CHECK: arith.bitcast {{.*}} : f32 to i32
// CHECK: arith.truncf {{.*}} : f32 to f16
// CHECK: arith.truncf {{.*}} : vector<8xf32> to vector<8xf16>
// CHECK-NOT: math.fma {{.*}}f16
func.func @f16_fma(%a: f16, %b: f16, %c: f16, %v: vector<8xf16>) -> (f16, vector<8xf16>) {
  %0 = math.fma %a, %b, %c : f16
  %1 = math.fma %v, %v, %v : vector<8xf16>
  return %0, %1 : f16, vector<8xf16>
}
