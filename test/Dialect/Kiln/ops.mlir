// RUN: kiln-opt %s | kiln-opt | FileCheck %s
// Round trip: every kiln op prints in its custom form and parses back.

!mem1 = memref<?xf32, strided<[?], offset: ?>>
!mem2 = memref<?x?xf32, strided<[?, ?], offset: ?>>

// CHECK-LABEL: func @identity
func.func @identity() -> (i32, i32) {
  // CHECK: kiln.program_id 0 : i32
  %0 = kiln.program_id 0 : i32
  // CHECK: kiln.num_programs 2 : i32
  %1 = kiln.num_programs 2 : i32
  return %0, %1 : i32, i32
}

// CHECK-LABEL: func @shapes
func.func @shapes(%s: f32, %t: tensor<4x8xf32>) -> (tensor<128xi32>, tensor<4x8xf32>, tensor<32x8xf32>, tensor<4x1x8xf32>, tensor<32xf32>, tensor<8x4xf32>) {
  // CHECK: kiln.arange 0, 128 : tensor<128xi32>
  %a = kiln.arange 0, 128 : tensor<128xi32>
  // A negative start is a signed i32 (it was read as 4294967293 and refused).
  // CHECK: kiln.arange -3, 5 : tensor<8xi32>
  %neg = kiln.arange -3, 5 : tensor<8xi32>
  // CHECK: kiln.splat %{{.*}} : tensor<4x8xf32>
  %b = kiln.splat %s : tensor<4x8xf32>
  %row = kiln.reshape %t : tensor<4x8xf32> -> tensor<32xf32>
  %one = kiln.reshape %row : tensor<32xf32> -> tensor<1x32xf32>
  %back = kiln.reshape %one : tensor<1x32xf32> -> tensor<4x8xf32>
  %r = kiln.reshape %back : tensor<4x8xf32> -> tensor<32x1xf32>
  // CHECK: kiln.broadcast %{{.*}} : tensor<32x1xf32> -> tensor<32x8xf32>
  %c = kiln.broadcast %r : tensor<32x1xf32> -> tensor<32x8xf32>
  // CHECK: kiln.expand_dims %{{.*}}, 1 : tensor<4x8xf32> -> tensor<4x1x8xf32>
  %d = kiln.expand_dims %t, 1 : tensor<4x8xf32> -> tensor<4x1x8xf32>
  // CHECK: kiln.trans %{{.*}} [1, 0] : tensor<4x8xf32> -> tensor<8x4xf32>
  %e = kiln.trans %t [1, 0] : tensor<4x8xf32> -> tensor<8x4xf32>
  return %a, %b, %c, %d, %row, %e : tensor<128xi32>, tensor<4x8xf32>, tensor<32x8xf32>, tensor<4x1x8xf32>, tensor<32xf32>, tensor<8x4xf32>
}

// CHECK-LABEL: func @reduce_dot
func.func @reduce_dot(%t: tensor<4x8xf32>, %a: tensor<16x8xf16>, %b: tensor<8x32xf16>, %acc: tensor<16x32xf32>) -> (tensor<8xf32>, f32, tensor<16x32xf32>) {
  // CHECK: kiln.reduce max %{{.*}}, 0 : tensor<4x8xf32> -> tensor<8xf32>
  %m = kiln.reduce max %t, 0 : tensor<4x8xf32> -> tensor<8xf32>
  // CHECK: kiln.reduce sum %{{.*}}, 0 : tensor<8xf32> -> f32
  %s = kiln.reduce sum %m, 0 : tensor<8xf32> -> f32
  // CHECK: kiln.scan prod %{{.*}}, 1 : tensor<4x8xf32>
  %p = kiln.scan prod %t, 1 : tensor<4x8xf32>
  // CHECK: kiln.dot %{{.*}}, %{{.*}}, %{{.*}} : tensor<16x8xf16>, tensor<8x32xf16> -> tensor<16x32xf32>
  %c = kiln.dot %a, %b, %acc : tensor<16x8xf16>, tensor<8x32xf16> -> tensor<16x32xf32>
  return %m, %s, %c : tensor<8xf32>, f32, tensor<16x32xf32>
}

