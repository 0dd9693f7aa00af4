"""A recorded session as a Mooncake FAST'25 trace (``kvtui export SESSION --trace FILE``): the request rows a
recording keeps, each with the page size it ran at and its page ids (:mod:`kvtui.session.recording`), written as
``kvtui run --save-trace FILE`` writes a run's requests (:class:`workload.trace_writer.TraceWriter`: rows in the
order the requests finished, ids numbered by first appearance, times from the arrival or else the start)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from kvtui.core.text import plural
from workload.trace_writer import TraceWriter

PAGE_COLUMNS = ("page_tokens", "page_ids")
"""The request-row columns a recording needs to become a trace (recordings made before them cannot)."""


class NotATrace(ValueError):
    """The recording cannot be written as a trace; the message says why in one line."""


@dataclass(frozen=True)
class SavedTrace:
    """What :func:`write_trace` wrote: ``rows`` (requests), their ``block_tokens`` (the run's page size) and
    ``left_out``: requests drawn before the recording started, whose pages it does not know."""

    rows: int
    block_tokens: int
    left_out: int


def check_columns(columns: Sequence[str], path: str) -> None:
    """``NotATrace`` unless request rows with ``columns`` can become a trace: a recording with no request row,
    or one made by a kvtui that kept only each request's first and last page key."""
    if not columns:
        raise NotATrace(f"{path} holds no request rows (no request finished while it recorded, or an older kvtui "
                        "recorded it): there is nothing to write as a trace")
    if not all(c in columns for c in PAGE_COLUMNS):
        raise NotATrace(f"{path} was recorded by an older kvtui, which kept no pages of its requests: it cannot be "
                        "exported as a trace (record the run again, or run it with --save-trace FILE)")


def write_trace(rows: Iterable[dict[str, Any]], f: TextIO, path: str) -> SavedTrace:
    """Write the request ``rows`` of the recording at ``path`` (:meth:`kvtui.session.reader.SessionReader.
    request_rows`, holding :data:`PAGE_COLUMNS`) to ``f`` as a trace. ``NotATrace`` when no row has pages, or
    when the page size changed while it recorded (a trace has one block size); ``OSError`` from ``f``."""
    writer = TraceWriter(f)
    block: int | None = None
    left_out = 0
    for row in rows:
        ids, page_tokens = row.get("page_ids"), row.get("page_tokens")
        if ids is None or page_tokens is None:
            left_out += 1
            continue
        if block is None:
            block = int(page_tokens)
        elif page_tokens != block:
            raise NotATrace(f"{path}: the page size changed while it recorded ({block} tokens, then {page_tokens} "
                            f"from request {row.get('id')}): a trace has one block size")
        t = row.get("arrival_s")
        t = row.get("start_s") if t is None else t
        writer.write(float(t or 0.0), int(row.get("tokens") or 0), int(row.get("output_tokens") or 0), ids)
    if block is None:
        raise NotATrace(f"{path} knows the pages of none of its requests ({plural(left_out, 'request')}, every one "
                        "drawn before recording started): there is nothing to write as a trace")
    return SavedTrace(writer.rows, block, left_out)
