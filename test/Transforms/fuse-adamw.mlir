// RUN: rtx-opt %s -split-input-file -rtx-fuse-adamw | FileCheck %s
// RUN: rtx-opt %s -split-input-file '-rtx-fuse-adamw=bucket-bytes=48' | FileCheck %s --check-prefix=BUCKET

// Three updates with one step and one set of hyper-parameters: one
// multi-tensor update at the place of the first, its results in order.
// With buckets of 48 bytes: the 4x3 f32 parameter fills one (and stays a
// lone update), the two others share the next.
// CHECK-LABEL: func.func @three_updates
// BUCKET-LABEL: func.func @three_updates
// BUCKET: rtx.adamw_update %arg0,
// BUCKET-NEXT: rtx.multi_adamw_update(%arg1, %arg2)
func.func @three_updates(%p0: tensor<4x3xf32>, %p1: tensor<3xf32>, %p2: tensor<5xf32>,
                         %g0: tensor<4x3xf32>, %g1: tensor<3xf32>, %g2: tensor<5xf32>,
                         %m0: tensor<4x3xf32>, %m1: tensor<3xf32>, %m2: tensor<5xf32>,
                         %v0: tensor<4x3xf32>, %v1: tensor<3xf32>, %v2: tensor<5xf32>,
                         %step: tensor<f32>)
    -> (tensor<4x3xf32>, tensor<3xf32>, tensor<5xf32>, tensor<3xf32>, tensor<5xf32>) {
  // CHECK: %[[P:.*]]:3, %[[M:.*]]:3, %[[V:.*]]:3 = rtx.multi_adamw_update(%arg0, %arg1, %arg2) (%arg3, %arg4, %arg5) (%arg6, %arg7, %arg8) (%arg9, %arg10, %arg11) %arg12 lr 1.000000e-03
  // CHECK-NOT: rtx.adamw_update
  // CHECK: return %[[P]]#0, %[[P]]#1, %[[P]]#2, %[[M]]#1, %[[V]]#2
  %a:3 = rtx.adamw_update %p0, %g0, %m0, %v0, %step lr 1.0e-03 betas(9.0e-01, 9.99e-01) eps 1.0e-08 weight_decay 1.0e-02 : tensor<4x3xf32>, tensor<4x3xf32>, tensor<f32>
  %b:3 = rtx.adamw_update %p1, %g1, %m1, %v1, %step lr 1.0e-03 betas(9.0e-01, 9.99e-01) eps 1.0e-08 weight_decay 1.0e-02 : tensor<3xf32>, tensor<3xf32>, tensor<f32>
  %c:3 = rtx.adamw_update %p2, %g2, %m2, %v2, %step lr 1.0e-03 betas(9.0e-01, 9.99e-01) eps 1.0e-08 weight_decay 1.0e-02 : tensor<5xf32>, tensor<5xf32>, tensor<f32>
  return %a#0, %b#0, %c#0, %b#1, %c#2 : tensor<4x3xf32>, tensor<3xf32>, tensor<5xf32>, tensor<3xf32>, tensor<5xf32>
}

// -----

// Another weight decay (a no-decay group) or another parameter dtype: other
// groups; a lone update stays as it is.
// CHECK-LABEL: func.func @groups
func.func @groups(%p0: tensor<4xf32>, %p1: tensor<4xf32>, %p2: tensor<4xf32>, %p3: tensor<4xbf16>,
                  %g: tensor<4xf32>, %m: tensor<4xf32>, %v: tensor<4xf32>, %step: tensor<f32>)
    -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xbf16>) {
  // CHECK: rtx.multi_adamw_update(%arg0, %arg2) {{.*}} weight_decay 1.000000e-02
  // CHECK: rtx.adamw_update %arg1, {{.*}} weight_decay 0.000000e+00
  // CHECK: rtx.adamw_update %arg3,
  // CHECK-NOT: rtx.multi_adamw_update
  %a:3 = rtx.adamw_update %p0, %g, %m, %v, %step lr 1.0e-03 betas(9.0e-01, 9.99e-01) eps 1.0e-08 weight_decay 1.0e-02 : tensor<4xf32>, tensor<4xf32>, tensor<f32>
  %b:3 = rtx.adamw_update %p1, %g, %m, %v, %step lr 1.0e-03 betas(9.0e-01, 9.99e-01) eps 1.0e-08 weight_decay 0.0 : tensor<4xf32>, tensor<4xf32>, tensor<f32>
  %c:3 = rtx.adamw_update %p2, %g, %m, %v, %step lr 1.0e-03 betas(9.0e-01, 9.99e-01) eps 1.0e-08 weight_decay 1.0e-02 : tensor<4xf32>, tensor<4xf32>, tensor<f32>
  %d:3 = rtx.adamw_update %p3, %g, %m, %v, %step lr 1.0e-03 betas(9.0e-01, 9.99e-01) eps 1.0e-08 weight_decay 1.0e-02 : tensor<4xbf16>, tensor<4xf32>, tensor<f32>
  return %a#0, %b#0, %c#0, %d#0 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xbf16>
}

// -----

