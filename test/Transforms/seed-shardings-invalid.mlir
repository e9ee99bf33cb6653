// RUN: rtx-opt %s -split-input-file -verify-diagnostics -rtx-seed-shardings -o /dev/null
// RUN: not rtx-opt %s -split-input-file '-rtx-seed-shardings=sequence-parallel=true' -o /dev/null 2>&1 | FileCheck %s --check-prefix=MEGATRON-SP
// MEGATRON-SP: error: rtx-seed-shardings: sequence-parallel=true needs a tp axis larger than 1 (Megatron sequence parallelism splits the sequence over tp)
// RUN: not rtx-opt %s -split-input-file '-rtx-seed-shardings=seed-hints=q_proj:diagonal' -o /dev/null 2>&1 | FileCheck %s --check-prefix=HINT
// HINT: error: rtx-seed-shardings: bad seed hint 'q_proj:diagonal'; expected NAME:column or NAME:row (NAME a parameter-name suffix, e.g. q_proj:column)
// RUN: not rtx-opt %s -split-input-file '-rtx-seed-shardings=seed-hints=q_proj:column' -o /dev/null 2>&1 | FileCheck %s --check-prefix=UNUSED
// UNUSED: warning: seed hint 'q_proj:column' matches no parameter

// The pass needs the mesh it seeds for.
// expected-error @+1 {{rtx-seed-shardings needs exactly one rtx.mesh in the module, found 0}}
module {
  func.func @no_mesh(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
    return %x : tensor<4x8xf32>
  }
}

// -----

// Only dp, tp and sp have seeding rules (pp splits no tensor: rtx-pipeline
// gives each stage its ops).
// expected-error @+1 {{rtx-seed-shardings: no seeding rule for mesh axis 'ep'; expected dp, dp_replicate, tp, sp or pp}}
rtx.mesh @mesh_ep2 ["ep"=2]

// -----

// Dimensions tp does not divide stay replicated (the documented rule), and a
// tp axis left with nothing to split is a warning, never silence.
rtx.mesh @mesh_tp4 ["tp"=4]

// expected-warning @+3 {{parameter "up" stays replicated: dimension 0 of size 6 is not divisible by axis "tp" of size 4}}
// expected-warning @+2 {{parameter "down" stays replicated: dimension 1 of size 6 is not divisible by axis "tp" of size 4}}
// expected-warning @+1 {{mesh axis "tp" of size 4 splits nothing in @not_divisible: no dimension it would split is divisible by 4}}
func.func @not_divisible(%x: tensor<6x8xf32>) -> tensor<6x8xf32> {
  %w1 = rtx.param "up" normal(0.0, 0.1) : tensor<6x8xf32>
  %h = rtx.linear %x, %w1 : tensor<6x8xf32>, tensor<6x8xf32> -> tensor<6x6xf32>
  %a = rtx.gelu %h : tensor<6x6xf32>
  %w2 = rtx.param "down" normal(0.0, 0.1) : tensor<8x6xf32>
  %y = rtx.linear %a, %w2 : tensor<6x6xf32>, tensor<8x6xf32> -> tensor<6x8xf32>
  return %y : tensor<6x8xf32>
}

// -----

rtx.mesh @mesh_tp2 ["tp"=2]

// A single layer has no Megatron pair.
// expected-warning @+1 {{mesh axis "tp" of size 2 splits nothing in @no_pair: no linear or matmul over a parameter feeds another through elementwise ops or attention (Megatron's column- and row-parallel pair), and no cross-entropy's vocabulary comes from one; every rank computes the whole model (give seed-hints=NAME:column|row, or rtx.sharding seeds)}}
func.func @no_pair(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %w = rtx.param "proj" normal(0.0, 0.1) : tensor<16x16xf32>
  %y = rtx.linear %x, %w : tensor<8x16xf32>, tensor<16x16xf32> -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}

// -----

rtx.mesh @mesh_tp2 ["tp"=2]

// GPT-2's fused q | k | v, split along the features tp splits: correct, but
// tp gathers it before the split; the warning says how to avoid it.
func.func @fused_qkv(%x: tensor<2x4x8xf32>) -> tensor<f32> {
  %w = rtx.param "c_attn" normal(0.0, 0.1) : tensor<24x8xf32>
  %qkv = rtx.linear %x, %w : tensor<2x4x8xf32>, tensor<24x8xf32> -> tensor<2x4x24xf32>
  // expected-warning @+1 {{the output of "c_attn" is split into 3 parts along the features tp splits: tp gathers it first (order the features by head, Megatron's layout, for head-parallel attention)}}
  %q, %k, %v = rtx.split %qkv dim 2 : tensor<2x4x24xf32> -> tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>
  %a = rtx.mul %q, %k : tensor<2x4x8xf32>
  %b = rtx.mul %a, %v : tensor<2x4x8xf32>
  %wo = rtx.param "c_proj" normal(0.0, 0.1) : tensor<8x8xf32>
  %o = rtx.linear %b, %wo : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
  %l = rtx.reduce mean %o dims [0, 1, 2] : tensor<2x4x8xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Megatron sequence parallelism splits the sequence over tp: with
// sequence-parallel=true (the MEGATRON-SP run) this mesh is an error.
rtx.mesh @mesh_dp2 ["dp"=2]
