"""The traces shipped inside the package, by name: the one table of ``--trace NAME`` (``run``, ``watch``,
``bench --trace``, ``trace-stats``, ``kvtui traces``).

The files are the Mooncake FAST'25 sample traces (kvcache-ai/Mooncake ``FAST25-release/traces``, Apache-2.0;
``kvtui/data/traces/README.md`` and ``LICENSE`` travel with them). A name is looked up before the file
system: a file called ``synthetic`` in the current folder is ``./synthetic``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from kvtui.core.errors import KvtuiError

TRACES_DIR = Path(__file__).resolve().parent.parent / "data" / "traces"
"""Where the shipped trace files are installed (``kvtui/data/traces/``, package data)."""


@dataclass(frozen=True)
class ShippedTrace:
    """One shipped trace: its ``name`` on the command line, its ``file`` in :data:`TRACES_DIR`, and what
    it is (``description``, one line)."""

    name: str
    file: str
    description: str

    @property
    def path(self) -> Path:
        """The installed file."""
        return TRACES_DIR / self.file


SHIPPED_TRACES: dict[str, ShippedTrace] = {
    t.name: t
    for t in (
        ShippedTrace("synthetic", "synthetic_trace.jsonl",
                     "the whole FAST'25 synthetic trace (ShareGPT, L-Eval and LooGLE prompts, Poisson arrivals)"),
        ShippedTrace("conversation-head", "conversation_head1000.jsonl",
                     "the first 1,000 rows of the FAST'25 conversation trace (Kimi online traffic)"),
    )
}


def trace_names() -> str:
    """The shipped names, comma separated, for help texts and errors."""
    return ", ".join(SHIPPED_TRACES)


def trace_arg(text: str) -> str:
    """The argparse type of a ``--trace NAME|FILE`` argument: ``text`` as given; an empty one is refused (one
    line naming the flag), so ``--trace ""`` never runs as if no trace were given."""
    import argparse

    if not text.strip():
        raise argparse.ArgumentTypeError(f"needs a shipped trace's name ({trace_names()}) or a file, got {text!r}")
    return text


def resolve_trace(text: str, what: str = "--trace") -> str:
    """The file behind a trace argument: a shipped trace's installed path for one of its names, else
    ``text`` itself when it is an existing path (the trace reader reports an unreadable or bad file).

    ``what`` names the argument in the error. Raises :class:`KvtuiError` (one line listing the names) when
    ``text`` is neither a shipped name nor an existing path, or when a shipped file is missing from the
    installation.
    """
    shipped = SHIPPED_TRACES.get(text)
    if shipped is not None:
        if not shipped.path.is_file():
            raise KvtuiError(f"{what} {text}: the shipped file {shipped.path} is missing from this installation "
                             "(reinstall kvtui)")
        return os.fspath(shipped.path)
    if os.path.exists(text):
        return text
    raise KvtuiError(f"{what} {text}: no such trace file, and not a shipped trace (names: {trace_names()})")


def trace_label(text: str) -> str:
    """How a trace argument is shown (workload name, event log): a shipped name as given, else the file's
    name without its folder."""
    return text if text in SHIPPED_TRACES else Path(text).name
