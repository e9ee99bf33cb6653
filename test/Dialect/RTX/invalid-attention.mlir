// RUN: rtx-opt %s -split-input-file -verify-diagnostics

// rtx.attention.

func.func @attention_rank3_query(%q: tensor<8x13x64xf32>, %k: tensor<2x8x13x64xf32>, %v: tensor<2x8x13x64xf32>) -> tensor<8x13x64xf32> {
  // expected-error @+1 {{'rtx.attention' op query, key and value must be [batch, heads, seq, head_dim], got ranks 3, 4, 4}}
  %0 = rtx.attention %q, %k, %v : tensor<8x13x64xf32>, tensor<2x8x13x64xf32>, tensor<2x8x13x64xf32> -> tensor<8x13x64xf32>
  return %0 : tensor<8x13x64xf32>
}

// -----

func.func @attention_rank5_value(%q: tensor<2x8x13x64xf32>, %k: tensor<2x8x13x64xf32>, %v: tensor<1x2x8x13x64xf32>) -> tensor<2x8x13x64xf32> {
  // expected-error @+1 {{got ranks 4, 4, 5}}
  %0 = rtx.attention %q, %k, %v : tensor<2x8x13x64xf32>, tensor<2x8x13x64xf32>, tensor<1x2x8x13x64xf32> -> tensor<2x8x13x64xf32>
  return %0 : tensor<2x8x13x64xf32>
}

// -----

func.func @attention_key_value_shapes(%q: tensor<2x8x13x64xf32>, %k: tensor<2x2x13x64xf32>, %v: tensor<2x2x13x32xf32>) -> tensor<2x8x13x64xf32> {
  // expected-error @+1 {{'rtx.attention' op key shape [2, 2, 13, 64] differs from value shape [2, 2, 13, 32]}}
  %0 = rtx.attention %q, %k, %v : tensor<2x8x13x64xf32>, tensor<2x2x13x64xf32>, tensor<2x2x13x32xf32> -> tensor<2x8x13x64xf32>
  return %0 : tensor<2x8x13x64xf32>
}

// -----

func.func @attention_batch_mismatch(%q: tensor<2x8x13x64xf32>, %k: tensor<3x8x13x64xf32>, %v: tensor<3x8x13x64xf32>) -> tensor<2x8x13x64xf32> {
  // expected-error @+1 {{'rtx.attention' op query batch 2 differs from key batch 3}}
  %0 = rtx.attention %q, %k, %v : tensor<2x8x13x64xf32>, tensor<3x8x13x64xf32>, tensor<3x8x13x64xf32> -> tensor<2x8x13x64xf32>
  return %0 : tensor<2x8x13x64xf32>
}

// -----

func.func @attention_head_dim_mismatch(%q: tensor<2x8x13x64xf32>, %k: tensor<2x8x13x32xf32>, %v: tensor<2x8x13x32xf32>) -> tensor<2x8x13x64xf32> {
  // expected-error @+1 {{'rtx.attention' op query head_dim 64 differs from key head_dim 32}}
  %0 = rtx.attention %q, %k, %v : tensor<2x8x13x64xf32>, tensor<2x8x13x32xf32>, tensor<2x8x13x32xf32> -> tensor<2x8x13x64xf32>
  return %0 : tensor<2x8x13x64xf32>
}

// -----

func.func @attention_heads_not_multiple(%q: tensor<2x8x13x64xf32>, %k: tensor<2x3x13x64xf32>, %v: tensor<2x3x13x64xf32>) -> tensor<2x8x13x64xf32> {
  // expected-error @+1 {{'rtx.attention' op query heads 8 must be a positive multiple of key/value heads 3}}
  %0 = rtx.attention %q, %k, %v : tensor<2x8x13x64xf32>, tensor<2x3x13x64xf32>, tensor<2x3x13x64xf32> -> tensor<2x8x13x64xf32>
  return %0 : tensor<2x8x13x64xf32>
}

// -----

// More key/value heads than query heads.
func.func @attention_more_kv_heads(%q: tensor<2x2x13x64xf32>, %k: tensor<2x8x13x64xf32>, %v: tensor<2x8x13x64xf32>) -> tensor<2x2x13x64xf32> {
  // expected-error @+1 {{'rtx.attention' op query heads 2 must be a positive multiple of key/value heads 8}}
  %0 = rtx.attention %q, %k, %v : tensor<2x2x13x64xf32>, tensor<2x8x13x64xf32>, tensor<2x8x13x64xf32> -> tensor<2x2x13x64xf32>
  return %0 : tensor<2x2x13x64xf32>
}

// -----

func.func @attention_zero_kv_heads(%q: tensor<2x8x13x64xf32>, %k: tensor<2x0x13x64xf32>, %v: tensor<2x0x13x64xf32>) -> tensor<2x8x13x64xf32> {
  // expected-error @+1 {{'rtx.attention' op query heads 8 must be a positive multiple of key/value heads 0}}
  %0 = rtx.attention %q, %k, %v : tensor<2x8x13x64xf32>, tensor<2x0x13x64xf32>, tensor<2x0x13x64xf32> -> tensor<2x8x13x64xf32>
  return %0 : tensor<2x8x13x64xf32>
}

