// RUN: rtx-opt %s -split-input-file -verify-diagnostics

// Regression test (fixed): RTXDialect::verifyRegionArgAttribute (RTXDialect.cpp) returns
// success when the function has no body (`region.empty()`), so on a function
// *declaration* nothing about an argument's `rtx.*` attributes is checked: an
// unknown mesh, an unknown axis, a rank mismatch and even an unknown rtx
// attribute are accepted. Results of the same declarations are checked (see
// invalid-sharding.mlir), and the argument types are available from the
// function type. When it is fixed this test passes unexpectedly: drop the
// XFAIL.

rtx.mesh @mesh_dp2_tp4 ["dp"=2, "tp"=4]

// expected-error @+1 {{sharding of argument 0 refers to unknown mesh @mesh_nope}}
func.func private @decl_arg_unknown_mesh(tensor<8xf32> {rtx.sharding = #rtx.sharding<@mesh_nope, [["dp"]]>})

// -----

rtx.mesh @mesh_dp2_tp4 ["dp"=2, "tp"=4]

// expected-error @+1 {{sharding of argument 1 uses axis "pp" which mesh @mesh_dp2_tp4 does not have}}
func.func private @decl_arg_unknown_axis(tensor<8xf32>, tensor<8xf32> {rtx.sharding = #rtx.sharding<@mesh_dp2_tp4, [["pp"]]>})

// -----

rtx.mesh @mesh_dp2_tp4 ["dp"=2, "tp"=4]

// expected-error @+1 {{sharding of argument 0 has rank 2 but the value 'tensor<8xf32>' has rank 1}}
func.func private @decl_arg_rank_mismatch(tensor<8xf32> {rtx.sharding = #rtx.sharding<@mesh_dp2_tp4, [["dp"], []]>})

// -----

// expected-error-re @+1 {{unknown rtx attribute '{{"?}}rtx.foo{{"?}}' on argument 0}}
func.func private @decl_arg_unknown_rtx_attribute(tensor<8xf32> {rtx.foo = 1 : i64})
