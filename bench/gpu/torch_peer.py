"""The PyTorch peer of the GPU speed benchmark: the model rtx.models.gpt2
builds (nanoGPT's GPT-2: learned positions, pre-norm blocks, fused c_attn,
tanh GELU, a language-model head tied to the token embedding), trained the
way a PyTorch user would train it fast on one GPU:

  eager    bf16 autocast, F.scaled_dot_product_attention (flash on Hopper),
           torch.optim.AdamW(fused=True) on f32 parameters
  compile  the same under torch.compile (inductor, default mode)

Used by bench/gpu/gpt2_speed.py on the GPU machine (PyTorch 2.x there). On a
machine without CUDA it runs on the CPU (the emulation run of the whole
flow: its speed means nothing).
"""
import math
import time


def build_model(torch, cfg):
    nn, F = torch.nn, torch.nn.functional
    C, H, T, V = cfg["width"], cfg["heads"], cfg["seq"], cfg["vocab"]

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1, self.ln_2 = nn.LayerNorm(C), nn.LayerNorm(C)
            self.c_attn, self.c_proj = nn.Linear(C, 3 * C), nn.Linear(C, C)
            self.c_fc, self.mlp_proj = nn.Linear(C, 4 * C), nn.Linear(4 * C, C)

        def forward(self, x):
            B = x.shape[0]
            q, k, v = self.c_attn(self.ln_1(x)).split(C, dim=2)
            q, k, v = (t.view(B, T, H, C // H).transpose(1, 2) for t in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.c_proj(y.transpose(1, 2).reshape(B, T, C))
            return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte, self.wpe = nn.Embedding(V, C), nn.Embedding(T, C)
            self.h = nn.ModuleList(Block() for _ in range(cfg["layers"]))
            self.ln_f = nn.LayerNorm(C)
            for p in self.parameters():
                if p.dim() == 2:
                    nn.init.normal_(p, 0.0, 0.02)

        def forward(self, tokens, labels):
            pos = torch.arange(T, device=tokens.device)
            x = self.wte(tokens) + self.wpe(pos)
            for block in self.h:
                x = block(x)
            logits = self.ln_f(x) @ self.wte.weight.t()  # tied head
            return F.cross_entropy(logits.float().view(-1, V), labels.view(-1))

    return GPT()


def train_rate(torch, cfg, mode, steps, warmup, lr, betas, weight_decay):
    """(tokens/s over the timed steps, losses of every step) of `mode`
    ("eager" or "compile") on this machine's GPU (or CPU without one)."""
    cuda = torch.cuda.is_available()
    device = "cuda" if cuda else "cpu"
    torch.manual_seed(0)
    model = build_model(torch, cfg).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, betas=betas, eps=1e-8,
                                  weight_decay=weight_decay, fused=cuda)
    step_fn = torch.compile(model) if mode == "compile" else model
    gen = torch.Generator().manual_seed(0)
    data = torch.randint(0, cfg["vocab"], (cfg["batch"], cfg["seq"] + 1), generator=gen).to(device)
    tokens, labels = data[:, :-1].contiguous(), data[:, 1:].contiguous()
    losses, times = [], []
    for step in range(steps):
        if cuda:
            torch.cuda.synchronize()
        started = time.perf_counter()
        with torch.autocast(device_type=device, dtype=torch.bfloat16):
            loss = step_fn(tokens, labels)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        losses.append(float(loss.detach()))  # synchronises, as rtx's loss read does
        times.append(time.perf_counter() - started)
        print(f"  torch {mode} step {step + 1}/{steps}: loss={losses[-1]:.6f} "
              f"time={times[-1] * 1000:.1f}ms", flush=True)
    timed = times[warmup:] or times
    rate = cfg["batch"] * cfg["seq"] / (sum(timed) / len(timed))
    return rate, losses


def machine_figures(torch):
    """This GPU's bf16 matrix rate (TFLOP/s, an 8192^3 GEMM) and device copy
    bandwidth (GB/s, read + write of 1 GiB), measured now; None without a GPU."""
    if not torch.cuda.is_available():
        return None
    n = 8192
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    src = torch.empty(1 << 28, device="cuda", dtype=torch.float32)
    dst = torch.empty_like(src)

    def best(fn, repeat=20):
        for _ in range(3):
            fn()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(repeat):
            fn()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / 1000 / repeat

    matmul_s = best(lambda: a @ b)
    copy_s = best(lambda: dst.copy_(src))
    return {"device": torch.cuda.get_device_name(), "bf16_tflops": 2 * n ** 3 / matmul_s / 1e12,
            "copy_gbps": 2 * src.numel() * 4 / copy_s / 1e9}


def flops_per_token(cfg):
    """nanoGPT's estimate_mfu (after PaLM, appendix B): 6 N + 12 L H Q T with
    N the parameters without the position embedding."""
    C, L, T, V = cfg["width"], cfg["layers"], cfg["seq"], cfg["vocab"]
    params = V * C + L * (12 * C * C + 13 * C) + 2 * C
    return 6 * params + 12 * L * C * T


def mfu(cfg, tokens_per_s, peak_tflops):
    if not peak_tflops or not math.isfinite(tokens_per_s):
        return float("nan")
    return flops_per_token(cfg) * tokens_per_s / (peak_tflops * 1e12)