// -----

func.func @attention_causal_lengths(%q: tensor<2x8x13x64xf32>, %k: tensor<2x8x16x64xf32>, %v: tensor<2x8x16x64xf32>) -> tensor<2x8x13x64xf32> {
  // expected-error @+1 {{'rtx.attention' op causal attention needs equal query and key sequence lengths, got 13 and 16}}
  %0 = rtx.attention %q, %k, %v causal : tensor<2x8x13x64xf32>, tensor<2x8x16x64xf32>, tensor<2x8x16x64xf32> -> tensor<2x8x13x64xf32>
  return %0 : tensor<2x8x13x64xf32>
}

// -----

func.func @attention_key_element_type(%q: tensor<2x8x13x64xf32>, %k: tensor<2x8x13x64xbf16>, %v: tensor<2x8x13x64xbf16>) -> tensor<2x8x13x64xf32> {
  // expected-error @+1 {{'rtx.attention' op query element type 'f32' differs from key element type 'bf16'}}
  %0 = rtx.attention %q, %k, %v : tensor<2x8x13x64xf32>, tensor<2x8x13x64xbf16>, tensor<2x8x13x64xbf16> -> tensor<2x8x13x64xf32>
  return %0 : tensor<2x8x13x64xf32>
}

// -----

func.func @attention_value_element_type(%q: tensor<2x8x13x64xf32>, %k: tensor<2x8x13x64xf32>, %v: tensor<2x8x13x64xf16>) -> tensor<2x8x13x64xf32> {
  // expected-error @+1 {{'rtx.attention' op query element type 'f32' differs from value element type 'f16'}}
  %0 = rtx.attention %q, %k, %v : tensor<2x8x13x64xf32>, tensor<2x8x13x64xf32>, tensor<2x8x13x64xf16> -> tensor<2x8x13x64xf32>
  return %0 : tensor<2x8x13x64xf32>
}

// -----

func.func @attention_result_element_type(%q: tensor<2x8x13x64xf32>, %k: tensor<2x8x13x64xf32>, %v: tensor<2x8x13x64xf32>) -> tensor<2x8x13x64xbf16> {
  // expected-error @+1 {{'rtx.attention' op query element type 'f32' differs from result element type 'bf16'}}
  %0 = rtx.attention %q, %k, %v : tensor<2x8x13x64xf32>, tensor<2x8x13x64xf32>, tensor<2x8x13x64xf32> -> tensor<2x8x13x64xbf16>
  return %0 : tensor<2x8x13x64xbf16>
}

// -----

// The result has the query's shape, not the key's.
func.func @attention_result_shape(%q: tensor<2x8x5x64xf32>, %k: tensor<2x8x13x64xf32>, %v: tensor<2x8x13x64xf32>) -> tensor<2x8x13x64xf32> {
  // expected-error @+1 {{'rtx.attention' op result shape [2, 8, 13, 64] does not match the expected shape [2, 8, 5, 64]}}
  %0 = rtx.attention %q, %k, %v : tensor<2x8x5x64xf32>, tensor<2x8x13x64xf32>, tensor<2x8x13x64xf32> -> tensor<2x8x13x64xf32>
  return %0 : tensor<2x8x13x64xf32>
}

// -----

func.func @attention_integer_query(%q: tensor<2x8x13x64xi32>, %k: tensor<2x8x13x64xf32>, %v: tensor<2x8x13x64xf32>) -> tensor<2x8x13x64xf32> {
  // expected-error @+1 {{'rtx.attention' op operand #0 must be statically shaped tensor of 32-bit float or bfloat16 type or 16-bit float or 64-bit float values, but got 'tensor<2x8x13x64xi32>'}}
  %0 = rtx.attention %q, %k, %v : tensor<2x8x13x64xi32>, tensor<2x8x13x64xf32>, tensor<2x8x13x64xf32> -> tensor<2x8x13x64xf32>
  return %0 : tensor<2x8x13x64xf32>
}

// -----

func.func @attention_dynamic_sequence(%q: tensor<2x8x?x64xf32>, %k: tensor<2x8x13x64xf32>, %v: tensor<2x8x13x64xf32>) -> tensor<2x8x?x64xf32> {
  // expected-error @+1 {{'rtx.attention' op operand #0 must be statically shaped tensor}}
  %0 = rtx.attention %q, %k, %v : tensor<2x8x?x64xf32>, tensor<2x8x13x64xf32>, tensor<2x8x13x64xf32> -> tensor<2x8x?x64xf32>
  return %0 : tensor<2x8x?x64xf32>
}

// -----

func.func @attention_zero_query_heads(%q: tensor<2x0x13x64xf32>, %k: tensor<2x4x13x64xf32>, %v: tensor<2x4x13x64xf32>) -> tensor<2x0x13x64xf32> {
  // expected-error @+1 {{'rtx.attention' op query heads 0 must be a positive multiple of key/value heads 4}}
  %0 = rtx.attention %q, %k, %v : tensor<2x0x13x64xf32>, tensor<2x4x13x64xf32>, tensor<2x4x13x64xf32> -> tensor<2x0x13x64xf32>
  return %0 : tensor<2x0x13x64xf32>
}
