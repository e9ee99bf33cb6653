"""Checks two AdamW steps of rtx-run (test adamw-closed-form.mlir) against
the closed form of torch.optim.AdamW, written here in NumPy from its
documentation.

  adamw_reference.py make DIR    writes DIR/arg0.npy (x) and DIR/params/w.npy
  adamw_reference.py check DIR   compares DIR/out/result{1,2,3,4}.npy

The train step returns (loss, w', exp_avg', exp_avg_sq', step'); with
loss = sum(w * x) the gradient of w is x at every step."""
import sys

import numpy as np

mode, root = sys.argv[1], sys.argv[2]
x = np.linspace(-1.5, 2.0, 6, dtype=np.float32).reshape(2, 3)
w0 = np.array([[0.3, -0.2, 0.9], [-0.7, 0.05, 0.4]], dtype=np.float32)
if mode == "make":
    np.save(f"{root}/arg0.npy", x)
    np.save(f"{root}/params/w.npy", w0)
    sys.exit(0)

lr, b1, b2, eps, wd = 0.1, 0.8, 0.9, 0.001, 0.2
g = x.astype(np.float64)
w = w0.astype(np.float64)
m, v = np.zeros_like(g), np.zeros_like(g)
for t in (1, 2):
    w = w * (1 - lr * wd)
    m = b1 * m + (1 - b1) * g
    v = b2 * v + (1 - b2) * g * g
    mhat, vhat = m / (1 - b1 ** t), v / (1 - b2 ** t)
    w = w - lr * mhat / (np.sqrt(vhat) + eps)

got = [np.load(f"{root}/out/result{i}.npy").astype(np.float64) for i in (1, 2, 3, 4)]
errors = {
    "w": np.abs(got[0] - w).max(),
    "exp_avg": np.abs(got[1] - m).max(),
    "exp_avg_sq": np.abs(got[2] - v).max(),
    "step": abs(float(got[3]) - 2.0),
}
bad = {k: e for k, e in errors.items() if not e <= 1e-6}
if bad:
    sys.exit(f"adamw differs from the closed form (max abs error): {bad}")
print("adamw matches the closed form")
