"""Write the requests a run issued as a Mooncake FAST'25 trace (``kvtui run --save-trace FILE``), so that aiperf,
kvtui or another tool can replay exactly that workload.

Format: the one :func:`workload.trace.read_trace` reads (``kvcache-ai/Mooncake FAST25-release/traces``), one
JSON object a line, keys in this order::

    {"timestamp": 0, "input_length": 1100, "output_length": 0, "hash_ids": [0, 1, 2]}

- ``hash_ids``: one integer per block of ``block_tokens`` tokens, the run's page size, so a replay with that
  block size and page size issues pages one for one: ``len(hash_ids) == ceil(input_length / block_tokens)``.
  Equal ids mean equal page keys: a full page's id is given by its tokens and every token before it (a
  16-byte BLAKE2b chain over the pages' token bytes, one dict entry per distinct page), as a page key is; a
  partial last page and a page past the request's ``cacheable_tokens`` (never published, never hit) get an
  id of their own. Ids are 0, 1, 2, … in order of first appearance.
- ``timestamp``: milliseconds from the first row written: the request's ``arrival_s`` when it had one (a
  trace replay or a set rate), else the time it started; never below the row before (rows are written in the
  order requests finish, which with concurrency > 1 is not quite the order they started).
- ``output_length``: the trace row's ``output_tokens`` label in a trace replay; 0 otherwise (kvtui
  generates no output tokens).

Rows are written when a request finishes (:meth:`TraceRecorder.finished`), one line at a time and flushed, so
a run that is interrupted leaves a valid trace of the requests that finished.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from dataclasses import dataclass

from workload.request import Request

__all__ = ["TraceRecorder", "trace_row_ids"]

_TAIL = b"partial"


@dataclass(frozen=True, slots=True)
class _Drawn:
    input_length: int
    output_length: int
    hash_ids: list[int]
    arrival_s: float | None


class _Ids:
    """Ids of page chains: equal chains of page bytes get equal ids (0, 1, 2, … by first appearance)."""

    def __init__(self) -> None:
        self._by_digest: dict[bytes, int] = {}
        self._next = 0

    def fresh(self) -> int:
        n = self._next
        self._next += 1
        return n

    def of(self, digest: bytes) -> int:
        found = self._by_digest.get(digest)
        if found is None:
            found = self._by_digest[digest] = self.fresh()
        return found


def trace_row_ids(req: Request, block_tokens: int, ids: _Ids) -> list[int]:
    """The ``hash_ids`` of ``req`` (module docstring) with ``ids``' numbering: ``ceil(n_tokens /
    block_tokens)`` integers."""
    tokens = req.tokens
    n = int(tokens.shape[0])
    full = min(n, int(req.cacheable_tokens)) // block_tokens
    out: list[int] = []
    digest = b""
    for i in range(full):
        digest = hashlib.blake2b(digest + tokens[i * block_tokens:(i + 1) * block_tokens].tobytes(),
                                 digest_size=16).digest()
        out.append(ids.of(digest))
    for start in range(full * block_tokens, n, block_tokens):  # pages never published
        piece = tokens[start:start + block_tokens]
        if piece.shape[0] < block_tokens and start == full * block_tokens:  # the partial page after the chain:
            out.append(ids.of(hashlib.blake2b(digest + _TAIL + piece.tobytes(), digest_size=16).digest()))
        else:  # (equal tails of equal prefixes share an id, as in the FAST'25 files) past cacheable_tokens: new
            out.append(ids.fresh())
    return out


class TraceRecorder:
    """Writes the requests of a run to ``path`` as a FAST'25 trace of ``block_tokens``-token blocks (the run's
    page size). :meth:`drawn` (the driver's feeder thread) gives a request's ids in issue order;
    :meth:`finished` (the collector thread) writes its row. ``OSError`` when the file cannot be created; a
    write that fails later is kept in :attr:`error` and ends the writing (the rows before it stay valid)."""

    def __init__(self, path: str | os.PathLike[str], block_tokens: int) -> None:
        if block_tokens < 1:
            raise ValueError(f"block size must be at least 1 token, got {block_tokens}")
        self.path = os.fspath(path)
        self.block_tokens = block_tokens
        self._file = open(self.path, "w", encoding="utf-8")  # noqa: SIM115 - closed by close()
        self._ids = _Ids()
        self._pending: dict[int, _Drawn] = {}
        self._lock = threading.Lock()
        self._origin_s: float | None = None
        self._last_ms = 0
        self.rows = 0
        self.error: str | None = None

    def drawn(self, req: Request) -> None:
        """Note ``req`` as issued: its ids now, so that they follow the order requests are issued in."""
        if req.tokens.shape[0] == 0:
            return
        out = 0
        for k, v in req.labels:
            if k == "output_tokens":
                out = int(v)
        drawn = _Drawn(int(req.tokens.shape[0]), out, trace_row_ids(req, self.block_tokens, self._ids),
                       req.arrival_s)
        with self._lock:
            self._pending[req.req_id] = drawn

    def finished(self, req_id: int, t_start_s: float) -> None:
        """Write the row of request ``req_id``, which started at ``t_start_s`` (seconds, any fixed origin)."""
        with self._lock:
            drawn = self._pending.pop(req_id, None)
            if drawn is None or self._file.closed or self.error is not None:
                return
            t = drawn.arrival_s if drawn.arrival_s is not None else t_start_s
            if self._origin_s is None:
                self._origin_s = t
            ms = max(self._last_ms, int(round((t - self._origin_s) * 1000)))
            row = {"timestamp": ms, "input_length": drawn.input_length, "output_length": drawn.output_length,
                   "hash_ids": drawn.hash_ids}
            try:
                self._file.write(json.dumps(row, separators=(", ", ": ")) + "\n")
                self._file.flush()
            except OSError as exc:
                self.error = f"{self.path}: {exc.strerror or exc}"
                return
            self._last_ms = ms
            self.rows += 1

    def close(self) -> None:
        """Close the file (safe to call twice)."""
        with self._lock:
            if not self._file.closed:
                try:
                    self._file.close()
                except OSError as exc:
                    self.error = self.error or f"{self.path}: {exc.strerror or exc}"
