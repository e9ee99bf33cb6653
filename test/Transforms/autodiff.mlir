// RUN: rtx-opt %s -split-input-file -rtx-autodiff | FileCheck %s

// The gradient of a linear layer: dW = dy^T x, db = sum dy; the input's
// gradient is not built (x is not a parameter).
// CHECK-LABEL: func.func @linear_tanh_mean
// CHECK-SAME: -> (tensor<f32>, tensor<2x3xf32> {rtx.grad_of = "w"}, tensor<2xf32> {rtx.grad_of = "b"})
// CHECK: %[[W:.*]] = rtx.param "w"
// CHECK: %[[Y:.*]] = rtx.linear %[[X:.*]], %[[W]], %{{.*}}
// CHECK: %[[LOSS:.*]] = rtx.reduce mean
// CHECK: %[[SEED:.*]] = rtx.constant dense<1.000000e+00> : tensor<f32>
// CHECK: %[[DT:.*]] = rtx.unary_grad tanh %[[Y]], %{{.*}} : tensor<4x2xf32>
// CHECK-NOT: rtx.matmul %[[DT]], %[[W]]
// CHECK: %[[DW:.*]] = rtx.matmul %[[DT]], %[[X]] transpose_lhs : tensor<4x2xf32>, tensor<4x3xf32> -> tensor<2x3xf32>
// CHECK: %[[DB:.*]] = rtx.reduce sum %[[DT]] dims [0] : tensor<4x2xf32> -> tensor<2xf32>
// CHECK: return %[[LOSS]], %[[DW]], %[[DB]]
func.func @linear_tanh_mean(%x: tensor<4x3xf32>) -> tensor<f32> {
  %w = rtx.param "w" normal(0.0, 1.0) : tensor<2x3xf32>
  %b = rtx.param "b" zeros : tensor<2xf32>
  %y = rtx.linear %x, %w, %b : tensor<4x3xf32>, tensor<2x3xf32>, tensor<2xf32> -> tensor<4x2xf32>
  %t = rtx.tanh %y : tensor<4x2xf32>
  %l = rtx.reduce mean %t dims [0, 1] : tensor<4x2xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A parameter used twice: its gradient is the sum of both uses.
// CHECK-LABEL: func.func @used_twice
// CHECK: %[[W:.*]] = rtx.param "w"
// CHECK: rtx.constant dense<1.000000e+00>
// CHECK: %[[G1:.*]] = rtx.mul %{{.*}}, %[[W]]
// CHECK: %[[G2:.*]] = rtx.mul %{{.*}}, %[[W]]
// CHECK: %[[SUM:.*]] = rtx.add %[[G1]], %[[G2]]
// CHECK: return %{{.*}}, %[[SUM]]
func.func @used_twice() -> tensor<f32> {
  %w = rtx.param "w" normal(0.0, 1.0) : tensor<5xf32>
  %sq = rtx.mul %w, %w : tensor<5xf32>
  %l = rtx.reduce sum %sq dims [0] : tensor<5xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A parameter that does not reach the loss gets a zero gradient; the unused
// forward value stays out of the backward pass.
// CHECK-LABEL: func.func @unused_parameter
// CHECK-SAME: {rtx.grad_of = "used"}, tensor<3xf32> {rtx.grad_of = "unused"})
// CHECK: %[[ZERO:.*]] = rtx.constant dense<0.000000e+00> : tensor<3xf32>
// CHECK: return %{{.*}}, %{{.*}}, %[[ZERO]]
func.func @unused_parameter() -> tensor<f32> {
  %u = rtx.param "used" ones : tensor<3xf32>
  %n = rtx.param "unused" ones : tensor<3xf32>
  %l = rtx.reduce sum %u dims [0] : tensor<3xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// bf16 parameters: gradients are accumulated and returned in f32.
// CHECK-LABEL: func.func @bf16_accumulates_in_f32
// CHECK-SAME: tensor<4xf32> {rtx.grad_of = "w"}
// CHECK-COUNT-2: rtx.convert %{{.*}} : tensor<4xbf16> -> tensor<4xf32>
// CHECK: rtx.add %{{.*}}, %{{.*}} : tensor<4xf32>
func.func @bf16_accumulates_in_f32() -> tensor<bf16> {
  %w = rtx.param "w" ones : tensor<4xbf16>
  %sq = rtx.mul %w, %w : tensor<4xbf16>
  %l = rtx.reduce sum %sq dims [0] : tensor<4xbf16> -> tensor<bf16>
  return %l : tensor<bf16>
}

// -----

// Attention, layernorm and the loss use their dedicated gradient ops, and
// the forward activations they need are used directly (saved activations).
// CHECK-LABEL: func.func @dedicated_gradient_ops
// CHECK: %[[LOGITS:.*]] = rtx.linear
// CHECK: rtx.cross_entropy_grad %[[LOGITS]], %{{.*}}, %{{.*}} ignore_index -1
// CHECK: rtx.layernorm_grad
// CHECK: rtx.attention_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} causal
// CHECK: rtx.embedding_grad
func.func @dedicated_gradient_ops(%ids: tensor<2x4xi32>, %labels: tensor<2x4xi32>) -> tensor<f32> {
  %wte = rtx.param "wte" normal(0.0, 0.02) : tensor<11x8xf32>
  %x = rtx.embedding %wte, %ids : tensor<11x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
  %h = rtx.reshape %x : tensor<2x4x8xf32> -> tensor<2x1x4x8xf32>
  %a = rtx.attention %h, %h, %h causal : tensor<2x1x4x8xf32>, tensor<2x1x4x8xf32>, tensor<2x1x4x8xf32> -> tensor<2x1x4x8xf32>
  %a3 = rtx.reshape %a : tensor<2x1x4x8xf32> -> tensor<2x4x8xf32>
  %g = rtx.param "ln.weight" ones : tensor<8xf32>
  %n = rtx.layernorm %a3, %g eps 1.0e-05 : tensor<2x4x8xf32>, tensor<8xf32>
  %logits = rtx.linear %n, %wte : tensor<2x4x8xf32>, tensor<11x8xf32> -> tensor<2x4x11xf32>
  %loss = rtx.cross_entropy %logits, %labels ignore_index -1 : tensor<2x4x11xf32>, tensor<2x4xi32> -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// A function whose last result is not a scalar float is left alone.
// CHECK-LABEL: func.func @not_a_loss
// CHECK-SAME: -> tensor<3xf32>
// CHECK-NOT: grad_of
func.func @not_a_loss() -> tensor<3xf32> {
  %w = rtx.param "w" ones : tensor<3xf32>
  return %w : tensor<3xf32>
}

// -----

// A forward op's pipeline stage goes to the ops of its VJP, marked as
// backward (rtx-pipeline runs them in the stage's B action).
// CHECK-LABEL: func.func @staged
// CHECK: rtx.tanh {{.*}}{rtx.stage = 1 : i64}
// CHECK: rtx.unary_grad tanh {{.*}}{rtx.backward, rtx.stage = 1 : i64}
// CHECK: rtx.matmul {{.*}}{rtx.backward, rtx.stage = 0 : i64}
func.func @staged() -> tensor<f32> {
  %x = rtx.input "x" : tensor<4x8xf32>
  %w = rtx.param "w" normal(0.0, 0.1) : tensor<8x8xf32>
  %a = rtx.matmul %x, %w {rtx.stage = 0 : i64} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %b = rtx.tanh %a {rtx.stage = 1 : i64} : tensor<4x8xf32>
  %l = rtx.reduce sum %b dims [0, 1] {rtx.stage = 1 : i64} : tensor<4x8xf32> -> tensor<f32>
  return %l : tensor<f32>
}
