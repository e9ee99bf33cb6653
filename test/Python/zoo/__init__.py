"""Model families written as their communities write them, for the zoo
tests (test_zoo.py): each file is one family, a config dataclass and plain
nn.Modules, in the style of the code it imitates, with no rtx in it.

    hf_gpt2     GPT-2 as Hugging Face's modeling_gpt2.py: Conv1D (weight
                [in, out], torch.addmm), fused c_attn split by .split,
                attention op by op with a boolean `bias` buffer and
                torch.where, gelu_new, lm_head tied to wte.
    nanogpt     Karpathy's nanoGPT model.py: nn.Linear with fused c_attn,
                optional biases, tied embeddings, op-by-op attention or
                F.scaled_dot_product_attention (PyTorch 2), forward(idx,
                targets) -> (logits, loss).
    hf_llama    Llama as Hugging Face's modeling_llama.py: LlamaRMSNorm,
                rotate_half rotary embeddings from an inv_freq buffer,
                q/k/v/o_proj, grouped-query attention by repeat_kv, SwiGLU
                MLP, no biases.
    meta_llama  Llama as Meta's llama/model.py: rotary embeddings on
                feature pairs (reshape(..., -1, 2), unbind, stack, flatten;
                real arithmetic in place of view_as_complex), wq/wk/wv/wo,
                n_kv_heads with repeat_kv, FeedForward with multiple_of.
    timm_vit    ViT as timm's vision_transformer.py: PatchEmbed, class
                token, position embedding, pre-norm blocks with a fused qkv
                Linear and reshape(B, N, 3, H, D).permute(2, 0, 3, 1, 4).
"""
