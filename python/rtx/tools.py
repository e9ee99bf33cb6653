"""Finding and running rtx's tools, and turning what they say into Python.

Tools are looked up, in order, in an explicit build directory, in
$RTX_BUILD_DIR/bin, in the build/bin of the source tree this package lives
in, and on PATH.

Every tool runs through `call`: a tool that fails raises ToolError with its
diagnostic; a tool that succeeds but writes to stderr (MLIR's warnings and
remarks, a compiler's warnings, a program's notices) has each message
re-issued as an RtxToolWarning, so nothing a tool says is dropped. Use the
`warnings` module to act on them, e.g.
`warnings.simplefilter("error", rtx.RtxToolWarning)` makes them errors.
"""
from __future__ import annotations

import os
import re
import shutil
import signal
import threading
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path
from typing import List, Mapping, Optional, Sequence, Union

PathLike = Union[str, "os.PathLike[str]"]

SOURCE_ROOT = Path(__file__).resolve().parents[2]
_PACKAGE_DIR = str(Path(__file__).resolve().parent)


class ToolError(RuntimeError):
    """A tool could not be found, or it failed; the message says which and why."""


class RtxToolWarning(UserWarning):
    """A message a tool wrote while succeeding (an MLIR warning or remark, a
    compiler's warning, ...). `tool` names the tool, `message` is its text
    (with the notes that belong to it)."""

    def __init__(self, tool: str, message: str) -> None:
        self.tool, self.message = tool, message
        super().__init__(f"{tool}: {message}")


def find_tool(name: str, build_dir: Optional[PathLike] = None) -> str:
    """The path of tool `name` (e.g. "rtx-opt")."""
    candidates: List[Path] = []
    if build_dir is not None:
        candidates.append(Path(build_dir) / "bin" / name)
    env_dir = os.environ.get("RTX_BUILD_DIR")
    if env_dir:
        candidates.append(Path(env_dir) / "bin" / name)
    candidates.append(SOURCE_ROOT / "build" / "bin" / name)
    for path in candidates:
        if path.is_file() and os.access(path, os.X_OK):
            return str(path)
    on_path = shutil.which(name)
    if on_path:
        return on_path
    looked = ", ".join(str(p.parent) for p in candidates)
    raise ToolError(f"{name} not found (looked in {looked} and on PATH); build rtx with "
                    f"./scripts/setup.sh or point RTX_BUILD_DIR at a build directory")


def call(argv: Sequence[str], stdin: Optional[str] = None, *, name: Optional[str] = None,
         env: Optional[Mapping[str, str]] = None, echo: bool = False,
         tail: Optional[int] = None, forward: Sequence[int] = ()) -> subprocess.CompletedProcess:
    """Runs argv to completion and returns it (stdout and stderr as text).

    On a non-zero exit, raises ToolError "NAME failed (exit N): MESSAGE" with
    the tool's stderr (its stdout when stderr is empty; the last `tail` lines
    when given). On success, each message on stderr becomes an
    RtxToolWarning. `name` is the tool's name in messages (default: argv[0]'s
    file name); echo=True copies stdout to sys.stderr line by line as it
    comes (progress). `forward`: signals that this process passes on to
    the tool while it runs (a pre-emption notice to rtx-launch) instead of
    acting on them itself."""
    name = name if name is not None else Path(argv[0]).name
    try:
        if echo or forward:
            done = _call_echoing(list(argv), env, echo, forward)
        else:
            done = subprocess.run(list(argv), input=stdin, capture_output=True, text=True,
                                  env=None if env is None else dict(env))
    except OSError as error:
        raise ToolError(f"cannot run {argv[0]}: {error}") from None
    if done.returncode != 0:
        message = done.stderr.strip() or done.stdout.strip() or "no message"
        if tail is not None:
            message = "\n" + "\n".join(message.splitlines()[-tail:])
        else:
            message = " " + message
        raise ToolError(f"{name} failed (exit {done.returncode}):{message}")
    warn_messages(name, done.stderr)
    return done


def _call_echoing(argv: List[str], env: Optional[Mapping[str, str]], echo: bool = True,
                  forward: Sequence[int] = ()) -> subprocess.CompletedProcess:
    with tempfile.TemporaryFile(mode="w+") as err:
        with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err, text=True, bufsize=1,
                              env=None if env is None else dict(env)) as process:
            # Signal handlers can only be set from the main thread.
            previous = {}
            if threading.current_thread() is threading.main_thread():
                for signum in forward:
                    previous[signum] = signal.signal(signum, lambda s, _: process.send_signal(s))
            try:
                lines = []
                assert process.stdout is not None
                for line in process.stdout:
                    lines.append(line)
                    if echo:
                        sys.stderr.write(line)
                        sys.stderr.flush()
                process.wait()
            finally:
                for signum, handler in previous.items():
                    signal.signal(signum, handler)
        err.seek(0)
        return subprocess.CompletedProcess(argv, process.returncode, "".join(lines), err.read())


# An MLIR diagnostic's first line: "LOCATION: SEVERITY: text". A note
# belongs to the diagnostic before it, and so do the source lines and the
# caret that MLIR prints under a location.
_DIAGNOSTIC = re.compile(r"^\S.*?: (error|warning|remark|note): ")


def split_messages(stderr: str) -> List[str]:
    """The separate messages of a tool's stderr: one per MLIR diagnostic
    (with its notes and source lines, and any text before the first); a
    stderr without diagnostics is one message."""
    messages: List[List[str]] = []
    for line in stderr.rstrip().splitlines():
        header = _DIAGNOSTIC.match(line)
        if not messages or (header is not None and header.group(1) != "note"):
            if not line.strip():
                continue
            messages.append([])
        messages[-1].append(line)
    return ["\n".join(m).strip("\n") for m in messages]


def warn_messages(tool: str, stderr: str) -> None:
    """Issues each message of `stderr` as an RtxToolWarning, attributed to
    the first caller outside the rtx package."""
    for message in split_messages(stderr):
        warnings.warn(RtxToolWarning(tool, message), stacklevel=_caller_level())


def _caller_level() -> int:
    """The warnings.warn stacklevel of the first frame outside python/rtx."""
    frame, level = sys._getframe(1), 1          # warn_messages' frame is level 1 for warn
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame, level = frame.f_back, level + 1
    return level
