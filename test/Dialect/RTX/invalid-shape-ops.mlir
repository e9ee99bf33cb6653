// RUN: rtx-opt %s -split-input-file -verify-diagnostics

// rtx.reshape, rtx.transpose, rtx.slice, rtx.split, rtx.concat,
// rtx.broadcast, rtx.reduce.

func.func @reshape_element_count(%x: tensor<7x13xf32>) -> tensor<7x14xf32> {
  // expected-error @+1 {{'rtx.reshape' op cannot reshape [7, 13] (91 elements) into [7, 14] (98 elements)}}
  %0 = rtx.reshape %x : tensor<7x13xf32> -> tensor<7x14xf32>
  return %0 : tensor<7x14xf32>
}

// -----

func.func @reshape_element_type(%x: tensor<6x4xf32>) -> tensor<4x6xbf16> {
  // expected-error @+1 {{'rtx.reshape' op element type 'f32' must not change, got 'bf16'}}
  %0 = rtx.reshape %x : tensor<6x4xf32> -> tensor<4x6xbf16>
  return %0 : tensor<4x6xbf16>
}

// -----

func.func @reshape_dynamic(%x: tensor<?x4xf32>) -> tensor<4x?xf32> {
  // expected-error @+1 {{'rtx.reshape' op operand #0 must be statically shaped tensor}}
  %0 = rtx.reshape %x : tensor<?x4xf32> -> tensor<4x?xf32>
  return %0 : tensor<4x?xf32>
}

// -----

func.func @transpose_permutation_size(%x: tensor<2x7x13xf32>) -> tensor<7x2x13xf32> {
  // expected-error @+1 {{'rtx.transpose' op permutation [1, 0] has 2 entries for an input of rank 3}}
  %0 = rtx.transpose %x [1, 0] : tensor<2x7x13xf32> -> tensor<7x2x13xf32>
  return %0 : tensor<7x2x13xf32>
}

// -----

func.func @transpose_repeated_entry(%x: tensor<7x13xf32>) -> tensor<7x7xf32> {
  // expected-error @+1 {{'rtx.transpose' op permutation [0, 0] is not a permutation of 0..1}}
  %0 = rtx.transpose %x [0, 0] : tensor<7x13xf32> -> tensor<7x7xf32>
  return %0 : tensor<7x7xf32>
}

// -----

func.func @transpose_entry_out_of_range(%x: tensor<7x13xf32>) -> tensor<13x7xf32> {
  // expected-error @+1 {{'rtx.transpose' op permutation [2, 0] is not a permutation of 0..1}}
  %0 = rtx.transpose %x [2, 0] : tensor<7x13xf32> -> tensor<13x7xf32>
  return %0 : tensor<13x7xf32>
}

// -----

func.func @transpose_negative_entry(%x: tensor<7x13xf32>) -> tensor<13x7xf32> {
  // expected-error @+1 {{'rtx.transpose' op permutation [-1, 0] is not a permutation of 0..1}}
  %0 = rtx.transpose %x [-1, 0] : tensor<7x13xf32> -> tensor<13x7xf32>
  return %0 : tensor<13x7xf32>
}

// -----

func.func @transpose_element_type(%x: tensor<7x13xf32>) -> tensor<13x7xf16> {
  // expected-error @+1 {{'rtx.transpose' op input element type 'f32' differs from result element type 'f16'}}
  %0 = rtx.transpose %x [1, 0] : tensor<7x13xf32> -> tensor<13x7xf16>
  return %0 : tensor<13x7xf16>
}

// -----

func.func @transpose_result_shape(%x: tensor<7x13xf32>) -> tensor<7x13xf32> {
  // expected-error @+1 {{'rtx.transpose' op result shape [7, 13] does not match the expected shape [13, 7]}}
  %0 = rtx.transpose %x [1, 0] : tensor<7x13xf32> -> tensor<7x13xf32>
  return %0 : tensor<7x13xf32>
}

// -----

func.func @slice_range_count(%x: tensor<7x13xf32>) -> tensor<3x13xf32> {
  // expected-error @+1 {{'rtx.slice' op has 1 starts and 1 limits for an input of rank 2}}
  %0 = rtx.slice %x [0:3] : tensor<7x13xf32> -> tensor<3x13xf32>
  return %0 : tensor<3x13xf32>
}

// -----

