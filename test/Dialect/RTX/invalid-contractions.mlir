// RUN: rtx-opt %s -split-input-file -verify-diagnostics

// rtx.matmul, rtx.batch_matmul, rtx.linear.

func.func @matmul_rank3_operand(%a: tensor<2x7x13xf32>, %b: tensor<13x65xf32>) -> tensor<2x7x65xf32> {
  // expected-error @+1 {{'rtx.matmul' op operands must be matrices, got ranks 3 and 2; use rtx.batch_matmul for batches}}
  %0 = rtx.matmul %a, %b : tensor<2x7x13xf32>, tensor<13x65xf32> -> tensor<2x7x65xf32>
  return %0 : tensor<2x7x65xf32>
}

// -----

func.func @matmul_vector_operand(%a: tensor<7x13xf32>, %b: tensor<13xf32>) -> tensor<7xf32> {
  // expected-error @+1 {{operands must be matrices, got ranks 2 and 1}}
  %0 = rtx.matmul %a, %b : tensor<7x13xf32>, tensor<13xf32> -> tensor<7xf32>
  return %0 : tensor<7xf32>
}

// -----

func.func @matmul_contracting_mismatch(%a: tensor<7x13xf32>, %b: tensor<7x65xf32>) -> tensor<7x65xf32> {
  // expected-error @+1 {{'rtx.matmul' op contracting dimensions differ: lhs has K = 13, rhs has K = 7}}
  %0 = rtx.matmul %a, %b : tensor<7x13xf32>, tensor<7x65xf32> -> tensor<7x65xf32>
  return %0 : tensor<7x65xf32>
}

// -----

// Shapes that would fit without the flag.
func.func @matmul_transpose_lhs_mismatch(%a: tensor<7x13xf32>, %b: tensor<13x65xf32>) -> tensor<13x65xf32> {
  // expected-error @+1 {{contracting dimensions differ: lhs has K = 7, rhs has K = 13}}
  %0 = rtx.matmul %a, %b transpose_lhs : tensor<7x13xf32>, tensor<13x65xf32> -> tensor<13x65xf32>
  return %0 : tensor<13x65xf32>
}

// -----

func.func @matmul_transpose_rhs_mismatch(%a: tensor<7x13xf32>, %b: tensor<13x65xf32>) -> tensor<7x13xf32> {
  // expected-error @+1 {{contracting dimensions differ: lhs has K = 13, rhs has K = 65}}
  %0 = rtx.matmul %a, %b transpose_rhs : tensor<7x13xf32>, tensor<13x65xf32> -> tensor<7x13xf32>
  return %0 : tensor<7x13xf32>
}

// -----

func.func @matmul_operand_element_types(%a: tensor<7x13xf32>, %b: tensor<13x65xbf16>) -> tensor<7x65xf32> {
  // expected-error @+1 {{'rtx.matmul' op lhs element type 'f32' differs from rhs element type 'bf16'}}
  %0 = rtx.matmul %a, %b : tensor<7x13xf32>, tensor<13x65xbf16> -> tensor<7x65xf32>
  return %0 : tensor<7x65xf32>
}

// -----

func.func @matmul_result_element_type(%a: tensor<7x13xbf16>, %b: tensor<13x65xbf16>) -> tensor<7x65xf32> {
  // expected-error @+1 {{'rtx.matmul' op lhs element type 'bf16' differs from result element type 'f32'}}
  %0 = rtx.matmul %a, %b : tensor<7x13xbf16>, tensor<13x65xbf16> -> tensor<7x65xf32>
  return %0 : tensor<7x65xf32>
}

// -----

func.func @matmul_result_shape(%a: tensor<7x13xf32>, %b: tensor<13x65xf32>) -> tensor<7x64xf32> {
  // expected-error @+1 {{'rtx.matmul' op result shape [7, 64] does not match the expected shape [7, 65]}}
  %0 = rtx.matmul %a, %b : tensor<7x13xf32>, tensor<13x65xf32> -> tensor<7x64xf32>
  return %0 : tensor<7x64xf32>
}

// -----

func.func @matmul_result_shape_transposed(%a: tensor<7x13xf32>, %b: tensor<13x65xf32>) -> tensor<65x7xf32> {
  // expected-error @+1 {{result shape [65, 7] does not match the expected shape [7, 65]}}
  %0 = rtx.matmul %a, %b : tensor<7x13xf32>, tensor<13x65xf32> -> tensor<65x7xf32>
  return %0 : tensor<65x7xf32>
}

