// RUN: rtx-opt %s -split-input-file -verify-diagnostics

// rtx.wait and the !rtx.token type.

func.func @wait_result_without_value(%t: !rtx.token) -> tensor<4x8xf32> {
  // expected-error @+1 {{'rtx.wait' op token carries no value, so the wait has no result}}
  %0 = "rtx.wait"(%t) : (!rtx.token) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @wait_custom_result_without_value(%t: !rtx.token) -> tensor<4x8xf32> {
  // expected-error @+1 {{'rtx.wait' op token carries no value, so the wait has no result}}
  %0 = rtx.wait %t : !rtx.token -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @wait_missing_result(%t: !rtx.token<tensor<4x8xf32>>) {
  // expected-error @+1 {{'rtx.wait' op token carries 'tensor<4x8xf32>', so the wait must yield it}}
  rtx.wait %t : !rtx.token<tensor<4x8xf32>>
  return
}

// -----

func.func @wait_result_type_mismatch(%t: !rtx.token<tensor<4x8xf32>>) -> tensor<4x8xbf16> {
  // expected-error @+1 {{'rtx.wait' op yields 'tensor<4x8xbf16>' but the token carries 'tensor<4x8xf32>'}}
  %0 = rtx.wait %t : !rtx.token<tensor<4x8xf32>> -> tensor<4x8xbf16>
  return %0 : tensor<4x8xbf16>
}

// -----

func.func @wait_result_shape_mismatch(%t: !rtx.token<tensor<4x8xf32>>) -> tensor<8x4xf32> {
  // expected-error @+1 {{'rtx.wait' op yields 'tensor<8x4xf32>' but the token carries 'tensor<4x8xf32>'}}
  %0 = rtx.wait %t : !rtx.token<tensor<4x8xf32>> -> tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}

// -----

func.func @wait_on_tensor(%x: tensor<4x8xf32>) {
  // The constraint text is the token type's summary ("must be links an async
  // collective's start to its wait"): only the stable parts are checked.
  // expected-error-re @+1 {{'rtx.wait' op operand #0 must be {{.*}}, but got 'tensor<4x8xf32>'}}
  "rtx.wait"(%x) : (tensor<4x8xf32>) -> ()
  return
}

// -----

func.func @wait_custom_form_tensor_operand(%x: tensor<4x8xf32>) {
  // expected-error-re @+1 {{'rtx.wait' op operand #0 must be {{.*}}, but got 'tensor<4x8xf32>'}}
  rtx.wait %x : tensor<4x8xf32>
  return
}

// -----

// expected-error @+2 {{expected non-function type}}
// expected-error @+1 {{failed to parse RTX_TokenType parameter 'valueType' which is to be a `::mlir::Type`}}
func.func @token_empty_brackets(%t: !rtx.token<>) {
  return
}

// -----

// expected-error @+1 {{type `tokens` in dialect `rtx`}}
func.func @unknown_rtx_type(%t: !rtx.tokens) {
  return
}
