#!/usr/bin/env python3
"""GPT-2 on one GPU: rtx's CUDA program against PyTorch, side by side.

Issue 37's measurement. The GPU machines have CUDA and PyTorch but no
LLVM/MLIR, so the work is split (as in bench/gpu/gpt2_cuda_vs_cpu.py):

    # here (repository built, nvcc present, no GPU needed):
    python3 bench/gpu/gpt2_speed.py prepare [--configs default,gpt2-b8,gpt2-b16]
    # on the GPU machine, in a copy carrying build-gpu-speed (bench/gpu/run_prepared.sh):
    python3 bench/gpu/gpt2_speed.py run
    # without a GPU, the whole flow on the host emulation (speeds mean nothing):
    python3 bench/gpu/gpt2_speed.py all --emulate --configs tiny --peers eager

prepare: for each configuration, the model (rtx.models.gpt2) in bf16 with f32
master weights (rtx-optimizer mixed-precision, AdamW), the GPU passes
(GPU_PASSES), emitted with --emit=cuda and built with nvcc (or for the host
emulation); the same model in f32 as a CPU program, whose first losses are
the reference (computed here: the GPU machine has no time for a 124M f32 CPU
step). Also carries the fast-kernel comparison tests (rtxrt-gpu-fast-tests).

run: the fast-kernel tests; the machine's figures (bf16 matrix rate, device
copy bandwidth: measured now, with PyTorch); then per configuration rtx's
program, PyTorch eager (bf16 autocast, SDPA, fused AdamW) and torch.compile,
one after the other, each timed over the same steps after a warm-up; tokens/s,
ratios and MFU (nanoGPT's FLOPs per token over the H100/H200 SXM dense bf16
peak, 989 TFLOP/s, and over the measured matrix rate). Checks that rtx's
first losses agree with the f32 CPU program's within bf16's tolerance (1e-2
relative). Writes OUT/result.txt (a Markdown table for docs/benchmarks.md)
and OUT/result.json. Exits non-zero when a check fails; the speed goal
(>= 1.0x eager, >= 0.8x compile, MFU >= 40% at gpt2-b16) is reported, not
enforced.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)

from carry import add_prepared_args, library_environment, pack_libraries, run  # noqa: E402  (stdlib only)

CONFIGS = {
    "tiny": dict(layers=1, width=32, heads=2, seq=16, batch=2, vocab=64),
    "default": dict(layers=4, width=256, heads=4, seq=128, batch=8, vocab=1024),
    "gpt2-b8": dict(layers=12, width=768, heads=12, seq=1024, batch=8, vocab=50304),
    "gpt2-b16": dict(layers=12, width=768, heads=12, seq=1024, batch=16, vocab=50304),
}
# nanoGPT's GPT-2 124M recipe.
OPTIMIZER = dict(lr=6e-4, beta1=0.9, beta2=0.95, weight_decay=0.1)
# The passes that make the train step fast on a GPU, after autodiff and the
# optimizer (docs/gpu.md).
GPU_PASSES = ["-rtx-optimize-for-gpu"]
DATASHEET_BF16_TFLOPS = 989.0  # H100/H200 SXM, dense
BF16_TOLERANCE = 1e-2  # design.md §5


def optimizer_flag(mixed):
    o = OPTIMIZER
    return (f"-rtx-optimizer=kind=adamw lr={o['lr']} beta1={o['beta1']} beta2={o['beta2']} "
            f"weight-decay={o['weight_decay']}" + (" mixed-precision=true" if mixed else ""))


def model_text(cfg, dtype):
    sys.path.insert(0, os.path.join(ROOT, "python"))
    from rtx import models
    return models.gpt2(models.GPTConfig(dtype=dtype, **cfg)).text()


def emit_and_build(bin_dir, train, emit, program, emulate):
    source = f"{program}.{'cu' if emit == 'cuda' else 'cpp'}"
    run([f"{bin_dir}/rtx-translate", f"--emit={emit}", train, "-o", source,
         "--build-script", f"{program}.build.sh"])
    env = dict(os.environ, RTX_GPU_EMULATION="1" if emulate else "0")
    started = time.time()
    run(["sh", f"{program}.build.sh", source, program], env=env)
    print(f"built {os.path.basename(program)} in {time.time() - started:.1f} s", flush=True)


def program_losses_and_times(program, steps, env=None, timeout=None):
    done = subprocess.run([program, "--steps", str(steps), "--seed", "0"], capture_output=True,
                          text=True, env=env, timeout=timeout)
    print(done.stdout[-1200:], done.stderr[-1200:], sep="", flush=True)
    if done.returncode != 0:
        sys.exit(f"{program} failed (exit {done.returncode}): its output is above")
    losses = [float(m.group(1)) for m in re.finditer(r"step \d+/\d+: loss=(\S+)", done.stdout)]
    times = [float(m.group(1)) / 1000 for m in re.finditer(r"time=([\d.]+)ms", done.stdout)]
    return losses, times


def prepare_config(a, name, cfg, bin_dir):
    out = os.path.join(a.out, name)
    os.makedirs(out, exist_ok=True)
    for dtype, mixed, passes, emit in (("bf16", True, a.gpu_passes, "cuda"), ("f32", False, [], "cpp")):
        model = f"{out}/model-{dtype}.mlir"
        with open(model, "w") as f:
            f.write(model_text(cfg, dtype))
        train = f"{out}/train-{dtype}.mlir"
        run([f"{bin_dir}/rtx-opt", model, "-rtx-autodiff", optimizer_flag(mixed), *passes, "-o", train])
        emit_and_build(bin_dir, train, emit, f"{out}/program-{emit}", a.emulate)
    started = time.time()
    print(f"{name}: the f32 CPU program's first {a.reference_steps} steps (the reference losses)...",
          flush=True)
    losses, _ = program_losses_and_times(f"{out}/program-cpp", a.reference_steps)
    print(f"{name}: reference losses {losses} in {time.time() - started:.0f} s", flush=True)
    os.remove(f"{out}/program-cpp")  # not needed there; the carry is limited to 64 MiB
    return {"model": cfg, "reference_losses": losses}


def prepare(a):
    a.build = os.path.abspath(a.build)
    bin_dir = os.path.join(a.build, "bin")
    os.makedirs(a.out, exist_ok=True)
    bench = {"configs": {}, "emulated": a.emulate, "steps": a.steps, "warmup": a.warmup,
             "optimizer": OPTIMIZER, "gpu_passes": a.gpu_passes}
    for name in a.configs:
        bench["configs"][name] = prepare_config(a, name, CONFIGS[name], bin_dir)
    programs = [os.path.join(a.out, n, "program-cuda") for n in a.configs]
    tests = os.path.join(a.build, "test", "Unit", "Gpu", "rtxrt-gpu-fast-tests")
    if os.path.exists(tests) and not a.emulate:
        shutil.copy2(tests, os.path.join(a.out, "rtxrt-gpu-fast-tests"))
        programs.append(os.path.join(a.out, "rtxrt-gpu-fast-tests"))
    packed = pack_libraries(programs, os.path.join(a.out, "libs.tar.xz"))
    with open(os.path.join(a.out, "bench.json"), "w") as f:
        json.dump(bench, f, indent=1)
    print(f"prepared {a.out}: {len(a.configs)} configuration(s), {packed} libraries to carry; on the "
          f"GPU machine: python3 bench/gpu/gpt2_speed.py run --out {os.path.relpath(a.out, ROOT)}")


def fast_kernel_tests(a, env):
    binary = os.path.join(a.out, "rtxrt-gpu-fast-tests")
    if not os.path.exists(binary):
        return "not carried (emulation, or built without nvcc)"
    done = subprocess.run([binary, "--gtest_brief=1"], capture_output=True, text=True, env=env, timeout=180)
    print(done.stdout[-3000:], done.stderr[-1500:], sep="", flush=True)
    counts = re.findall(r"^\[  (PASSED|SKIPPED|FAILED) +\] (\d+) tests?", done.stdout, re.M)
    summary = ", ".join(f"{n} {word.lower()}" for word, n in counts)
    return (summary or "no summary") + ("" if done.returncode == 0 else " (FAILED)")


def run_config(a, torch, name, entry, env, peak):
    from torch_peer import mfu, train_rate
    cfg, steps, warmup = entry["model"], a.steps, a.warmup
    tokens = cfg["batch"] * cfg["seq"]
    row = {"name": name, "model": cfg}
    losses, times = program_losses_and_times(os.path.join(a.out, name, "program-cuda"), steps, env, 300)
    timed = times[warmup:] or times
    row["rtx"] = tokens / (sum(timed) / len(timed))
    reference = entry["reference_losses"]
    n = min(len(reference), len(losses))
    row["loss_difference"] = max(abs(g - c) / abs(c) for g, c in zip(losses[:n], reference[:n])) if n else None
    row["losses"] = {"rtx": losses[:n], "f32 cpu": reference[:n]}
    o = OPTIMIZER
    for mode in a.peers:
        try:
            row[mode], _ = train_rate(torch, cfg, mode, steps, warmup, o["lr"], (o["beta1"], o["beta2"]),
                                      o["weight_decay"])
        except Exception as e:  # a peer that cannot run here is reported, not hidden
            print(f"torch {mode} failed: {e}", flush=True)
            row[mode] = float("nan")
    row["mfu"] = mfu(cfg, row["rtx"], DATASHEET_BF16_TFLOPS)
    row["mfu_measured_peak"] = mfu(cfg, row["rtx"], peak["bf16_tflops"]) if peak else float("nan")
    for mode in a.peers:
        row[f"mfu_{mode}"] = mfu(cfg, row[mode], DATASHEET_BF16_TFLOPS)
    return row


def describe(cfg):
    return (f"{cfg['layers']} layers, width {cfg['width']}, {cfg['heads']} heads, seq {cfg['seq']}, "
            f"batch {cfg['batch']}, vocab {cfg['vocab']}")


def table(rows, peers):
    head = "| model | rtx tokens/s | " + " | ".join(f"torch {p} tokens/s | rtx / {p}" for p in peers) + \
           " | rtx MFU | " + " | ".join(f"{p} MFU" for p in peers) + " | loss vs f32 CPU |"
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in rows:
        cells = [f"{r['name']} ({describe(r['model'])})", f"{r['rtx']:.0f}"]
        for p in peers:
            cells += [f"{r[p]:.0f}", f"{r['rtx'] / r[p]:.2f}"]
        cells.append(f"{100 * r['mfu']:.1f}%")
        cells += [f"{100 * r[f'mfu_{p}']:.1f}%" for p in peers]
        cells.append(f"{r['loss_difference']:.1e}" if r["loss_difference"] is not None else "n/a")
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def traced_report(a, name, env, peak):
    """Traces steps 3-4 of `name`'s program (ops timed by device events) and
    writes rtx report's roofline table and MFU for it to OUT/report-NAME.txt."""
    trace = os.path.join(a.out, f"trace-{name}")
    shutil.rmtree(trace, ignore_errors=True)
    peaks = ["--peak-tflops", f"{peak['bf16_tflops']:.1f}", "--peak-gbps", f"{peak['copy_gbps']:.0f}"] if peak else []
    done = subprocess.run([os.path.join(a.out, name, "program-cuda"), "--steps", "4", "--seed", "0", "--trace",
                           trace, "--trace-steps", "3:4", *peaks], capture_output=True, text=True, env=env,
                          timeout=180)
    if done.returncode != 0:
        return f"traced run of {name} failed (exit {done.returncode}): {done.stderr[-500:]}"
    report = subprocess.run([sys.executable, "-m", "rtx", "report", trace], capture_output=True, text=True,
                            env=dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python")), timeout=120)
    with open(os.path.join(a.out, f"report-{name}.txt"), "w") as f:
        f.write(report.stdout + report.stderr)
    return f"rtx report of {name}'s steps 3-4: {os.path.join(a.out, f'report-{name}.txt')}" + (
        "" if report.returncode == 0 else f" (exit {report.returncode})")


def run_prepared(a):
    with open(os.path.join(a.out, "bench.json")) as f:
        bench = json.load(f)
    names = [n for n in a.configs if n in bench["configs"]] or list(bench["configs"])
    programs = [os.path.join(a.out, n, "program-cuda") for n in names]
    env = library_environment(os.path.join(a.out, "libs.tar.xz"), programs)
    import torch
    from torch_peer import machine_figures
    lines = [f"fast kernels against their references: {fast_kernel_tests(a, env)}"]
    peak = machine_figures(torch)
    lines.append("machine: " + (f"{peak['device']}, bf16 matrix rate {peak['bf16_tflops']:.0f} TFLOP/s "
                                f"(8192^3), device copy {peak['copy_gbps']:.0f} GB/s (measured now)"
                                if peak else "no CUDA device: the emulation run (speeds mean nothing)"))
    rows, failed = [], False
    for name in names:
        print(f"=== {name}: {describe(bench['configs'][name]['model'])}", flush=True)
        row = run_config(a, torch, name, bench["configs"][name], env, peak)
        rows.append(row)
        if row["loss_difference"] is None or not row["loss_difference"] <= BF16_TOLERANCE:
            failed = True
    lines += table(rows, a.peers)
    if a.report:
        lines.append(traced_report(a, names[-1], env, peak))
    lines.append(f"MFU: nanoGPT's FLOPs per token (6N + 12LHQT) x tokens/s over {DATASHEET_BF16_TFLOPS:.0f} "
                 f"TFLOP/s (H100/H200 SXM dense bf16); steps {a.steps}, the first {a.warmup} untimed"
                 + (" (CUDA programs built for the host emulation)" if bench["emulated"] else ""))
    lines.append("PASS: rtx's bf16 losses agree with the f32 CPU program within 1e-2" if not failed
                 else "FAIL: rtx's losses differ from the f32 CPU program's beyond 1e-2")
    print("\n".join(lines), flush=True)
    with open(os.path.join(a.out, "result.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(os.path.join(a.out, "result.json"), "w") as f:
        json.dump({"machine": peak, "rows": rows}, f, indent=1)
    if failed:
        sys.exit(1)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("phase", choices=("prepare", "run", "all"),
                        help="prepare here, run on the GPU machine, or both")
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--configs", default="default,gpt2-b8,gpt2-b16",
                        help=f"comma-separated, of {', '.join(CONFIGS)}")
    parser.add_argument("--peers", default="eager,compile", help="PyTorch peers: eager, compile")
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--warmup", type=int, default=4, help="untimed first steps (graph capture, autotune)")
    parser.add_argument("--reference-steps", type=int, default=2,
                        help="steps of the f32 CPU program whose losses rtx's are checked against")
    parser.add_argument("--gpu-passes", default=" ".join(GPU_PASSES),
                        help="rtx-opt flags after the optimizer (default: %(default)s)")
    parser.add_argument("--no-report", dest="report", action="store_false",
                        help="run: skip the traced run and rtx report of the last configuration")
    add_prepared_args(parser, ROOT, "build-gpu-speed")
    a = parser.parse_args()
    a.out = os.path.abspath(a.out)
    a.configs = [c for c in a.configs.split(",") if c]
    a.peers = [p for p in a.peers.split(",") if p]
    a.gpu_passes = a.gpu_passes.split()
    for c in a.configs:
        if c not in CONFIGS:
            parser.error(f"unknown configuration {c!r}: choose from {', '.join(CONFIGS)}")
    for p in a.peers:
        if p not in ("eager", "compile"):
            parser.error(f"unknown peer {p!r}: eager or compile")
    if a.phase in ("prepare", "all"):
        prepare(a)
    if a.phase in ("run", "all"):
        run_prepared(a)


if __name__ == "__main__":
    main()
