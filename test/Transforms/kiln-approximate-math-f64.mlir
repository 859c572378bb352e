// f64 math (GLSL.std.450 has none of it) becomes f64 arithmetic: exp through
// the exponent bits (i64 shifted into place), sin through an scf.if whose
// long branch is the Payne-Hanek reduction (2/pi's 24-bit digits, the first
// 0xa2f983, picked by selects), pow's positive-base core through double-double products (masked
// splits). f32 exp and sin are the same functions with i32 bits, shorter series,
// and for sin's long branch 64-bit integer products. expm1 and log1p of every
// type take series near 0 (a select on |x|). Cody and Waite's reduction (the
// else branch) rounds x 2/pi to an integer through trunc (floor and ceil), not
// lavapipe's f64 RoundEven, which rounded 3.5 to 3.
// RUN: kiln-opt %s --kiln-approximate-math | FileCheck %s
// CHECK-LABEL: func @f64
// CHECK: %[[G0:.*]] = arith.constant 0x41645F3060000000 : f64
// CHECK-NOT: math.exp {{.*}} : f64
// CHECK: arith.shli {{.*}} : i64
// CHECK: arith.bitcast {{.*}} : i64 to f64
// CHECK: scf.if {{.*}} -> (f64, f64, i64)
// CHECK: arith.divui
// CHECK: arith.select %{{.*}}, %[[G0]]
// CHECK: } else {
// CHECK-NOT: math.roundeven
// CHECK: math.floor {{.*}} : f64
// CHECK: math.ceil {{.*}} : f64
// CHECK: arith.cmpf one
// CHECK: arith.andi {{.*}} : i64
// CHECK-NOT: math.sin
// CHECK-NOT: math.powf
// CHECK-NOT: math.erf
// CHECK: return
func.func @f64(%x: f64, %y: f64) -> (f64, f64, f64, f64) {
  %e = math.exp %x : f64
  %s = math.sin %x : f64
  %p = math.powf %x, %y : f64
  %r = math.erf %x : f64
  return %e, %s, %p, %r : f64, f64, f64, f64
}
// CHECK-LABEL: func @f32
// CHECK-NOT: math.exp %arg0
// CHECK: arith.shli {{.*}} : i32
// CHECK: arith.bitcast {{.*}} : i32 to f32
// CHECK: scf.if {{.*}} -> (f32, f32, i32)
// CHECK: arith.muli {{.*}} : i64
// CHECK: } else {
// CHECK-NOT: math.sin
// CHECK-NOT: math.expm1
// CHECK-NOT: math.log1p
// CHECK: math.absf
// CHECK: arith.cmpf olt
// CHECK: return
func.func @f32(%x: f32) -> (f32, f32, f32, f32) {
  %e = math.exp %x : f32
  %s = math.sin %x : f32
  %m = math.expm1 %x : f32
  %l = math.log1p %x : f32
  return %e, %s, %m, %l : f32, f32, f32, f32
}
