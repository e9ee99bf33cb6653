// RUN: rtx-opt %s -split-input-file | FileCheck %s
// RUN: rtx-opt %s -split-input-file -mlir-print-op-generic | rtx-opt -split-input-file | FileCheck %s

// Contractions: rtx.matmul, rtx.batch_matmul, rtx.linear, rtx.gemm_epilogue.

// CHECK-LABEL: func.func @matmul_plain
// CHECK-SAME: (%[[A:[^:]*]]: tensor<7x13xf32>, %[[B:[^:]*]]: tensor<13x65xf32>)
// CHECK: %[[C:.*]] = rtx.matmul %[[A]], %[[B]] : tensor<7x13xf32>, tensor<13x65xf32> -> tensor<7x65xf32>
// CHECK: return %[[C]]
func.func @matmul_plain(%a: tensor<7x13xf32>, %b: tensor<13x65xf32>) -> tensor<7x65xf32> {
  %c = rtx.matmul %a, %b : tensor<7x13xf32>, tensor<13x65xf32> -> tensor<7x65xf32>
  return %c : tensor<7x65xf32>
}

// -----

// CHECK-LABEL: func.func @matmul_transpose_lhs
// CHECK-SAME: (%[[A:[^:]*]]: tensor<13x7xf32>, %[[B:[^:]*]]: tensor<13x65xf32>)
// CHECK: rtx.matmul %[[A]], %[[B]] transpose_lhs : tensor<13x7xf32>, tensor<13x65xf32> -> tensor<7x65xf32>
func.func @matmul_transpose_lhs(%a: tensor<13x7xf32>, %b: tensor<13x65xf32>) -> tensor<7x65xf32> {
  %c = rtx.matmul %a, %b transpose_lhs : tensor<13x7xf32>, tensor<13x65xf32> -> tensor<7x65xf32>
  return %c : tensor<7x65xf32>
}

// -----

// CHECK-LABEL: func.func @matmul_transpose_rhs
// CHECK-SAME: (%[[A:[^:]*]]: tensor<7x13xf32>, %[[B:[^:]*]]: tensor<65x13xf32>)
// CHECK: rtx.matmul %[[A]], %[[B]] transpose_rhs : tensor<7x13xf32>, tensor<65x13xf32> -> tensor<7x65xf32>
func.func @matmul_transpose_rhs(%a: tensor<7x13xf32>, %b: tensor<65x13xf32>) -> tensor<7x65xf32> {
  %c = rtx.matmul %a, %b transpose_rhs : tensor<7x13xf32>, tensor<65x13xf32> -> tensor<7x65xf32>
  return %c : tensor<7x65xf32>
}

// -----

// CHECK-LABEL: func.func @matmul_transpose_both
// CHECK-SAME: (%[[A:[^:]*]]: tensor<13x7xbf16>, %[[B:[^:]*]]: tensor<65x13xbf16>)
// CHECK: rtx.matmul %[[A]], %[[B]] transpose_lhs transpose_rhs : tensor<13x7xbf16>, tensor<65x13xbf16> -> tensor<7x65xbf16>
func.func @matmul_transpose_both(%a: tensor<13x7xbf16>, %b: tensor<65x13xbf16>) -> tensor<7x65xbf16> {
  %c = rtx.matmul %a, %b transpose_lhs transpose_rhs : tensor<13x7xbf16>, tensor<65x13xbf16> -> tensor<7x65xbf16>
  return %c : tensor<7x65xbf16>
}

// -----

// The flags are unit attributes: the generic form spells them in the
// property dictionary, and the custom form prints them as keywords.
// CHECK-LABEL: func.func @matmul_flags_from_generic
// CHECK: rtx.matmul %{{.*}}, %{{.*}} transpose_rhs : tensor<4x8xf16>, tensor<16x8xf16> -> tensor<4x16xf16>
func.func @matmul_flags_from_generic(%a: tensor<4x8xf16>, %b: tensor<16x8xf16>) -> tensor<4x16xf16> {
  %c = "rtx.matmul"(%a, %b) <{transpose_rhs}> : (tensor<4x8xf16>, tensor<16x8xf16>) -> tensor<4x16xf16>
  return %c : tensor<4x16xf16>
}

