// RUN: rtx-opt %s -split-input-file -rtx-autodiff '-rtx-optimizer=kind=adamw lr=0.01 weight-decay=0.1' | FileCheck %s --check-prefix=ADAMW
// RUN: rtx-opt %s -split-input-file -rtx-autodiff '-rtx-optimizer=kind=sgd lr=0.5 clip-norm=1.0' | FileCheck %s --check-prefix=SGD
// RUN: rtx-opt %s -split-input-file -rtx-autodiff '-rtx-optimizer=lr=0.01 warmup-steps=10 decay-steps=100 min-lr=0.001' | FileCheck %s --check-prefix=SCHEDULE

// train_step(params, optimizer state, batch) -> (loss, params', state').
// The schedule options become the updates' attributes.
// SCHEDULE-LABEL: func.func @mlp
// SCHEDULE: rtx.adamw_update {{.*}} lr 1.000000e-02 {{.*}} warmup_steps 10 decay_steps 100 min_lr 1.000000e-03 :
// ADAMW-LABEL: func.func @mlp
// ADAMW-SAME: (%[[W:.*]]: tensor<2x3xf32> {rtx.init = #rtx.init<normal(0.000000e+00, 1.000000e+00)>, rtx.param = "w", rtx.seed = 5 : i64, rtx.state = "param:w"}
// ADAMW-SAME: %[[M:.*]]: tensor<2x3xf32> {rtx.state = "exp_avg:w"}, %[[V:.*]]: tensor<2x3xf32> {rtx.state = "exp_avg_sq:w"}
// ADAMW-SAME: %[[STEP:.*]]: tensor<f32> {rtx.state = "step"}, %[[X:.*]]: tensor<4x3xf32>
// ADAMW-SAME: -> (tensor<f32>, tensor<2x3xf32> {rtx.state = "param:w"}, tensor<2x3xf32> {rtx.state = "exp_avg:w"}, tensor<2x3xf32> {rtx.state = "exp_avg_sq:w"}, tensor<f32> {rtx.state = "step"})
// ADAMW-SAME: attributes {rtx.train_step}
// ADAMW: %[[NEXT:.*]] = rtx.add %[[STEP]], %{{.*}} : tensor<f32>
// ADAMW: %[[P:.*]], %[[M2:.*]], %[[V2:.*]] = rtx.adamw_update %[[W]], %{{.*}}, %[[M]], %[[V]], %[[NEXT]] lr 1.000000e-02 betas(9.000000e-01, {{.*}}) eps 1.000000e-08 weight_decay 1.000000e-01
// ADAMW: return %{{.*}}, %[[P]], %[[M2]], %[[V2]], %[[NEXT]]

// SGD-LABEL: func.func @mlp
// SGD-SAME: -> (tensor<f32>, tensor<2x3xf32> {rtx.state = "param:w"})
// SGD: %[[NORM:.*]] = rtx.sqrt
// SGD: rtx.minimum
// SGD: %[[CLIPPED:.*]] = rtx.mul
// SGD: rtx.sgd_update %{{.*}}, %[[CLIPPED]] lr 5.000000e-01 weight_decay 0.000000e+00

func.func @mlp(%x: tensor<4x3xf32>) -> tensor<f32> {
  %w = rtx.param "w" normal(0.0, 1.0) seed 5 : tensor<2x3xf32>
  %y = rtx.linear %x, %w : tensor<4x3xf32>, tensor<2x3xf32> -> tensor<4x2xf32>
  %l = rtx.reduce mean %y dims [0, 1] : tensor<4x2xf32> -> tensor<f32>
  return %l : tensor<f32>
}