// -----

func.func @matmul_integer_operands(%a: tensor<7x13xi32>, %b: tensor<13x65xi32>) -> tensor<7x65xi32> {
  // expected-error @+1 {{'rtx.matmul' op operand #0 must be statically shaped tensor of 32-bit float or bfloat16 type or 16-bit float or 64-bit float values, but got 'tensor<7x13xi32>'}}
  %0 = rtx.matmul %a, %b : tensor<7x13xi32>, tensor<13x65xi32> -> tensor<7x65xi32>
  return %0 : tensor<7x65xi32>
}

// -----

func.func @matmul_dynamic_shape(%a: tensor<?x4xf32>, %b: tensor<4x8xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{'rtx.matmul' op operand #0 must be statically shaped tensor of 32-bit float or bfloat16 type or 16-bit float or 64-bit float values, but got 'tensor<?x4xf32>'}}
  %0 = rtx.matmul %a, %b : tensor<?x4xf32>, tensor<4x8xf32> -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

func.func @matmul_unranked(%a: tensor<*xf32>, %b: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // The custom form parses ranked tensor types only.
  // expected-error @+1 {{invalid kind of type specified: expected builtin.tensor, but found 'tensor<*xf32>'}}
  %0 = rtx.matmul %a, %b : tensor<*xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @batch_matmul_matrices(%a: tensor<7x13xf32>, %b: tensor<13x65xf32>) -> tensor<7x65xf32> {
  // expected-error @+1 {{'rtx.batch_matmul' op operands must have one rank of at least 3, got ranks 2 and 2}}
  %0 = rtx.batch_matmul %a, %b : tensor<7x13xf32>, tensor<13x65xf32> -> tensor<7x65xf32>
  return %0 : tensor<7x65xf32>
}

// -----

func.func @batch_matmul_rank_mismatch(%a: tensor<2x3x7x13xf32>, %b: tensor<3x13x65xf32>) -> tensor<2x3x7x65xf32> {
  // expected-error @+1 {{operands must have one rank of at least 3, got ranks 4 and 3}}
  %0 = rtx.batch_matmul %a, %b : tensor<2x3x7x13xf32>, tensor<3x13x65xf32> -> tensor<2x3x7x65xf32>
  return %0 : tensor<2x3x7x65xf32>
}

// -----

func.func @batch_matmul_batch_mismatch(%a: tensor<2x3x7x13xf32>, %b: tensor<2x5x13x65xf32>) -> tensor<2x3x7x65xf32> {
  // expected-error @+1 {{'rtx.batch_matmul' op batch dimensions differ: [2, 3] vs [2, 5]}}
  %0 = rtx.batch_matmul %a, %b : tensor<2x3x7x13xf32>, tensor<2x5x13x65xf32> -> tensor<2x3x7x65xf32>
  return %0 : tensor<2x3x7x65xf32>
}

// -----

func.func @batch_matmul_contracting_mismatch(%q: tensor<2x12x13x32xf32>, %k: tensor<2x12x13x32xf32>) -> tensor<2x12x13x13xf32> {
  // The transpose_rhs flag is missing: K is 32 on the left and 13 on the right.
  // expected-error @+1 {{'rtx.batch_matmul' op contracting dimensions differ: lhs has K = 32, rhs has K = 13}}
  %0 = rtx.batch_matmul %q, %k : tensor<2x12x13x32xf32>, tensor<2x12x13x32xf32> -> tensor<2x12x13x13xf32>
  return %0 : tensor<2x12x13x13xf32>
}

// -----

func.func @batch_matmul_element_types(%a: tensor<5x7x13xf16>, %b: tensor<5x13x65xf32>) -> tensor<5x7x65xf16> {
  // expected-error @+1 {{'rtx.batch_matmul' op lhs element type 'f16' differs from rhs element type 'f32'}}
  %0 = rtx.batch_matmul %a, %b : tensor<5x7x13xf16>, tensor<5x13x65xf32> -> tensor<5x7x65xf16>
  return %0 : tensor<5x7x65xf16>
}

// -----

func.func @batch_matmul_result_shape(%a: tensor<5x7x13xf32>, %b: tensor<5x13x65xf32>) -> tensor<7x65xf32> {
  // expected-error @+1 {{'rtx.batch_matmul' op result shape [7, 65] does not match the expected shape [5, 7, 65]}}
  %0 = rtx.batch_matmul %a, %b : tensor<5x7x13xf32>, tensor<5x13x65xf32> -> tensor<7x65xf32>
  return %0 : tensor<7x65xf32>
}

// -----

func.func @batch_matmul_dynamic_batch(%a: tensor<?x7x13xf32>, %b: tensor<5x13x65xf32>) -> tensor<5x7x65xf32> {
  // expected-error @+1 {{'rtx.batch_matmul' op operand #0 must be statically shaped tensor}}
  %0 = rtx.batch_matmul %a, %b : tensor<?x7x13xf32>, tensor<5x13x65xf32> -> tensor<5x7x65xf32>
  return %0 : tensor<5x7x65xf32>
}

// -----

func.func @linear_scalar_input(%x: tensor<f32>, %w: tensor<7x1xf32>) -> tensor<7xf32> {
  // expected-error @+1 {{'rtx.linear' op input must have rank at least 1}}
  %0 = rtx.linear %x, %w : tensor<f32>, tensor<7x1xf32> -> tensor<7xf32>
  return %0 : tensor<7xf32>
}

// -----

func.func @linear_weight_rank(%x: tensor<7x13xf32>, %w: tensor<13xf32>) -> tensor<7x13xf32> {
  // expected-error @+1 {{'rtx.linear' op weight must be [out_features, in_features], got [13]}}
  %0 = rtx.linear %x, %w : tensor<7x13xf32>, tensor<13xf32> -> tensor<7x13xf32>
  return %0 : tensor<7x13xf32>
}

// -----

// The weight is stored [out, in] as in PyTorch, not [in, out].
func.func @linear_weight_not_transposed(%x: tensor<7x13xf32>, %w: tensor<13x65xf32>) -> tensor<7x65xf32> {
  // expected-error @+1 {{'rtx.linear' op weight in_features 65 differs from the input's last dimension 13}}
  %0 = rtx.linear %x, %w : tensor<7x13xf32>, tensor<13x65xf32> -> tensor<7x65xf32>
  return %0 : tensor<7x65xf32>
}

// -----

func.func @linear_weight_element_type(%x: tensor<7x13xf32>, %w: tensor<65x13xbf16>) -> tensor<7x65xf32> {
  // expected-error @+1 {{'rtx.linear' op input element type 'f32' differs from weight element type 'bf16'}}
  %0 = rtx.linear %x, %w : tensor<7x13xf32>, tensor<65x13xbf16> -> tensor<7x65xf32>
  return %0 : tensor<7x65xf32>
}

// -----

func.func @linear_result_element_type(%x: tensor<7x13xf32>, %w: tensor<65x13xf32>) -> tensor<7x65xf16> {
  // expected-error @+1 {{'rtx.linear' op input element type 'f32' differs from result element type 'f16'}}
  %0 = rtx.linear %x, %w : tensor<7x13xf32>, tensor<65x13xf32> -> tensor<7x65xf16>
  return %0 : tensor<7x65xf16>
}

// -----

func.func @linear_bias_shape(%x: tensor<7x13xf32>, %w: tensor<65x13xf32>, %b: tensor<13xf32>) -> tensor<7x65xf32> {
  // expected-error @+1 {{'rtx.linear' op bias shape [13] must be [out_features] = [65]}}
  %0 = rtx.linear %x, %w, %b : tensor<7x13xf32>, tensor<65x13xf32>, tensor<13xf32> -> tensor<7x65xf32>
  return %0 : tensor<7x65xf32>
}

// -----

func.func @linear_bias_rank(%x: tensor<7x13xf32>, %w: tensor<65x13xf32>, %b: tensor<1x65xf32>) -> tensor<7x65xf32> {
  // expected-error @+1 {{'rtx.linear' op bias shape [1, 65] must be [out_features] = [65]}}
  %0 = rtx.linear %x, %w, %b : tensor<7x13xf32>, tensor<65x13xf32>, tensor<1x65xf32> -> tensor<7x65xf32>
  return %0 : tensor<7x65xf32>
}

// -----

func.func @linear_bias_element_type(%x: tensor<7x13xf32>, %w: tensor<65x13xf32>, %b: tensor<65xf64>) -> tensor<7x65xf32> {
  // expected-error @+1 {{'rtx.linear' op input element type 'f32' differs from bias element type 'f64'}}
  %0 = rtx.linear %x, %w, %b : tensor<7x13xf32>, tensor<65x13xf32>, tensor<65xf64> -> tensor<7x65xf32>
  return %0 : tensor<7x65xf32>
}

// -----

func.func @linear_result_shape(%x: tensor<2x7x13xf32>, %w: tensor<65x13xf32>) -> tensor<14x65xf32> {
  // expected-error @+1 {{'rtx.linear' op result shape [14, 65] does not match the expected shape [2, 7, 65]}}
  %0 = rtx.linear %x, %w : tensor<2x7x13xf32>, tensor<65x13xf32> -> tensor<14x65xf32>
  return %0 : tensor<14x65xf32>
}

// -----

func.func @linear_integer_bias(%x: tensor<7x13xf32>, %w: tensor<65x13xf32>, %b: tensor<65xi32>) -> tensor<7x65xf32> {
  // expected-error @+1 {{'rtx.linear' op operand #2 must be statically shaped tensor of 32-bit float or bfloat16 type or 16-bit float or 64-bit float values, but got 'tensor<65xi32>'}}
  %0 = rtx.linear %x, %w, %b : tensor<7x13xf32>, tensor<65x13xf32>, tensor<65xi32> -> tensor<7x65xf32>
  return %0 : tensor<7x65xf32>
}

// -----

func.func @gemm_epilogue_missing_bias(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{'rtx.gemm_epilogue' op epilogue bias_gelu needs bias operand}}
  %0 = rtx.gemm_epilogue bias_gelu %x, %w transpose_rhs : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

func.func @gemm_epilogue_aux_missing(%dy: tensor<8x16xf32>, %x: tensor<8x4xf32>) -> tensor<16x4xf32> {
  // expected-error @+1 {{epilogue bias_grad needs aux result}}
  %0 = rtx.gemm_epilogue bias_grad %dy, %x transpose_lhs : (tensor<8x16xf32>, tensor<8x4xf32>) -> tensor<16x4xf32>
  return %0 : tensor<16x4xf32>
}

// -----

func.func @gemm_epilogue_extra_pre(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>, %b: tensor<16xf32>, %p: tensor<4x16xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{epilogue bias_gelu takes no pre operand}}
  %0 = rtx.gemm_epilogue bias_gelu %x, %w bias %b pre %p transpose_rhs : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

func.func @gemm_epilogue_k_mismatch(%x: tensor<4x8xf32>, %w: tensor<16x9xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{contracting dimensions differ: lhs has K = 8, rhs has K = 9}}
  %0 = rtx.gemm_epilogue bias_gelu %x, %w bias %b transpose_rhs : (tensor<4x8xf32>, tensor<16x9xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

func.func @gemm_epilogue_bias_shape(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>, %b: tensor<8xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{bias shape [8] must be [N] = [16]}}
  %0 = rtx.gemm_epilogue bias_gelu %x, %w bias %b transpose_rhs : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<8xf32>) -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

func.func @gemm_epilogue_pre_shape(%dy: tensor<8x4xf32>, %w: tensor<4x16xf32>, %p: tensor<2x4x16xf32>) -> tensor<8x16xf32> {
  // expected-error @+1 {{pre shape [2, 4, 16] must be the result's, [8, 16]}}
  %0 = rtx.gemm_epilogue dgelu %dy, %w pre %p : (tensor<8x4xf32>, tensor<4x16xf32>, tensor<2x4x16xf32>) -> tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}

// -----

func.func @gemm_epilogue_bias_grad_aux_shape(%dy: tensor<8x16xf32>, %x: tensor<8x4xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{aux shape [8] must be [16]}}
  %0, %1 = rtx.gemm_epilogue bias_grad %dy, %x transpose_lhs : (tensor<8x16xf32>, tensor<8x4xf32>) -> (tensor<16x4xf32>, tensor<8xf32>)
  return %1 : tensor<8xf32>
}

// -----

func.func @gemm_epilogue_mixed_types(%x: tensor<4x8xbf16>, %w: tensor<16x8xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{element type}}
  %0 = rtx.gemm_epilogue bias_gelu %x, %w bias %b transpose_rhs : (tensor<4x8xbf16>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}
