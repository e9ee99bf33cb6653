"""The rtx command line: python3 -m rtx {import,opt,run,train,report,tools} ...

    python3 -m rtx import examples/torch_models.py:gpt2 -o gpt2.mlir --params-out params --inputs-out inputs
    python3 -m rtx opt gpt2.mlir --train --optimizer adamw --lr 1e-2 -o train.mlir
    python3 -m rtx run train.mlir --inputs inputs --params params --steps 10
    python3 -m rtx train examples/torch_models.py:mlp --steps 20 --lr 1e-2
    python3 -m rtx report RUN_DIR        # after rtx-launch --trace RUN_DIR

Exit status: 0 on success, 1 when a step fails (the message says why), 2 for
bad usage.
"""
from __future__ import annotations

import argparse
import json
import importlib
import importlib.util
import sys
import warnings
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence

from . import driver, report
from .builder import BuildError, Module
from .config import AdamW, ConfigError, NotYetSupportedError, ParallelConfig, SGD, ShardingConfig, init
from .errors import TorchImportError
from .tools import RtxToolWarning, ToolError

SPEC_HELP = ("a model factory, FILE.py:NAME or package.module:NAME; it returns (torch module, example "
             "inputs) or an rtx.builder.Module")


class CliError(Exception):
    """A failure to report as 'rtx: error: ...' with exit status 1."""


def load_factory(spec: str) -> Callable[..., Any]:
    """FILE.py:NAME or module.path:NAME -> the callable NAME."""
    target, sep, attr = spec.rpartition(":")
    if not sep or not target or not attr:
        raise CliError(f"model '{spec}' is not FILE.py:NAME or module:NAME")
    if target.endswith(".py"):
        path = Path(target)
        if not path.is_file():
            raise CliError(f"no such file: {target}")
        name = f"rtx_cli_{path.stem}"
        module_spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[name] = module            # dataclasses look their module up
        sys.path.insert(0, str(path.resolve().parent))
        try:
            module_spec.loader.exec_module(module)
        except ImportError as error:
            raise CliError(f"cannot load {target}: {error}") from None
        finally:
            sys.path.remove(str(path.resolve().parent))
    else:
        try:
            module = importlib.import_module(target)
        except ImportError as error:
            raise CliError(f"cannot import module '{target}': {error}") from None
    factory = getattr(module, attr, None)
    if not callable(factory):
        raise CliError(f"'{attr}' is not a function of {target}")
    return factory


def parse_settings(settings: Sequence[str]) -> Dict[str, Any]:
    """['layers=2', 'lr=0.1', 'name=x'] -> {'layers': 2, 'lr': 0.1, 'name': 'x'}."""
    values: Dict[str, Any] = {}
    for item in settings:
        key, sep, text = item.partition("=")
        if not sep or not key.isidentifier():
            raise CliError(f"--set expects KEY=VALUE, got '{item}'")
        for convert in (int, float):
            try:
                values[key] = convert(text)
                break
            except ValueError:
                continue
        else:
            values[key] = {"true": True, "false": False}.get(text.lower(), text)
    return values


def build_model(spec: str, settings: Sequence[str]) -> Any:
    factory = load_factory(spec)
    try:
        return factory(**parse_settings(settings))
    except TypeError as error:
        raise CliError(f"{spec}: {error}") from None


def _optimizer(args: argparse.Namespace) -> Any:
    if args.optimizer == "sgd":
        if args.warmup_steps or args.decay_steps or args.min_lr:
            raise CliError("--warmup-steps, --decay-steps and --min-lr schedule AdamW's learning rate; "
                           "--optimizer sgd has no step count to schedule by")
        return SGD(lr=args.lr if args.lr is not None else 1e-2, weight_decay=args.weight_decay or 0.0,
                   clip_norm=args.clip_norm)
    return AdamW(lr=args.lr if args.lr is not None else 1e-3,
                 weight_decay=args.weight_decay if args.weight_decay is not None else 1e-2, clip_norm=args.clip_norm,
                 warmup_steps=args.warmup_steps, decay_steps=args.decay_steps, min_lr=args.min_lr)


