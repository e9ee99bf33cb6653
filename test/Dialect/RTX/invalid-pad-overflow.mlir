// RUN: rtx-opt %s -split-input-file -verify-diagnostics

// Regression test (fixed): PadOp::verify (RTXOps.cpp) computes the expected size as
// `low[d] + in[d] + high[d]` in int64_t without an overflow check. With
// low = high = INT64_MAX and in = 3 the sum wraps (signed overflow, undefined
// behaviour) to 1, so a pad of tensor<3xf32> to tensor<1xf32> verifies, and
// the kernel would write 3 elements at offset INT64_MAX into a 1-element
// buffer. Expected: rejected (e.g. "padded size of dimension 0 overflows").
// When it is fixed this test passes unexpectedly: pin the message and drop
// the XFAIL.

func.func @pad_overflow_wraps_to_result(%x: tensor<3xf32>) -> tensor<1xf32> {
  // expected-error @+1 {{'rtx.pad' op}}
  %0 = rtx.pad %x low [9223372036854775807] high [9223372036854775807] : tensor<3xf32> -> tensor<1xf32>
  return %0 : tensor<1xf32>
}
