// RUN: rtx-opt %s -split-input-file -verify-diagnostics

// Every rtx op refuses tensor types whose element count or byte size does
// not fit in int64 (RTX_TensorSizesFit): the count of 2^32 x 2^32 wraps to
// 0, and rtx-run would have initialised (or computed on) an empty tensor.

func.func @param_count_wraps_to_zero() -> tensor<4294967296x4294967296xf32> {
  // expected-error @+1 {{'rtx.param' op result #0 has type 'tensor<4294967296x4294967296xf32>', whose element count overflows int64 (at most 9223372036854775807)}}
  %w = rtx.param "w" normal(0.0, 0.1) : tensor<4294967296x4294967296xf32>
  return %w : tensor<4294967296x4294967296xf32>
}

// -----

// 2^62 elements are countable; their 2^64 bytes of f32 are not.
func.func @bytes_overflow() -> tensor<4611686018427387904xf32> {
  // expected-error @+1 {{'rtx.input' op result #0 has type 'tensor<4611686018427387904xf32>', whose size in bytes overflows int64}}
  %x = rtx.input "x" : tensor<4611686018427387904xf32>
  return %x : tensor<4611686018427387904xf32>
}

// -----

// An operand is checked too (a function argument has no rtx op of its own).
func.func @operand(%x: tensor<3x4294967296x4294967296xbf16>) -> tensor<3x4294967296x4294967296xbf16> {
  // expected-error @+1 {{'rtx.gelu' op operand #0 has type 'tensor<3x4294967296x4294967296xbf16>', whose element count overflows int64}}
  %y = rtx.gelu %x : tensor<3x4294967296x4294967296xbf16>
  return %y : tensor<3x4294967296x4294967296xbf16>
}

// -----

// A zero dimension makes the tensor empty, however large the others are.
func.func @zero_dimension(%x: tensor<0x4294967296x4294967296xf32>) -> tensor<0x4294967296x4294967296xf32> {
  %y = rtx.gelu %x : tensor<0x4294967296x4294967296xf32>
  return %y : tensor<0x4294967296x4294967296xf32>
}

// -----

// The largest countable i1 tensor is accepted (one byte per element).
func.func @largest() -> tensor<9223372036854775807xi1> {
  %m = rtx.input "m" : tensor<9223372036854775807xi1>
  return %m : tensor<9223372036854775807xi1>
}