// Another learning-rate schedule: another group; the fused update carries
// its group's schedule.
// CHECK-LABEL: func.func @schedules
func.func @schedules(%p0: tensor<4xf32>, %p1: tensor<4xf32>, %p2: tensor<4xf32>,
                     %g: tensor<4xf32>, %m: tensor<4xf32>, %v: tensor<4xf32>, %step: tensor<f32>)
    -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  // CHECK: rtx.multi_adamw_update(%arg0, %arg2) {{.*}} weight_decay 0.000000e+00 warmup_steps 3 decay_steps 20 min_lr 1.000000e-04 :
  // CHECK: rtx.adamw_update %arg1, {{.*}} weight_decay 0.000000e+00 warmup_steps 3 decay_steps 30 min_lr 1.000000e-04 :
  // CHECK-NOT: rtx.multi_adamw_update
  %a:3 = rtx.adamw_update %p0, %g, %m, %v, %step lr 1.0e-03 betas(9.0e-01, 9.99e-01) eps 1.0e-08 weight_decay 0.0 warmup_steps 3 decay_steps 20 min_lr 1.0e-04 : tensor<4xf32>, tensor<4xf32>, tensor<f32>
  %b:3 = rtx.adamw_update %p1, %g, %m, %v, %step lr 1.0e-03 betas(9.0e-01, 9.99e-01) eps 1.0e-08 weight_decay 0.0 warmup_steps 3 decay_steps 30 min_lr 1.0e-04 : tensor<4xf32>, tensor<4xf32>, tensor<f32>
  %c:3 = rtx.adamw_update %p2, %g, %m, %v, %step lr 1.0e-03 betas(9.0e-01, 9.99e-01) eps 1.0e-08 weight_decay 0.0 warmup_steps 3 decay_steps 20 min_lr 1.0e-04 : tensor<4xf32>, tensor<4xf32>, tensor<f32>
  return %a#0, %b#0, %c#0 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// An update whose gradient is computed after the first update: it cannot
// join the group placed there (a ZeRO program interleaving reduce-scatters).
rtx.mesh @mesh_dp2 ["dp"=2]
// CHECK-LABEL: func.func @late_gradient
func.func @late_gradient(%p0: tensor<4xf32>, %p1: tensor<4xf32>, %g0: tensor<4xf32>,
                         %g1: tensor<8xf32>, %m: tensor<4xf32>, %v: tensor<4xf32>, %step: tensor<f32>)
    -> (tensor<4xf32>, tensor<4xf32>) {
  // CHECK: rtx.adamw_update %arg0
  // CHECK: rtx.reduce_scatter
  // CHECK: rtx.adamw_update
  // CHECK-NOT: rtx.multi_adamw_update
  %a:3 = rtx.adamw_update %p0, %g0, %m, %v, %step lr 1.0e-03 betas(9.0e-01, 9.99e-01) eps 1.0e-08 weight_decay 0.0 : tensor<4xf32>, tensor<4xf32>, tensor<f32>
  %s = rtx.reduce_scatter %g1 on @mesh_dp2 ["dp"] sum dim 0 : tensor<8xf32> -> tensor<4xf32>
  %b:3 = rtx.adamw_update %p1, %s, %m, %v, %step lr 1.0e-03 betas(9.0e-01, 9.99e-01) eps 1.0e-08 weight_decay 0.0 : tensor<4xf32>, tensor<4xf32>, tensor<f32>
  return %a#0, %b#0 : tensor<4xf32>, tensor<4xf32>
}

// -----

// The clipped optimizer's square of the global gradient norm (f32 and bf16
// gradients): one rtx.sum_squares over the list; the norm's all-reduce over
// the gradient shards (ZeRO) stays.
rtx.mesh @mesh_dp2 ["dp"=2]
// CHECK-LABEL: func.func @grad_norm
func.func @grad_norm(%g0: tensor<4x3xf32>, %g1: tensor<5xbf16>) -> tensor<f32> {
  // CHECK: %[[S:.*]] = rtx.sum_squares %arg0, %arg1 : tensor<4x3xf32>, tensor<5xbf16> -> tensor<f32>
  // CHECK-NEXT: %[[A:.*]] = rtx.all_reduce %[[S]]
  // CHECK-NEXT: rtx.sqrt %[[A]] {rtx.grad_norm}
  // CHECK-NOT: rtx.reduce
  %zero = rtx.constant dense<0.0> : tensor<f32>
  %sq0 = rtx.mul %g0, %g0 : tensor<4x3xf32>
  %s0 = rtx.reduce sum %sq0 dims [0, 1] : tensor<4x3xf32> -> tensor<f32>
  %t0 = rtx.add %zero, %s0 : tensor<f32>
  %c1 = rtx.convert %g1 : tensor<5xbf16> -> tensor<5xf32>
  %sq1 = rtx.mul %c1, %c1 : tensor<5xf32>
  %s1 = rtx.reduce sum %sq1 dims [0] : tensor<5xf32> -> tensor<f32>
  %t1 = rtx.add %t0, %s1 : tensor<f32>
  %all = rtx.all_reduce %t1 on @mesh_dp2 ["dp"] sum : tensor<f32> -> tensor<f32>
  %n = rtx.sqrt %all {rtx.grad_norm} : tensor<f32>
  return %n : tensor<f32>
}

// -----

// A square whose partial sum is used elsewhere is not the optimizer's chain.
// CHECK-LABEL: func.func @not_the_chain
func.func @not_the_chain(%g0: tensor<4xf32>) -> (tensor<f32>, tensor<f32>) {
  // CHECK-NOT: rtx.sum_squares
  %zero = rtx.constant dense<0.0> : tensor<f32>
  %sq0 = rtx.mul %g0, %g0 : tensor<4xf32>
  %s0 = rtx.reduce sum %sq0 dims [0] : tensor<4xf32> -> tensor<f32>
  %t0 = rtx.add %zero, %s0 : tensor<f32>
  %n = rtx.sqrt %t0 {rtx.grad_norm} : tensor<f32>
  return %n, %s0 : tensor<f32>, tensor<f32>
}
