#!/usr/bin/env python3
"""Importing and planning models at their real size (issue 36).

Each measurement runs in a fresh Python process under /usr/bin/time -v, so
its peak memory (maximum RSS of the process, or of rtx-opt if larger) is its own:

1. GPT-2 small (nanoGPT, 12 layers, width 768, vocabulary 50304) at batch
   8 x 1024: building the model, then import_module (and .text()). Goal: the
   process at most 1.5 GB, the import at most 15 s. Peer, in the same
   process: PyTorch running the same forward pass on the same meta tensors
   without rtx's tracer; the ratio is what recording costs.
2. `python3 -m rtx plan bench/compile/real_models.py:gpt2_small --profile
   hgx-h200 --devices 8`, end to end. Goal: at most 30 s.
3. Llama-3-8B's shape (Hugging Face style, built on the meta device) at
   16 x 8192: import, then `python3 -m rtx plan ...:llama3_8b --profile
   dgx-h100 --devices 64`. Goal: plan at most 60 s and 4 GB.
4. Linear in depth: GPT-2 small's import at 12, 24 and 48 layers; the time
   per layer should stay flat.

    python3 bench/compile/import_scale.py [--build build] [--skip-depth]

Needs Debian's /usr/bin/python3 (PyTorch) and a build (rtx-opt) for the plans.
"""
import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
MODELS = os.path.join(HERE, "real_models.py")
GB = 1024 ** 3

# Run in a child: build a model, import it, report seconds and bytes as JSON.
IMPORT_CHILD = r"""
import json, resource, sys, time
sys.path[:0] = [{python!r}, {here!r}]
import torch
from rtx.importer import import_module     # first: the examples put this tree's python/ on the path
import real_models
start = time.perf_counter()
model, inputs = getattr(real_models, {factory!r})(**{kwargs!r})
built = time.perf_counter()
imported = import_module(model, inputs)
text = imported.text()
done = time.perf_counter()
peer = None
if {peer!r}:
    # The peer: the same forward pass on meta tensors, run by PyTorch alone.
    from rtx.importer import _meta_parameters
    with _meta_parameters(model), torch.no_grad():
        metas = [x.to("meta") for x in inputs]
        t = time.perf_counter()
        model(*metas)
        peer = time.perf_counter() - t
print(json.dumps(dict(build_s=built - start, import_s=done - built, peer_s=peer, ir_chars=len(text),
                      params=len(imported.params))))
"""


def measured(argv, env=None):
    """Runs argv under /usr/bin/time -v: (stdout, wall seconds, peak RSS in
    bytes of the process and of the children it waited for, rtx-opt included)."""
    start = time.perf_counter()
    proc = subprocess.run(["/usr/bin/time", "-v"] + argv, capture_output=True, env=env, text=True)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr)
        raise SystemExit(f"{' '.join(argv[:4])}... failed with status {proc.returncode}")
    rss = next(int(line.split(":")[1]) * 1024 for line in proc.stderr.splitlines()
               if "Maximum resident set size" in line)
    return proc.stdout, wall, rss


def import_run(factory, kwargs, peer=False, root=ROOT):
    code = IMPORT_CHILD.format(python=os.path.join(root, "python"), here=HERE, factory=factory, kwargs=kwargs,
                               peer=peer)
    out, wall, rss = measured([sys.executable, "-c", code])
    return json.loads(out.strip().splitlines()[-1]), wall, rss


def plan_run(factory, profile, devices, build):
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"), RTX_BUILD_DIR=build)
    out, wall, rss = measured([sys.executable, "-m", "rtx", "plan", f"{MODELS}:{factory}", "--profile", profile,
                               "--devices", str(devices)], env)
    return out, wall, rss


def verdict(ok):
    return "met" if ok else "MISSED"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--skip-depth", action="store_true", help="skip the 24- and 48-layer imports")
    parser.add_argument("--before", metavar="ROOT",
                        help="also import GPT-2 small at batch 1 x 1024 with the importer of another checkout "
                             "(one that runs the model eagerly: it needs about 4.4 GB) and with this one")
    args = parser.parse_args()
    missed = 0

    if args.before:
        print("GPT-2 small at batch 1 x 1024, the importer of", args.before, "and this one")
        old, old_wall, old_rss = import_run("gpt2_small", {"batch": 1}, root=os.path.abspath(args.before))
        new, new_wall, new_rss = import_run("gpt2_small", {"batch": 1})
        print(f"  before: import {old['import_s']:.2f} s, process peak {old_rss / GB:.2f} GB")
        print(f"  now:    import {new['import_s']:.2f} s, process peak {new_rss / GB:.2f} GB; "
              f"before/now: {old['import_s'] / new['import_s']:.0f}x the time, "
              f"{(old_rss - new_rss) / GB:.2f} GB more memory")

    print("GPT-2 small (12 layers, width 768, 12 heads, vocabulary 50304), batch 8 x 1024")
    r, wall, rss = import_run("gpt2_small", {}, peer=True)
    ok = rss <= 1.5 * GB and r["import_s"] <= 15
    missed += not ok
    print(f"  import: {r['import_s']:.2f} s (build {r['build_s']:.2f} s), process peak {rss / GB:.2f} GB; "
          f"goal 15 s and 1.5 GB: {verdict(ok)}")
    print(f"  peer, PyTorch's forward on the same meta tensors: {r['peer_s']:.2f} s; "
          f"import/peer = {r['import_s'] / r['peer_s']:.1f} (the import also fuses, lowers and prints "
          f"{r['ir_chars'] / 1e3:.0f} kB of IR)")
    out, wall, rss = plan_run("gpt2_small", "hgx-h200", 8, args.build)
    ok = wall <= 30
    missed += not ok
    print(f"  python3 -m rtx plan --profile hgx-h200 --devices 8: {wall:.2f} s, peak {rss / GB:.2f} GB; "
          f"goal 30 s: {verdict(ok)}")
    print("    " + out.splitlines()[1].strip())

    print("Llama-3-8B shape (32 layers, width 4096, 32/8 heads, feed-forward 14336, vocabulary 128256), "
          "on the meta device, batch 16 x 8192")
    r, wall, rss = import_run("llama3_8b", {})
    print(f"  import: {r['import_s']:.2f} s, process peak {rss / GB:.2f} GB, {r['ir_chars'] / 1e6:.1f} MB of IR")
    out, wall, rss = plan_run("llama3_8b", "dgx-h100", 64, args.build)
    ok = wall <= 60 and rss <= 4 * GB
    missed += not ok
    print(f"  python3 -m rtx plan --profile dgx-h100 --devices 64: {wall:.2f} s, peak {rss / GB:.2f} GB; "
          f"goal 60 s and 4 GB: {verdict(ok)}")
    print("    " + out.splitlines()[1].strip())

    if not args.skip_depth:
        print("Linear in depth: GPT-2 small's import at batch 8 x 1024")
        for layers in (12, 24, 48):
            r, wall, rss = import_run("gpt2_small", {"layers": layers})
            print(f"  {layers:2d} layers: {r['import_s']:.2f} s ({1e3 * r['import_s'] / layers:.0f} ms a layer), "
                  f"process peak {rss / GB:.2f} GB")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
