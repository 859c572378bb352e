func.func @swaps(%m: memref<?xi32, strided<[?], offset: ?>>, %i: tensor<8xi32>, %v: tensor<8xi32>, %c: i32) -> (tensor<8xi32>, i32) attributes {kiln.kernel} {
  %old = kiln.atomic_swap %m[%i], %v : memref<?xi32, strided<[?], offset: ?>>[tensor<8xi32>], tensor<8xi32>
  %z = arith.constant 0 : i32
  %was = kiln.atomic_swap %m[%z], %c compare %z : i32 : memref<?xi32, strided<[?], offset: ?>>[i32], i32
  %t = kiln.atomic_rmw sum %m[%z], %c : memref<?xi32, strided<[?], offset: ?>>[i32], i32
  return %old, %was : tensor<8xi32>, i32
}
