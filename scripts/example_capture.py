"""Run ``kvtui ARGS…`` as the console script does, and keep what it wrote and what its tables were made from.

``python scripts/example_capture.py RECORD.json ARGS…`` (what ``scripts/gen_examples.py`` runs for each ``kvtui``
of a documented example): ``sys.stdout`` and ``sys.stderr`` are taps that pass every write on at once (so a
shell pipeline and the order of the two streams are as a user sees them) and keep it, tagged with its stream;
each call of a renderer in :data:`RENDERERS` (the functions that turn a command's figures into its text) is kept
with its arguments as JSON and the text it returned. RECORD.json gets ``{"argv", "rc", "chunks", "calls"}``
when kvtui returns; ``$KVTUI_EXAMPLE_PID`` (if set) names a file that gets this process's pid at once, so the
generator can signal kvtui itself rather than the shell around it.
"""

from __future__ import annotations

import dataclasses
import importlib
import io
import json
import os
import sys
from typing import Any, Callable

RENDERERS = (
    "kvtui.commands.output:format_summary",
    "kvtui.metrics.figures:failover_lines",
    "kvtui.commands.trace_stats:format_trace_stats",
    "kvtui.commands.traces:format_table",
    "kvtui.commands.layout:format_layout",
    "kvtui.core.sweep:format_sweep_table",
    "kvtui.commands.compare:format_comparison",
    "kvtui.soak.summary:format_soak",
    "kvtui.commands.bench:format_bench",
    "kvtui.bench.disk:format_disk",
)
"""The functions whose text a documented example shows (``module:function``): each is pure, figures in, text
out, so a test can call it again on the kept arguments and see whether the text it gives still is the text
the pages show."""

SWEEP_TAG = "$sweep"  # a SweepResult among the arguments, as its to_dict() (kvtui.core.sweep.sweep_from_dict)


def encode(value: Any) -> Any:
    """``value`` as JSON data: dicts, lists and tuples (as lists) recursively, numpy scalars as numbers, a
    :class:`~kvtui.core.sweep.SweepResult` as ``{"$sweep": its to_dict()}``; ``TypeError`` for anything else."""
    if isinstance(value, dict):
        return {str(k): encode(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [encode(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value.item() if hasattr(value, "item") else value
    if hasattr(value, "item") and callable(value.item):  # a numpy scalar
        return value.item()
    if dataclasses.is_dataclass(value) and type(value).__name__ == "SweepResult":
        return {SWEEP_TAG: encode(value.to_dict())}  # type: ignore[attr-defined]
    raise TypeError(f"cannot keep a {type(value).__name__} as JSON")


def decode(value: Any) -> Any:
    """The inverse of :func:`encode` (lists stay lists)."""
    if isinstance(value, dict):
        if set(value) == {SWEEP_TAG}:
            from kvtui.core.sweep import sweep_from_dict

            return sweep_from_dict(value[SWEEP_TAG])
        return {k: decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [decode(v) for v in value]
    return value


def renderer(name: str) -> Callable[..., str]:
    """The function ``module:function`` of :data:`RENDERERS`."""
    module, function = name.split(":")
    return getattr(importlib.import_module(module), function)  # type: ignore[no-any-return]


class _Tap(io.TextIOBase):
    """A text stream that passes each write on to ``real`` (flushed) and keeps it as ``[stream, text]``."""

    def __init__(self, stream: str, real: Any, chunks: list[list[str]]) -> None:
        super().__init__()
        self.stream, self.real, self.chunks = stream, real, chunks

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return "utf-8"

    def write(self, text: str) -> int:  # type: ignore[override]
        self.chunks.append([self.stream, text])
        self.real.write(text)
        self.real.flush()
        return len(text)

    def flush(self) -> None:
        self.real.flush()

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        return int(self.real.fileno())


def _wrap_renderers(calls: list[dict[str, Any]]) -> None:
    """Replace each function of :data:`RENDERERS` by one that keeps its calls, in its module and in every
    module loaded so far that imported it by name (modules loaded later import the wrapper)."""
    originals = {}
    for name in RENDERERS:
        module, function = name.split(":")
        mod = importlib.import_module(module)
        fn = getattr(mod, function)

        def kept(*args: Any, _fn: Callable[..., str] = fn, _name: str = name, **kwargs: Any) -> str:
            out = _fn(*args, **kwargs)
            calls.append({"renderer": _name, "args": encode(list(args)), "kwargs": encode(kwargs), "out": out})
            return out

        originals[id(fn)] = kept
    for mod in list(sys.modules.values()):
        for attr, value in list(vars(mod).items()) if mod is not None else []:
            if id(value) in originals and callable(value):
                setattr(mod, attr, originals[id(value)])


def main() -> int:
    record, argv = sys.argv[1], sys.argv[2:]
    if os.environ.get("KVTUI_EXAMPLE_PID"):
        with open(os.environ["KVTUI_EXAMPLE_PID"], "w") as f:
            f.write(str(os.getpid()))
    chunks: list[list[str]] = []
    calls: list[dict[str, Any]] = []
    real_out, real_err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _Tap("stdout", real_out, chunks), _Tap("stderr", real_err, chunks)
    rc: int | str | None = None
    try:
        _wrap_renderers(calls)
        sys.argv = ["kvtui", *argv]
        from kvtui.__main__ import main as kvtui_main

        rc = kvtui_main()
    except SystemExit as exc:
        rc = exc.code if isinstance(exc.code, int) else 1
    finally:
        sys.stdout, sys.stderr = real_out, real_err
        with open(record, "w") as f:
            json.dump({"argv": argv, "rc": rc, "chunks": chunks, "calls": calls}, f, ensure_ascii=False)
    return int(rc or 0)


if __name__ == "__main__":
    sys.exit(main())
