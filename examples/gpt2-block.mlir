// A GPT-2 transformer block (nanoGPT's `Block`) in rtx IR, at global shapes:
// batch 2, sequence 16, width 64, 4 heads of 16, MLP width 256.
//
//   x = x + attn(ln_1(x));  x = x + mlp(ln_2(x))
//
// Try it:  rtx-opt examples/gpt2-block.mlir
//          rtx-opt examples/gpt2-block.mlir -rtx-test-op-interfaces

func.func @gpt2_block(%x: tensor<2x16x64xf32>) -> tensor<2x16x64xf32> {
  // ln_1
  %ln1_w = rtx.param "h.0.ln_1.weight" ones : tensor<64xf32>
  %ln1_b = rtx.param "h.0.ln_1.bias" zeros : tensor<64xf32>
  %h = rtx.layernorm %x, %ln1_w, %ln1_b eps 1.0e-05
      : tensor<2x16x64xf32>, tensor<64xf32>, tensor<64xf32>

  // Causal self-attention: fused q/k/v projection, split into heads.
  %attn_w = rtx.param "h.0.attn.c_attn.weight" normal(0.0, 0.02) : tensor<192x64xf32>
  %attn_b = rtx.param "h.0.attn.c_attn.bias" zeros : tensor<192xf32>
  %qkv = rtx.linear %h, %attn_w, %attn_b
      : tensor<2x16x64xf32>, tensor<192x64xf32>, tensor<192xf32> -> tensor<2x16x192xf32>
  %q, %k, %v = rtx.split %qkv dim 2 : tensor<2x16x192xf32>
      -> tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<2x16x64xf32>
  %q4 = rtx.reshape %q : tensor<2x16x64xf32> -> tensor<2x16x4x16xf32>
  %k4 = rtx.reshape %k : tensor<2x16x64xf32> -> tensor<2x16x4x16xf32>
  %v4 = rtx.reshape %v : tensor<2x16x64xf32> -> tensor<2x16x4x16xf32>
  %qh = rtx.transpose %q4 [0, 2, 1, 3] : tensor<2x16x4x16xf32> -> tensor<2x4x16x16xf32>
  %kh = rtx.transpose %k4 [0, 2, 1, 3] : tensor<2x16x4x16xf32> -> tensor<2x4x16x16xf32>
  %vh = rtx.transpose %v4 [0, 2, 1, 3] : tensor<2x16x4x16xf32> -> tensor<2x4x16x16xf32>
  %y = rtx.attention %qh, %kh, %vh causal
      : tensor<2x4x16x16xf32>, tensor<2x4x16x16xf32>, tensor<2x4x16x16xf32>
        -> tensor<2x4x16x16xf32>
  %yt = rtx.transpose %y [0, 2, 1, 3] : tensor<2x4x16x16xf32> -> tensor<2x16x4x16xf32>
  %ym = rtx.reshape %yt : tensor<2x16x4x16xf32> -> tensor<2x16x64xf32>
  %proj_w = rtx.param "h.0.attn.c_proj.weight" normal(0.0, 0.02) : tensor<64x64xf32>
  %proj_b = rtx.param "h.0.attn.c_proj.bias" zeros : tensor<64xf32>
  %attn = rtx.linear %ym, %proj_w, %proj_b
      : tensor<2x16x64xf32>, tensor<64x64xf32>, tensor<64xf32> -> tensor<2x16x64xf32>
  %attn_drop = rtx.dropout %attn rate 0.0 seed 1 : tensor<2x16x64xf32>
  %x1 = rtx.add %x, %attn_drop : tensor<2x16x64xf32>

  // ln_2 and the GELU MLP.
  %ln2_w = rtx.param "h.0.ln_2.weight" ones : tensor<64xf32>
  %ln2_b = rtx.param "h.0.ln_2.bias" zeros : tensor<64xf32>
  %h2 = rtx.layernorm %x1, %ln2_w, %ln2_b eps 1.0e-05
      : tensor<2x16x64xf32>, tensor<64xf32>, tensor<64xf32>
  %fc_w = rtx.param "h.0.mlp.c_fc.weight" normal(0.0, 0.02) : tensor<256x64xf32>
  %fc_b = rtx.param "h.0.mlp.c_fc.bias" zeros : tensor<256xf32>
  %fc = rtx.linear %h2, %fc_w, %fc_b
      : tensor<2x16x64xf32>, tensor<256x64xf32>, tensor<256xf32> -> tensor<2x16x256xf32>
  %act = rtx.gelu %fc approximate : tensor<2x16x256xf32>
  %mproj_w = rtx.param "h.0.mlp.c_proj.weight" normal(0.0, 0.02) : tensor<64x256xf32>
  %mproj_b = rtx.param "h.0.mlp.c_proj.bias" zeros : tensor<64xf32>
  %mlp = rtx.linear %act, %mproj_w, %mproj_b
      : tensor<2x16x256xf32>, tensor<64x256xf32>, tensor<64xf32> -> tensor<2x16x64xf32>
  %out = rtx.add %x1, %mlp : tensor<2x16x64xf32>
  return %out : tensor<2x16x64xf32>
}
