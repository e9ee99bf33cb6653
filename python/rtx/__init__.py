"""rtx: a compiler for distributed deep-learning training (Python frontend).

    import rtx
    group = rtx.init("cpu", devices=1)
    program = rtx.compile(model, example_inputs, group=group,
                          parallel=rtx.ParallelConfig(micro_batch=2), optimizer=rtx.AdamW(lr=1e-3))
    print(program.train(batch, steps=10).losses)

Modules: builder (write rtx IR in Python), models (reference models),
importer (PyTorch -> rtx IR; needs torch), driver (rtx-opt / rtx-run),
config (validated options), program (compile and train), native (the step
as a C++ or CUDA program: Program.build). PyTorch is
imported only when a torch module is imported.
"""
from .builder import BuildError, Module
from .config import (AdamW, ConfigError, ElasticConfig, NotYetSupportedError, ParallelConfig, ProcessGroup, SGD,
                     ShardingConfig, init)
from .driver import ToolError
from .errors import TorchImportError, UnsupportedOpError
from .native import NativeProgram
from .program import InputSpec, Program, TrainResult, compile


def import_module(model, example_inputs, **kwargs):
    """rtx.importer.import_module (imports PyTorch on first use)."""
    from .importer import import_module as _import_module
    return _import_module(model, example_inputs, **kwargs)


__all__ = [
    "AdamW", "BuildError", "ConfigError", "ElasticConfig", "InputSpec", "Module", "NativeProgram",
    "NotYetSupportedError",
    "ParallelConfig", "ProcessGroup", "Program", "SGD", "ShardingConfig", "ToolError", "TorchImportError",
    "TrainResult", "UnsupportedOpError",
    "compile", "import_module", "init",
]
