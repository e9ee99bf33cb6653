// RUN: rtx-opt %s -split-input-file -rtx-fuse-epilogues | FileCheck %s

// The forward MLP: linear + tanh GELU becomes one GEMM with a bias + GELU
// epilogue; the backward pass's GELU gradient reads the pre-activation, so
// the fused op returns it too (aux) and the gradient reads that.
// CHECK-LABEL: func.func @bias_gelu_tanh_aux
func.func @bias_gelu_tanh_aux(%x: tensor<2x4x8xf32>, %w: tensor<16x8xf32>,
    %b: tensor<16xf32>, %dy: tensor<2x4x16xf32>)
    -> (tensor<2x4x16xf32>, tensor<2x4x16xf32>) {
  // CHECK: %[[Y:.*]], %[[PRE:.*]] = rtx.gemm_epilogue bias_gelu_tanh_aux %arg0, %arg1 bias %arg2 transpose_rhs : (tensor<2x4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> (tensor<2x4x16xf32>, tensor<2x4x16xf32>)
  // CHECK-NEXT: %[[DX:.*]] = rtx.unary_grad gelu_tanh %[[PRE]], %arg3
  // CHECK-NEXT: return %[[Y]], %[[DX]]
  // CHECK-NOT: rtx.linear
  // CHECK-NOT: rtx.gelu
  %pre = rtx.linear %x, %w, %b : tensor<2x4x8xf32>, tensor<16x8xf32>, tensor<16xf32> -> tensor<2x4x16xf32>
  %y = rtx.gelu %pre approximate : tensor<2x4x16xf32>
  %dx = rtx.unary_grad gelu_tanh %pre, %dy : tensor<2x4x16xf32>
  return %y, %dx : tensor<2x4x16xf32>, tensor<2x4x16xf32>
}

// -----

