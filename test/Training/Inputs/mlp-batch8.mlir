// A small MLP classifier at batch 8 (see accumulation-equivalence.mlir).
func.func @mlp() -> tensor<f32> {
  %x = rtx.input "x" : tensor<8x13xf32>
  %labels = rtx.input "labels" : tensor<8xi32>
  %w1 = rtx.param "fc1.weight" normal(0.0, 0.2) : tensor<7x13xf32>
  %b1 = rtx.param "fc1.bias" uniform(-0.1, 0.1) : tensor<7xf32>
  %h = rtx.linear %x, %w1, %b1 : tensor<8x13xf32>, tensor<7x13xf32>, tensor<7xf32> -> tensor<8x7xf32>
  %a = rtx.gelu %h : tensor<8x7xf32>
  %w2 = rtx.param "fc2.weight" normal(0.0, 0.2) : tensor<5x7xf32>
  %z = rtx.linear %a, %w2 : tensor<8x7xf32>, tensor<5x7xf32> -> tensor<8x5xf32>
  %loss = rtx.cross_entropy %z, %labels : tensor<8x5xf32>, tensor<8xi32> -> tensor<f32>
  return %loss : tensor<f32>
}
