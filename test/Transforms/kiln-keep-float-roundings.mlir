// The f32 emulation of bf16 and f16 arithmetic, and the f32 legalization of
// their math, mark each rounding `contract`, which lets the folder drop an
// extf(truncf(x)) pair. With the flag cleared every rounding survives.
// RUN: kiln-opt %s --pass-pipeline='builtin.module(func.func(arith-emulate-unsupported-floats{source-types=bf16,f16 target-type=f32},math-legalize-to-f32,kiln-keep-float-roundings,canonicalize))' | FileCheck %s
// Without the pass the sum's and exp's roundings are gone.
// RUN: kiln-opt %s --pass-pipeline='builtin.module(func.func(arith-emulate-unsupported-floats{source-types=bf16,f16 target-type=f32},math-legalize-to-f32,canonicalize))' | FileCheck %s --check-prefix=FOLDED

// CHECK-LABEL: func @sum_then_difference
// CHECK: %[[S:.*]] = arith.addf {{.*}} : f32
// CHECK: %[[R:.*]] = arith.truncf %[[S]] : f32 to f16
// CHECK: %[[W:.*]] = arith.extf %[[R]] : f16 to f32
// CHECK: arith.subf %[[W]], {{.*}} : f32
// FOLDED-LABEL: func @sum_then_difference
// FOLDED: %[[S:.*]] = arith.addf {{.*}} : f32
// FOLDED-NEXT: arith.subf %[[S]], {{.*}} : f32
func.func @sum_then_difference(%a: f16, %b: f16) -> f16 {
  %s = arith.addf %a, %b : f16
  %d = arith.subf %s, %a : f16
  return %d : f16
}

// CHECK-LABEL: func @converted_then_compared
// CHECK: %[[C:.*]] = arith.sitofp %{{.*}} : vector<4xi32> to vector<4xf32>
// CHECK: %[[R:.*]] = arith.truncf %[[C]] : vector<4xf32> to vector<4xbf16>
// CHECK: %[[W:.*]] = arith.extf %[[R]] : vector<4xbf16> to vector<4xf32>
// CHECK: arith.cmpf oeq, %{{.*}}, %[[W]] : vector<4xf32>
// FOLDED-LABEL: func @converted_then_compared
// FOLDED: %[[C:.*]] = arith.sitofp %{{.*}} : vector<4xi32> to vector<4xf32>
// FOLDED-NEXT: arith.cmpf oeq, %{{.*}}, %[[C]] : vector<4xf32>
func.func @converted_then_compared(%a: vector<4xbf16>, %i: vector<4xi32>) -> vector<4xi1> {
  %w = arith.sitofp %i : vector<4xi32> to vector<4xbf16>
  %c = arith.cmpf oeq, %a, %w : vector<4xbf16>
  return %c : vector<4xi1>
}

// CHECK-LABEL: func @math_chain
// CHECK: %[[E:.*]] = math.exp %{{.*}} : f32
// CHECK: %[[R:.*]] = arith.truncf %[[E]] : f32 to bf16
// CHECK: %[[W:.*]] = arith.extf %[[R]] : bf16 to f32
// CHECK: math.sin %[[W]] : f32
// FOLDED-LABEL: func @math_chain
// FOLDED: %[[E:.*]] = math.exp %{{.*}} : f32
// FOLDED-NEXT: math.sin %[[E]] : f32
func.func @math_chain(%a: bf16) -> bf16 {
  %e = math.exp %a : bf16
  %s = math.sin %e : bf16
  return %s : bf16
}
