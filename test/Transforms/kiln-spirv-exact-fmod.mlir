// f32 and f64 % are fmodf and fmod taken on the integer significands: a long
// division eight (f32, in i32) or eleven (f64, in i64) bits a step in an
// scf.for, rebuilt from its bits with x's sign; no OpFRem. Vector and f16
// remainders are left alone (the front end takes narrow ones in f32).
// RUN: kiln-opt %s --kiln-spirv-remainders | FileCheck %s --check-prefix=FMOD
// FMOD-LABEL: func @fmod
// FMOD-NOT: arith.remf
// FMOD: arith.bitcast %arg0 : f32 to i32
// FMOD: %[[R0:.*]] = arith.remui
// FMOD: scf.for {{.*}} iter_args(%[[R:.*]] = %[[R0]], %[[D:.*]] = {{.*}}) -> (i32, i32)
// FMOD:   %[[S:.*]] = arith.minui %[[D]], %c8_i32
// FMOD:   arith.shli %[[R]], %[[S]]
// FMOD:   arith.remui
// FMOD: math.ctlz
// FMOD: arith.bitcast {{.*}} : i32 to f32
// FMOD: return
// FMOD-LABEL: func @fmod64
// FMOD-NOT: arith.remf
// FMOD: arith.bitcast %arg0 : f64 to i64
// FMOD: %[[R0:.*]] = arith.remui
// FMOD: scf.for {{.*}} iter_args(%[[R:.*]] = %[[R0]], %[[D:.*]] = {{.*}}) -> (i64, i64)
// FMOD:   %[[S:.*]] = arith.minui %[[D]], %c11_i64
// FMOD:   arith.shli %[[R]], %[[S]]
// FMOD:   arith.remui
// FMOD: math.ctlz
// FMOD: arith.bitcast {{.*}} : i64 to f64
// FMOD: return
// FMOD-LABEL: func @left_alone
// FMOD: arith.remf %{{.*}} : vector<4xf32>
// FMOD: arith.remf %{{.*}} : f16
module {
func.func @fmod(%x: f32, %y: f32) -> f32 {
  %r = arith.remf %x, %y : f32
  return %r : f32
}
func.func @fmod64(%x: f64, %y: f64) -> f64 {
  %r = arith.remf %x, %y : f64
  return %r : f64
}
func.func @left_alone(%x: vector<4xf32>, %y: vector<4xf32>, %a: f16, %b: f16) -> (vector<4xf32>, f16) {
  %r = arith.remf %x, %y : vector<4xf32>
  %s = arith.remf %a, %b : f16
  return %r, %s : vector<4xf32>, f16
}
}
