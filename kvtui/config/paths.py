"""File and folder flags: the argparse type of every path flag, and the checks an output passes before any
work starts (writable, not a recorded session, not a device, not the same file as another output or an
input). Shared by every command that writes a file."""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterable
from pathlib import Path

from kvtui.core.errors import KvtuiError


def path_arg(text: str) -> str:
    """argparse ``type`` of every file or folder flag (``--json``, ``--record``, ``--svg``, ``--log-dir``…):
    the text as given, or ``argparse.ArgumentTypeError`` (a one-line usage error, exit 2) when it is empty
    or only spaces, which would otherwise mean "no file" and silently write nothing."""
    if not text.strip():
        raise argparse.ArgumentTypeError("needs a path, got an empty one")
    return text


OUTPUT_ARGS = ("json", "svg", "png", "series", "record", "requests_log", "cast", "gif", "svg_anim", "screenshot",
               "save_trace", "trace_out")
"""The ``args`` attributes of the file outputs a command may write (``--json``, ``--svg``… ``--requests-log``)."""

_OUTPUT_FLAGS = {"trace_out": "--trace"}  # (export's --trace writes a trace; elsewhere --trace names one read)


def output_flag(name: str) -> str:
    """The flag of the output attribute ``name`` of :data:`OUTPUT_ARGS`: ``requests_log`` → ``--requests-log``,
    ``trace_out`` → ``--trace``."""
    return _OUTPUT_FLAGS.get(name, f"--{name.replace('_', '-')}")

INPUT_ARGS = ("file", "files", "trace")
"""The ``args`` attributes naming the files a command reads (a session, results, a trace file)."""


def check_distinct_paths(args: argparse.Namespace) -> None:
    """``KvtuiError`` before any work when two outputs of a command name the same file, or an output names a
    file the command reads (``report S.kvtui --json S.kvtui`` would replace the recording): each output needs
    its own file, and a device or a pipe (``--json /dev/null``) is refused, since the rename of an atomic write
    would replace it. ``-`` (standard output) and inputs that are not files (a shipped trace's name) are left
    out."""
    def same(a: str, b: str) -> bool:
        try:
            return os.path.samefile(a, b)
        except OSError:
            return os.path.realpath(a) == os.path.realpath(b)

    outputs = [(output_flag(name), path) for name in OUTPUT_ARGS
               if isinstance(path := getattr(args, name, None), str) and path.strip() and path != "-"]
    inputs = []
    for name in INPUT_ARGS:
        value = getattr(args, name, None)
        for path in value if isinstance(value, list) else [value]:
            if isinstance(path, str) and os.path.isfile(path):
                inputs.append(path)
    for i, (flag, path) in enumerate(outputs):
        if os.path.exists(path) and not os.path.isfile(path) and not os.path.isdir(path):
            raise KvtuiError(f"{flag}: {path} is not a regular file (a device or a pipe): kvtui writes its outputs "
                             "through a rename, which would replace it; leave the flag out, or use - for "
                             "standard output where the flag takes it")
        for src in inputs:
            if same(path, src):
                raise KvtuiError(f"{flag}: {path} is a file this command reads; kvtui never writes over its input")
        for other, other_path in outputs[i + 1:]:
            if same(path, other_path):
                raise KvtuiError(f"{flag} and {other} name the same file {path}; give each output its own")


STDOUT_FLAGS = ("--json",)
"""The output flags that take ``-`` for standard output (the others write files: SVG, PNG, GIF, casts…)."""


def check_outputs(pairs: Iterable[tuple[str | None, str]]) -> None:
    """:func:`check_writable` for each ``(path, flag)`` given (None or "" = the flag left out); ``-`` is left to
    the flags of :data:`STDOUT_FLAGS`."""
    for path, flag in pairs:
        if path and not (path == "-" and flag in STDOUT_FLAGS):
            check_writable(path, flag)


def check_writable(path: str, flag: str) -> None:
    """``KvtuiError`` now, before any work, if ``path`` cannot be written later (tries to open it for
    appending, and removes it again if that created it), is ``-`` (standard output: only
    :data:`STDOUT_FLAGS` take it, and their callers do not check it here), or is a recorded kvtui session,
    which no output replaces (``--json s1.kvtui`` for ``s1.json`` would lose the recording)."""
    from kvtui.session import is_session_file

    if path == "-":
        raise KvtuiError(f"{flag}: - (standard output) is taken by {', '.join(STDOUT_FLAGS)} only; give a file's path")
    target = Path(path)
    if is_session_file(target):
        raise KvtuiError(f"{flag}: {path} is a recorded kvtui session; kvtui never writes over one (choose "
                         "another name)")
    parent = target.resolve().parent
    if target.is_dir() or path.endswith(os.sep):
        raise KvtuiError(f"{flag}: {path} is a folder; give a file's path")
    if parent.exists() and not parent.is_dir():
        raise KvtuiError(f"{flag}: {parent} is a file, not a folder")
    if not parent.is_dir():
        raise KvtuiError(f"{flag}: folder {parent} does not exist")
    existed = target.exists()
    try:
        with open(target, "ab"):
            pass
    except OSError as exc:
        raise KvtuiError(f"{flag}: {path} is not writable ({exc.strerror})") from None
    if not existed:
        target.unlink()


def check_new_file(path: str, flag: str) -> None:
    """``KvtuiError`` if ``path`` exists (a recording never overwrites anything) or cannot be created."""
    if Path(path).is_dir():
        raise KvtuiError(f"{flag}: {path} is a folder; give a new file's path (kvtui never overwrites a file)")
    if Path(path).exists():
        raise KvtuiError(f"{flag}: {path} exists already; choose another name (kvtui never overwrites a file)")
    check_writable(path, flag)
