"""The rows of a Mooncake FAST'25 trace as kvtui reads them (:class:`TraceRow`), the problems found in them
(:class:`TraceProblem`) and the out-of-order check (:func:`late_rows`): what both the reader and replay
(:mod:`workload.trace`) and the offline analysis (:mod:`workload.stats`) use."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["DEFAULT_BLOCK_TOKENS", "LateRows", "TraceProblem", "TraceRow", "late_rows"]

DEFAULT_BLOCK_TOKENS = 512
"""Tokens per hash id in the Mooncake FAST'25 traces."""


@dataclass(frozen=True, slots=True)
class TraceRow:
    """One valid trace row.

    Attributes:
        line_no: 1-based line number in the file.
        timestamp_ms: arrival time in milliseconds as written in the file.
        input_length: prompt length in tokens (>= 1).
        output_length: generated length in tokens (>= 0).
        hash_ids: prefix-block ids, one per ``block_tokens`` tokens (the last may cover a partial block);
            exact Python ints of any size.
    """

    line_no: int
    timestamp_ms: int
    input_length: int
    output_length: int
    hash_ids: tuple[int, ...]


@dataclass
class TraceProblem:
    """A problem :func:`workload.trace.read_trace` found in a row: its 1-based ``line_no``, a one-line ``reason``,
    and whether the row was ``skipped`` (a bad row) or kept with a warning (``skipped=False``: a row whose
    timestamp is below an earlier row's, which a replay issues at that earlier row's time)."""

    line_no: int
    reason: str
    skipped: bool = True


class LateRows:
    """Tracks the latest timestamp so far over rows in file order; :meth:`reason` is the warning for a row
    below it (the rows a replay cannot issue at their own time: it issues them at that earlier row's)."""

    def __init__(self) -> None:
        self._latest: TraceRow | None = None  # the last row with the latest timestamp so far
        self._prev: TraceRow | None = None

    def reason(self, row: TraceRow) -> str | None:
        """``timestamp 900 ms is below the previous row's 1000 ms`` (or ``below line 7's``), else None."""
        latest, out = self._latest, None
        if latest is not None and row.timestamp_ms < latest.timestamp_ms:
            whose = "the previous row's" if latest is self._prev else f"line {latest.line_no}'s"
            out = f"timestamp {row.timestamp_ms} ms is below {whose} {latest.timestamp_ms} ms"
        else:
            self._latest = row
        self._prev = row
        return out


def late_rows(rows: Sequence[TraceRow]) -> list[TraceProblem]:
    """One warning (``skipped=False``) per row of ``rows`` whose timestamp is below the latest timestamp of
    the rows before it, as :func:`workload.trace.read_trace` reports them (``workload.stats`` counts them this way
    too)."""
    check = LateRows()
    return [TraceProblem(r.line_no, why, False) for r in rows if (why := check.reason(r)) is not None]
