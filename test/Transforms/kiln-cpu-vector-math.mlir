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
