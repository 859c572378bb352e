// RUN: kiln-opt %s -split-input-file --kiln-lower-program-ids | FileCheck %s

// Six i32 arguments are appended: program id x, y, z then grid size x, y, z.
// Argument names (kiln.name) are dropped: LLVM translation has no use for them.
// CHECK-LABEL: func @kernel
// CHECK-NOT: kiln.name
// CHECK-SAME: (%[[X:.*]]: f32, %[[P0:.*]]: i32, %[[P1:.*]]: i32, %[[P2:.*]]: i32, %[[N0:.*]]: i32, %[[N1:.*]]: i32, %[[N2:.*]]: i32)
// CHECK-NOT: kiln.program_id
// CHECK-NOT: kiln.num_programs
// CHECK: return %[[P1]], %[[N2]]
func.func @kernel(%x: f32 {kiln.name = "x"}) -> (i32, i32) attributes {kiln.kernel} {
  %0 = kiln.program_id 1 : i32
  %1 = kiln.num_programs 2 : i32
  return %0, %1 : i32, i32
}

// -----

// Functions without kiln.kernel keep their signature.
// CHECK-LABEL: func @grid_rule
// CHECK-SAME: (%{{.*}}: i32) -> i32
func.func @grid_rule(%n: i32) -> i32 {
  return %n : i32
}
