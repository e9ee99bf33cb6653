// Single-device meaning of each program in vocab-parallel.mlir.
func.func @embedding(%t: tensor<12x5xf32>, %ids: tensor<4x7xi32>) -> tensor<4x7x5xf32> {
  %e = rtx.embedding %t, %ids : tensor<12x5xf32>, tensor<4x7xi32> -> tensor<4x7x5xf32>
  return %e : tensor<4x7x5xf32>
}
func.func @embedding_grad(%ids: tensor<4x7xi32>, %dy: tensor<4x7x5xf32>) -> tensor<12x5xf32> {
  %d = rtx.embedding_grad %ids, %dy : tensor<4x7xi32>, tensor<4x7x5xf32> -> tensor<12x5xf32>
  return %d : tensor<12x5xf32>
}
func.func @loss(%logits: tensor<4x7x12xf32>, %labels: tensor<4x7xi32>) -> (tensor<f32>, tensor<4x7x12xf32>) {
  %loss = rtx.cross_entropy %logits, %labels : tensor<4x7x12xf32>, tensor<4x7xi32> -> tensor<f32>
  %one = rtx.constant dense<1.0> : tensor<f32>
  %d = rtx.cross_entropy_grad %logits, %labels, %one : tensor<4x7x12xf32>, tensor<4x7xi32>, tensor<f32>
  return %loss, %d : tensor<f32>, tensor<4x7x12xf32>
}
