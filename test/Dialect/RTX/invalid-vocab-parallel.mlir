// RUN: rtx-opt %s -split-input-file -verify-diagnostics

// The vocab-parallel forms: a named mesh and axes, and per-token statistics
// of the labels' shape.

func.func @embedding_vocab_axes_without_mesh(%t: tensor<11x7xf32>, %ids: tensor<3xi32>) -> tensor<3x7xf32> {
  // expected-error @+1 {{'rtx.embedding' op needs both vocab_mesh and vocab_axes, or neither}}
  %0 = "rtx.embedding"(%t, %ids) {vocab_axes = ["tp"]} : (tensor<11x7xf32>, tensor<3xi32>) -> tensor<3x7xf32>
  return %0 : tensor<3x7xf32>
}

// -----

func.func @embedding_vocab_unknown_mesh(%t: tensor<11x7xf32>, %ids: tensor<3xi32>) -> tensor<3x7xf32> {
  // expected-error @+1 {{'rtx.embedding' op refers to unknown mesh @mesh_tp4}}
  %0 = rtx.embedding %t, %ids vocab on @mesh_tp4 ["tp"] : tensor<11x7xf32>, tensor<3xi32> -> tensor<3x7xf32>
  return %0 : tensor<3x7xf32>
}

// -----

rtx.mesh @mesh_dp2 ["dp"=2]

func.func @embedding_grad_vocab_unknown_axis(%ids: tensor<3xi32>, %dy: tensor<3x7xf32>) -> tensor<11x7xf32> {
  // expected-error @+1 {{'rtx.embedding_grad' op uses axis "tp" which mesh @mesh_dp2 does not have}}
  %0 = rtx.embedding_grad %ids, %dy vocab on @mesh_dp2 ["tp"] : tensor<3xi32>, tensor<3x7xf32> -> tensor<11x7xf32>
  return %0 : tensor<11x7xf32>
}

// -----

rtx.mesh @mesh_tp4 ["tp"=4]

func.func @vocab_logit_stats_shape(%logits: tensor<3x5x11xf32>, %labels: tensor<3x5xi32>) -> tensor<3xf32> {
  // expected-error @+1 {{'rtx.vocab_logit_stats' op max shape [3] must equal the labels' shape [3, 5]}}
  %max, %label = rtx.vocab_logit_stats %logits, %labels on @mesh_tp4 ["tp"] : tensor<3x5x11xf32>, tensor<3x5xi32> -> tensor<3xf32>, tensor<3xf32>
  return %max : tensor<3xf32>
}

// -----

rtx.mesh @mesh_tp4 ["tp"=4]

func.func @vocab_logit_stats_element_type(%logits: tensor<3x11xf32>, %labels: tensor<3xi32>) -> tensor<3xf64> {
  // expected-error @+1 {{'rtx.vocab_logit_stats' op logits element type 'f32' differs from max element type 'f64'}}
  %max, %label = rtx.vocab_logit_stats %logits, %labels on @mesh_tp4 ["tp"] : tensor<3x11xf32>, tensor<3xi32> -> tensor<3xf64>, tensor<3xf64>
  return %max : tensor<3xf64>
}

// -----

rtx.mesh @mesh_tp4 ["tp"=4]

func.func @vocab_logit_stats_labels(%logits: tensor<3x11xf32>, %labels: tensor<5xi32>) -> tensor<5xf32> {
  // expected-error @+1 {{'rtx.vocab_logit_stats' op labels shape [5] must equal the logits' leading shape [3]}}
  %max, %label = rtx.vocab_logit_stats %logits, %labels on @mesh_tp4 ["tp"] : tensor<3x11xf32>, tensor<5xi32> -> tensor<5xf32>, tensor<5xf32>
  return %max : tensor<5xf32>
}

// -----

func.func @vocab_logit_stats_no_axes(%logits: tensor<3x11xf32>, %labels: tensor<3xi32>) -> tensor<3xf32> {
  // expected-error @+1 {{'rtx.vocab_logit_stats' op refers to unknown mesh @mesh_tp4}}
  %max, %label = rtx.vocab_logit_stats %logits, %labels on @mesh_tp4 [] : tensor<3x11xf32>, tensor<3xi32> -> tensor<3xf32>, tensor<3xf32>
  return %max : tensor<3xf32>
}

// -----

rtx.mesh @mesh_tp4 ["tp"=4]

func.func @vocab_logit_stats_empty_axes(%logits: tensor<3x11xf32>, %labels: tensor<3xi32>) -> tensor<3xf32> {
  // expected-error @+1 {{'rtx.vocab_logit_stats' op needs at least one mesh axis}}
  %max, %label = rtx.vocab_logit_stats %logits, %labels on @mesh_tp4 [] : tensor<3x11xf32>, tensor<3xi32> -> tensor<3xf32>, tensor<3xf32>
  return %max : tensor<3xf32>
}

// -----

func.func @vocab_cross_entropy_shape(%max: tensor<3xf32>, %labels: tensor<3x5xi32>) -> tensor<f32> {
  // expected-error @+1 {{'rtx.vocab_cross_entropy' op max shape [3] must equal the labels' shape [3, 5]}}
  %loss = rtx.vocab_cross_entropy %max, %max, %max, %labels : tensor<3xf32>, tensor<3x5xi32> -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

rtx.mesh @mesh_tp4 ["tp"=4]

func.func @vocab_cross_entropy_grad_shape(%logits: tensor<3x11xf32>, %labels: tensor<3xi32>, %dloss: tensor<f32>, %max: tensor<11xf32>) -> tensor<3x11xf32> {
  // expected-error @+1 {{'rtx.vocab_cross_entropy_grad' op max shape [11] must equal the labels' shape [3]}}
  %d = rtx.vocab_cross_entropy_grad %logits, %labels, %dloss, %max, %max on @mesh_tp4 ["tp"] : tensor<3x11xf32>, tensor<3xi32>, tensor<f32>, tensor<11xf32>
  return %d : tensor<3x11xf32>
}
