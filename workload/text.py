"""Counts in words, for every message kvtui prints (workload imports nothing of kvtui, so the one helper lives
here; :mod:`kvtui.core.text` re-exports it)."""

from __future__ import annotations

__all__ = ["plural"]


def plural(n: int, noun: str, nouns: str | None = None) -> str:
    """``n`` (thousands separated) and ``noun``, plural unless ``n`` is 1: ``1 point``, ``2 points``, ``1,234
    rows``; ``nouns``: the plural when it is not ``noun + "s"`` (``plural(2, "process", "processes")``)."""
    return f"{n:,} {noun if n == 1 else (nouns if nouns is not None else noun + 's')}"