// -----

// CHECK-LABEL: func.func @batch_matmul_rank3
// CHECK-SAME: (%[[A:[^:]*]]: tensor<5x7x13xf32>, %[[B:[^:]*]]: tensor<5x13x65xf32>)
// CHECK: %[[C:.*]] = rtx.batch_matmul %[[A]], %[[B]] : tensor<5x7x13xf32>, tensor<5x13x65xf32> -> tensor<5x7x65xf32>
// CHECK: return %[[C]]
func.func @batch_matmul_rank3(%a: tensor<5x7x13xf32>, %b: tensor<5x13x65xf32>) -> tensor<5x7x65xf32> {
  %c = rtx.batch_matmul %a, %b : tensor<5x7x13xf32>, tensor<5x13x65xf32> -> tensor<5x7x65xf32>
  return %c : tensor<5x7x65xf32>
}

// -----

// Attention scores: q k^T over [batch, heads].
// CHECK-LABEL: func.func @batch_matmul_scores_transpose_rhs
// CHECK-SAME: (%[[Q:[^:]*]]: tensor<2x12x64x32xf32>, %[[K:[^:]*]]: tensor<2x12x64x32xf32>)
// CHECK: rtx.batch_matmul %[[Q]], %[[K]] transpose_rhs : tensor<2x12x64x32xf32>, tensor<2x12x64x32xf32> -> tensor<2x12x64x64xf32>
func.func @batch_matmul_scores_transpose_rhs(%q: tensor<2x12x64x32xf32>, %k: tensor<2x12x64x32xf32>) -> tensor<2x12x64x64xf32> {
  %s = rtx.batch_matmul %q, %k transpose_rhs : tensor<2x12x64x32xf32>, tensor<2x12x64x32xf32> -> tensor<2x12x64x64xf32>
  return %s : tensor<2x12x64x64xf32>
}

// -----

// CHECK-LABEL: func.func @batch_matmul_transpose_lhs
// CHECK: rtx.batch_matmul %{{.*}}, %{{.*}} transpose_lhs : tensor<3x13x7xf64>, tensor<3x13x65xf64> -> tensor<3x7x65xf64>
func.func @batch_matmul_transpose_lhs(%a: tensor<3x13x7xf64>, %b: tensor<3x13x65xf64>) -> tensor<3x7x65xf64> {
  %c = rtx.batch_matmul %a, %b transpose_lhs : tensor<3x13x7xf64>, tensor<3x13x65xf64> -> tensor<3x7x65xf64>
  return %c : tensor<3x7x65xf64>
}

// -----

// CHECK-LABEL: func.func @batch_matmul_transpose_both
// CHECK: rtx.batch_matmul %{{.*}}, %{{.*}} transpose_lhs transpose_rhs : tensor<2x3x13x7xf32>, tensor<2x3x65x13xf32> -> tensor<2x3x7x65xf32>
func.func @batch_matmul_transpose_both(%a: tensor<2x3x13x7xf32>, %b: tensor<2x3x65x13xf32>) -> tensor<2x3x7x65xf32> {
  %c = rtx.batch_matmul %a, %b transpose_lhs transpose_rhs : tensor<2x3x13x7xf32>, tensor<2x3x65x13xf32> -> tensor<2x3x7x65xf32>
  return %c : tensor<2x3x7x65xf32>
}

// -----

// CHECK-LABEL: func.func @linear_with_bias
// CHECK-SAME: (%[[X:[^:]*]]: tensor<8x13x768xf32>, %[[W:[^:]*]]: tensor<3072x768xf32>, %[[B:[^:]*]]: tensor<3072xf32>)
// CHECK: %[[Y:.*]] = rtx.linear %[[X]], %[[W]], %[[B]] : tensor<8x13x768xf32>, tensor<3072x768xf32>, tensor<3072xf32> -> tensor<8x13x3072xf32>
// CHECK: return %[[Y]]
func.func @linear_with_bias(%x: tensor<8x13x768xf32>, %w: tensor<3072x768xf32>, %b: tensor<3072xf32>) -> tensor<8x13x3072xf32> {
  %y = rtx.linear %x, %w, %b : tensor<8x13x768xf32>, tensor<3072x768xf32>, tensor<3072xf32> -> tensor<8x13x3072xf32>
  return %y : tensor<8x13x3072xf32>
}

