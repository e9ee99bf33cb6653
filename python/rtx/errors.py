"""Errors of the PyTorch importer, importable without PyTorch."""
from __future__ import annotations


class TorchImportError(Exception):
    """The module could not be imported."""


class UnsupportedOpError(TorchImportError):
    """A call that rtx cannot express; names the op and the module path that made it."""

    def __init__(self, op: str, module_path: str, module_type: str, detail: str = "", source: str = "") -> None:
        self.op, self.module_path, self.module_type = op, module_path, module_type
        self.source = source      # "FILE:LINE" of the user's code that made the call; "" when unknown
        where = f"module '{module_path}' ({module_type})" if module_path else f"the top-level module ({module_type})"
        at = f" at {source}" if source else ""
        super().__init__(f"unsupported op {op} in {where}{at}: {detail or 'rtx has no mapping for it'}")
