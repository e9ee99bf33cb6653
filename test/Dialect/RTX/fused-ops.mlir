// RUN: rtx-opt %s | rtx-opt | FileCheck %s

// The fused ops round-trip through their assembly format.

// CHECK-LABEL: func.func @add_norms
func.func @add_norms(%x: tensor<4x8xbf16>, %r: tensor<4x8xbf16>, %g: tensor<8xbf16>, %b: tensor<8xbf16>)
    -> (tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<4x8xbf16>) {
  // CHECK: rtx.add_layernorm %arg0, %arg1, %arg2, %arg3 eps 1.000000e-05 : tensor<4x8xbf16>, tensor<8xbf16>, tensor<8xbf16>
  %s, %y = rtx.add_layernorm %x, %r, %g, %b eps 1.0e-05 : tensor<4x8xbf16>, tensor<8xbf16>, tensor<8xbf16>
  // CHECK: rtx.add_layernorm %arg0, %arg1, %arg2 eps 1.000000e-05 : tensor<4x8xbf16>, tensor<8xbf16>
  %s2, %y2 = rtx.add_layernorm %x, %r, %g eps 1.0e-05 : tensor<4x8xbf16>, tensor<8xbf16>
  // CHECK: rtx.add_rmsnorm %arg0, %arg1, %arg2 eps {{.*}} : tensor<4x8xbf16>, tensor<8xbf16>
  %s3, %y3 = rtx.add_rmsnorm %x, %r, %g eps 1.0e-06 : tensor<4x8xbf16>, tensor<8xbf16>
  return %y, %y2, %y3 : tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<4x8xbf16>
}

// CHECK-LABEL: func.func @loss
func.func @loss(%l: tensor<8x50304xf32>, %t: tensor<8xi32>, %d: tensor<f32>) -> (tensor<f32>, tensor<8x50304xf32>) {
  // CHECK: rtx.cross_entropy_with_grad %arg0, %arg1, %arg2 ignore_index -1 : tensor<8x50304xf32>, tensor<8xi32>, tensor<f32> -> tensor<f32>
  %loss, %dl = rtx.cross_entropy_with_grad %l, %t, %d ignore_index -1 : tensor<8x50304xf32>, tensor<8xi32>, tensor<f32> -> tensor<f32>
  return %loss, %dl : tensor<f32>, tensor<8x50304xf32>
}

// CHECK-LABEL: func.func @optimizer
func.func @optimizer(%p0: tensor<4x3xbf16>, %p1: tensor<3xbf16>, %g0: tensor<4x3xf32>, %g1: tensor<3xf32>,
                     %step: tensor<f32>) -> (tensor<4x3xbf16>, tensor<3xf32>, tensor<f32>) {
  // CHECK: rtx.multi_adamw_update(%arg0, %arg1) (%arg2, %arg3) (%arg2, %arg3) (%arg2, %arg3) %arg4 lr 1.000000e-03 betas(9.000000e-01, {{.*}}) eps 1.000000e-08 weight_decay 1.000000e-01 : (tensor<4x3xbf16>, tensor<3xbf16>) (tensor<4x3xf32>, tensor<3xf32>) (tensor<4x3xf32>, tensor<3xf32>) (tensor<4x3xf32>, tensor<3xf32>), tensor<f32> -> (tensor<4x3xbf16>, tensor<3xbf16>) (tensor<4x3xf32>, tensor<3xf32>) (tensor<4x3xf32>, tensor<3xf32>)
  %p:2, %m:2, %v:2 = rtx.multi_adamw_update (%p0, %p1) (%g0, %g1) (%g0, %g1) (%g0, %g1) %step
      lr 1.0e-03 betas(9.0e-01, 9.99e-01) eps 1.0e-08 weight_decay 1.0e-01
      : (tensor<4x3xbf16>, tensor<3xbf16>) (tensor<4x3xf32>, tensor<3xf32>) (tensor<4x3xf32>, tensor<3xf32>)
        (tensor<4x3xf32>, tensor<3xf32>), tensor<f32>
      -> (tensor<4x3xbf16>, tensor<3xbf16>) (tensor<4x3xf32>, tensor<3xf32>) (tensor<4x3xf32>, tensor<3xf32>)
  // A learning-rate schedule, printed when set.
  // CHECK: rtx.multi_adamw_update(%arg0, %arg1) {{.*}} weight_decay 1.000000e-01 warmup_steps 2 decay_steps 9 min_lr 1.000000e-04 : (tensor<4x3xbf16>, tensor<3xbf16>)
  %sp:2, %sm:2, %sv:2 = rtx.multi_adamw_update (%p0, %p1) (%g0, %g1) (%g0, %g1) (%g0, %g1) %step
      lr 1.0e-03 betas(9.0e-01, 9.99e-01) eps 1.0e-08 weight_decay 1.0e-01
      warmup_steps 2 decay_steps 9 min_lr 1.0e-04
      : (tensor<4x3xbf16>, tensor<3xbf16>) (tensor<4x3xf32>, tensor<3xf32>) (tensor<4x3xf32>, tensor<3xf32>)
        (tensor<4x3xf32>, tensor<3xf32>), tensor<f32>
      -> (tensor<4x3xbf16>, tensor<3xbf16>) (tensor<4x3xf32>, tensor<3xf32>) (tensor<4x3xf32>, tensor<3xf32>)
  // CHECK: rtx.sum_squares %arg2, %arg1 : tensor<4x3xf32>, tensor<3xbf16> -> tensor<f32>
  %n = rtx.sum_squares %g0, %p1 : tensor<4x3xf32>, tensor<3xbf16> -> tensor<f32>
  return %p#0, %v#1, %n : tensor<4x3xbf16>, tensor<3xf32>, tensor<f32>
}