// A forward pass alone (no gradient reads the pre-activation): no aux
// result. The exact (erf) GELU keeps its form.
// CHECK-LABEL: func.func @bias_gelu_forward_only
func.func @bias_gelu_forward_only(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>,
    %b: tensor<16xf32>) -> tensor<4x16xf32> {
  // CHECK: %[[Y:.*]] = rtx.gemm_epilogue bias_gelu %arg0, %arg1 bias %arg2 transpose_rhs : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  // CHECK-NEXT: return %[[Y]]
  %pre = rtx.linear %x, %w, %b : tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32> -> tensor<4x16xf32>
  %y = rtx.gelu %pre : tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

// Not fused: a linear without a bias (the epilogues add one).
// CHECK-LABEL: func.func @no_bias
func.func @no_bias(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>) -> tensor<4x16xf32> {
  // CHECK: rtx.linear
  // CHECK-NEXT: rtx.gelu
  // CHECK-NOT: rtx.gemm_epilogue
  %pre = rtx.linear %x, %w : tensor<4x8xf32>, tensor<16x8xf32> -> tensor<4x16xf32>
  %y = rtx.gelu %pre approximate : tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

// Not fused: the pre-activation has a reader other than the GELU and its
// gradient.
// CHECK-LABEL: func.func @pre_activation_used_elsewhere
func.func @pre_activation_used_elsewhere(%x: tensor<4x8xf32>,
    %w: tensor<16x8xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
  // CHECK: rtx.linear
  // CHECK-NEXT: rtx.gelu
  // CHECK-NEXT: rtx.add
  // CHECK-NOT: rtx.gemm_epilogue
  %pre = rtx.linear %x, %w, %b : tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32> -> tensor<4x16xf32>
  %y = rtx.gelu %pre approximate : tensor<4x16xf32>
  %z = rtx.add %y, %pre : tensor<4x16xf32>
  return %z : tensor<4x16xf32>
}

// -----

// Not fused: another activation, or a gradient of the other GELU form.
// CHECK-LABEL: func.func @other_activation
func.func @other_activation(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>,
    %b: tensor<16xf32>, %dy: tensor<4x16xf32>)
    -> (tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>) {
  // CHECK: rtx.linear
  // CHECK-NEXT: rtx.relu
  // CHECK-NEXT: rtx.linear
  // CHECK-NEXT: rtx.gelu
  // CHECK-NEXT: rtx.unary_grad gelu
  // CHECK-NOT: rtx.gemm_epilogue
  %pre = rtx.linear %x, %w, %b : tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32> -> tensor<4x16xf32>
  %y = rtx.relu %pre : tensor<4x16xf32>
  %pre2 = rtx.linear %x, %w, %b : tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32> -> tensor<4x16xf32>
  %y2 = rtx.gelu %pre2 approximate : tensor<4x16xf32>
  %dx = rtx.unary_grad gelu %pre2, %dy : tensor<4x16xf32>
  return %y, %y2, %dx : tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>
}

// -----

// The weight and bias gradients of a linear: dW = dY^T X and db = the sum
// of dY over tokens become one GEMM with the bias-gradient epilogue; the
// input gradient dY W (which contracts the other dimension of dY) stays.
// CHECK-LABEL: func.func @bias_grad
func.func @bias_grad(%dy: tensor<8x16xf32>, %x: tensor<8x4xf32>,
    %w: tensor<16x4xf32>) -> (tensor<8x4xf32>, tensor<16x4xf32>, tensor<16xf32>) {
  // CHECK: %[[DX:.*]] = rtx.matmul %arg0, %arg2
  // CHECK-NEXT: %[[DW:.*]], %[[DB:.*]] = rtx.gemm_epilogue bias_grad %arg0, %arg1 transpose_lhs : (tensor<8x16xf32>, tensor<8x4xf32>) -> (tensor<16x4xf32>, tensor<16xf32>)
  // CHECK-NEXT: return %[[DX]], %[[DW]], %[[DB]]
  // CHECK-NOT: rtx.reduce
  %dx = rtx.matmul %dy, %w : tensor<8x16xf32>, tensor<16x4xf32> -> tensor<8x4xf32>
  %dw = rtx.matmul %dy, %x transpose_lhs : tensor<8x16xf32>, tensor<8x4xf32> -> tensor<16x4xf32>
  %db = rtx.reduce sum %dy dims [0] : tensor<8x16xf32> -> tensor<16xf32>
  return %dx, %dw, %db : tensor<8x4xf32>, tensor<16x4xf32>, tensor<16xf32>
}

// -----

// The sum before the matmul whose rhs is defined between them: the fused op
// goes at the sum only if the rhs is already there; here it is not.
// CHECK-LABEL: func.func @bias_grad_rhs_defined_later
func.func @bias_grad_rhs_defined_later(%dy: tensor<8x16xf32>,
    %x: tensor<8x4xf32>) -> (tensor<16x4xf32>, tensor<16xf32>) {
  // CHECK: rtx.reduce sum
  // CHECK-NEXT: rtx.exp
  // CHECK-NEXT: rtx.matmul
  // CHECK-NOT: rtx.gemm_epilogue
  %db = rtx.reduce sum %dy dims [0] : tensor<8x16xf32> -> tensor<16xf32>
  %ex = rtx.exp %x : tensor<8x4xf32>
  %dw = rtx.matmul %dy, %ex transpose_lhs : tensor<8x16xf32>, tensor<8x4xf32> -> tensor<16x4xf32>
  return %dw, %db : tensor<16x4xf32>, tensor<16xf32>
}

// -----

// Not fused: a sum over the dimension the matmul does not contract, a mean,
// a kept dimension.
// CHECK-LABEL: func.func @bias_grad_other_reductions
func.func @bias_grad_other_reductions(%dy: tensor<8x16xf32>, %x: tensor<8x4xf32>)
    -> (tensor<16x4xf32>, tensor<8xf32>, tensor<16xf32>, tensor<1x16xf32>) {
  // CHECK-NOT: rtx.gemm_epilogue
  %dw = rtx.matmul %dy, %x transpose_lhs : tensor<8x16xf32>, tensor<8x4xf32> -> tensor<16x4xf32>
  %r = rtx.reduce sum %dy dims [1] : tensor<8x16xf32> -> tensor<8xf32>
  %m = rtx.reduce mean %dy dims [0] : tensor<8x16xf32> -> tensor<16xf32>
  %k = rtx.reduce sum %dy dims [0] keepdim : tensor<8x16xf32> -> tensor<1x16xf32>
  return %dw, %r, %m, %k : tensor<16x4xf32>, tensor<8xf32>, tensor<16xf32>, tensor<1x16xf32>
}

// -----

// The gradient through the GELU: the product dY W (reshaped back to the
// activation's shape) times gelu'(pre) becomes one GEMM with the DGELU
// epilogue; reshapes (views) bridge [B, S, F] and the GEMM's [B*S, F].
// CHECK-LABEL: func.func @dgelu_tanh
func.func @dgelu_tanh(%dy: tensor<8x4xf32>, %w: tensor<4x16xf32>,
    %pre: tensor<2x4x16xf32>) -> tensor<2x4x16xf32> {
  // CHECK: %[[P:.*]] = rtx.reshape %arg2 : tensor<2x4x16xf32> -> tensor<8x16xf32>
  // CHECK-NEXT: %[[G:.*]] = rtx.gemm_epilogue dgelu_tanh %arg0, %arg1 pre %[[P]] : (tensor<8x4xf32>, tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  // CHECK-NEXT: %[[R:.*]] = rtx.reshape %[[G]] : tensor<8x16xf32> -> tensor<2x4x16xf32>
  // CHECK-NEXT: return %[[R]]
  %da2 = rtx.matmul %dy, %w : tensor<8x4xf32>, tensor<4x16xf32> -> tensor<8x16xf32>
  %da = rtx.reshape %da2 : tensor<8x16xf32> -> tensor<2x4x16xf32>
  %dh = rtx.unary_grad gelu_tanh %pre, %da : tensor<2x4x16xf32>
  return %dh : tensor<2x4x16xf32>
}

// -----

// Not fused: the product has another reader, or the gradient is not a
// GELU's.
// CHECK-LABEL: func.func @dgelu_not_fused
func.func @dgelu_not_fused(%dy: tensor<8x4xf32>, %w: tensor<4x16xf32>,
    %pre: tensor<8x16xf32>) -> (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>) {
  // CHECK-NOT: rtx.gemm_epilogue
  %p = rtx.matmul %dy, %w : tensor<8x4xf32>, tensor<4x16xf32> -> tensor<8x16xf32>
  %dh = rtx.unary_grad gelu %pre, %p : tensor<8x16xf32>
  %q = rtx.matmul %dy, %w : tensor<8x4xf32>, tensor<4x16xf32> -> tensor<8x16xf32>
  %ds = rtx.unary_grad silu %pre, %q : tensor<8x16xf32>
  return %dh, %p, %ds : tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>
}

// -----

// A partitioned per-rank program: a row-parallel linear's partial sum goes
// through an all-reduce before the GELU, so nothing fuses there (a GELU of a
// partial sum would be wrong); the column-parallel linear with its own
// GELU fuses, and its recorded shardings move to the fused op.
rtx.mesh @mesh_tp2 ["tp"=2]
// CHECK-LABEL: func.func @partitioned
func.func @partitioned(%x: tensor<4x8xf32>, %w1: tensor<8x8xf32>,
    %b1: tensor<8xf32>, %w2: tensor<8x8xf32>, %b2: tensor<8xf32>)
    -> tensor<4x8xf32> {
  // CHECK: %[[H:.*]] = rtx.gemm_epilogue bias_gelu_tanh %arg0, %arg1 bias %arg2 transpose_rhs {rtx.sharding = #rtx.sharding<@mesh_tp2, {{\[\[\], \["tp"\]\]}}>}
  // CHECK-NEXT: %[[P:.*]] = rtx.linear %[[H]], %arg3, %arg4
  // CHECK-NEXT: %[[R:.*]] = rtx.all_reduce %[[P]]
  // CHECK-NEXT: rtx.gelu %[[R]] approximate
  %pre = rtx.linear %x, %w1, %b1 {rtx.sharding = #rtx.sharding<@mesh_tp2, [[], ["tp"]]>} : tensor<4x8xf32>, tensor<8x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  %h = rtx.gelu %pre approximate {rtx.sharding = #rtx.sharding<@mesh_tp2, [[], ["tp"]]>} : tensor<4x8xf32>
  %p = rtx.linear %h, %w2, %b2 : tensor<4x8xf32>, tensor<8x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  %r = rtx.all_reduce %p on @mesh_tp2 ["tp"] sum : tensor<4x8xf32> -> tensor<4x8xf32>
  %y = rtx.gelu %r approximate : tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}