def _add_optimizer_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--optimizer", choices=("adamw", "sgd"), default="adamw", help="the update rule (default adamw)")
    p.add_argument("--lr", type=float, help="learning rate (default 1e-3 for adamw, 1e-2 for sgd)")
    p.add_argument("--weight-decay", type=float, help="weight decay (default 0.01 for adamw, 0 for sgd)")
    p.add_argument("--clip-norm", type=float, default=0.0, help="clip the global gradient norm (0: off)")
    p.add_argument("--warmup-steps", type=int, default=0,
                   help="adamw: linear learning-rate warm-up over the first N steps (0: none)")
    p.add_argument("--decay-steps", type=int, default=0,
                   help="adamw: cosine decay of the learning rate to --min-lr at step N (0: none)")
    p.add_argument("--min-lr", type=float, default=0.0, help="adamw: the learning rate after --decay-steps")
    p.add_argument("--micro-batches", type=int, default=1,
                   help="gradient accumulation: micro-batches per step (default 1)")


# --- commands -----------------------------------------------------------------------------

def cmd_import(args: argparse.Namespace) -> int:
    built = build_model(args.model, args.set)
    if isinstance(built, Module):
        if args.params_out or args.inputs_out:
            raise CliError("a builder model has no weights or example inputs to write "
                           "(--params-out / --inputs-out need a torch module)")
        text = built.text()
    else:
        if not (isinstance(built, tuple) and len(built) == 2):
            raise CliError(f"{args.model} must return (module, example inputs) or an rtx.builder.Module")
        try:
            from .importer import import_module
        except ImportError as error:
            raise CliError(f"importing a torch module needs PyTorch ({error})") from None
        model, example_inputs = built
        imported = import_module(model, example_inputs, name=args.name)
        text = imported.text()
        if args.params_out:
            imported.save_params(args.params_out)
        if args.inputs_out:
            imported.save_inputs(args.inputs_out)
    _write(text, args.output)
    return 0


def cmd_opt(args: argparse.Namespace) -> int:
    passes: List[str] = []
    if args.train:
        optimizer = _optimizer(args)
        if args.micro_batches < 1:
            raise CliError("--micro-batches must be at least 1")
        passes += driver.training_passes(optimizer.pass_options(), args.micro_batches)
    passes += args.pass_args or []
    if not passes:
        raise CliError("no passes: give --train, or rtx-opt arguments with --pass (e.g. --pass=-rtx-autodiff)")
    _write(driver.opt(Path(args.input), passes), args.output)
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    result = driver.run(Path(args.input), inputs=args.inputs, params=args.params, out=args.out,
                        steps=args.steps, random=args.random, seed=args.seed, entry=args.entry,
                        read_results=False)
    sys.stdout.write(result.stdout)
    return 0


