// RUN: kiln-opt %s --kiln-spirv-remainders | FileCheck %s
// RUN: kiln-opt %s --kiln-spirv-remainders --convert-arith-to-spirv | FileCheck %s --check-prefix=SPIRV

// x % y reads its sign from x < 0, not from x == |x| (which also holds for
// INT_MIN, whose absolute value is itself): MLIR 19's own emulation gave
// INT_MIN % 1000 = 648. |INT_MIN| wraps to INT_MIN, 2^31 when read unsigned.
// CHECK-LABEL: func @rem
// CHECK-NOT: arith.remsi
// CHECK: %[[ZERO:.*]] = arith.constant 0 : i32
// CHECK: %[[XNEG:.*]] = arith.cmpi slt, %arg0, %[[ZERO]] : i32
// CHECK: %[[MX:.*]] = arith.subi %[[ZERO]], %arg0 : i32
// CHECK: %[[AX:.*]] = arith.select %[[XNEG]], %[[MX]], %arg0 : i32
// CHECK: %[[YNEG:.*]] = arith.cmpi slt, %arg1, %[[ZERO]] : i32
// CHECK: %[[MY:.*]] = arith.subi %[[ZERO]], %arg1 : i32
// CHECK: %[[AY:.*]] = arith.select %[[YNEG]], %[[MY]], %arg1 : i32
// CHECK: %[[R:.*]] = arith.remui %[[AX]], %[[AY]] : i32
// CHECK: %[[MR:.*]] = arith.subi %[[ZERO]], %[[R]] : i32
// CHECK: arith.select %[[XNEG]], %[[MR]], %[[R]] : i32
// SPIRV-LABEL: func @rem
// SPIRV: spirv.UMod
// SPIRV-NOT: spirv.IEqual
// SPIRV-NOT: spirv.GL.SAbs
// SPIRV: return
module attributes {spirv.target_env = #spirv.target_env<#spirv.vce<v1.0, [Shader], []>, #spirv.resource_limits<>>} {
func.func @rem(%x: i32, %y: i32) -> i32 {
  %r = arith.remsi %x, %y : i32
  return %r : i32
}
// Vectors and index remainders take the same form.
// CHECK-LABEL: func @vector_and_index
// CHECK-NOT: arith.remsi
// CHECK: arith.remui %{{.*}} : vector<4xi32>
// CHECK: arith.remui %{{.*}} : index
func.func @vector_and_index(%x: vector<4xi32>, %y: vector<4xi32>, %i: index, %j: index) -> (vector<4xi32>, index) {
  %r = arith.remsi %x, %y : vector<4xi32>
  %s = arith.remsi %i, %j : index
  return %r, %s : vector<4xi32>, index
}
}
