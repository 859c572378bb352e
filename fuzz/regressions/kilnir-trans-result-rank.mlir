// A kiln.trans whose result rank differs from its source's: the verifier read
// past the result shape (found by kiln-fuzz-kilnir).
func.func @trans_rank(%t: tensor<4x8xf32>) -> tensor<f32> {
  %a = kiln.trans %t [1, 0] : tensor<4x8xf32> -> tensor<f32>
  return %a : tensor<f32>
}
