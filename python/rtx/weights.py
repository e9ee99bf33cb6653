"""Weights in and out: what rtx.compile(..., params=...) takes, and what
Program.state_dict() / Program.save_safetensors() give back.

    program = rtx.compile(model, inputs, params="gpt2/model.safetensors", name_map=rtx.weights.HF_GPT2)
    program.train(batch, steps=3)
    model.load_state_dict(program.state_dict())          # the module's names and layouts
    program.save_safetensors("trained.safetensors")      # the file's names and layouts again

`params` is a safetensors file (or a directory of shards), a state dict
(name -> torch tensor, as module.state_dict() gives; its buffers are
skipped), or a dict of numpy arrays. A NameMap renames and transposes the
file's tensors into the module's parameters when loading and does the
reverse when saving: a table of name patterns, data only (docs/python.md,
"Weights in and out").
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Mapping, Optional, Tuple

from .config import ConfigError

__all__ = ["HF_GPT2", "NameMap", "NameRule", "Weights"]


@dataclass(frozen=True)
class NameRule:
    """One row of a NameMap: a tensor of the file named like `file` is the
    parameter named like `module` (transposed when `transpose`: the last
    two dimensions swapped). A pattern is a name in which `{n}` stands for
    a number (a layer's index) and `{rest}` for any text; the same
    placeholders on both sides carry the same values."""
    file: str
    module: str
    transpose: bool = False

    def _regex(self, pattern: str) -> "re.Pattern[str]":
        parts = re.split(r"(\{n\}|\{rest\})", pattern)
        regex = "".join("(?P<n>[0-9]+)" if p == "{n}" else "(?P<rest>.+)" if p == "{rest}" else re.escape(p)
                        for p in parts)
        return re.compile(regex)

    def apply(self, name: str, inverse: bool = False) -> Optional[str]:
        """The other side's name of `name` (a file name; a module name when
        `inverse`), or None when `name` does not match."""
        source, target = (self.module, self.file) if inverse else (self.file, self.module)
        match = self._regex(source).fullmatch(name)
        if not match:
            return None
        values = match.groupdict()
        return re.sub(r"\{(n|rest)\}", lambda m: values[m.group(1)], target)


@dataclass(frozen=True)
class NameMap:
    """How a checkpoint's names and layouts map to a module's parameters.
    Loading, the first rule that matches a file's name applies; saving,
    the first rule whose module side matches. Names no rule matches are
    the same on both sides. `ignore` lists patterns (as NameRule's) of the
    file's tensors that are no parameters (buffers a checkpoint carries)."""
    rules: Tuple[NameRule, ...]
    ignore: Tuple[str, ...] = ()
    name: str = "name map"

    def to_module(self, name: str) -> Optional[Tuple[str, bool]]:
        """(module name, transpose) of a file's tensor; None when ignored."""
        if any(NameRule(p, p).apply(name) is not None for p in self.ignore):
            return None
        for rule in self.rules:
            target = rule.apply(name)
            if target is not None:
                return target, rule.transpose
        return name, False

    def to_file(self, name: str) -> Tuple[str, bool]:
        """(file name, transpose) of a module's parameter."""
        for rule in self.rules:
            target = rule.apply(name, inverse=True)
            if target is not None:
                return target, rule.transpose
        return name, False


_CONV1D = ("attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj")

# Hugging Face's GPT-2 checkpoints (GPT2LMHeadModel, names with or without
# the "transformer." prefix; Conv1D weights stored [in, out]) for a module
# written with nn.Linear the nanoGPT way (the same names, weights [out, in],
# lm_head.weight tied to transformer.wte.weight). Saving writes the prefixed
# names, which GPT2LMHeadModel.from_pretrained reads.
HF_GPT2 = NameMap(
    name="HF_GPT2",
    rules=tuple(NameRule(f"{prefix}h.{{n}}.{module}.weight", f"transformer.h.{{n}}.{module}.weight", True)
                for prefix in ("transformer.", "") for module in _CONV1D)
    + (NameRule("transformer.{rest}", "transformer.{rest}"), NameRule("lm_head.{rest}", "lm_head.{rest}"),
       NameRule("{rest}", "transformer.{rest}")),
    ignore=("transformer.h.{n}.attn.bias", "transformer.h.{n}.attn.masked_bias", "h.{n}.attn.bias",
            "h.{n}.attn.masked_bias"),
)


def _numpy(value: Any) -> Any:
    """A numpy array of a tensor or array (bfloat16 as float32)."""
    import numpy as np
    if type(value).__module__.startswith("torch"):
        import torch
        value = value.detach().cpu()
        return (value.float() if value.dtype == torch.bfloat16 else value).numpy()
    return np.asarray(value)


@dataclass
class Weights:
    """What a Program knows of its module's parameters beyond the IR: the
    names that are aliases of another (tied weights: lm_head.weight of
    transformer.wte.weight), the module's buffers (a state dict carries
    them; they are no parameters), the module's dtypes, and the name map
    the parameters were loaded with (None: the module's own names)."""
    aliases: Dict[str, str] = field(default_factory=dict)     # alias -> the parameter's name
    buffers: Tuple[str, ...] = ()
    dtypes: Dict[str, Any] = field(default_factory=dict)      # name -> torch dtype
    name_map: Optional[NameMap] = None

    @classmethod
    def of_module(cls, module: Any, name_map: Optional[NameMap]) -> "Weights":
        first: Dict[int, str] = {}
        aliases: Dict[str, str] = {}
        # Every name of every parameter (named_parameters gives a tied one
        # once; PyTorch 1.13 has no remove_duplicate=False).
        for path, sub in module.named_modules():
            for short, p in sub._parameters.items():
                if p is None:
                    continue
                name = f"{path}.{short}" if path else short
                if id(p) in first:
                    aliases[name] = first[id(p)]
                else:
                    first[id(p)] = name
        dtypes = {name: p.dtype for name, p in module.named_parameters()}
        return cls(aliases, tuple(name for name, _ in module.named_buffers()), dtypes, name_map)

    def params_in(self, source: Any) -> Dict[str, Any]:
        """The module's parameters in `source` (a safetensors path, a state
        dict, a dict of arrays), renamed and transposed by the name map;
        buffers and ignored tensors dropped; a tied weight given under
        another of its names (lm_head.weight alone) is taken for it."""
        if isinstance(source, (str, Path)):
            from . import safetensors
            source = safetensors.load(source)
        if not isinstance(source, Mapping):
            raise ConfigError(f"params must be a safetensors file, a state dict or a dict of arrays, got "
                              f"{type(source).__name__}")
        params: Dict[str, Any] = {}
        tied: Dict[str, Any] = {}
        for name, value in source.items():
            mapped = self.name_map.to_module(name) if self.name_map else (name, False)
            if mapped is None or mapped[0] in self.buffers:
                continue
            target, transpose = mapped
            if target in params:
                raise ConfigError(f"params give parameter {target!r} twice (the second time as {name!r})")
            array = _numpy(value)
            array = array.swapaxes(-1, -2) if transpose else array
            if target in self.aliases:
                tied.setdefault(self.aliases[target], array)
            else:
                params[target] = array
        return {**tied, **params}

    def state_dict(self, params: Mapping[str, Any], file_layout: bool = False) -> Dict[str, Any]:
        """`params` (the program's, by parameter name) as torch tensors by
        the module's names, aliases included (load_state_dict takes it);
        `file_layout`: by the name map's file names and layouts instead."""
        import numpy as np
        import torch
        out: Dict[str, Any] = {}
        for name, array in params.items():
            tensor = torch.from_numpy(np.array(array))
            if name in self.dtypes:
                tensor = tensor.to(self.dtypes[name])
            for key in [name] + [a for a, n in self.aliases.items() if n == name]:
                out[key] = tensor
        if not file_layout or self.name_map is None:
            return out
        mapped: Dict[str, Any] = {}
        for name, tensor in out.items():
            target, transpose = self.name_map.to_file(name)
            mapped[target] = tensor.transpose(-1, -2).contiguous() if transpose else tensor
        return mapped


def distinct(tensors: Mapping[str, Any]) -> Dict[str, Any]:
    """`tensors` with each tied tensor once per name, as separate copies:
    safetensors files hold no shared storage."""
    seen: Dict[int, str] = {}
    out = {}
    for name, t in tensors.items():
        out[name] = t.clone() if id(t) in seen else t
        seen.setdefault(id(t), name)
    return out
