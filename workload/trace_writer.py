"""Write the requests a run issued as a Mooncake FAST'25 trace (``kvtui run --save-trace FILE``, ``kvtui export
SESSION --trace FILE``), so that aiperf, kvtui or another tool can replay exactly that workload.

Format: the one :func:`workload.trace.read_trace` reads (``kvcache-ai/Mooncake FAST25-release/traces``), one
JSON object a line, keys in this order::

    {"timestamp": 0, "input_length": 1100, "output_length": 256, "hash_ids": [0, 1, 2]}

- ``hash_ids``: one integer per block of ``block_tokens`` tokens, the run's page size, so a replay with that
  block size and page size issues pages one for one: ``len(hash_ids) == ceil(input_length / block_tokens)``.
  The file does not say its block size (the format has no place for it): the writer says it on stderr
  (:func:`saved_trace_text`), and a reader told another one names it (:func:`workload.trace.read_trace`).
  Equal ids mean equal page keys: a full page's id is given by its tokens and every token before it (a
  16-byte BLAKE2b chain over the pages' token bytes, :func:`page_ids`), as a page key is; a partial last page
  and a page past the request's ``cacheable_tokens`` (never published, never hit) get an id of their own. Ids
  are 0, 1, 2, … in order of first appearance in the file.
- ``timestamp``: milliseconds from the first row written: the request's ``arrival_s`` when it had one (a
  trace replay or a set rate), else the time it started; never below the row before (rows are written in the
  order requests finish, which with concurrency > 1 is not quite the order they started).
- ``output_length``: the request's ``output_tokens`` (a trace row's own in a trace replay, the scenario's
  ``WorkloadSpec.output_tokens`` otherwise); aiperf sends it as ``max_tokens``.

Rows are written when a request finishes (:meth:`TraceRecorder.finished`), one line at a time and flushed, so
a run that is interrupted leaves a valid trace of the requests that finished.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TextIO

from workload.request import Request
from workload.trace import replay_block_text

__all__ = ["TraceRecorder", "TraceWriter", "page_ids", "saved_trace_text"]

_TAIL = b"partial"
_UNPUBLISHED = b"unpublished"


def _id(digest: bytes) -> int:
    """A page id below ``2**63`` from a digest (its first 8 bytes)."""
    return int.from_bytes(digest[:8], "big") >> 1


def page_ids(req: Request, block_tokens: int) -> list[int]:
    """One id per block of ``block_tokens`` tokens of ``req``'s prompt (``ceil(n_tokens / block_tokens)``), each
    below ``2**63``, derived from the tokens alone (no numbering kept, so a recording can store them as they
    come): a full page within ``cacheable_tokens`` from the BLAKE2b chain of its tokens and every token before
    it (equal chains, equal ids, as page keys); the partial page after the chain from the chain and its tokens
    (equal tails of equal prefixes share an id, as in the FAST'25 files); a page past ``cacheable_tokens`` from
    the request's id and its position (an id of its own)."""
    tokens = req.tokens
    n = int(tokens.shape[0])
    full = min(n, int(req.cacheable_tokens)) // block_tokens
    out: list[int] = []
    digest = b""
    for i in range(full):
        digest = hashlib.blake2b(digest + tokens[i * block_tokens:(i + 1) * block_tokens].tobytes(),
                                 digest_size=16).digest()
        out.append(_id(digest))
    for start in range(full * block_tokens, n, block_tokens):  # pages never published
        piece = tokens[start:start + block_tokens]
        if piece.shape[0] < block_tokens and start == full * block_tokens:  # the partial page after the chain
            out.append(_id(hashlib.blake2b(digest + _TAIL + piece.tobytes(), digest_size=16).digest()))
        else:
            own = _UNPUBLISHED + req.req_id.to_bytes(8, "big") + start.to_bytes(8, "big")
            out.append(_id(hashlib.blake2b(own, digest_size=16).digest()))
    return out


def saved_trace_text(path: str, rows: int, block_tokens: int) -> str:
    """What kvtui says after writing a trace: its rows, its block size and how to replay it (kvtui's and
    aiperf's flags, :func:`workload.trace.replay_block_text`)."""
    what = f"{rows:,} row" + ("" if rows == 1 else "s")
    return f"{path}: {what} in blocks of {block_tokens} tokens; replay it with {replay_block_text(block_tokens)}"


class TraceWriter:
    """Writes trace rows into the text file ``f`` (module docstring): ids renumbered 0, 1, 2, … by first
    appearance, timestamps in ms from the first row's time and never below the row before. Not thread-safe.
    ``rows``: the rows written so far."""

    def __init__(self, f: TextIO) -> None:
        self._file = f
        self._ids: dict[int, int] = {}
        self._origin_s: float | None = None
        self._last_ms = 0
        self.rows = 0

    def write(self, t_s: float, input_length: int, output_length: int, ids: Sequence[int]) -> None:
        """Write one row: the request at ``t_s`` (seconds, any fixed origin), its lengths in tokens and its
        page ids (:func:`page_ids`); flushed at once. ``OSError`` when the file cannot be written."""
        if self._origin_s is None:
            self._origin_s = t_s
        ms = max(self._last_ms, int(round((t_s - self._origin_s) * 1000)))
        numbered = [self._ids.setdefault(i, len(self._ids)) for i in ids]
        row = {"timestamp": ms, "input_length": int(input_length), "output_length": int(output_length),
               "hash_ids": numbered}
        self._file.write(json.dumps(row, separators=(", ", ": ")) + "\n")
        self._file.flush()
        self._last_ms = ms
        self.rows += 1


@dataclass(frozen=True, slots=True)
class _Drawn:
    input_length: int
    output_length: int
    ids: list[int]
    arrival_s: float | None


class TraceRecorder:
    """Writes the requests of a run to ``path`` as a FAST'25 trace of ``block_tokens``-token blocks (the run's
    page size). :meth:`drawn` (the driver's feeder thread) takes a request's page ids; :meth:`finished` (the
    collector thread) writes its row; both under one lock. ``OSError`` when the file cannot be created; a
    write that fails later is kept in :attr:`error` and ends the writing (the rows before it stay valid)."""

    def __init__(self, path: str | os.PathLike[str], block_tokens: int) -> None:
        if block_tokens < 1:
            raise ValueError(f"block size must be at least 1 token, got {block_tokens}")
        self.path = os.fspath(path)
        self.block_tokens = block_tokens
        self._file = open(self.path, "w", encoding="utf-8")  # noqa: SIM115 - closed by close()
        self._writer = TraceWriter(self._file)
        self._pending: dict[int, _Drawn] = {}
        self._lock = threading.Lock()
        self.error: str | None = None

    @property
    def rows(self) -> int:
        """Rows written so far."""
        return self._writer.rows

    def drawn(self, req: Request) -> None:
        """Note ``req`` as issued, with its page ids."""
        if req.tokens.shape[0] == 0:
            return
        drawn = _Drawn(int(req.tokens.shape[0]), req.output_tokens, page_ids(req, self.block_tokens), req.arrival_s)
        with self._lock:
            self._pending[req.req_id] = drawn

    def finished(self, req_id: int, t_start_s: float) -> None:
        """Write the row of request ``req_id``, which started at ``t_start_s`` (seconds, any fixed origin)."""
        with self._lock:
            drawn = self._pending.pop(req_id, None)
            if drawn is None or self._file.closed or self.error is not None:
                return
            t = drawn.arrival_s if drawn.arrival_s is not None else t_start_s
            try:
                self._writer.write(t, drawn.input_length, drawn.output_length, drawn.ids)
            except OSError as exc:
                self.error = f"{self.path}: {exc.strerror or exc}"

    def text(self) -> str:
        """What was written and how to replay it (:func:`saved_trace_text`)."""
        return saved_trace_text(self.path, self.rows, self.block_tokens)

    def close(self) -> None:
        """Close the file (safe to call twice)."""
        with self._lock:
            if not self._file.closed:
                try:
                    self._file.close()
                except OSError as exc:
                    self.error = self.error or f"{self.path}: {exc.strerror or exc}"
