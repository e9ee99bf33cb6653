// RUN: rtx-opt %s -rtx-autodiff '-rtx-optimizer=kind=adamw mixed-precision=true' | FileCheck %s --check-prefix=MIXED

// With mixed precision the parameter argument is the f32 master weight; the
// model computes on a bf16 copy and the update runs in f32.
// MIXED-LABEL: func.func @mlp
// MIXED-SAME: (%[[W:.*]]: tensor<2x3xf32> {{.*}}rtx.param = "w"
// MIXED: rtx.convert %[[W]] : tensor<2x3xf32> -> tensor<2x3xbf16>
// MIXED: rtx.adamw_update %[[W]], %{{.*}} : tensor<2x3xf32>, tensor<2x3xf32>, tensor<f32>
func.func @mlp(%x: tensor<4x3xbf16>) -> tensor<f32> {
  %w = rtx.param "w" normal(0.0, 1.0) seed 5 : tensor<2x3xbf16>
  %y = rtx.linear %x, %w : tensor<4x3xbf16>, tensor<2x3xbf16> -> tensor<4x2xbf16>
  %y32 = rtx.convert %y : tensor<4x2xbf16> -> tensor<4x2xf32>
  %l = rtx.reduce mean %y32 dims [0, 1] : tensor<4x2xf32> -> tensor<f32>
  return %l : tensor<f32>
}
