"""rtx: a compiler for distributed deep-learning training (Python frontend).

    import rtx
    group = rtx.init("cpu", devices=1)
    program = rtx.compile(model, example_inputs, group=group,
                          parallel=rtx.ParallelConfig(micro_batch=2), optimizer=rtx.AdamW(lr=1e-3))
    print(program.train(batch, steps=10).losses)

Modules: builder (write rtx IR in Python), models (reference models),
importer (PyTorch -> rtx IR; needs torch), tools (finding and running the
tools; their errors and warnings), driver (rtx-opt / rtx-run), config
(validated options), batch (a step's inputs as arrays and files), results
(TrainResult, read from the files the tools write), params (a program's
parameters and the checks of Program.params), program (compile and train), native (the step as a C++ or CUDA program: Program.build),
safetensors (Hugging Face's weights files, read and written with numpy),
weights (params= of compile, state_dict and save_safetensors; name maps
such as weights.HF_GPT2). PyTorch is imported only when a torch module is
imported.
"""
from .batch import InputSpec
from .builder import BuildError, Module
from .config import (AdamW, ConfigError, ElasticConfig, NotYetSupportedError, ParallelConfig, ProcessGroup, SGD,
                     ShardingConfig, init)
from .errors import TorchImportError, UnsupportedOpError
from .native import NativeProgram, offer_ranks
from .params import UnknownParameterError
from .program import Program, compile
from .results import StepMetrics, TrainResult
from .tools import RtxToolWarning, ToolError
from . import safetensors, weights


def import_module(model, example_inputs, **kwargs):
    """rtx.importer.import_module (imports PyTorch on first use)."""
    from .importer import import_module as _import_module
    return _import_module(model, example_inputs, **kwargs)


__all__ = [
    "AdamW", "BuildError", "ConfigError", "ElasticConfig", "InputSpec", "Module", "NativeProgram",
    "NotYetSupportedError",
    "ParallelConfig", "ProcessGroup", "Program", "RtxToolWarning", "SGD", "ShardingConfig", "StepMetrics",
    "ToolError", "TorchImportError", "TrainResult", "UnknownParameterError", "UnsupportedOpError",
    "compile", "import_module", "init", "offer_ranks",
]
