// RUN: kiln-opt %s --pass-pipeline="builtin.module(convert-scf-to-cf,func.func(kiln-annotate-access-loops))" | FileCheck %s --implicit-check-not=kiln.loops

// The two loops around a load marked kiln.loops_scalar = 2 get the scalar
// annotation on their latch branches, the one loop around a store marked
// kiln.loops_rolled = 1 the rolled one; the loop around both (the run-time K
// loop, say) gets none. The marks are gone.
// CHECK-DAG: #[[UNROLL:[a-z_0-9]+]] = #llvm.loop_unroll<disable = true>
// CHECK-DAG: #[[VECTORIZE:[a-z_0-9]+]] = #llvm.loop_vectorize<disable = true>
// CHECK-DAG: #[[INTERLEAVE:[a-z_0-9]+]] = #llvm.loop_interleave<count = 1 : i64>
// CHECK-DAG: #[[ROLLED:[a-z_0-9]+]] = #llvm.loop_annotation<unroll = #[[UNROLL]]>
// CHECK-DAG: #[[SCALAR:[a-z_0-9]+]] = #llvm.loop_annotation<vectorize = #[[VECTORIZE]], interleave = #[[INTERLEAVE]], unroll = #[[UNROLL]]>
// CHECK-LABEL: func @f
// CHECK: memref.load
// CHECK: cf.br ^{{.*}} {loop_annotation = #[[SCALAR]]}
// CHECK: cf.br ^{{.*}} {loop_annotation = #[[SCALAR]]}
// CHECK: memref.store
// CHECK: cf.br ^{{.*}} {loop_annotation = #[[ROLLED]]}
// CHECK: cf.br ^{{.*}}(%{{.*}} : index){{$}}
// CHECK: return
func.func @f(%m: memref<?x?xf32>, %n: index, %k: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0.0 : f32
  scf.for %t = %c0 to %k step %c1 {
    scf.for %i = %c0 to %c4 step %c1 {
      scf.for %j = %c0 to %n step %c1 {
        %v = memref.load %m[%i, %j] {kiln.loops_scalar = 2 : i64} : memref<?x?xf32>
        memref.store %v, %m[%j, %i] : memref<?x?xf32>
      }
    }
    scf.for %j = %c0 to %n step %c1 {
      memref.store %zero, %m[%t, %j] {kiln.loops_rolled = 1 : i64} : memref<?x?xf32>
    }
  }
  return
}
