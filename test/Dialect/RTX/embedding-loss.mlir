// RUN: rtx-opt %s -split-input-file | FileCheck %s
// RUN: rtx-opt %s -split-input-file -mlir-print-op-generic | rtx-opt -split-input-file | FileCheck %s

// Embedding lookup and the loss: rtx.embedding, rtx.cross_entropy.

// CHECK-LABEL: func.func @embedding_tokens
// CHECK-SAME: (%[[T:[^:]*]]: tensor<50257x768xf32>, %[[I:[^:]*]]: tensor<8x13xi32>)
// CHECK: %[[X:.*]] = rtx.embedding %[[T]], %[[I]] : tensor<50257x768xf32>, tensor<8x13xi32> -> tensor<8x13x768xf32>
// CHECK: return %[[X]]
func.func @embedding_tokens(%wte: tensor<50257x768xf32>, %ids: tensor<8x13xi32>) -> tensor<8x13x768xf32> {
  %x = rtx.embedding %wte, %ids : tensor<50257x768xf32>, tensor<8x13xi32> -> tensor<8x13x768xf32>
  return %x : tensor<8x13x768xf32>
}

// -----

// Ids of any rank, i64 ids, a scalar id.
// CHECK-LABEL: func.func @embedding_id_shapes
// CHECK: rtx.embedding %{{.*}}, %{{.*}} : tensor<65x7xbf16>, tensor<13xi64> -> tensor<13x7xbf16>
// CHECK: rtx.embedding %{{.*}}, %{{.*}} : tensor<65x7xbf16>, tensor<i32> -> tensor<7xbf16>
func.func @embedding_id_shapes(%table: tensor<65x7xbf16>, %a: tensor<13xi64>, %b: tensor<i32>) -> (tensor<13x7xbf16>, tensor<7xbf16>) {
  %0 = rtx.embedding %table, %a : tensor<65x7xbf16>, tensor<13xi64> -> tensor<13x7xbf16>
  %1 = rtx.embedding %table, %b : tensor<65x7xbf16>, tensor<i32> -> tensor<7xbf16>
  return %0, %1 : tensor<13x7xbf16>, tensor<7xbf16>
}

// -----

// CHECK-LABEL: func.func @cross_entropy_ignore_index
// CHECK-SAME: (%[[L:[^:]*]]: tensor<8x13x65xf32>, %[[Y:[^:]*]]: tensor<8x13xi32>)
// CHECK: %[[LOSS:.*]] = rtx.cross_entropy %[[L]], %[[Y]] ignore_index -1 : tensor<8x13x65xf32>, tensor<8x13xi32> -> tensor<f32>
// CHECK: return %[[LOSS]]
func.func @cross_entropy_ignore_index(%logits: tensor<8x13x65xf32>, %labels: tensor<8x13xi32>) -> tensor<f32> {
  %loss = rtx.cross_entropy %logits, %labels ignore_index -1 : tensor<8x13x65xf32>, tensor<8x13xi32> -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// CHECK-LABEL: func.func @cross_entropy_no_ignore_index
// CHECK: rtx.cross_entropy %{{.*}}, %{{.*}} : tensor<7x65xbf16>, tensor<7xi64> -> tensor<f32>
func.func @cross_entropy_no_ignore_index(%logits: tensor<7x65xbf16>, %labels: tensor<7xi64>) -> tensor<f32> {
  %loss = rtx.cross_entropy %logits, %labels : tensor<7x65xbf16>, tensor<7xi64> -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Rank-1 logits (one token, scalar label) and an f64 loss.
// CHECK-LABEL: func.func @cross_entropy_single_token_f64
// CHECK: rtx.cross_entropy %{{.*}}, %{{.*}} ignore_index 0 : tensor<13xf64>, tensor<i32> -> tensor<f64>
func.func @cross_entropy_single_token_f64(%logits: tensor<13xf64>, %label: tensor<i32>) -> tensor<f64> {
  %loss = rtx.cross_entropy %logits, %label ignore_index 0 : tensor<13xf64>, tensor<i32> -> tensor<f64>
  return %loss : tensor<f64>
}
