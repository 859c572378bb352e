// RUN: kiln-opt %s -split-input-file -verify-diagnostics
// One case per verifier message of the kiln dialect.

func.func @arange_empty() {
  // expected-error @+1 {{requires end > start, got 4, 4}}
  %0 = kiln.arange 4, 4 : tensor<1xi32>
  return
}

// -----

func.func @arange_length() {
  // expected-error @+1 {{result must be a 1-D tile of 8 elements}}
  %0 = kiln.arange 0, 8 : tensor<16xi32>
  return
}

// -----

func.func @program_id_axis() {
  // expected-error @+1 {{attribute 'axis' failed to satisfy constraint}}
  %0 = kiln.program_id 3 : i32
  return
}

// -----

func.func @broadcast_rank(%t: tensor<4xf32>) {
  // expected-error @+1 {{source rank 1 differs from result rank 2}}
  %0 = kiln.broadcast %t : tensor<4xf32> -> tensor<2x4xf32>
  return
}

// -----

func.func @broadcast_dim(%t: tensor<2x4xf32>) {
  // expected-error @+1 {{cannot broadcast dimension 0 of size 2 to 3}}
  %0 = kiln.broadcast %t : tensor<2x4xf32> -> tensor<3x4xf32>
  return
}

// -----

func.func @expand_axis(%t: tensor<4xf32>) {
  // expected-error @+1 {{axis 2 out of range for rank 1}}
  %0 = kiln.expand_dims %t, 2 : tensor<4xf32> -> tensor<4x1xf32>
  return
}

// -----

func.func @expand_shape(%t: tensor<4xf32>) {
  // expected-error @+1 {{result shape must be [1, 4]}}
  %0 = kiln.expand_dims %t, 0 : tensor<4xf32> -> tensor<4x1xf32>
  return
}

// -----

func.func @reshape_count(%t: tensor<4x4xf32>) {
  // expected-error @+1 {{cannot reshape [4, 4] to [15]: element counts differ}}
  %0 = kiln.reshape %t : tensor<4x4xf32> -> tensor<15xf32>
  return
}

// -----

