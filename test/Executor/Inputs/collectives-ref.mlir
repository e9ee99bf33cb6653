// Single-device meaning of each program in collectives.mlir.
func.func @all_gather(%x: tensor<8x6xf32>) -> tensor<8x6xf32> {
  return %x : tensor<8x6xf32>
}
func.func @all_reduce_sum(%x: tensor<8x6xf32>) -> tensor<8x6xf32> {
  %2 = rtx.add %x, %x : tensor<8x6xf32>
  %4 = rtx.add %2, %2 : tensor<8x6xf32>
  return %4 : tensor<8x6xf32>
}
func.func @all_reduce_mean(%x: tensor<8x6xf32>) -> tensor<8x6xf32> {
  return %x : tensor<8x6xf32>
}
func.func @reduce_scatter(%x: tensor<8x6xf32>) -> tensor<8x6xf32> {
  %2 = rtx.add %x, %x : tensor<8x6xf32>
  return %2 : tensor<8x6xf32>
}
func.func @all_to_all(%x: tensor<8x6xf32>) -> tensor<8x6xf32> {
  return %x : tensor<8x6xf32>
}
func.func @partial_sum(%x: tensor<8x6xf32>) -> tensor<8x6xf32> {
  %2 = rtx.add %x, %x : tensor<8x6xf32>
  return %2 : tensor<8x6xf32>
}
func.func @broadcast_from(%x: tensor<8x6xf32>) -> tensor<4x6xf32> {
  %s = rtx.slice %x [4:8, 0:6] : tensor<8x6xf32> -> tensor<4x6xf32>
  return %s : tensor<4x6xf32>
}
