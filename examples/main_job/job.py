"""rtx's main job: a GPT trained on real text, planned, checkpointed,
recovered from a killed rank, traced, explained and sampled.

    ./scripts/run.sh [OPTIONS]        (sets up, builds, then runs this)

Stages: the text of Debian's `fortunes` package tokenized by a byte-level BPE
(textdata.py); a nanoGPT module compiled with parallel="auto" for the devices
here (the planner's report printed); the native training program built; the
job trained under rtx-launch with warm-up and cosine learning rate, held-out
loss every N steps, sharded checkpoints, Prometheus metrics, with one rank
killed partway and replaced in the job; the same job again without the kill,
traced, its final state compared with the first; at the end the loss plot,
`rtx report`'s verdict, the checkpoints and text sampled with PyTorch from the
trained weights. docs/quickstart.md walks through it.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path
from typing import List, Optional

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path[:0] = [str(HERE), str(ROOT / "examples"), str(ROOT / "python")]

import rtx  # noqa: E402
from rtx import planner, report as rtx_report, tools  # noqa: E402

import explain  # noqa: E402
import launch  # noqa: E402
import sizes  # noqa: E402
import textdata  # noqa: E402
from stages import Stages, say  # noqa: E402

STAGES = 8


def parse(argv: Optional[List[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="scripts/run.sh",
        description="rtx's main job: a GPT trained on the text of Debian's fortunes package by local "
                    "processes (one rank per core), planned by rtx's auto-partitioner, with a learning-rate "
                    "schedule, held-out evaluation, sharded checkpoints, Prometheus metrics and a trace; "
                    "one rank is killed partway and replaced in the job, and the final state is compared "
                    "with an uninterrupted run. Ends with the loss plot, rtx report's verdict, the "
                    "checkpoints and text sampled from the trained model with PyTorch.",
        epilog="Several machines: run the same command on each, with --nodes N --node-rank I (0..N-1) "
               "--store redis://HOST:6379 (a Redis all nodes reach) and --work on a file system all nodes "
               "mount (the checkpoints). GPUs: --device cuda builds the CUDA program (cuBLAS, NCCL) for "
               "the GPUs present, one rank each. docs/quickstart.md explains every stage.")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                   help="cpu: one rank per core, Gloo (default); cuda: one rank per visible GPU, NCCL")
    p.add_argument("--emulate", action="store_true",
                   help="with --device cuda: build the CUDA program against rtx's host emulation of the GPU "
                        "runtime and run it on CPUs (checks the GPU path without a GPU; the CPU job's sizes, "
                        "planned on --hardware, default hgx-h200)")
    p.add_argument("--ranks", type=int, default=None,
                   help="ranks on this machine (default: the cores, at least 2 (the kill needs a survivor), "
                        "or the GPUs with --device cuda)")
    p.add_argument("--nodes", type=int, default=1, help="machines in the job (default 1)")
    p.add_argument("--node-rank", type=int, default=0, help="this machine's index in [0, --nodes)")
    p.add_argument("--store", default=None,
                   help="the rendezvous store, redis://HOST:PORT or file:DIR (needed with --nodes > 1; "
                        "default: a folder in --work)")
    p.add_argument("--hardware", default=None,
                   help="the planner's hardware profile: a built-in name (dgx-h100, hgx-h200, ...) or a "
                        "profile file (default: this machine, measured by rtx-topology; on GPUs the "
                        "built-in profile of the GPU model)")
    p.add_argument("--steps", type=int, default=None, help="training steps (default: the size's, 500 on CPUs)")
    p.add_argument("--kill-rank", type=int, default=1,
                   help="the rank killed partway (default 1); -1: kill none (no comparison run)")
    p.add_argument("--work", type=Path, default=Path("main-job"),
                   help="where everything goes: data, program, checkpoints, plots (default ./main-job)")
    p.add_argument("--small", action="store_true",
                   help="the suite's size: a smaller model, 300 steps (about a minute)")
    args = p.parse_args(argv)
    if args.nodes < 1 or not 0 <= args.node_rank < args.nodes:
        p.error(f"--node-rank {args.node_rank} must be in [0, --nodes {args.nodes})")
    if args.nodes > 1 and not args.store:
        p.error("--nodes > 1 needs --store redis://HOST:PORT (or file:DIR on a shared file system)")
    if args.emulate and args.device != "cuda":
        p.error("--emulate emulates the GPU runtime: it needs --device cuda")
    if args.ranks is not None and args.ranks < 1:
        p.error("--ranks must be at least 1")
    if args.steps is not None and args.steps < 4:
        p.error("--steps must be at least 4")
    return args


def local_devices(args: argparse.Namespace) -> int:
    if args.ranks:
        return args.ranks
    if args.device == "cuda" and not args.emulate:
        count = cuda_devices()
        if count == 0:
            sys.exit("scripts/run.sh: --device cuda: no CUDA device is visible here "
                     "(nvidia-smi lists none); run without --device for CPU ranks")
        return count
    return max(2, os.cpu_count() or 2)


def cuda_devices() -> int:
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return 0
    return sum(1 for line in out.splitlines() if line.startswith("GPU "))


def gpu_profile() -> str:
    """The built-in hardware profile of the GPU model present."""
    name = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                          capture_output=True, text=True).stdout.splitlines()[0]
    for part, profile in (("H200", "hgx-h200"), ("H100", "dgx-h100"), ("A100", "dgx-a100"),
                          ("L40S", "pcie-l40s-8")):
        if part in name:
            return profile
    sys.exit(f"scripts/run.sh: no built-in hardware profile for {name!r}: pass --hardware PROFILE.json "
             "(docs/planner.md, Hardware profiles)")


class Job:
    """The job's state between stages: what each stage made, for the next."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.work: Path = args.work.resolve()
        self.local = local_devices(args)
        self.world = self.local * args.nodes
        self.leader = args.node_rank == 0
        # What each machine makes for itself (the data, the program) goes into
        # a folder of its own, so that nodes sharing --work do not race.
        self.local_dir = self.work / f"node-{args.node_rank}" if args.nodes > 1 else self.work
        on_gpus = args.device == "cuda" and not args.emulate
        size = sizes.small(self.world) if args.small else (
            sizes.for_gpu(self.world) if on_gpus else sizes.for_cpu(self.world, os.cpu_count() or 2))
        self.size = sizes.with_steps(size, args.steps) if args.steps else size
        self.kill = None if args.kill_rank < 0 else launch.Kill(args.kill_rank, self.size.kill_after)
        if self.kill and self.world < 2:
            sys.exit("scripts/run.sh: killing a rank needs 2 or more ranks (--ranks 2, or --kill-rank -1 "
                     "for a run without a failure)")
        if self.kill and self.kill.rank >= self.world:
            sys.exit(f"scripts/run.sh: --kill-rank {self.kill.rank}: the job has ranks 0 to {self.world - 1}")
        self.stages = Stages(STAGES if self.kill else STAGES - 1)

    # -- 1. data ---------------------------------------------------------------------------------
    def data(self) -> None:
        with self.stages.stage("data: English prose from Debian's fortunes package, byte-level BPE"):
            self.tokens = textdata.prepare(self.local_dir / "data", self.size.vocab)
            t = self.tokens
            say(f"   text: {t.cookies} cookies, {t.text_bytes / 1e6:.2f} MB from {textdata.FORTUNES}; "
                f"every {textdata.HELD_OUT_EVERY}th cookie held out")
            say(f"   tokenizer: byte-level BPE (Hugging Face tokenizers), vocabulary {t.vocab_size}, "
                f"trained on the train part -> {t.tokenizer}")
            say(f"   tokens: {t.train_tokens:,} train -> {t.train}, {t.held_out_tokens:,} held out -> "
                f"{t.held_out}")
            say(f"   unigram entropy of the train tokens: {t.unigram_entropy:.3f} nats/token "
                f"(held-out tokens under it: {t.unigram_held_out:.3f}); a model that learns context "
                "goes below it")

    # -- 2. model and plan -----------------------------------------------------------------------
    def plan(self) -> None:
        import torch
        from torch_models import GPT, GPTConfig
        s = self.size
        with self.stages.stage(f"plan: parallel=\"auto\" for {self.world} {self.args.device} rank(s)"):
            torch.manual_seed(0)
            self.config = GPTConfig(block_size=s.block_size, vocab_size=self.tokens.vocab_size,
                                    n_layer=s.n_layer, n_head=s.n_head, n_embd=s.n_embd, bias=True)
            self.module = GPT(self.config)
            params = sum(p.numel() for p in self.module.parameters())
            say(f"   model: {s.describe()} ({params / 1e6:.2f} M parameters, nanoGPT's module)")
            idx = torch.zeros(s.batch, s.block_size, dtype=torch.long)
            hardware = self.args.hardware
            if hardware is None and self.args.device == "cuda":
                hardware = "hgx-h200" if self.args.emulate else gpu_profile()
            self.optimizer = rtx.AdamW(lr=s.lr, betas=(0.9, 0.95), weight_decay=0.1, clip_norm=1.0,
                                       warmup_steps=s.warmup, decay_steps=s.steps, min_lr=s.lr / 10)
            with warnings.catch_warnings(record=True) as notes:
                warnings.simplefilter("always", rtx.RtxToolWarning)
                self.program = rtx.compile(self.module, (idx, idx.clone()),
                                           group=rtx.init(self.args.device, devices=self.world),
                                           parallel="auto", hardware=hardware, optimizer=self.optimizer)
            for note in notes:  # e.g. rtx-topology's guess of a link speed it cannot read
                say(f"   note: {getattr(note.message, 'message', note.message)}")
            say("   " + self.program.plan.text.replace("\n", "\n   "))
            if self.leader:
                self.plan_png = planner.plot(self.program.plan.report, self.work / "plan.png")
                say(f"   the plan and its runners-up: {self.plan_png}")
            say(f"   optimizer: AdamW lr {s.lr:g} (warm-up {s.warmup} steps, cosine to {s.lr / 10:g} at step "
                f"{s.steps}), weight decay 0.1, gradient norm clipped at 1.0")

    # -- 3. build --------------------------------------------------------------------------------
    def build(self) -> None:
        kind = "CUDA program on the host emulation" if self.args.emulate else f"{self.args.device} program"
        with self.stages.stage(f"build: the step as a native {kind}"):
            self.native = self.program.build(self.local_dir / "program", device=self.args.device,
                                             emulate=self.args.emulate)
            say(f"   {self.native.path} (source {self.native.source}, {self.native.ranks} rank(s))")
            # The program starts from the module's own weights (nanoGPT's
            # initialization), read block by block by each rank.
            self.initial = self.local_dir / "program" / "initial.safetensors"
            self.program.save_safetensors(self.initial)
            say(f"   the module's initial weights: {self.initial}")

    # -- 4. train with a failure -----------------------------------------------------------------
    def launch_argv(self, run: Path, trace: bool) -> List[str]:
        store = self.args.store or f"file:{run / 'store'}"
        argv = [tools.find_tool("rtx-launch"), "-n", str(self.local), "--store", store,
                "--max-restarts", "2", "--recover", "in-job"]
        if self.args.nodes > 1:
            argv += ["--nnodes", str(self.args.nodes), "--node-rank", str(self.args.node_rank),
                     "--run-id", f"rtx-main-job-{run.name}"]
        if trace:
            argv += ["--trace", str(run / "trace"), "--trace-steps", self.size.trace_steps]
        return argv

    def program_argv(self, run: Path, metrics_port: Optional[int]) -> List[str]:
        s = self.size
        argv = [str(self.native.path), "--params", str(self.initial),
                "--data", str(self.tokens.train), "--until-step", str(s.steps),
                "--eval-data", str(self.tokens.held_out), "--eval-every", str(s.eval_every),
                "--eval-batches", str(s.eval_batches),
                "--checkpoint", str(run / "checkpoints"), "--checkpoint-every", str(s.checkpoint_every),
                "--keep-checkpoints", "3", "--timeout", "auto",
                "--metrics", str(run / "metrics.jsonl"), "--save-state", str(run / "final-state")]
        if metrics_port is not None:
            argv += ["--metrics-port", str(metrics_port)]
        return argv

    def train(self) -> None:
        run = self.fresh(self.work / "run")
        # The node that holds the rank kills it (its pid file is there).
        kill = self.kill if self.kill and self.kill.rank // self.local == self.args.node_rank else None
        title = "train: rtx-launch, " + (f"rank {kill.rank} killed after step {kill.after_step}"
                                         if kill else "no failure injected")
        with self.stages.stage(title):
            port = launch.free_port() if self.leader else None
            argv = self.launch_argv(run, trace=not self.kill)
            program = self.program_argv(run, port)
            say("   $ " + " ".join(argv + ["--"] + program))
            if port:
                say(f"   Prometheus metrics: http://127.0.0.1:{port}/metrics (rank r: port {port} + r)")
            logs = self.logs(run)
            self.result = launch.run(argv, program, logs, run / "metrics.jsonl",
                                     every=max(1, self.size.steps // 10), kill=kill,
                                     metrics_port=port, scrape_step=self.size.warmup)
            self.check(self.result, logs)
            # Rank 0's lines (node 0 writes the file): the stages after read them.
            self.curves = explain.read_curves(run / "metrics.jsonl") if self.leader else None
            if self.result.scrape:
                say("   scraped at step %d:" % self.size.warmup)
                for line in self.result.scrape:
                    say("     " + line)
        self.run = run

    # -- 5. the same job without the failure, traced ---------------------------------------------
    def reference(self) -> None:
        run = self.fresh(self.work / "reference")
        with self.stages.stage("reference: the same job without the kill, traced"):
            argv = self.launch_argv(run, trace=True)
            program = self.program_argv(run, None)
            logs = self.logs(run)
            self.reference_result = launch.run(argv, program, logs, run / "metrics.jsonl",
                                               every=max(1, self.size.steps // 4))
            self.check(self.reference_result, logs)
            if self.leader:
                self.comparison = explain.compare_states(self.run / "final-state", run / "final-state")
                say("   " + self.recovery_line())
        self.traced = run

    def recovery_line(self) -> str:
        """What the kill did and how the job healed, from the launcher's and
        the ranks' own lines, and whether the final state equals the
        uninterrupted run's."""
        c = self.comparison
        wanted = ("in-job recovery: epoch", "holds every lost block", "resume: from", "received")
        healed = [l.split("] ", 1)[-1].replace("rtx-launch: ", "").strip()
                  for l in self.result.lines if any(w in l for w in wanted)]
        how = "; ".join(dict.fromkeys(healed)) or "replaced in the job"
        if c.bit_for_bit:
            verdict = (f"the final state ({c.arrays} arrays: parameters, AdamW moments, step; "
                       f"{c.bytes / 1e6:.1f} MB) equals the uninterrupted run's bit for bit: the same "
                       "batches in the same order, reductions in a fixed order, and the state restored "
                       "exactly")
        else:
            verdict = (f"the final state differs from the uninterrupted run's in {len(c.differing)} of "
                       f"{c.arrays} arrays (largest relative difference {c.largest_relative:.1e})")
        return f"recovery: rank {self.kill.rank} killed after step {self.kill.after_step}; {how}; {verdict}"

    # -- the same training in PyTorch ----------------------------------------------------------
    def pytorch(self) -> None:
        import torch_reference
        with self.stages.stage("pytorch: the same training in PyTorch eager, the reference"):
            say(f"   {self.size.steps} steps of torch.optim.AdamW on the module from the same weights and "
                "batches (one process)")
            torch_losses = torch_reference.train(self.module, self.tokens.train, self.size,
                                                 threads=self.local)
            rtx_losses = dict(self.curves.train)
            shown = sorted({1, 2, 3, *range(self.size.eval_every, self.size.steps + 1, self.size.eval_every)})
            say(f"   {'step':>6} {'rtx':>10} {'PyTorch':>10} {'difference':>11}")
            for step in shown:
                a, b = rtx_losses[step], torch_losses[step]
                say(f"   {step:>6} {a:>10.5f} {b:>10.5f} {(a - b) / b:>+11.1e}")
            first = max(abs(rtx_losses[t] - torch_losses[t]) / abs(torch_losses[t]) for t in range(1, 6))
            mean = lambda d: sum(d[t] for t in range(self.size.steps - 19, self.size.steps + 1)) / 20
            self.torch_line = (f"rtx's losses against PyTorch's: the first 5 steps within {first:.1e} "
                               f"(design tolerance 1e-4); the mean of the last 20 steps {mean(rtx_losses):.4f} "
                               f"(PyTorch {mean(torch_losses):.4f}; float sums in another order make two runs "
                               "drift apart over hundreds of steps, as two PyTorch runs on other thread counts "
                               "do)")
            say("   " + self.torch_line)
            if first > 1e-4:
                sys.exit("scripts/run.sh: rtx's first steps do not match PyTorch's")

    # -- 6. explain ------------------------------------------------------------------------------
    def explain(self) -> None:
        with self.stages.stage("explain: losses, verdict, checkpoints"):
            curves = self.curves
            self.loss_png = explain.plot_losses(curves, self.tokens.unigram_entropy, self.work / "loss.png",
                                                self.kill.after_step if self.kill else None)
            say(f"   loss plot: {self.loss_png}")
            say("   held-out loss: " + ", ".join(f"step {s}: {l:.3f}" for s, l in curves.held_out))
            trace_dir = (self.traced if self.kill else self.run) / "trace"
            self.report_text = rtx_report.run(str(trace_dir))
            # The verdict, the ranks and the hints; the per-op speed tables
            # are for GPUs (docs/gpu.md) and stay in `rtx report`'s full text.
            shown = self.report_text.split("speed (")[0].strip()
            plots = [l for l in self.report_text.splitlines() if l.startswith("plots:")]
            say(f"   rtx report {trace_dir} (traced steps {self.size.trace_steps}):")
            say("   " + "\n".join([shown] + plots).replace("\n", "\n   "))
            say("   checkpoints (the newest 3 kept; each rank writes its own blocks):")
            for line in explain.checkpoint_list(self.run / "checkpoints"):
                say("     " + line)

    # -- 7. sample -------------------------------------------------------------------------------
    def sample(self) -> None:
        import sample
        with self.stages.stage("sample: the trained weights in the PyTorch module, sampled with PyTorch"):
            module = sample.load_trained(self.program, self.module, self.run / "final-state")
            s = self.size
            torch_loss = sample.held_out_loss(module, self.tokens.held_out, s.batch, s.block_size,
                                              s.eval_batches)
            program_loss = self.curves.held_out[-1][1]
            say(f"   PyTorch's held-out loss with the exported weights: {torch_loss:.5f} (the program's "
                f"after step {self.curves.held_out[-1][0]}: {program_loss:.5f})")
            if abs(torch_loss - program_loss) > 1e-4 * max(1.0, abs(program_loss)):
                sys.exit("scripts/run.sh: the exported weights do not give the program's held-out loss")
            self.samples = sample.samples(module, self.tokens.tokenizer, self.config.block_size)
            for i, text in enumerate(self.samples, 1):
                say(f"   --- sample {i}")
                say("   " + text.replace("\n", "\n   "))

    # -- the end ---------------------------------------------------------------------------------
    def summary(self) -> None:
        held_out = self.curves.held_out[-1][1]
        entropy = self.tokens.unigram_entropy
        say("\n== summary")
        say(f"   held-out loss {held_out:.3f} nats/token after {self.size.steps} steps; unigram entropy "
            f"of the text {entropy:.3f} ({entropy - held_out:+.3f} below it)"
            if held_out < entropy else
            f"   held-out loss {held_out:.3f} is NOT below the unigram entropy {entropy:.3f}")
        say(f"   plots: {self.loss_png}, {self.plan_png}, " + ", ".join(
            str(p) for p in sorted(((self.traced if self.kill else self.run) / "trace").glob("*.png"))))
        verdict = next((l for l in self.report_text.splitlines() if "verdict" in l), "").strip()
        say(f"   {verdict}")
        if self.kill:
            say("   " + self.recovery_line())
        say("   " + self.torch_line)
        say(f"   sampled: {self.samples[0][:160]!r}")
        say("   stage times:\n" + self.stages.summary())
        if held_out >= entropy or (self.kill and not self.comparison.bit_for_bit):
            sys.exit(1)

    # -- helpers ---------------------------------------------------------------------------------
    def fresh(self, directory: Path) -> Path:
        """A run's folder, emptied by node 0 (nodes share it: the checkpoints)."""
        if self.leader and directory.exists():
            shutil.rmtree(directory)
        directory.mkdir(parents=True, exist_ok=True)
        return directory

    def logs(self, run: Path) -> Path:
        """This node's launch log and pid files of a run."""
        logs = self.local_dir / run.name if self.args.nodes > 1 else run
        logs.mkdir(parents=True, exist_ok=True)
        return logs

    def check(self, result: launch.LaunchResult, run: Path) -> None:
        if result.returncode != 0:
            tail = "\n".join(result.lines[-15:])
            sys.exit(f"scripts/run.sh: the training job failed (exit {result.returncode}); the last lines "
                     f"(all of them in {run / 'launch.log'}):\n{tail}")


def main(argv: Optional[List[str]] = None) -> int:
    args = parse(argv)
    try:
        return run(Job(args))
    except (OSError, rtx.ConfigError, rtx.ToolError, rtx_report.ReportError) as error:
        # What a user can act on (a missing package, a tool's diagnostic, a
        # file that cannot be written) as one message, not a traceback.
        print(f"scripts/run.sh: error: {error}", file=sys.stderr)
        return 1


def run(job: Job) -> int:
    args = job.args
    say(f"rtx main job: {job.world} {args.device} rank(s) on {args.nodes} node(s), work folder {job.work}")
    job.work.mkdir(parents=True, exist_ok=True)
    job.data()
    job.plan()
    job.build()
    job.train()
    if job.kill:
        job.reference()
    if not job.leader:
        say("this node's part is done; node 0 explains the job")
        return 0
    job.pytorch()
    job.explain()
    job.sample()
    job.summary()
    return 0


if __name__ == "__main__":
    sys.exit(main())