// -----

// CHECK-LABEL: func.func @linear_without_bias
// CHECK-SAME: (%[[X:[^:]*]]: tensor<7x13xf32>, %[[W:[^:]*]]: tensor<65x13xf32>)
// CHECK: %[[Y:.*]] = rtx.linear %[[X]], %[[W]] : tensor<7x13xf32>, tensor<65x13xf32> -> tensor<7x65xf32>
func.func @linear_without_bias(%x: tensor<7x13xf32>, %w: tensor<65x13xf32>) -> tensor<7x65xf32> {
  %y = rtx.linear %x, %w : tensor<7x13xf32>, tensor<65x13xf32> -> tensor<7x65xf32>
  return %y : tensor<7x65xf32>
}

// -----

// A rank-1 input: a single vector.
// CHECK-LABEL: func.func @linear_vector_input
// CHECK: rtx.linear %{{.*}}, %{{.*}}, %{{.*}} : tensor<13xbf16>, tensor<7x13xbf16>, tensor<7xbf16> -> tensor<7xbf16>
func.func @linear_vector_input(%x: tensor<13xbf16>, %w: tensor<7x13xbf16>, %b: tensor<7xbf16>) -> tensor<7xbf16> {
  %y = rtx.linear %x, %w, %b : tensor<13xbf16>, tensor<7x13xbf16>, tensor<7xbf16> -> tensor<7xbf16>
  return %y : tensor<7xbf16>
}

// -----

// rtx.gemm_epilogue: each epilogue with its operands and results.
// CHECK-LABEL: func.func @gemm_epilogues
// CHECK: rtx.gemm_epilogue bias_gelu_tanh_aux %{{.*}}, %{{.*}} bias %{{.*}} transpose_rhs : (tensor<2x7x13xbf16>, tensor<64x13xbf16>, tensor<64xbf16>) -> (tensor<2x7x64xbf16>, tensor<2x7x64xbf16>)
// CHECK: rtx.gemm_epilogue bias_gelu %{{.*}}, %{{.*}} bias %{{.*}} transpose_rhs : (tensor<2x7x13xbf16>, tensor<64x13xbf16>, tensor<64xbf16>) -> tensor<2x7x64xbf16>
// CHECK: rtx.gemm_epilogue bias_grad %{{.*}}, %{{.*}} transpose_lhs : (tensor<14x64xbf16>, tensor<14x13xbf16>) -> (tensor<64x13xbf16>, tensor<64xbf16>)
// CHECK: rtx.gemm_epilogue dgelu %{{.*}}, %{{.*}} pre %{{.*}} : (tensor<14x64xbf16>, tensor<64x13xbf16>, tensor<14x13xbf16>) -> tensor<14x13xbf16>
func.func @gemm_epilogues(%x: tensor<2x7x13xbf16>, %w: tensor<64x13xbf16>,
    %b: tensor<64xbf16>, %dy: tensor<14x64xbf16>, %x2: tensor<14x13xbf16>,
    %pre: tensor<14x13xbf16>) {
  %h, %p = rtx.gemm_epilogue bias_gelu_tanh_aux %x, %w bias %b transpose_rhs
      : (tensor<2x7x13xbf16>, tensor<64x13xbf16>, tensor<64xbf16>) -> (tensor<2x7x64xbf16>, tensor<2x7x64xbf16>)
  %h2 = rtx.gemm_epilogue bias_gelu %x, %w bias %b transpose_rhs
      : (tensor<2x7x13xbf16>, tensor<64x13xbf16>, tensor<64xbf16>) -> tensor<2x7x64xbf16>
  %dw, %db = rtx.gemm_epilogue bias_grad %dy, %x2 transpose_lhs
      : (tensor<14x64xbf16>, tensor<14x13xbf16>) -> (tensor<64x13xbf16>, tensor<64xbf16>)
  %dh = rtx.gemm_epilogue dgelu %dy, %w pre %pre
      : (tensor<14x64xbf16>, tensor<64x13xbf16>, tensor<14x13xbf16>) -> tensor<14x13xbf16>
  return
}
