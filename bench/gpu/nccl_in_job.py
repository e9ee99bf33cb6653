#!/usr/bin/env python3
"""Two ranks on NCCL train, lose a rank and recover in the job, on one GPU.

The GPU machines lent to this project have one GPU, and NCCL refuses two
ranks of one communicator on one GPU ("Duplicate GPU detected") unless they
look like two hosts: each rank gets its own NCCL_HOSTID, so NCCL connects
them over its socket transport on loopback, as it would two nodes. That is
NCCL's own code path for ranks on other hosts (no P2P or shared memory).

    # here, with the repository built (no GPU needed):
    python3 bench/gpu/nccl_in_job.py prepare [--out build-gpu-nccl]
    # there, in a copy of the repository that carries build-gpu-nccl:
    python3 bench/gpu/nccl_in_job.py run [--out build-gpu-nccl]

prepare: distributes examples/gpt2-tiny.mlir over dp=2, emits it for CUDA
(NCCL process groups) and for the CPU (Gloo), builds both, runs the CPU
program on two ranks for the reference results, and packs rtx-launch and
the libraries the programs need beyond CUDA and NCCL (bench/gpu/carry.py).

run, on the GPU machine, with rtx-launch (test/Reliability/Inputs/chaos.py
injects the failures, as in test/Reliability/in-job.test):
  1. 3 SGD steps on two NCCL ranks agree with the CPU program (Gloo):
     every step's loss and every result within 1e-4 relative (design.md,
     after a few optimizer steps); NCCL's own log shows two communicators
     of 2 ranks each completing their init over sockets;
  2. 12 AdamW steps uninterrupted, twice: the reference of the next checks,
     and the GPU program's determinism (bit for bit);
  3. kill -9 of rank 1 after step 6 under --recover in-job: rank 0 keeps its
     process (one pid file), its NCCL communicator is aborted, epoch 1
     creates new ones with the replacement, which receives the state from
     rank 0 point to point (its hash must equal rank 0's), and the healed
     state hashes as logged after that step (--deterministic; unless the
     loss came while that hash was summed); the results equal the
     uninterrupted run's bit for bit;
  4. SIGSTOP of rank 1: rank 0's collective times out (--timeout auto),
     rtx-launch kills the stopped rank and replaces it; bit for bit again;
  5. both again, one step earlier (--repeat N: all four N times).
Prints one line per check and writes them to OUT/result.txt; exits 1 when
one fails.

--emulate (prepare) builds the CUDA program for the host emulation of the
GPU runtime (Gloo instead of NCCL): the flow can then be checked without a
GPU; the NCCL log check is skipped.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
INPUTS = os.path.join(ROOT, "test", "Reliability", "Inputs")
sys.path.insert(0, HERE)

from carry import add_prepared_args, library_environment, pack_libraries, run  # noqa: E402  (stdlib only)

# Both ranks on the one GPU, each its own NCCL "host", over loopback sockets.
NCCL_ENV = {"RTX_DEVICE": "cuda:0", "NCCL_SOCKET_IFNAME": "lo", "NCCL_IB_DISABLE": "1",
            "NCCL_P2P_DISABLE": "1", "NCCL_SHM_DISABLE": "1", "NCCL_NVLS_ENABLE": "0",
            "NCCL_DEBUG": "INFO"}
RANK_WRAPPER = '#!/bin/sh\n# NCCL takes ranks with other host ids for ranks on other hosts.\n' \
               'export NCCL_HOSTID="rtx-rank-$RANK"\nexec "$@"\n'


def program_args(out, steps_flag, steps, results):
    return ["--data", f"{out}/text.bin", steps_flag, str(steps), "--out", results,
            "--metrics", f"{results}.metrics.jsonl"]


def losses(results):
    with open(f"{results}.metrics.jsonl") as f:
        return [json.loads(line)["loss"] for line in f]


def same_losses(expected, actual, rtol):
    a, b = losses(actual), losses(expected)
    worst = max((abs(x - y) / abs(y) for x, y in zip(a, b)), default=float("inf"))
    return len(a) == len(b) and worst <= rtol, f"{len(a)} losses, largest relative difference {worst:.2e}"


def prepare(a):
    bin_dir = os.path.join(os.path.abspath(a.build), "bin")
    out = a.out
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(f"{out}/bin")
    # The token file of in-job.test: gpt2-tiny's 37-token vocabulary.
    tokens = bytearray()
    for _ in range(50):
        for t in range(37):
            tokens += t.to_bytes(2, "little")
    with open(f"{out}/text.bin", "wb") as f:
        f.write(tokens)
    # AdamW for the recovery (its moments are state to heal too); SGD for
    # the comparison with the CPU: AdamW's first steps move every parameter
    # by about lr whatever its gradient's size, so a tensor whose gradient
    # is zero but for rounding (the attention's key bias: softmax ignores
    # it) differs by whatever rounding gave, not within a tolerance.
    env = dict(os.environ, RTX_GPU_EMULATION="1" if a.emulate else "0")
    for name, optimizer in (("dp2", ""), ("sgd", " optimizer=sgd")):
        run([f"{bin_dir}/rtx-opt", os.path.join(ROOT, "examples", "gpt2-tiny.mlir"),
             f"-rtx-distribute=mesh=dp:2 lr=0.01{optimizer}", "-o", f"{out}/{name}.mlir"])
        for emit, ext, suffix in (("cpp", "cpp", "cpu"), ("cuda", "cu", "cuda")):
            if name == "dp2" and emit == "cpp":
                continue
            run([f"{bin_dir}/rtx-translate", f"--emit={emit}", f"{out}/{name}.mlir", "-o", f"{out}/{name}.{ext}",
                 "--build-script", f"{out}/build-{emit}.sh"])
            run(["sh", f"{out}/build-{emit}.sh", f"{out}/{name}.{ext}", f"{out}/{name}-{suffix}"], env=env)
    shutil.copy(f"{bin_dir}/rtx-launch", f"{out}/bin/rtx-launch")
    run([f"{out}/bin/rtx-launch", "-n", "2", "--store", f"file:{out}/cpu-store", "--", f"{out}/sgd-cpu",
         *program_args(out, "--steps", 3, f"{out}/cpu-3")], stdout=subprocess.DEVNULL)
    shutil.rmtree(f"{out}/cpu-store")
    packed = pack_libraries([f"{out}/dp2-cuda", f"{out}/sgd-cuda", f"{out}/bin/rtx-launch"],
                            f"{out}/libs.tar.xz")
    os.remove(f"{out}/sgd-cpu")
    with open(f"{out}/prepared.json", "w") as f:
        json.dump({"emulated": a.emulate}, f)
    print(f"prepared {out}: the dp=2 CUDA programs, rtx-launch, the CPU results and {packed} libraries; "
          f"on the GPU machine run:\n  python3 bench/gpu/nccl_in_job.py run --out {os.path.relpath(out, ROOT)}")


class Checks:
    def __init__(self):
        self.lines, self.failed = [], False

    def check(self, name, ok, detail):
        self.lines.append(f"{'PASS' if ok else 'FAIL'} {name}: {detail}")
        self.failed = self.failed or not ok
        print(self.lines[-1], flush=True)


def same_results(expected, actual, rtol=None):
    args = [sys.executable, f"{INPUTS}/same_results.py", expected, actual] + (
        ["--rtol", str(rtol)] if rtol is not None else [])
    done = subprocess.run(args, capture_output=True, text=True)
    return done.returncode == 0, (done.stdout + done.stderr).strip()


def differences(expected, actual):
    """How many results differ and by how much (numpy, which the GPU
    machine's Python has)."""
    import numpy as np
    if not os.path.isdir(actual):
        return "the run wrote no results"
    names = sorted(n for n in os.listdir(expected) if n.endswith(".npy"))
    worst, differ = (0.0, ""), 0
    for n in names:
        a, b = np.load(os.path.join(actual, n)).astype(np.float64), np.load(os.path.join(expected, n))
        error = np.linalg.norm(a - b) / (np.linalg.norm(b) or 1.0)
        differ += error > 0
        worst = max(worst, (error, n))
    return f"{differ} of {len(names)} results differ, the most {worst[1]} by {worst[0]:.2e} relative"


def loss_divergence(expected, actual):
    """The first global step whose logged loss differs (the last record of
    each global step: a step redone after a recovery is logged again)."""
    def by_step(path):
        last = {}
        for line in read(path).splitlines():
            record = json.loads(line)
            last[record.get("global_step", record["step"])] = record["loss"]
        return last
    a, b = by_step(actual), by_step(expected)
    for step in sorted(b):
        if a.get(step) != b[step]:
            return f"the loss first differs at global step {step} ({a.get(step)} vs {b[step]})"
    return f"the losses of all {len(b)} global steps are equal"


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def chaos(work, event, program, env):
    """Runs chaos.py: one failure EVENT (SIGNAL TARGET WHEN) in an in-job
    job of 12 steps; returns (its exit line, seconds, launch.out, launch.err)."""
    os.makedirs(work)
    launch = ["-n", "2", "--store", f"file:{work}/store", "--max-restarts", "1", "--recover", "in-job"]
    args = ["--data", program[-1], "--until-step", "12", "--checkpoint", f"{work}/ck",
            "--checkpoint-every", "4", "--timeout", "auto", "--deterministic", "--out", f"{work}/out"]
    started = time.time()
    done = subprocess.run([sys.executable, f"{INPUTS}/chaos.py", work, *event, "--", *launch, "--",
                           *program[:-1], *args], capture_output=True, text=True,
                          env=dict(env, RTX_FAULT_SLOW_RANK="0:150"))
    seconds = time.time() - started
    return done.stdout.strip(), seconds, read(f"{work}/launch.out"), read(f"{work}/launch.err")


def run_prepared(a):
    out = a.out
    with open(f"{out}/prepared.json") as f:
        emulated = json.load(f)["emulated"]
    env = library_environment(f"{out}/libs.tar.xz",
                              [f"{out}/dp2-cuda", f"{out}/sgd-cuda", f"{out}/bin/rtx-launch"])
    work = f"{out}/run"
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(f"{work}/nccl")
    env.update(NCCL_ENV, PATH=f"{out}/bin:{env['PATH']}", NCCL_DEBUG_FILE=f"{work}/nccl/%h.%p.log")
    wrapper = f"{work}/rank.sh"
    with open(wrapper, "w") as f:
        f.write(RANK_WRAPPER)
    os.chmod(wrapper, 0o755)
    program = [wrapper, f"{out}/dp2-cuda"]
    checks = Checks()

    def launch(name, steps_flag, steps, binary="dp2-cuda"):
        started = time.time()
        done = subprocess.run(["rtx-launch", "-n", "2", "--store", f"file:{work}/{name}-store", "--", wrapper,
                               f"{out}/{binary}", *program_args(out, steps_flag, steps, f"{work}/{name}")],
                              capture_output=True, text=True, env=env)
        print(done.stdout[-1500:], done.stderr[-3000:], sep="", flush=True)
        return done.returncode, time.time() - started, done.stdout

    code, seconds, stdout = launch("three", "--steps", 3, "sgd-cuda")
    ok, detail = same_results(f"{out}/cpu-3", f"{work}/three", 1e-4) if code == 0 else (False, f"exit {code}")
    ok_losses, detail_losses = same_losses(f"{out}/cpu-3", f"{work}/three", 1e-4) if code == 0 else (False, "")
    device = next((line for line in stdout.splitlines() if "device:" in line), "no device line")
    checks.check("nccl-vs-cpu", ok and ok_losses,
                 f"3 steps on 2 ranks vs the CPU program (Gloo): {detail_losses}; results {detail}; "
                 f"{device.strip()}; {seconds:.1f} s")
    if not emulated:
        logs = "".join(read(os.path.join(f"{work}/nccl", n)) for n in sorted(os.listdir(f"{work}/nccl")))
        inits = logs.count("Init COMPLETE")
        checks.check("nccl-log", inits >= 2 and "nranks 2" in logs and "NET/Socket" in logs,
                     f"NCCL's log: {inits} communicator inits completed, nranks 2 "
                     f"{'seen' if 'nranks 2' in logs else 'NOT seen'}, socket transport "
                     f"{'seen' if 'NET/Socket' in logs else 'NOT seen'}")
    code, full_seconds, _ = launch("full", "--until-step", 12)
    checks.check("uninterrupted", code == 0, f"12 steps, exit {code}, {full_seconds:.1f} s")
    # The same run again: the GPU program is deterministic (no atomics, one
    # cuBLAS configuration), which the bit-for-bit checks below rely on.
    code, _, _ = launch("again", "--until-step", 12)
    same, detail = same_results(f"{work}/full", f"{work}/again") if code == 0 else (False, f"exit {code}")
    checks.check("deterministic", same, f"the uninterrupted run again: {detail}")

    program_with_data = program + [f"{out}/text.bin"]
    kill = ["rtx-launch: rank 1 was killed by signal 9; in-job recovery: the other ranks keep their state",
            "in-job recovery: waiting for epoch 1", "in-job recovery: epoch 1: replaced rank 1"]
    stop = ["imed out", "rtx-launch: rank 1 is stopped; in-job recovery: killing it",
            "in-job recovery: epoch 1: replaced rank 1"]
    cases = [("kill", ["KILL", "rank:1", "step:6"], kill), ("stop", ["STOP", "rank:1", "step:6"], stop),
             ("kill-again", ["KILL", "rank:1", "step:5"], kill), ("stop-again", ["STOP", "rank:1", "step:5"], stop)]
    for name, event, expected in [(f"{name}{'' if n == 0 else f'-{n}'}", event, expected)
                                  for n in range(a.repeat) for name, event, expected in cases]:
        exit_line, seconds, launch_out, launch_err = chaos(f"{work}/{name}", event, program_with_data, env)
        missing = [e for e in expected if e not in launch_err]
        # The replacement heals from rank 0, point to point (every rank checks
        # its hash against rank 0's, or stops), and with --deterministic the
        # healed state hashes as rank 0's did after that step, unless the loss
        # came while that hash was summed.
        healed = ("received" in launch_out and "pieces of state" in launch_out
                  and ("recover: the healed state hashes as logged after step" in launch_out
                       or "the healed state is not compared with the log" in launch_out))
        restarted = "restart" in launch_err
        pids = sorted(p for p in os.listdir(f"{work}/{name}") if p.startswith("pid.0."))
        same, detail = same_results(f"{work}/full", f"{work}/{name}/out")
        if not same:
            detail += "; " + differences(f"{work}/full", f"{work}/{name}/out") + "; " + \
                loss_divergence(f"{work}/full.metrics.jsonl", f"{work}/{name}/metrics.jsonl")
        ok = (exit_line == "exit 0" and not missing and healed and not restarted
              and pids == ["pid.0.0"] and same)
        checks.check(f"in-job-{name}", ok,
                     f"{' '.join(event)}: {exit_line}; {seconds:.1f} s (uninterrupted {full_seconds:.1f} s); "
                     f"missing in launch.err: {missing or 'none'}; healed as expected: {healed}; "
                     f"restarted: {restarted}; rank 0's processes: {pids}; vs uninterrupted: {detail}")
        if not ok:
            print(launch_out[-3000:], launch_err[-5000:], sep="\n", flush=True)
    with open(f"{out}/result.txt", "w") as f:
        f.write("\n".join(checks.lines) + "\n")
    if checks.failed:
        sys.exit(1)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("phase", choices=("prepare", "run"), help="prepare here, run on the GPU machine")
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    add_prepared_args(parser, ROOT, "build-gpu-nccl")
    parser.add_argument("--repeat", type=int, default=1,
                        help="run: inject the failures this many times (a transfer that goes wrong now and then)")
    a = parser.parse_args()
    a.out = os.path.abspath(a.out)
    if a.phase == "prepare":
        prepare(a)
    else:
        run_prepared(a)


if __name__ == "__main__":
    main()
