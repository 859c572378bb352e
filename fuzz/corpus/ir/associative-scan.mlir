func.func private @step(%a1: f32, %x1: f32, %a2: f32, %x2: f32) -> (f32, f32) {
  %a = arith.mulf %a1, %a2 : f32
  %p = arith.mulf %x1, %a2 : f32
  %x = arith.addf %p, %x2 : f32
  return %a, %x : f32, f32
}
func.func private @step_tiles(%a1: tensor<16x8xf32>, %x1: tensor<16x8xf32>, %a2: tensor<16x8xf32>,
                              %x2: tensor<16x8xf32>) -> (tensor<16x8xf32>, tensor<16x8xf32>) {
  %a = arith.mulf %a1, %a2 : tensor<16x8xf32>
  %p = arith.mulf %x1, %a2 : tensor<16x8xf32>
  %x = arith.addf %p, %x2 : tensor<16x8xf32>
  return %a, %x : tensor<16x8xf32>, tensor<16x8xf32>
}
func.func @scan(%a: tensor<16x8xf32>, %x: tensor<16x8xf32>) -> (tensor<16x8xf32>, tensor<16x8xf32>) {
  %s:2 = kiln.associative_scan @step, @step_tiles(%a, %x) axis 0 : tensor<16x8xf32>, tensor<16x8xf32> -> tensor<16x8xf32>, tensor<16x8xf32>
  %r:2 = kiln.associative_scan @step, @step_tiles(%s#0, %s#1) axis 1 reverse : tensor<16x8xf32>, tensor<16x8xf32> -> tensor<16x8xf32>, tensor<16x8xf32>
  return %r#0, %r#1 : tensor<16x8xf32>, tensor<16x8xf32>
}
