// w [6, 8] of the user, held as two parameters (rtx.part_of): its column
// halves w@0 and w@1 (test/Target/params-safetensors.test splits each by
// columns over "tp": seed-hints=w@0:column,w@1:column).
func.func @parts() -> tensor<f32> {
  %x = rtx.input "x" : tensor<4x6xf32>
  %w0 = rtx.param "w@0" normal(0.0, 0.1) {rtx.part_of = {name = "w", dim = 1 : i64, offset = 0 : i64}} : tensor<6x4xf32>
  %w1 = rtx.param "w@1" normal(0.0, 0.1) seed 1 {rtx.part_of = {name = "w", dim = 1 : i64, offset = 4 : i64}} : tensor<6x4xf32>
  %y0 = rtx.matmul %x, %w0 : tensor<4x6xf32>, tensor<6x4xf32> -> tensor<4x4xf32>
  %y1 = rtx.matmul %x, %w1 : tensor<4x6xf32>, tensor<6x4xf32> -> tensor<4x4xf32>
  %g = rtx.gelu %y1 : tensor<4x4xf32>
  %p = rtx.mul %y0, %g : tensor<4x4xf32>
  %s = rtx.mul %p, %p : tensor<4x4xf32>
  %l = rtx.reduce mean %s dims [0, 1] : tensor<4x4xf32> -> tensor<f32>
  return %l : tensor<f32>
}