// CHECK-LABEL: func @memory
func.func @memory(%x: !mem2, %y: !mem1, %i: tensor<64xi32>, %j: tensor<64xi32>, %m: tensor<64xi1>, %o: tensor<64xf32>, %r: i32, %c: i32) {
  // CHECK: kiln.load %{{.*}}[%{{.*}}, %{{.*}}] mask %{{.*}} : tensor<64xi1> other %{{.*}} : tensor<64xf32>
  %v = kiln.load %x[%i, %j] mask %m : tensor<64xi1> other %o : tensor<64xf32> : !mem2[tensor<64xi32>, tensor<64xi32>] -> tensor<64xf32>
  // CHECK: kiln.load %{{.*}}[%{{.*}}] : {{.*}} -> f32
  %s = kiln.load %y[%r] : !mem1[i32] -> f32
  // CHECK: kiln.store %{{.*}}[%{{.*}}], %{{.*}} mask %{{.*}} : tensor<64xi1>
  kiln.store %y[%i], %v mask %m : tensor<64xi1> : !mem1[tensor<64xi32>], tensor<64xf32>
  // CHECK: kiln.load_block %{{.*}}[%{{.*}}, %{{.*}}] other %{{.*}} : f32 : {{.*}} -> tensor<16x16xf32>
  %b = kiln.load_block %x[%r, %c] other %s : f32 : !mem2 -> tensor<16x16xf32>
  // CHECK: kiln.store_block %{{.*}}[%{{.*}}, %{{.*}}], %{{.*}} : {{.*}}, tensor<16x16xf32>
  kiln.store_block %x[%r, %c], %b : !mem2, tensor<16x16xf32>
  // CHECK: kiln.atomic_rmw sum %{{.*}}[%{{.*}}], %{{.*}} mask %{{.*}} : tensor<64xi1> : {{.*}}[tensor<64xi32>], tensor<64xf32>
  kiln.atomic_rmw sum %y[%i], %v mask %m : tensor<64xi1> : !mem1[tensor<64xi32>], tensor<64xf32>
  // CHECK: kiln.atomic_rmw max %{{.*}}[%{{.*}}], %{{.*}} : {{.*}}[i32], f32
  kiln.atomic_rmw max %y[%r], %s : !mem1[i32], f32
  return
}

// CHECK-LABEL: func @associative_scan
// CHECK: kiln.associative_scan @step, @step_tiles(%{{.*}}, %{{.*}}) axis 1 : tensor<4x8xf32>, tensor<4x8xi32> -> tensor<4x8xf32>, tensor<4x8xi32>
// CHECK: kiln.associative_scan @step, @step_tiles(%{{.*}}, %{{.*}}) axis 0 reverse : tensor<4x8xf32>, tensor<4x8xi32> -> tensor<4x8xf32>, tensor<4x8xi32>
func.func private @step(f32, i32, f32, i32) -> (f32, i32)
func.func private @step_tiles(tensor<4x8xf32>, tensor<4x8xi32>, tensor<4x8xf32>, tensor<4x8xi32>)
    -> (tensor<4x8xf32>, tensor<4x8xi32>)
func.func @associative_scan(%a: tensor<4x8xf32>, %b: tensor<4x8xi32>) {
  %s:2 = kiln.associative_scan @step, @step_tiles(%a, %b) axis 1 : tensor<4x8xf32>, tensor<4x8xi32> -> tensor<4x8xf32>, tensor<4x8xi32>
  %r:2 = kiln.associative_scan @step, @step_tiles(%a, %b) axis 0 reverse : tensor<4x8xf32>, tensor<4x8xi32> -> tensor<4x8xf32>, tensor<4x8xi32>
  return
}
