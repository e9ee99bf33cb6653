"""NumPy reference for test/Executor/numpy-reference.mlir.

  numpy_reference.py make DIR    write the inputs as DIR/NAME.npy
  numpy_reference.py check DIR   compare DIR/out/resultN.npy with NumPy

Written from the op definitions (include/rtx/Dialect/RTX/IR/RTXModelOps.td),
independently of the C++ kernels. Computes in float64.
"""
import math
import sys

import numpy as np


def make_inputs():
    rng = np.random.default_rng(1234)
    f = lambda *s: rng.standard_normal(s).astype(np.float32)
    inputs = {
        "a": f(7, 13), "b": f(13, 5), "c": f(7, 13), "w": f(5, 13),
        "bias": f(5), "g": f(13), "q": f(2, 4, 7, 8), "k": f(2, 2, 7, 8),
        "v": f(2, 2, 7, 8), "table": f(11, 13),
        "ids": rng.integers(0, 11, (3, 7)).astype(np.int32),
        "labels": rng.integers(0, 13, (7,)).astype(np.int32),
        # strictly positive, for div and rsqrt
        "pos": (rng.random((7, 13)) + 0.5).astype(np.float32),
    }
    inputs["labels"][2] = 3  # exercise ignore_index
    return inputs


def erf(x):
    return np.vectorize(math.erf)(x)


def softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def layernorm(x, g, b, eps):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * g + b


def rope(x, theta):
    b, h, s, d = x.shape
    half = d // 2
    inv = theta ** (-2.0 * np.arange(half) / d)
    ang = np.arange(s)[:, None] * inv[None, :]
    cos, sin = np.cos(ang), np.sin(ang)
    x1, x2 = x[..., :half], x[..., half:]
    return np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], -1)


def attention(q, k, v, causal):
    group = q.shape[1] // k.shape[1]
    k = np.repeat(k, group, axis=1)
    v = np.repeat(v, group, axis=1)
    s = q @ k.swapaxes(-1, -2) / math.sqrt(q.shape[-1])
    if causal:
        n = s.shape[-1]
        s = np.where(np.tril(np.ones((n, n), bool)), s, -np.inf)
    return softmax(s, -1) @ v


def cross_entropy(logits, labels, ignore):
    lse = np.log(np.exp(logits - logits.max(-1, keepdims=True)).sum(-1)) + logits.max(-1)
    keep = labels != ignore
    picked = logits[np.arange(len(labels)), labels]
    return np.array(((lse - picked) * keep).sum() / keep.sum())


def reference(i):
    i = {k: v.astype(np.float64) if v.dtype == np.float32 else v for k, v in i.items()}
    a, c, pos, g, q = i["a"], i["c"], i["pos"], i["g"], i["q"]
    sig = 1 / (1 + np.exp(-a))
    s0, s1 = a[:, :5], a[:, 5:]
    cat = np.concatenate([s1, np.exp(s0), s1], 1)
    return [
        a @ i["b"], q @ q.swapaxes(-1, -2), a @ i["w"].T + i["bias"],
        a + c, a - c, a * c, a / pos, np.maximum(a, c), np.minimum(a, c),
        np.exp(a), np.tanh(a), sig, a * sig, 0.5 * a * (1 + erf(a / math.sqrt(2))),
        0.5 * a * (1 + np.tanh(math.sqrt(2 / math.pi) * (a + 0.044715 * a ** 3))),
        1 / np.sqrt(pos), layernorm(a, g, g, 1e-5),
        a / np.sqrt((a ** 2).mean(-1, keepdims=True) + 1e-6) * g, softmax(a, 1),
        rope(q, 1e4), attention(q, i["k"], i["v"], True), i["table"][i["ids"]],
        cross_entropy(a, i["labels"], 3), a.T, a[2:5, 4:9], cat[:, 2:18],
        np.broadcast_to(np.broadcast_to(g, (7, 13)), (2, 7, 13)),
        a.sum(1), a.mean(0), a.max(1, keepdims=True),
    ]


def main():
    mode, root = sys.argv[1], sys.argv[2]
    inputs = make_inputs()
    if mode == "make":
        for name, value in inputs.items():
            np.save(f"{root}/{name}.npy", value)
        return 0
    failures = 0
    expected = reference(inputs)
    for n, ref in enumerate(expected):
        got = np.load(f"{root}/out/result{n}.npy").astype(np.float64)
        if got.shape != ref.shape:
            print(f"result {n}: shape {got.shape} != reference {ref.shape}")
            failures += 1
            continue
        rel = np.linalg.norm(got - ref) / max(np.linalg.norm(ref), 1e-30)
        if not np.isfinite(got).all() or rel > 1e-5:
            print(f"result {n}: relative error {rel:.3e} exceeds 1e-5")
            failures += 1
    if failures:
        print(f"{failures} of {len(expected)} results differ from numpy")
        return 1
    print(f"checked {len(expected)} results against numpy: all within tolerance")
    return 0


if __name__ == "__main__":
    sys.exit(main())
