// RUN: rtx-opt %s -split-input-file -verify-diagnostics

// An offloaded buffer is a reference to storage in the tier: only
// rtx.offload_fetch_start reads it and rtx.offload_store replaces it, and
// the store's result goes back to the caller at a result marked
// rtx.offload.

func.func @fetch_of_a_plain_argument(%m: tensor<8xf32> {rtx.state = "exp_avg:w"}) {
  // expected-error @+1 {{'rtx.offload_fetch_start' op argument 0 is not marked 'rtx.offload'}}
  %t = rtx.offload_fetch_start %m : tensor<8xf32> -> !rtx.token<tensor<8xf32>>
  %v = rtx.wait %t : !rtx.token<tensor<8xf32>> -> tensor<8xf32>
  return
}

// -----

func.func @fetch_of_a_computed_value(%x: tensor<8xf32>) {
  %y = rtx.add %x, %x : tensor<8xf32>
  // expected-error @+1 {{'rtx.offload_fetch_start' op reads an offloaded buffer, which must be an argument of the function marked 'rtx.offload'}}
  %t = rtx.offload_fetch_start %y : tensor<8xf32> -> !rtx.token<tensor<8xf32>>
  %v = rtx.wait %t : !rtx.token<tensor<8xf32>> -> tensor<8xf32>
  return
}

// -----

func.func @offloaded_without_key(%m: tensor<8xf32> {rtx.offload = "cpu"}) {
  // expected-error @+1 {{'rtx.offload_fetch_start' op offloaded argument 0 has no 'rtx.state' key}}
  %t = rtx.offload_fetch_start %m : tensor<8xf32> -> !rtx.token<tensor<8xf32>>
  %v = rtx.wait %t : !rtx.token<tensor<8xf32>> -> tensor<8xf32>
  return
}

// -----

func.func @token_of_another_type(%m: tensor<8xf32> {rtx.offload = "cpu", rtx.state = "k"}) {
  // expected-error @+1 {{'rtx.offload_fetch_start' op token carries 'tensor<4xf32>' but the buffer is 'tensor<8xf32>'}}
  %t = rtx.offload_fetch_start %m : tensor<8xf32> -> !rtx.token<tensor<4xf32>>
  %v = rtx.wait %t : !rtx.token<tensor<4xf32>> -> tensor<4xf32>
  return
}

// -----

// expected-error @+1 {{'rtx.offload' on argument 0 must be "cpu" or "nvme", got "disk"}}
func.func @unknown_tier(%m: tensor<8xf32> {rtx.offload = "disk", rtx.state = "k"}) {
  return
}

// -----

func.func @read_directly(%m: tensor<8xf32> {rtx.offload = "cpu", rtx.state = "k"}) -> tensor<8xf32> {
  // expected-error @+1 {{'rtx.add' op uses offloaded argument 0 directly; read it with rtx.offload_fetch_start}}
  %y = rtx.add %m, %m : tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

func.func @store_used_by_an_op(%m: tensor<8xf32> {rtx.offload = "cpu", rtx.state = "k"}, %x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'rtx.offload_store' op result may only be returned by the step, but rtx.add uses it}}
  %r = rtx.offload_store %x into %m : tensor<8xf32>
  %y = rtx.add %r, %r : tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

func.func @store_returned_unmarked(%m: tensor<8xf32> {rtx.offload = "cpu", rtx.state = "k"}, %x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'rtx.offload_store' op is returned as result 0, which is not marked 'rtx.offload'}}
  %r = rtx.offload_store %x into %m : tensor<8xf32>
  return %r : tensor<8xf32>
}

// -----

// An offloaded argument of a function whose body has fewer arguments than its
// type: the function's verifier says so (the check of 'rtx.offload' read the
// missing block argument; found by rtx-parse-fuzzer under UBSan).
// expected-error @+1 {{entry block must have 1 arguments to match function signature}}
"func.func"() <{function_type = (tensor<8xf32>) -> (), sym_name = "body_without_the_argument", arg_attrs = [{rtx.offload = "cpu", rtx.state = "k"}]}> ({
  "func.return"() : () -> ()
}) : () -> ()
