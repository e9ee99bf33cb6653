// RUN: rtx-opt %s -split-input-file -verify-diagnostics

// Regression test (fixed): SliceOp::verify (RTXOps.cpp) checks that `starts` has one entry
// per input dimension but never compares `limits` with it, then reads
// `limits[d]` for every d. The custom form always gives both the same length,
// but the generic form need not: with one limit for two starts the verifier
// reads past the end of the array and reports a garbage range such as
// "range 2:94841679984784 of dimension 1 is not within [0, 8]" (undefined
// behaviour; it could also pass or crash). Expected: a diagnostic that names
// the starts/limits length mismatch. When it is fixed this test passes
// unexpectedly: drop the XFAIL.

func.func @slice_fewer_limits_than_starts(%x: tensor<4x8xf32>) -> tensor<1x6xf32> {
  // expected-error-re @+1 {{'rtx.slice' op {{.*(starts.*limits|limits.*starts)}}}}
  %0 = "rtx.slice"(%x) <{starts = array<i64: 0, 2>, limits = array<i64: 1>}> : (tensor<4x8xf32>) -> tensor<1x6xf32>
  return %0 : tensor<1x6xf32>
}

// -----

func.func @slice_more_limits_than_starts(%x: tensor<4x8xf32>) -> tensor<1x6xf32> {
  // expected-error-re @+1 {{'rtx.slice' op {{.*(starts.*limits|limits.*starts)}}}}
  %0 = "rtx.slice"(%x) <{starts = array<i64: 0, 2>, limits = array<i64: 1, 8, 8>}> : (tensor<4x8xf32>) -> tensor<1x6xf32>
  return %0 : tensor<1x6xf32>
}
