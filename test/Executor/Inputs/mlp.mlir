// Reference (single-device) two-layer MLP used by the compare tests.
func.func @mlp(%x: tensor<8x13xf32>) -> tensor<8x13xf32> {
  %w1 = rtx.param "fc1.weight" normal(0.0, 0.2) seed 1 : tensor<6x13xf32>
  %b1 = rtx.param "fc1.bias" uniform(-0.1, 0.1) seed 2 : tensor<6xf32>
  %h = rtx.linear %x, %w1, %b1 : tensor<8x13xf32>, tensor<6x13xf32>, tensor<6xf32> -> tensor<8x6xf32>
  %a = rtx.gelu %h : tensor<8x6xf32>
  %w2 = rtx.param "fc2.weight" normal(0.0, 0.2) seed 3 : tensor<13x6xf32>
  %y = rtx.linear %a, %w2 : tensor<8x6xf32>, tensor<13x6xf32> -> tensor<8x13xf32>
  return %y : tensor<8x13xf32>
}
