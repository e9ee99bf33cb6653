// RUN: rtx-opt %s -split-input-file -verify-diagnostics

// Names the rtx dialect does not define.

func.func @unknown_op_custom_form(%x: tensor<7xf32>) {
  // expected-error @+1 {{custom op 'rtx.nope' is unknown}}
  %0 = rtx.nope %x : tensor<7xf32>
  return
}

// -----

func.func @unknown_op_generic_form(%x: tensor<7xf32>) {
  // expected-error @+1 {{unregistered operation 'rtx.nope' found in dialect ('rtx') that does not allow unknown operations}}
  %0 = "rtx.nope"(%x) : (tensor<7xf32>) -> tensor<7xf32>
  return
}

// -----

// The shape broadcast is rtx.broadcast; the collective is rtx.broadcast_from.
rtx.mesh @mesh_dp2 ["dp"=2]

func.func @unknown_op_broadcast_start(%x: tensor<7xf32>) {
  // expected-error @+1 {{custom op 'rtx.broadcast_start' is unknown}}
  %0 = rtx.broadcast_start %x on @mesh_dp2 ["dp"] root 0 : tensor<7xf32> -> !rtx.token<tensor<7xf32>>
  return
}

// -----

func.func @unknown_rtx_attribute_on_op(%x: tensor<7xf32>) -> tensor<7xf32> {
  // expected-error-re @+1 {{unknown rtx attribute '{{"?}}rtx.foo{{"?}}'}}
  %0 = rtx.neg %x {rtx.foo} : tensor<7xf32>
  return %0 : tensor<7xf32>
}

// -----

// expected-error @+1 {{unknown attribute `foo` in dialect `rtx`}}
func.func @unknown_rtx_attribute_kind() attributes {note = #rtx.foo<1>} {
  return
}

// -----

// expected-error @+1 {{unknown  type `nope` in dialect `rtx`}}
func.func @unknown_rtx_type(%x: !rtx.nope) {
  return
}