func.func @slice_limit_past_end(%x: tensor<7x13xf32>) -> tensor<8x13xf32> {
  // expected-error @+1 {{'rtx.slice' op range 0:8 of dimension 0 is not within [0, 7]}}
  %0 = rtx.slice %x [0:8, 0:13] : tensor<7x13xf32> -> tensor<8x13xf32>
  return %0 : tensor<8x13xf32>
}

// -----

func.func @slice_start_after_limit(%x: tensor<7x13xf32>) -> tensor<7x2xf32> {
  // expected-error @+1 {{'rtx.slice' op range 5:3 of dimension 1 is not within [0, 13]}}
  %0 = rtx.slice %x [0:7, 5:3] : tensor<7x13xf32> -> tensor<7x2xf32>
  return %0 : tensor<7x2xf32>
}

// -----

func.func @slice_negative_start(%x: tensor<7x13xf32>) -> tensor<4x13xf32> {
  // expected-error @+1 {{'rtx.slice' op range -1:3 of dimension 0 is not within [0, 7]}}
  %0 = rtx.slice %x [-1:3, 0:13] : tensor<7x13xf32> -> tensor<4x13xf32>
  return %0 : tensor<4x13xf32>
}

// -----

func.func @slice_element_type(%x: tensor<7x13xi32>) -> tensor<7x13xi64> {
  // expected-error @+1 {{'rtx.slice' op input element type 'i32' differs from result element type 'i64'}}
  %0 = rtx.slice %x [0:7, 0:13] : tensor<7x13xi32> -> tensor<7x13xi64>
  return %0 : tensor<7x13xi64>
}

// -----

func.func @slice_result_shape(%x: tensor<7x13xf32>) -> tensor<3x13xf32> {
  // expected-error @+1 {{'rtx.slice' op result shape [3, 13] does not match the expected shape [2, 13]}}
  %0 = rtx.slice %x [1:3, 0:13] : tensor<7x13xf32> -> tensor<3x13xf32>
  return %0 : tensor<3x13xf32>
}

// -----

func.func @slice_missing_colon(%x: tensor<7x13xf32>) -> tensor<7x13xf32> {
  // expected-error @+1 {{expected ':'}}
  %0 = rtx.slice %x [0, 0:13] : tensor<7x13xf32> -> tensor<7x13xf32>
  return %0 : tensor<7x13xf32>
}

// -----

func.func @split_dim_out_of_range(%x: tensor<2x7x13xf32>) -> (tensor<2x7x13xf32>) {
  // expected-error @+1 {{'rtx.split' op dim 3 is out of range for a tensor of rank 3}}
  %0 = rtx.split %x dim 3 : tensor<2x7x13xf32> -> tensor<2x7x13xf32>
  return %0 : tensor<2x7x13xf32>
}

// -----

func.func @split_no_results(%x: tensor<7x13xf32>) {
  // expected-error @+1 {{'rtx.split' op needs at least one result}}
  "rtx.split"(%x) <{dim = 0 : i64}> : (tensor<7x13xf32>) -> ()
  return
}

// -----

func.func @split_result_rank(%x: tensor<2x7x13xf32>) -> (tensor<2x7x6xf32>, tensor<7x7xf32>) {
  // expected-error @+1 {{'rtx.split' op result 1 has rank 2, the input has rank 3}}
  %0, %1 = rtx.split %x dim 2 : tensor<2x7x13xf32> -> tensor<2x7x6xf32>, tensor<7x7xf32>
  return %0, %1 : tensor<2x7x6xf32>, tensor<7x7xf32>
}

// -----

func.func @split_other_dimension_changes(%x: tensor<8x13x24xf32>) -> (tensor<8x13x12xf32>, tensor<8x7x12xf32>) {
  // expected-error @+1 {{'rtx.split' op result 1 dimension 1 is 7, expected 13}}
  %0, %1 = rtx.split %x dim 2 : tensor<8x13x24xf32> -> tensor<8x13x12xf32>, tensor<8x7x12xf32>
  return %0, %1 : tensor<8x13x12xf32>, tensor<8x7x12xf32>
}

// -----

func.func @split_element_type(%x: tensor<8x24xf32>) -> (tensor<8x12xf32>, tensor<8x12xbf16>) {
  // expected-error @+1 {{'rtx.split' op input element type 'f32' differs from result element type 'bf16'}}
  %0, %1 = rtx.split %x dim 1 : tensor<8x24xf32> -> tensor<8x12xf32>, tensor<8x12xbf16>
  return %0, %1 : tensor<8x12xf32>, tensor<8x12xbf16>
}

// -----

