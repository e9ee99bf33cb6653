// RUN: rtx-opt %s -split-input-file -verify-diagnostics

// rtx.mesh.

// expected-error @+1 {{'rtx.mesh' op axis names must not be empty}}
rtx.mesh @mesh_empty_axis_name [""=2]

// -----

// expected-error @+1 {{'rtx.mesh' op axis "dp" is declared twice}}
rtx.mesh @mesh_dp2_dp4 ["dp"=2, "tp"=4, "dp"=4]

// -----

// expected-error @+1 {{'rtx.mesh' op axis "tp" has size 0; sizes must be at least 1}}
rtx.mesh @mesh_dp2_tp0 ["dp"=2, "tp"=0]

// -----

// expected-error @+1 {{'rtx.mesh' op axis "dp" has size -2; sizes must be at least 1}}
rtx.mesh @mesh_negative ["dp"=-2]

// -----

// Only the generic form can give names and sizes of different lengths.
// expected-error @+1 {{'rtx.mesh' op has 2 axis names but 1 sizes}}
"rtx.mesh"() <{sym_name = "mesh_mismatch", axis_names = ["dp", "tp"], axis_sizes = array<i64: 2>}> : () -> ()

// -----

// expected-error @+1 {{expected '='}}
rtx.mesh @mesh_no_size ["dp"]

// -----

// expected-error @+1 {{expected integer value}}
rtx.mesh @mesh_float_size ["dp"=2.0]

// -----

// Axis names are strings.
// expected-error @+1 {{expected ']'}}
rtx.mesh @mesh_bare_name [dp=2]

// -----

// expected-note @+1 {{see existing symbol definition here}}
rtx.mesh @mesh_dp2 ["dp"=2]
// expected-error @+1 {{redefinition of symbol named 'mesh_dp2'}}
rtx.mesh @mesh_dp2 ["dp"=4]

// -----

// expected-error @+1 {{'rtx.mesh' op attribute 'axis_names' failed to satisfy constraint: string array attribute}}
"rtx.mesh"() <{sym_name = "mesh_int_names", axis_names = [1, 2], axis_sizes = array<i64: 2, 2>}> : () -> ()

// -----

// 2^32 x 2^32 ranks wrap to 0 in int64 arithmetic.
// expected-error @+1 {{'rtx.mesh' op has more ranks than int64 can count: the product of its axis sizes overflows at axis "tp"}}
rtx.mesh @mesh_dp4294967296_tp4294967296 ["dp"=4294967296, "tp"=4294967296]