func.func @trans_size(%t: tensor<4x8xf32>) {
  // expected-error @+1 {{permutation has 1 entries for rank 2}}
  %0 = kiln.trans %t [0] : tensor<4x8xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @trans_perm(%t: tensor<4x8xf32>) {
  // expected-error @+1 {{perm is not a permutation of 0..1}}
  %0 = kiln.trans %t [1, 1] : tensor<4x8xf32> -> tensor<8x8xf32>
  return
}

// -----

func.func @trans_result(%t: tensor<4x8xf32>) {
  // expected-error @+1 {{result dimension 0 must be 8}}
  %0 = kiln.trans %t [1, 0] : tensor<4x8xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @trans_result_rank(%t: tensor<4x8xf32>) {
  // expected-error @+1 {{result rank 0 differs from source rank 2}}
  %0 = kiln.trans %t [1, 0] : tensor<4x8xf32> -> tensor<f32>
  return
}

// -----

func.func @reduce_axis(%t: tensor<4x8xf32>) {
  // expected-error @+1 {{axis 2 out of range for rank 2}}
  %0 = kiln.reduce sum %t, 2 : tensor<4x8xf32> -> tensor<4xf32>
  return
}

// -----

func.func @reduce_type(%t: tensor<4x8xf32>) {
  // expected-error @+1 {{result element type must match the source}}
  %0 = kiln.reduce sum %t, 1 : tensor<4x8xf32> -> tensor<4xf16>
  return
}

// -----

func.func @reduce_shape(%t: tensor<4x8xf32>) {
  // expected-error @+1 {{result must have shape [4] (a scalar for rank 1)}}
  %0 = kiln.reduce sum %t, 1 : tensor<4x8xf32> -> tensor<8xf32>
  return
}

// -----

func.func @dot_rank(%a: tensor<4xf32>, %b: tensor<4x4xf32>, %c: tensor<4x4xf32>) {
  // expected-error @+1 {{operands must be 2-D tiles}}
  %0 = kiln.dot %a, %b, %c : tensor<4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  return
}

// -----

func.func @dot_inner(%a: tensor<4x8xf32>, %b: tensor<4x4xf32>, %c: tensor<4x4xf32>) {
  // expected-error @+1 {{inner dimensions differ: 8 vs 4}}
  %0 = kiln.dot %a, %b, %c : tensor<4x8xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  return
}

// -----

func.func @dot_tf32_operands(%a: tensor<4x8xf16>, %b: tensor<8x4xf16>, %c: tensor<4x4xf32>) {
  // expected-error @+1 {{tf32 rounding applies to f32 operands, got 'f16'}}
  %0 = kiln.dot %a, %b, %c {tf32} : tensor<4x8xf16>, tensor<8x4xf16> -> tensor<4x4xf32>
  return
}

// -----

func.func @dot_tf32_accumulator(%a: tensor<4x8xf32>, %b: tensor<8x4xf32>, %c: tensor<4x4xf16>) {
  // expected-error @+1 {{a tf32 dot accumulates in f32, got 'f16'}}
  %0 = kiln.dot %a, %b, %c {tf32} : tensor<4x8xf32>, tensor<8x4xf32> -> tensor<4x4xf16>
  return
}

// -----

func.func @dot_acc(%a: tensor<4x8xf32>, %b: tensor<8x4xf32>, %c: tensor<4x8xf32>) {
  // expected-error @+1 {{accumulator must be 4x4}}
  %0 = kiln.dot %a, %b, %c : tensor<4x8xf32>, tensor<8x4xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @dot_types(%a: tensor<4x8xf16>, %b: tensor<8x4xf32>, %c: tensor<4x4xf32>) {
  // expected-error @+1 {{a and b must have the same element type}}
  %0 = kiln.dot %a, %b, %c : tensor<4x8xf16>, tensor<8x4xf32> -> tensor<4x4xf32>
  return
}

// -----

func.func @load_rank(%m: memref<?x?xf32, strided<[?, ?], offset: ?>>, %i: tensor<8xi32>) {
  // expected-error @+1 {{expects 2 indices, got 1}}
  %0 = kiln.load %m[%i] : memref<?x?xf32, strided<[?, ?], offset: ?>>[tensor<8xi32>] -> tensor<8xf32>
  return
}

// -----

func.func @load_index_shape(%m: memref<?xf32, strided<[?], offset: ?>>, %i: tensor<4xi32>) {
  // expected-error @+1 {{index shape must match the accessed shape [8]}}
  %0 = kiln.load %m[%i] : memref<?xf32, strided<[?], offset: ?>>[tensor<4xi32>] -> tensor<8xf32>
  return
}

// -----

func.func @load_mask_shape(%m: memref<?xf32, strided<[?], offset: ?>>, %i: tensor<8xi32>, %k: tensor<4xi1>) {
  // expected-error @+1 {{mask shape must match the accessed shape [8]}}
  %0 = kiln.load %m[%i] mask %k : tensor<4xi1> : memref<?xf32, strided<[?], offset: ?>>[tensor<8xi32>] -> tensor<8xf32>
  return
}

// -----

func.func @load_elem(%m: memref<?xf32, strided<[?], offset: ?>>, %i: tensor<8xi32>) {
  // expected-error @+1 {{result element type must match the memory}}
  %0 = kiln.load %m[%i] : memref<?xf32, strided<[?], offset: ?>>[tensor<8xi32>] -> tensor<8xf16>
  return
}

// -----

func.func @load_other(%m: memref<?xf32, strided<[?], offset: ?>>, %i: tensor<8xi32>, %o: tensor<4xf32>) {
  // expected-error @+1 {{'other' must have the result type}}
  %0 = kiln.load %m[%i] other %o : tensor<4xf32> : memref<?xf32, strided<[?], offset: ?>>[tensor<8xi32>] -> tensor<8xf32>
  return
}

// -----

func.func @store_elem(%m: memref<?xf32, strided<[?], offset: ?>>, %i: tensor<8xi32>, %v: tensor<8xi32>) {
  // expected-error @+1 {{value element type must match the memory}}
  kiln.store %m[%i], %v : memref<?xf32, strided<[?], offset: ?>>[tensor<8xi32>], tensor<8xi32>
  return
}

// -----

func.func @block_offsets(%m: memref<?x?xf32, strided<[?, ?], offset: ?>>, %o: i32) {
  // expected-error @+1 {{expects 2 offsets, got 1}}
  %0 = kiln.load_block %m[%o] : memref<?x?xf32, strided<[?, ?], offset: ?>> -> tensor<4x4xf32>
  return
}

// -----

func.func @block_rank(%m: memref<?x?xf32, strided<[?, ?], offset: ?>>, %o: i32) {
  // expected-error @+1 {{block rank 1 differs from memory rank 2}}
  %0 = kiln.load_block %m[%o, %o] : memref<?x?xf32, strided<[?, ?], offset: ?>> -> tensor<4xf32>
  return
}

// -----

func.func @block_elem(%m: memref<?x?xf32, strided<[?, ?], offset: ?>>, %o: i32) {
  // expected-error @+1 {{block element type must match the memory}}
  %0 = kiln.load_block %m[%o, %o] : memref<?x?xf32, strided<[?, ?], offset: ?>> -> tensor<4x4xf16>
  return
}

// -----

func.func @block_other(%m: memref<?x?xf32, strided<[?, ?], offset: ?>>, %o: i32, %x: f16) {
  // expected-error @+1 {{'other' must be a scalar of the element type}}
  %0 = kiln.load_block %m[%o, %o] other %x : f16 : memref<?x?xf32, strided<[?, ?], offset: ?>> -> tensor<4x4xf32>
  return
}

// -----

func.func @scan_axis(%t: tensor<4x8xf32>) {
  // expected-error @+1 {{axis 2 out of range for rank 2}}
  %0 = kiln.scan sum %t, 2 : tensor<4x8xf32>
  return
}

// -----

func.func @atomic_elem(%m: memref<?xf32, strided<[?], offset: ?>>, %i: tensor<8xi32>, %v: tensor<8xi32>) {
  // expected-error @+1 {{value element type must match the memory}}
  kiln.atomic_rmw sum %m[%i], %v : memref<?xf32, strided<[?], offset: ?>>[tensor<8xi32>], tensor<8xi32>
  return
}

// -----

func.func @atomic_prod(%m: memref<?xi32, strided<[?], offset: ?>>, %i: tensor<8xi32>, %v: tensor<8xi32>) {
  // expected-error @+1 {{kind must be sum, max, min, umax, umin, and, or or xor}}
  kiln.atomic_rmw prod %m[%i], %v : memref<?xi32, strided<[?], offset: ?>>[tensor<8xi32>], tensor<8xi32>
  return
}

// -----

func.func @atomic_bitwise_float(%m: memref<?xf32, strided<[?], offset: ?>>, %i: tensor<8xi32>, %v: tensor<8xf32>) {
  // expected-error @+1 {{'xor' atomics need an integer element type, got 'f32'}}
  kiln.atomic_rmw xor %m[%i], %v : memref<?xf32, strided<[?], offset: ?>>[tensor<8xi32>], tensor<8xf32>
  return
}

// -----

func.func @reduce_bitwise_float(%t: tensor<4x8xf32>) {
  // expected-error @+1 {{'xor' reductions need integers, got 'f32'}}
  %0 = kiln.reduce xor %t, 1 : tensor<4x8xf32> -> tensor<4xf32>
  return
}

// -----

func.func @reduce_umax_float(%t: tensor<4x8xf32>) {
  // expected-error @+1 {{'umax' reductions need integers, got 'f32'}}
  %0 = kiln.reduce umax %t, 1 : tensor<4x8xf32> -> tensor<4xf32>
  return
}

// -----

func.func @scan_bitwise_float(%t: tensor<8xf32>) {
  // expected-error @+1 {{'and' scans need integers, got 'f32'}}
  %0 = kiln.scan and %t, 0 : tensor<8xf32>
  return
}

// -----

func.func @atomic_type(%m: memref<?xi16, strided<[?], offset: ?>>, %i: tensor<8xi32>, %v: tensor<8xi16>) {
  // expected-error @+1 {{element type must be i32, i64, f16, bf16, f32 or f64, got 'i16'}}
  kiln.atomic_rmw sum %m[%i], %v : memref<?xi16, strided<[?], offset: ?>>[tensor<8xi32>], tensor<8xi16>
  return
}

// -----

func.func private @add(f32, f32) -> f32
func.func private @add_tiles(tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
func.func @associative_scan_axis(%t: tensor<4x8xf32>) {
  // expected-error @+1 {{axis 2 out of range for rank 2}}
  %0 = kiln.associative_scan @add, @add_tiles(%t) axis 2 : tensor<4x8xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @associative_scan_shapes(%a: tensor<4x8xf32>, %b: tensor<8x4xf32>) {
  // expected-error @+1 {{sources must have one shape}}
  %0:2 = kiln.associative_scan @add, @add_tiles(%a, %b) axis 0 : tensor<4x8xf32>, tensor<8x4xf32> -> tensor<4x8xf32>, tensor<8x4xf32>
  return
}

// -----

func.func @associative_scan_results(%t: tensor<4x8xf32>) {
  // expected-error @+1 {{results must have the sources' types}}
  %0 = kiln.associative_scan @add, @add_tiles(%t) axis 0 : tensor<4x8xf32> -> tensor<4x8xf16>
  return
}

// -----

func.func @associative_scan_missing(%t: tensor<8xf32>) {
  // expected-error @+1 {{combine function 'nowhere' not found}}
  %0 = kiln.associative_scan @nowhere, @nowhere_tiles(%t) axis 0 : tensor<8xf32> -> tensor<8xf32>
  return
}

// -----

func.func private @less(f32, f32) -> i1
func.func private @less_tiles(tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
func.func @associative_scan_signature(%t: tensor<8xf32>) {
  // expected-error @+1 {{combine function 'less' must take two of each source's element type and return one}}
  %0 = kiln.associative_scan @less, @less_tiles(%t) axis 0 : tensor<8xf32> -> tensor<8xf32>
  return
}

// -----

func.func private @add(f32, f32) -> f32
func.func private @add_rows(tensor<1x8xf32>, tensor<1x8xf32>) -> tensor<1x8xf32>
func.func @associative_scan_tile_signature(%t: tensor<8xf32>) {
  // expected-error @+1 {{combine function 'add_rows' must take two of each source's tile type and return one}}
  %0 = kiln.associative_scan @add, @add_rows(%t) axis 0 : tensor<8xf32> -> tensor<8xf32>
  return
}

// -----

// Tiles have static, positive sizes: a dynamic one crashed the GPU lowering.
func.func @splat_dynamic(%s: f32) {
  // expected-error @+1 {{must be tile (tensor of static, positive sizes)}}
  %0 = kiln.splat %s : tensor<?xf32>
  return
}

// -----

func.func @splat_empty(%s: f32) {
  // expected-error @+1 {{must be tile (tensor of static, positive sizes)}}
  %0 = kiln.splat %s : tensor<0xf32>
  return
}
