"""Reads the three reports of planner-recompute.test and prints the checks."""
import json
import sys

none, selective, full = (json.load(open(p))["plan"]["predicted"] for p in sys.argv[1:4])
forward = sum(s["forward_s"] for s in none["stages"])
rs, rf = selective["time_s"]["recompute"], full["time_s"]["recompute"]
print(f"recompute: selective {rs * 1e3:.3f} ms, full {rf * 1e3:.3f} ms, forward {forward * 1e3:.3f} ms")
print(f"selective < full < forward: {0 < rs < rf < 0.95 * forward}")
# hardware FLOP/s x step = FLOPs per device: full adds less than a forward.
flops = {k: r["hardware_flops_per_device"] * r["step_time_s"] for k, r in
         (("none", none), ("full", full))}
model = none["model_flops_per_device"] * none["step_time_s"]
extra = flops["full"] - flops["none"]
print(f"hardware FLOPs grow by the recomputed share: {0 < extra < model / 3}")
