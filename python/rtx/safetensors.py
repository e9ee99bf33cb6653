"""Hugging Face's safetensors format, read and written with numpy alone.

    arrays = rtx.safetensors.load("model.safetensors")     # name -> numpy array (memory-mapped)
    rtx.safetensors.save("out.safetensors", {"w": array}) # numpy arrays or torch tensors

The format (github.com/huggingface/safetensors): an 8-byte little-endian
header length N, N bytes of JSON {NAME: {"dtype", "shape", "data_offsets":
[begin, end]}, "__metadata__": {...}}, then the data, each tensor row-major at
[begin, end) of the bytes after the header. Debian's Python has no
`safetensors` package, so rtx reads and writes it itself; the tests check
both directions against the `safetensors` library from the package index
where a virtual environment has it.

Reading maps the file (numpy.memmap): a tensor's pages are read when its
values are used, so opening a large checkpoint costs its header only. BF16,
which numpy lacks, is read as float32 (exact) and written from torch's
bfloat16 tensors.
"""
from __future__ import annotations

import json
import os
import struct
from pathlib import Path
from typing import Any, Dict, Iterator, List, Mapping, Optional, Tuple, Union

from .config import ConfigError

__all__ = ["SafetensorsError", "load", "save", "names", "INDEX_NAME"]

INDEX_NAME = "model.safetensors.index.json"
# The reference implementation refuses larger headers.
_MAX_HEADER = 100_000_000
# The format's dtypes that numpy holds as they are.
_NUMPY = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4", "I16": "<i2", "I8": "i1",
          "U8": "u1", "BOOL": "?", "U16": "<u2", "U32": "<u4", "U64": "<u8"}
# Bytes per element of every dtype the format defines.
_SIZES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U8": 1, "BOOL": 1,
          "U16": 2, "U32": 4, "U64": 8, "F8_E4M3": 1, "F8_E5M2": 1}


class SafetensorsError(ConfigError):
    """A file that is not valid safetensors, or a value it cannot hold."""


PathLike = Union[str, Path]


def _header(path: Path) -> Tuple[Dict[str, Any], int]:
    """The header of `path` (entries checked against the file's size) and
    the offset of its data."""
    size = path.stat().st_size
    with open(path, "rb") as f:
        if size < 8:
            raise SafetensorsError(f"safetensors file '{path}': has {size} bytes, fewer than the 8 of a "
                                   "header's length")
        (length,) = struct.unpack("<Q", f.read(8))
        if length > size - 8 or length > _MAX_HEADER:
            raise SafetensorsError(f"safetensors file '{path}': its header length {length} runs past the end of "
                                   f"the file ({size} bytes): the file is truncated or not safetensors")
        try:
            header = json.loads(f.read(length))
        except ValueError as error:
            raise SafetensorsError(f"safetensors file '{path}': its header is not valid JSON: {error}") from None
    if not isinstance(header, dict):
        raise SafetensorsError(f"safetensors file '{path}': its header is not a JSON object")
    for name, entry in header.items():
        if name != "__metadata__":
            _check_entry(path, name, entry, size - 8 - length)
    return header, 8 + length


def _check_entry(path: Path, name: str, entry: Any, data_size: int) -> None:
    where = f"safetensors file '{path}': tensor '{name}'"
    ok = (isinstance(entry, dict) and isinstance(entry.get("dtype"), str) and isinstance(entry.get("shape"), list)
          and all(isinstance(d, int) and d >= 0 for d in entry["shape"])
          and isinstance(entry.get("data_offsets"), list) and len(entry["data_offsets"]) == 2
          and all(isinstance(o, int) and o >= 0 for o in entry["data_offsets"]))
    if not ok:
        raise SafetensorsError(f"{where} needs \"dtype\", \"shape\" and \"data_offsets\": [begin, end]; the header "
                               f"has {json.dumps(entry)}")
    begin, end = entry["data_offsets"]
    if begin > end or end > data_size:
        raise SafetensorsError(f"{where} lies at bytes [{begin}, {end}) of the data, which holds {data_size} bytes: "
                               "the file is truncated or its header is wrong")
    if entry["dtype"] not in _SIZES:
        raise SafetensorsError(f"{where} has dtype '{entry['dtype']}', which the safetensors format does not define")
    count = 1
    for d in entry["shape"]:
        count *= d
    if count * _SIZES[entry["dtype"]] != end - begin:
        raise SafetensorsError(f"{where} of shape {entry['shape']} {entry['dtype']} needs "
                               f"{count * _SIZES[entry['dtype']]} bytes, its data_offsets give {end - begin}")