def cmd_train(args: argparse.Namespace) -> int:
    from .program import compile as compile_program
    hints = {}
    for hint in args.tp_hint:
        name, sep, split = hint.rpartition(":")
        if not sep or not name:
            raise CliError(f"--tp-hint {hint!r}: expected NAME:column or NAME:row")
        hints[name] = split
    sharding = ShardingConfig(tp_hints=hints)
    built = build_model(args.model, args.set)
    if isinstance(built, Module):
        model, example_inputs = built, None
    elif isinstance(built, tuple) and len(built) == 2:
        model, example_inputs = built
    else:
        raise CliError(f"{args.model} must return (module, example inputs) or an rtx.builder.Module")
    if example_inputs is None:
        raise CliError("a builder model has no example inputs to train on; use "
                       "'python3 -m rtx opt --train' and 'python3 -m rtx run --random'")
    if args.emulate and args.native != "cuda":
        raise CliError("--emulate emulates the GPU runtime; it needs --native cuda")
    backend = "cuda" if args.native == "cuda" else "cpu"
    if args.auto:
        if args.dp != 1 or args.tp != 1 or args.sp != 1 or hints or args.strict:
            raise CliError("--auto chooses the plan; drop --dp, --tp, --sp, --tp-hint and --strict")
        program = compile_program(model, example_inputs, optimizer=_optimizer(args), parallel="auto",
                                  hardware=args.profile, group=init(backend, args.devices, env={}),
                                  global_batch=None)
        print(program.plan.text, file=sys.stderr, end="")
    else:
        parallel = ParallelConfig(dp=args.dp, tp=args.tp, sp=args.sp, micro_batch=args.micro_batches,
                                  strict=args.strict)
        program = compile_program(model, example_inputs, optimizer=_optimizer(args), parallel=parallel,
                                  sharding=sharding, group=init(backend, parallel.ranks, env={}))
    if program.group.size > 1:
        print(program.splits, file=sys.stderr, end="")
    import numpy as np
    names = [s.name for s in program.model_inputs]
    values = list(example_inputs.values()) if isinstance(example_inputs, dict) else list(example_inputs)
    arrays = [np.asarray(v.detach().cpu().numpy() if hasattr(v, "detach") else v) for v in values]
    batch = {n: np.concatenate([a] * program.micro_batch) for n, a in zip(names, arrays)}
    if args.native:
        native = program.build(args.build_dir, emulate=args.emulate)
        print(f"built {native.path} ({args.native}, {native.ranks} rank(s))", file=sys.stderr)
        result = native.train(batch, steps=args.steps, progress=True)
    else:
        result = program.train(batch, steps=args.steps)
    for i, loss in enumerate(result.losses, 1):
        print(f"step {i}/{args.steps}: loss={loss:.6e}")
    if args.out:
        program.save(args.out)
    return 0


def cmd_plan(args: argparse.Namespace) -> int:
    from . import planner
    if args.model.endswith(".mlir") and ":" not in args.model:
        path = Path(args.model)
        if not path.is_file():
            raise CliError(f"{args.model}: no such file")
        model_ir = path.read_text()
    else:
        from .program import _model_ir
        built = build_model(args.model, args.set)
        model, example_inputs = (built, None) if isinstance(built, Module) else built
        model_ir, _ = _model_ir(model, example_inputs, None, None)
    fixed = {key: value for key, value in (("dp", args.dp), ("tp", args.tp), ("pp", args.pp))
             if value is not None}
    planned, chosen = planner.plan(model_ir, args.devices, args.profile, objective=args.objective,
                                   global_batch=args.global_batch, memory_margin=args.memory_margin,
                                   balance_threshold=args.balance_threshold, mixed_precision=args.mixed_precision,
                                   vary_micro_batch=args.vary_micro_batch, fixed=fixed)
    sys.stdout.write(chosen.text)
    if args.splits:
        from .driver import opt
        from .splits import split_table
        sys.stdout.write("\n" + str(split_table(opt(planned, ["-rtx-distribute=from-plan=true"]))))
    if args.json:
        Path(args.json).write_text(json.dumps(chosen.report, indent=2) + "\n")
    if args.plot:
        planner.plot(chosen.report, Path(args.plot))
        print(f"plot: {args.plot}", file=sys.stderr)
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    try:
        sys.stdout.write(report.run_from_args(args))
    except report.ReportError as error:
        raise CliError(str(error)) from None
    return 0


def cmd_tools(args: argparse.Namespace) -> int:
    for tool in ("rtx-opt", "rtx-run"):
        print(f"{tool}: {driver.find_tool(tool)}")
    return 0


def _write(text: str, output: Optional[str]) -> None:
    if output in (None, "-"):
        sys.stdout.write(text)
    else:
        Path(output).write_text(text)


# --- the parser -----------------------------------------------------------------------------

