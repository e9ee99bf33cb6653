// RUN: rtx-opt %s -split-input-file -verify-diagnostics

// rtx.embedding, rtx.cross_entropy.

func.func @embedding_table_rank(%t: tensor<65xf32>, %ids: tensor<7xi32>) -> tensor<7x65xf32> {
  // expected-error @+1 {{'rtx.embedding' op table must be [vocab, dim], got [65]}}
  %0 = rtx.embedding %t, %ids : tensor<65xf32>, tensor<7xi32> -> tensor<7x65xf32>
  return %0 : tensor<7x65xf32>
}

// -----

func.func @embedding_result_element_type(%t: tensor<65x13xf32>, %ids: tensor<7xi32>) -> tensor<7x13xbf16> {
  // expected-error @+1 {{'rtx.embedding' op table element type 'f32' differs from result element type 'bf16'}}
  %0 = rtx.embedding %t, %ids : tensor<65x13xf32>, tensor<7xi32> -> tensor<7x13xbf16>
  return %0 : tensor<7x13xbf16>
}

// -----

func.func @embedding_result_shape(%t: tensor<65x13xf32>, %ids: tensor<8x7xi32>) -> tensor<8x7x65xf32> {
  // expected-error @+1 {{'rtx.embedding' op result shape [8, 7, 65] does not match the expected shape [8, 7, 13]}}
  %0 = rtx.embedding %t, %ids : tensor<65x13xf32>, tensor<8x7xi32> -> tensor<8x7x65xf32>
  return %0 : tensor<8x7x65xf32>
}

// -----

func.func @embedding_float_ids(%t: tensor<65x13xf32>, %ids: tensor<7xf32>) -> tensor<7x13xf32> {
  // expected-error @+1 {{'rtx.embedding' op operand #1 must be statically shaped tensor of 32-bit signless integer or 64-bit signless integer values, but got 'tensor<7xf32>'}}
  %0 = rtx.embedding %t, %ids : tensor<65x13xf32>, tensor<7xf32> -> tensor<7x13xf32>
  return %0 : tensor<7x13xf32>
}

// -----

func.func @embedding_integer_table(%t: tensor<65x13xi32>, %ids: tensor<7xi32>) -> tensor<7x13xi32> {
  // expected-error @+1 {{'rtx.embedding' op operand #0 must be statically shaped tensor of 32-bit float or bfloat16 type or 16-bit float or 64-bit float values, but got 'tensor<65x13xi32>'}}
  %0 = rtx.embedding %t, %ids : tensor<65x13xi32>, tensor<7xi32> -> tensor<7x13xi32>
  return %0 : tensor<7x13xi32>
}

// -----

func.func @cross_entropy_scalar_logits(%l: tensor<f32>, %y: tensor<i32>) -> tensor<f32> {
  // expected-error @+1 {{'rtx.cross_entropy' op logits must have rank at least 1}}
  %0 = rtx.cross_entropy %l, %y : tensor<f32>, tensor<i32> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @cross_entropy_labels_shape(%l: tensor<8x13x65xf32>, %y: tensor<8x65xi32>) -> tensor<f32> {
  // expected-error @+1 {{'rtx.cross_entropy' op labels shape [8, 65] must equal the logits' leading shape [8, 13]}}
  %0 = rtx.cross_entropy %l, %y : tensor<8x13x65xf32>, tensor<8x65xi32> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// Labels are not one-hot.
func.func @cross_entropy_one_hot_labels(%l: tensor<7x65xf32>, %y: tensor<7x65xi64>) -> tensor<f32> {
  // expected-error @+1 {{'rtx.cross_entropy' op labels shape [7, 65] must equal the logits' leading shape [7]}}
  %0 = rtx.cross_entropy %l, %y : tensor<7x65xf32>, tensor<7x65xi64> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @cross_entropy_vector_result(%l: tensor<7x65xf32>, %y: tensor<7xi32>) -> tensor<7xf32> {
  // expected-error @+1 {{'rtx.cross_entropy' op result #0 must be 0D tensor of 32-bit float or 64-bit float values, but got 'tensor<7xf32>'}}
  %0 = rtx.cross_entropy %l, %y : tensor<7x65xf32>, tensor<7xi32> -> tensor<7xf32>
  return %0 : tensor<7xf32>
}

// -----

func.func @cross_entropy_bf16_result(%l: tensor<7x65xbf16>, %y: tensor<7xi32>) -> tensor<bf16> {
  // expected-error @+1 {{'rtx.cross_entropy' op result #0 must be 0D tensor of 32-bit float or 64-bit float values, but got 'tensor<bf16>'}}
  %0 = rtx.cross_entropy %l, %y : tensor<7x65xbf16>, tensor<7xi32> -> tensor<bf16>
  return %0 : tensor<bf16>
}

// -----

func.func @cross_entropy_float_labels(%l: tensor<7x65xf32>, %y: tensor<7xf32>) -> tensor<f32> {
  // expected-error @+1 {{'rtx.cross_entropy' op operand #1 must be statically shaped tensor of 32-bit signless integer or 64-bit signless integer values, but got 'tensor<7xf32>'}}
  %0 = rtx.cross_entropy %l, %y : tensor<7x65xf32>, tensor<7xf32> -> tensor<f32>
  return %0 : tensor<f32>
}