func.func @split_sizes_do_not_add_up(%x: tensor<8x13x2304xf32>) -> (tensor<8x13x768xf32>, tensor<8x13x768xf32>, tensor<8x13x767xf32>) {
  // expected-error @+1 {{'rtx.split' op result sizes along dim 2 add up to 2303, the input has 2304}}
  %q, %k, %v = rtx.split %x dim 2 : tensor<8x13x2304xf32> -> tensor<8x13x768xf32>, tensor<8x13x768xf32>, tensor<8x13x767xf32>
  return %q, %k, %v : tensor<8x13x768xf32>, tensor<8x13x768xf32>, tensor<8x13x767xf32>
}

// -----

func.func @concat_no_inputs() -> tensor<7xf32> {
  // expected-error @+1 {{'rtx.concat' op needs at least one input}}
  %0 = "rtx.concat"() <{dim = 0 : i64}> : () -> tensor<7xf32>
  return %0 : tensor<7xf32>
}

// -----

func.func @concat_dim_out_of_range(%a: tensor<4x8xf32>, %b: tensor<4x3xf32>) -> tensor<4x11xf32> {
  // expected-error @+1 {{'rtx.concat' op dim 2 is out of range for a tensor of rank 2}}
  %0 = rtx.concat %a, %b dim 2 : tensor<4x8xf32>, tensor<4x3xf32> -> tensor<4x11xf32>
  return %0 : tensor<4x11xf32>
}

// -----

func.func @concat_input_rank(%a: tensor<4x8xf32>, %b: tensor<3xf32>) -> tensor<4x11xf32> {
  // expected-error @+1 {{'rtx.concat' op input 1 has rank 1, the result has rank 2}}
  %0 = rtx.concat %a, %b dim 1 : tensor<4x8xf32>, tensor<3xf32> -> tensor<4x11xf32>
  return %0 : tensor<4x11xf32>
}

// -----

func.func @concat_other_dimension_differs(%a: tensor<4x8xf32>, %b: tensor<5x3xf32>) -> tensor<4x11xf32> {
  // expected-error @+1 {{'rtx.concat' op input 1 dimension 0 is 5, expected 4}}
  %0 = rtx.concat %a, %b dim 1 : tensor<4x8xf32>, tensor<5x3xf32> -> tensor<4x11xf32>
  return %0 : tensor<4x11xf32>
}

// -----

func.func @concat_element_type(%a: tensor<4x8xf32>, %b: tensor<4x3xbf16>) -> tensor<4x11xf32> {
  // expected-error @+1 {{'rtx.concat' op input element type 'bf16' differs from result element type 'f32'}}
  %0 = rtx.concat %a, %b dim 1 : tensor<4x8xf32>, tensor<4x3xbf16> -> tensor<4x11xf32>
  return %0 : tensor<4x11xf32>
}

// -----

func.func @concat_sizes_do_not_add_up(%a: tensor<4x8xf32>, %b: tensor<4x3xf32>) -> tensor<4x12xf32> {
  // expected-error @+1 {{'rtx.concat' op input sizes along dim 1 add up to 11, the result has 12}}
  %0 = rtx.concat %a, %b dim 1 : tensor<4x8xf32>, tensor<4x3xf32> -> tensor<4x12xf32>
  return %0 : tensor<4x12xf32>
}

// -----

func.func @broadcast_dims_size(%x: tensor<13xf32>) -> tensor<7x13xf32> {
  // expected-error @+1 {{'rtx.broadcast' op dims [0, 1] has 2 entries for an input of rank 1}}
  %0 = rtx.broadcast %x dims [0, 1] : tensor<13xf32> -> tensor<7x13xf32>
  return %0 : tensor<7x13xf32>
}

// -----

func.func @broadcast_dims_out_of_range(%x: tensor<13xf32>) -> tensor<7x13xf32> {
  // expected-error @+1 {{'rtx.broadcast' op dims entry 2 is out of range for a result of rank 2}}
  %0 = rtx.broadcast %x dims [2] : tensor<13xf32> -> tensor<7x13xf32>
  return %0 : tensor<7x13xf32>
}

// -----

func.func @broadcast_dims_negative(%x: tensor<13xf32>) -> tensor<7x13xf32> {
  // expected-error @+1 {{'rtx.broadcast' op dims entry -1 is out of range for a result of rank 2}}
  %0 = rtx.broadcast %x dims [-1] : tensor<13xf32> -> tensor<7x13xf32>
  return %0 : tensor<7x13xf32>
}

// -----