def make_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python3 -m rtx", description="rtx: compile models into training programs.",
        epilog="Tools are found in $RTX_BUILD_DIR/bin, the source tree's build/bin, or PATH.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    p = sub.add_parser("import", help="a model (PyTorch or builder) -> rtx IR",
                       description="Imports a model into rtx IR. " + SPEC_HELP + ".")
    p.add_argument("model", help=SPEC_HELP)
    p.add_argument("-o", "--output", help="write the IR here (default: stdout)")
    p.add_argument("--params-out", metavar="DIR", help="write the weights as DIR/NAME.npy (rtx-run --params)")
    p.add_argument("--inputs-out", metavar="DIR", help="write the example inputs as DIR/NAME.npy (rtx-run --inputs)")
    p.add_argument("--name", help="name of the function (default: the module's class)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="keyword argument for the factory (repeatable), e.g. --set layers=4")
    p.set_defaults(run=cmd_import)

    p = sub.add_parser("opt", help="run rtx-opt passes",
                       description="Runs rtx-opt: --train builds the training step "
                                   "(-rtx-autodiff, -rtx-accumulate-gradients, -rtx-optimizer).")
    p.add_argument("input", help="a .mlir file")
    p.add_argument("-o", "--output", help="write the result here (default: stdout)")
    p.add_argument("--train", action="store_true", help="build a whole training step")
    _add_optimizer_options(p)
    p.add_argument("--pass", dest="pass_args", action="append", metavar="ARG",
                   help="an rtx-opt argument, e.g. --pass=-rtx-autodiff (repeatable)")
    p.set_defaults(run=cmd_opt)

    p = sub.add_parser("run", help="run a program with rtx-run",
                       description="Runs rtx-run (the reference executor) and prints its results.")
    p.add_argument("input", help="a .mlir file")
    p.add_argument("--inputs", metavar="DIR", help="NAME.npy inputs")
    p.add_argument("--params", metavar="PATH",
                   help="parameter values: a directory of NAME.npy, a safetensors file or a directory of shards")
    p.add_argument("--out", metavar="DIR", help="write resultN.npy here")
    p.add_argument("--steps", type=int, default=1, help="training steps (default 1)")
    p.add_argument("--random", action="store_true", help="draw missing inputs at random")
    p.add_argument("--seed", type=int, help="seed of random inputs")
    p.add_argument("--entry", help="function to run")
    p.set_defaults(run=cmd_run)

    p = sub.add_parser("train", help="import, compile and train on the example inputs",
                       description="Imports a model, builds its training step and trains on the factory's "
                                   "example inputs (one micro-batch; with --micro-batches K the step's batch "
                                   "is K copies of it), printing each step's loss.")
    p.add_argument("model", help=SPEC_HELP)
    p.add_argument("--steps", type=int, default=10, help="training steps (default 10)")
    _add_optimizer_options(p)
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="keyword argument for the factory (repeatable)")
    for axis, what in (("dp", "data"), ("tp", "tensor"), ("sp", "sequence")):
        p.add_argument(f"--{axis}", type=int, default=1, metavar="N",
                       help=f"{what}-parallel degree (default 1; the ranks are dp*tp*sp)")
    p.add_argument("--auto", action="store_true",
                   help="let the auto-partitioner choose the plan for --devices devices (docs/planner.md)")
    p.add_argument("--devices", type=int, default=1, metavar="N", help="with --auto: devices (default 1)")
    p.add_argument("--profile", help="with --auto: hardware profile (default: this machine, by rtx-topology)")
    p.add_argument("--strict", action="store_true",
                   help="with --tp: refuse a program that leaves a linear or matmul over a parameter whole "
                        "on tp (ParallelConfig(strict=True))")
    p.add_argument("--tp-hint", action="append", default=[], metavar="NAME:SPLIT",
                   help="with --tp: split parameters whose name ends in NAME column- or row-parallel "
                        "(SPLIT: column or row; repeatable), e.g. --tp-hint q_proj:column --tp-hint o_proj:row")
    p.add_argument("--native", choices=("cpu", "cuda"),
                   help="train the step compiled to a native C++ (cpu) or CUDA program, one process per "
                        "rank under rtx-launch (default: rtx-run, the reference executor)")
    p.add_argument("--emulate", action="store_true",
                   help="with --native cuda: build against the host emulation of the GPU runtime (no GPU)")
    p.add_argument("--build-dir", metavar="DIR",
                   help="with --native: where the program's source, build script and binary go "
                        "(default: a new temporary directory)")
    p.add_argument("--out", metavar="DIR", help="also write model.mlir, train.mlir and the trained params here")
    p.set_defaults(run=cmd_train)

    p = sub.add_parser("plan", help="choose a parallel plan and print the planner's report",
                       description="Runs rtx-auto-partition: prices every plan (dp, tp, pp, sequence "
                                   "parallelism, ZeRO stage, micro-batches, schedule, recompute, overlap, "
                                   "placement) of MODEL on --devices devices of a hardware profile and prints "
                                   "the chosen plan, its predicted step time, tokens/s, memory by kind, "
                                   "communication per link class, and the runners-up with why each lost "
                                   "(docs/planner.md).")
    p.add_argument("model", help=SPEC_HELP + "; or a .mlir file")
    p.add_argument("--no-splits", dest="splits", action="store_false",
                   help="do not build the chosen plan's step to print what each mesh axis does to each "
                        "parameter (the split table)")
    p.add_argument("--profile", help="a built-in profile (cpu-host, dgx-a100, dgx-h100, hgx-h200, "
                                     "pcie-l40s-8) or a profile file (default: this machine, by rtx-topology)")
    p.add_argument("--devices", type=int, required=True, help="devices to plan for")
    p.add_argument("--objective", default="throughput", choices=("throughput", "memory", "compute-balanced",
                                                                 "communication", "hybrid", "tp-first",
                                                                 "pp-first"))
    p.add_argument("--global-batch", type=int, help="sequences per step (default: the model's batch)")
    p.add_argument("--memory-margin", type=float, default=0.1, help="share of memory to leave free (0.1)")
    p.add_argument("--balance-threshold", type=float, default=1.2,
                   help="largest slowest-stage-over-mean ratio of a pipeline (1.2)")
    p.add_argument("--mixed-precision", action="store_true", help="bf16 model with f32 master weights")
    p.add_argument("--vary-micro-batch", action="store_true",
                   help="also try per-rank micro-batch sizes other than the model's batch (a report only)")
    for axis in ("dp", "tp", "pp"):
        p.add_argument(f"--{axis}", type=int, metavar="N", help=f"fix the {axis} degree")
    p.add_argument("--json", metavar="FILE", help="also write the report as JSON")
    p.add_argument("--plot", metavar="FILE.png",
                   help="also draw the choice and the runners-up as stacked bars of their step time")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="keyword argument for the factory (repeatable)")
    p.set_defaults(run=cmd_plan)

    p = sub.add_parser("report", help="the bottleneck verdict of a traced run, with plots",
                       description=report.__doc__.split("\n\n")[0] + " " + report.__doc__.split("\n\n")[1])
    report.add_arguments(p)
    p.set_defaults(run=cmd_report)

    p = sub.add_parser("tools", help="show where rtx-opt and rtx-run are found")
    p.set_defaults(run=cmd_tools)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = make_parser().parse_args(argv)
    with warnings.catch_warnings():
        # The tools' warnings, each shown as the tool wrote it (not once per
        # Python source line, and without a Python location).
        warnings.simplefilter("always", RtxToolWarning)
        default_show = warnings.showwarning

        def show(message, category, filename, lineno, file=None, line=None):  # type: ignore[no-untyped-def]
            if issubclass(category, RtxToolWarning):
                print(f"rtx: warning: {message}", file=sys.stderr)
            else:
                default_show(message, category, filename, lineno, file, line)

        warnings.showwarning = show
        try:
            return args.run(args)
        except (CliError, ConfigError, NotYetSupportedError, BuildError, TorchImportError, ToolError) as error:
            print(f"rtx: error: {error}", file=sys.stderr)
            return 1


if __name__ == "__main__":
    sys.exit(main())
