"""Text tables a person reads in a terminal: at most :data:`WIDTH` columns, sections of labelled rows whose
long values wrap under themselves, and a legend. The benches' tables, ``kvtui compare`` and the summaries
lay their lines out with these; :func:`plural` says a count in words (``1 point``, ``2 points``)."""

from __future__ import annotations

import os
import textwrap
from collections.abc import Iterable, Sequence
from typing import TextIO

from workload.text import plural

__all__ = ["WIDTH", "INDENT", "plural", "line_width", "wrap", "rows", "section", "legend", "widest"]

WIDTH = 100
"""The widest line of a text output (columns)."""

INDENT = "  "
"""A section's rows, under its title."""


def line_width(stream: TextIO) -> int:
    """The widest line ``stream`` takes (columns): its terminal's width, or :data:`WIDTH` when it is not a
    terminal (a file, a pipe, a CI log)."""
    try:
        if stream.isatty():
            return max(1, os.get_terminal_size(stream.fileno()).columns)
    except (AttributeError, OSError, ValueError):  # (no fileno: a test's stream; a closed one)
        pass
    return WIDTH


def wrap(text: str, width: int = WIDTH, first: str = "", rest: str = "") -> list[str]:
    """``text`` in lines of at most ``width`` columns, the first starting with ``first``, the others with
    ``rest``; words are kept whole unless one alone is wider than a line."""
    return textwrap.wrap(text, width=width, initial_indent=first, subsequent_indent=rest, break_on_hyphens=False,
                         drop_whitespace=True) or [first.rstrip()]


def rows(pairs: Iterable[tuple[str, str]], label_width: int, width: int = WIDTH, indent: str = INDENT,
         gap: int = 2) -> list[str]:
    """One row per ``(label, value)``: the label in a column of ``label_width``, the value ``gap`` columns beside
    it, wrapped under itself; a label wider than its column has its value start on the next line."""
    lines: list[str] = []
    pad = indent + " " * (label_width + gap)
    for label, value in pairs:
        head = f"{indent}{label:<{label_width}}" + " " * gap
        if len(head) > len(pad):
            lines.append(f"{indent}{label}")
            head = pad
        lines += wrap(value, width, head, pad)
    return lines


def section(title: str, body: Sequence[str]) -> list[str]:
    """A blank line, the section's ``title``, its ``body`` lines (nothing when the body is empty)."""
    return ["", title, *body] if body else []


def legend(entries: Iterable[tuple[str, str]], width: int = WIDTH) -> list[str]:
    """The ``Legend`` section: each ``(term, explanation)``, the explanation wrapped under itself."""
    entries = list(entries)
    w = max((len(term) for term, _ in entries), default=0)
    return section("Legend", rows(entries, w, width))


def widest(lines: Iterable[str]) -> int:
    """The widest of ``lines`` (columns; the tests hold every text output to :data:`WIDTH`)."""
    return max((len(x) for text in lines for x in text.splitlines()), default=0)