func.func @broadcast_dims_not_increasing(%x: tensor<13x13xf32>) -> tensor<2x13x13xf32> {
  // expected-error @+1 {{'rtx.broadcast' op dims [2, 1] must be strictly increasing}}
  %0 = rtx.broadcast %x dims [2, 1] : tensor<13x13xf32> -> tensor<2x13x13xf32>
  return %0 : tensor<2x13x13xf32>
}

// -----

func.func @broadcast_size_mismatch(%x: tensor<7xf32>) -> tensor<7x13xf32> {
  // expected-error @+1 {{'rtx.broadcast' op input dimension 0 of size 7 cannot broadcast to result dimension 1 of size 13}}
  %0 = rtx.broadcast %x dims [1] : tensor<7xf32> -> tensor<7x13xf32>
  return %0 : tensor<7x13xf32>
}

// -----

func.func @broadcast_element_type(%x: tensor<13xf32>) -> tensor<7x13xf64> {
  // expected-error @+1 {{'rtx.broadcast' op input element type 'f32' differs from result element type 'f64'}}
  %0 = rtx.broadcast %x dims [1] : tensor<13xf32> -> tensor<7x13xf64>
  return %0 : tensor<7x13xf64>
}

// -----

func.func @reduce_dim_out_of_range(%x: tensor<7x13xf32>) -> tensor<7xf32> {
  // expected-error @+1 {{'rtx.reduce' op reduced dim 2 is out of range for a tensor of rank 2}}
  %0 = rtx.reduce sum %x dims [2] : tensor<7x13xf32> -> tensor<7xf32>
  return %0 : tensor<7xf32>
}

// -----

func.func @reduce_dims_not_increasing(%x: tensor<2x7x13xf32>) -> tensor<7xf32> {
  // expected-error @+1 {{'rtx.reduce' op dims [2, 0] must be strictly increasing}}
  %0 = rtx.reduce sum %x dims [2, 0] : tensor<2x7x13xf32> -> tensor<7xf32>
  return %0 : tensor<7xf32>
}

// -----

func.func @reduce_dims_repeated(%x: tensor<7x13xf32>) -> tensor<7xf32> {
  // expected-error @+1 {{'rtx.reduce' op dims [1, 1] must be strictly increasing}}
  %0 = rtx.reduce max %x dims [1, 1] : tensor<7x13xf32> -> tensor<7xf32>
  return %0 : tensor<7xf32>
}

// -----

func.func @reduce_element_type(%x: tensor<7x13xf32>) -> tensor<7xf64> {
  // expected-error @+1 {{'rtx.reduce' op input element type 'f32' differs from result element type 'f64'}}
  %0 = rtx.reduce mean %x dims [1] : tensor<7x13xf32> -> tensor<7xf64>
  return %0 : tensor<7xf64>
}

// -----

func.func @reduce_missing_keepdim(%x: tensor<7x13xf32>) -> tensor<7x1xf32> {
  // expected-error @+1 {{'rtx.reduce' op result shape [7, 1] does not match the expected shape [7]}}
  %0 = rtx.reduce sum %x dims [1] : tensor<7x13xf32> -> tensor<7x1xf32>
  return %0 : tensor<7x1xf32>
}

// -----

func.func @reduce_keepdim_drops_dim(%x: tensor<7x13xf32>) -> tensor<7xf32> {
  // expected-error @+1 {{'rtx.reduce' op result shape [7] does not match the expected shape [7, 1]}}
  %0 = rtx.reduce min %x dims [1] keepdim : tensor<7x13xf32> -> tensor<7xf32>
  return %0 : tensor<7xf32>
}

// -----

func.func @reduce_integer_input(%x: tensor<7x13xi32>) -> tensor<7xi32> {
  // expected-error @+1 {{'rtx.reduce' op operand #0 must be statically shaped tensor of 32-bit float or bfloat16 type or 16-bit float or 64-bit float values, but got 'tensor<7x13xi32>'}}
  %0 = rtx.reduce sum %x dims [1] : tensor<7x13xi32> -> tensor<7xi32>
  return %0 : tensor<7xi32>
}

// -----

func.func @reduce_unknown_kind(%x: tensor<7x13xf32>) -> tensor<7xf32> {
  // expected-error @+1 {{expected string or keyword containing one of the following enum values for attribute 'kind' [sum, mean, max, min]}}
  %0 = rtx.reduce prod %x dims [1] : tensor<7x13xf32> -> tensor<7xf32>
  return %0 : tensor<7xf32>
}
