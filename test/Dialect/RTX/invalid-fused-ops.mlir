// RUN: rtx-opt %s -split-input-file -verify-diagnostics

func.func @add_norm_scale(%x: tensor<4x8xf32>, %g: tensor<7xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'rtx.add_layernorm' op scale shape [7] must be [8], the input's last dimension}}
  %s, %y = rtx.add_layernorm %x, %x, %g eps 1.0e-05 : tensor<4x8xf32>, tensor<7xf32>
  return %y : tensor<4x8xf32>
}

// -----

func.func @add_rms_epsilon(%x: tensor<4x8xf32>, %g: tensor<8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'rtx.add_rmsnorm' op epsilon must be non-negative}}
  %s, %y = rtx.add_rmsnorm %x, %x, %g eps -1.0 : tensor<4x8xf32>, tensor<8xf32>
  return %y : tensor<4x8xf32>
}

// -----

func.func @loss_labels(%l: tensor<8x11xf32>, %t: tensor<7xi32>, %d: tensor<f32>) -> tensor<f32> {
  // expected-error @+1 {{'rtx.cross_entropy_with_grad' op labels shape [7] must equal the logits' leading shape [8]}}
  %loss, %dl = rtx.cross_entropy_with_grad %l, %t, %d : tensor<8x11xf32>, tensor<7xi32>, tensor<f32> -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

func.func @adamw_lists(%p: tensor<4xf32>, %q: tensor<4xbf16>, %step: tensor<f32>) -> tensor<4xf32> {
  // expected-error @+1 {{'rtx.multi_adamw_update' op parameter 1 has element type 'bf16', parameter 0 'f32'}}
  %a:2, %m:2, %v:2 = rtx.multi_adamw_update (%p, %q) (%p, %p) (%p, %p) (%p, %p) %step
      lr 1.0e-03 betas(9.0e-01, 9.99e-01) eps 1.0e-08 weight_decay 0.0
      : (tensor<4xf32>, tensor<4xbf16>) (tensor<4xf32>, tensor<4xf32>) (tensor<4xf32>, tensor<4xf32>)
        (tensor<4xf32>, tensor<4xf32>), tensor<f32>
      -> (tensor<4xf32>, tensor<4xbf16>) (tensor<4xf32>, tensor<4xf32>) (tensor<4xf32>, tensor<4xf32>)
  return %a#0 : tensor<4xf32>
}

// -----

func.func @adamw_schedule(%p: tensor<4xf32>, %step: tensor<f32>) -> tensor<4xf32> {
  // expected-error @+1 {{'rtx.multi_adamw_update' op decay_steps must be 0 (no decay) or greater than warmup_steps (8), got 4}}
  %a:1, %m:1, %v:1 = rtx.multi_adamw_update (%p) (%p) (%p) (%p) %step
      lr 1.0e-03 betas(9.0e-01, 9.99e-01) eps 1.0e-08 weight_decay 0.0 warmup_steps 8 decay_steps 4
      : (tensor<4xf32>) (tensor<4xf32>) (tensor<4xf32>) (tensor<4xf32>), tensor<f32>
      -> (tensor<4xf32>) (tensor<4xf32>) (tensor<4xf32>)
  return %a#0 : tensor<4xf32>
}

// -----

func.func @adamw_counts(%p: tensor<4xf32>, %step: tensor<f32>) -> tensor<4xf32> {
  // expected-error @+1 {{'rtx.multi_adamw_update' op needs as many gradients, moments and results as parameters (2)}}
  %a:2, %m:2, %v:2 = rtx.multi_adamw_update (%p, %p) (%p) (%p, %p) (%p, %p) %step
      lr 1.0e-03 betas(9.0e-01, 9.99e-01) eps 1.0e-08 weight_decay 0.0
      : (tensor<4xf32>, tensor<4xf32>) (tensor<4xf32>) (tensor<4xf32>, tensor<4xf32>)
        (tensor<4xf32>, tensor<4xf32>), tensor<f32>
      -> (tensor<4xf32>, tensor<4xf32>) (tensor<4xf32>, tensor<4xf32>) (tensor<4xf32>, tensor<4xf32>)
  return %a#0 : tensor<4xf32>
}

// -----

func.func @adamw_moment_shape(%p: tensor<4xf32>, %m: tensor<5xf32>, %step: tensor<f32>) -> tensor<4xf32> {
  // expected-error @+1 {{'rtx.multi_adamw_update' op gradient and moments 0 must be 'tensor<4xf32>'}}
  %a:1, %mm:1, %v:1 = rtx.multi_adamw_update (%p) (%p) (%m) (%p) %step
      lr 1.0e-03 betas(9.0e-01, 9.99e-01) eps 1.0e-08 weight_decay 0.0
      : (tensor<4xf32>) (tensor<4xf32>) (tensor<5xf32>) (tensor<4xf32>), tensor<f32>
      -> (tensor<4xf32>) (tensor<5xf32>) (tensor<4xf32>)
  return %a#0 : tensor<4xf32>
}

// -----

func.func @adamw_lr(%p: tensor<4xf32>, %step: tensor<f32>) -> tensor<4xf32> {
  // expected-error @+1 {{'rtx.multi_adamw_update' op beta1 must be in}}
  %a:1, %m:1, %v:1 = rtx.multi_adamw_update (%p) (%p) (%p) (%p) %step
      lr 1.0e-03 betas(2.0, 9.99e-01) eps 1.0e-08 weight_decay 0.0
      : (tensor<4xf32>) (tensor<4xf32>) (tensor<4xf32>) (tensor<4xf32>), tensor<f32>
      -> (tensor<4xf32>) (tensor<4xf32>) (tensor<4xf32>)
  return %a#0 : tensor<4xf32>
}

// -----

func.func @sum_squares_f64(%g: tensor<4xf64>) -> tensor<f32> {
  // expected-error @+1 {{'rtx.sum_squares' op inputs must be f32, bf16 or f16 (the sum is f32)}}
  %n = rtx.sum_squares %g : tensor<4xf64> -> tensor<f32>
  return %n : tensor<f32>
}

// -----

func.func @sum_squares_none() -> tensor<f32> {
  // expected-error @+1 {{'rtx.sum_squares' op needs at least one input}}
  %n = "rtx.sum_squares"() : () -> tensor<f32>
  return %n : tensor<f32>
}