def _files(path: PathLike) -> List[Path]:
    """The files of a checkpoint: `path` itself, the shards its directory's
    index names, or every *.safetensors file of the directory."""
    path = Path(path)
    if not path.exists():
        raise SafetensorsError(f"no such safetensors file or directory: {path}")
    if not path.is_dir():
        return [path]
    index = path / INDEX_NAME
    if index.exists():
        weight_map = json.loads(index.read_text()).get("weight_map")
        if not isinstance(weight_map, dict):
            raise SafetensorsError(f"{index} has no \"weight_map\" object")
        if any("/" in str(f) for f in weight_map.values()):
            raise SafetensorsError(f"{index} maps a tensor to something other than a file name beside it")
        return [path / f for f in dict.fromkeys(weight_map.values())]
    files = sorted(path.glob("*.safetensors"))
    if not files:
        raise SafetensorsError(f"{path} holds no .safetensors file")
    return files


def _array(path: Path, entry: Dict[str, Any], start: int) -> Any:
    import numpy as np
    dtype, shape = entry["dtype"], tuple(entry["shape"])
    begin, end = entry["data_offsets"]
    if dtype not in _NUMPY and dtype != "BF16":
        raise SafetensorsError(f"safetensors file '{path}': rtx does not read dtype {dtype}")
    if end == begin:
        return np.zeros(shape, _NUMPY.get(dtype, "<f4"))
    raw = np.memmap(path, dtype=_NUMPY.get(dtype, "<u2"), mode="r", offset=start + begin, shape=shape)
    if dtype == "BF16":     # exact in float32: the bits are the high half
        return (raw.astype(np.uint32) << 16).view(np.float32)
    return raw


def _entries(path: PathLike) -> Iterator[Tuple[str, Path, Dict[str, Any], int]]:
    seen: Dict[str, Path] = {}
    for file in _files(path):
        header, start = _header(file)
        for name, entry in header.items():
            if name == "__metadata__":
                continue
            if name in seen:
                raise SafetensorsError(f"tensor '{name}' is in both {seen[name]} and {file}")
            seen[name] = file
            yield name, file, entry, start


def names(path: PathLike) -> Dict[str, Tuple[str, Tuple[int, ...]]]:
    """{name: (dtype, shape)} of a checkpoint, from its headers alone."""
    return {name: (entry["dtype"], tuple(entry["shape"])) for name, _, entry, _ in _entries(path)}


def load(path: PathLike) -> Dict[str, Any]:
    """Every tensor of a safetensors file (or of the shards of a directory:
    Hugging Face's model.safetensors.index.json, else every *.safetensors
    file) as a read-only numpy array over the mapped file; BF16 as float32."""
    return {name: _array(file, entry, start) for name, file, entry, start in _entries(path)}


def _bytes_of(name: str, value: Any) -> Tuple[str, List[int], Any]:
    """(dtype, shape, a contiguous buffer) of a numpy array or torch tensor."""
    import numpy as np
    if type(value).__module__.startswith("torch"):
        import torch
        value = value.detach().cpu().contiguous()
        if value.dtype == torch.bfloat16:
            return "BF16", list(value.shape), value.view(torch.int16).numpy()
        value = value.numpy()
    array = np.ascontiguousarray(np.asarray(value))
    for dtype, code in _NUMPY.items():
        if array.dtype == np.dtype(code):
            return dtype, list(array.shape), array
    raise SafetensorsError(f"tensor '{name}' has dtype {array.dtype}, which safetensors cannot hold")


def save(path: PathLike, tensors: Mapping[str, Any], metadata: Optional[Mapping[str, str]] = None) -> Path:
    """Writes `tensors` (numpy arrays or torch tensors, by name) as one
    safetensors file that Hugging Face's libraries read; `metadata` goes
    into the header's "__metadata__" (strings only, as the format says)."""
    path = Path(path)
    header: Dict[str, Any] = {}
    if metadata:
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()):
            raise SafetensorsError("safetensors metadata maps strings to strings")
        header["__metadata__"] = dict(metadata)
    buffers, offset = [], 0
    for name, value in tensors.items():
        dtype, shape, data = _bytes_of(name, value)
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + data.nbytes]}
        buffers.append(data)
        offset += data.nbytes
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)     # 8-byte aligned data, as the reference writer does
    # Written aside and renamed: arrays mapped from the file being replaced
    # (parameters loaded from it) keep their pages, and a crash leaves the
    # old file whole.
    staging = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(staging, "wb") as f:
            f.write(struct.pack("<Q", len(text)))
            f.write(text)
            for data in buffers:
                f.write(data.reshape(-1).view("u1").data)
        os.replace(staging, path)
    finally:
        staging.unlink(missing_ok=True)
    return path
