"""The per-request log (``--requests-log PATH``): one CSV row per finished request, streamed to disk.

:data:`COLUMNS` are the columns, in order, with their units; :func:`request_row` turns a
:class:`~kvtui.core.events.RequestResult` into a row (a dict of those columns). :class:`RequestLog` writes
rows as they come: one line per request, written whole when the request finishes (line-buffered), so the
file can be followed with ``tail -f``, memory stays flat whatever the run's length, and a killed run
leaves every row it finished. ``kvtui report FILE --requests-log PATH`` writes the same rows from the
request table of a recorded session (:meth:`kvtui.session.reader.SessionReader.request_rows`).

Times are seconds since the engine started (``start_s``: decode began the request's probe; ``finish_s``:
prefill ended its publish; ``arrival_s``: when the workload scheduled it, in its own clock; empty in a
closed loop). ``ttft_saved_ms`` is an **estimate** (:mod:`kvtui.metrics.ttft`: recompute estimate of the
reloaded tokens − the measured reload), empty when the request reloaded nothing or the run has no
estimator; the run's ``ttft_estimate`` summary field gives its basis. ``misses_*`` count the request's
missed full pages by reason (:mod:`kvtui.core.misses`); they add up to ``pages`` − ``pages_hit``. On a store
with a disk tier ``pages_hit_disk``, ``tokens_hit_disk`` and ``disk_read_ms`` say the part of ``pages_hit``,
``tokens_hit`` and ``read_ms`` that came from disk (memory's is the rest; 0 on a store without one).
"""

from __future__ import annotations

import csv
import io
import os
import tempfile
from pathlib import Path
from typing import Any, TextIO

from kvtui.core.codes import code_name
from kvtui.core.misses import LABELS as MISS_LABELS, NAMES as MISS_NAMES, REASONS
from kvtui.metrics.aggregate import prefix_group

# (column, unit or meaning): the log's header, in order
COLUMNS: tuple[tuple[str, str], ...] = (
    ("id", "request id, in issue order"),
    ("scenario", "scenario, or trace:NAME"),
    ("group", "prefix group: sys N / shot N (pool entry), conv N (conversation), pfx N (trace), empty: none"),
    ("trace_row", "trace line number (trace replay)"),
    ("turn", "conversation turn (multi-turn)"),
    ("arrival_s", "s, scheduled arrival (workload clock; empty: closed loop)"),
    ("start_s", "s since the engine started: decode began the probe"),
    ("finish_s", "s since the engine started: prefill ended the publish"),
    ("decode_worker", "index of the decode worker that reloaded"),
    ("prefill_worker", "index of the prefill worker that published"),
    ("tokens", "prompt tokens"),
    ("output_tokens", "tokens the request would generate after its prompt (decode): the trace row's output_length "
                      "or --output-tokens; kvtui computes no output"),
    ("cacheable_tokens", "tokens in full pages that may be cached"),
    ("pages", "full KV pages"),
    ("pages_hit", "pages reloaded"),
    ("pages_hit_disk", "of pages_hit, reloaded from the store's disk tier (0: none, or no disk tier)"),
    ("pages_published", "pages this writer stored"),
    ("pages_already_present", "pages a peer had stored"),
    ("pages_failed", "pages whose put failed"),
    *((f"misses_{MISS_NAMES[r]}", f"missed full pages: {MISS_LABELS[r]} (empty: not classified)") for r in REASONS),
    ("tokens_hit", "prompt tokens reloaded (prefill skipped)"),
    ("tokens_hit_disk", "of tokens_hit, those of the pages reloaded from the disk tier"),
    ("probe_ms", "ms, decode's probe"),
    ("read_ms", "ms, decode's reads"),
    ("disk_read_ms", "ms, of read_ms, reading the pages reloaded from the disk tier"),
    ("reload_ms", "ms, probe + read (the reload latency, when pages_hit > 0)"),
    ("verify_ms", "ms, verification of the loaded pages"),
    ("publish_probe_ms", "ms, prefill's probe"),
    ("put_ms", "ms, prefill's puts"),
    ("publish_ms", "ms, probe + put (the publish latency, when pages_published > 0)"),
    ("compute_ms", "ms, page computation (filling the pages)"),
    ("bytes_loaded", "bytes reloaded"),
    ("bytes_written", "bytes newly written"),
    ("verified", "pages verified (every byte, or a sample: --verify)"),
    ("mismatches", "pages whose bytes did not match"),
    ("errors", "failed store calls, CODE:count;… (Mooncake code names)"),
    ("ttft_saved_ms", "ms, estimate: recompute estimate of tokens_hit − reload_ms"),
)
NAMES = tuple(c for c, _ in COLUMNS)


def _label(labels, key: str):
    for k, v in labels or ():
        if k == key:
            return v
    return None


def _output_tokens(labels) -> int | None:
    """The request's ``output_tokens`` label (``workload.Request.output_tokens``), None when it has none."""
    value = _label(labels, "output_tokens")
    return None if value is None else int(value)


def request_row(r, estimator=None) -> dict:
    """The log row of result ``r`` (a :class:`~kvtui.core.events.RequestResult`); ``estimator``: the run's
    :class:`~kvtui.metrics.ttft.TtftEstimator` (None: ``ttft_saved_ms`` stays empty)."""
    saved = None
    if estimator is not None and r.pages_hit and getattr(estimator, "active", False):
        saved = round(estimator.recompute_ms(r.tokens_hit) - r.reload_ms, 3)
    misses = r.miss_counts()
    return {
        "id": r.req_id, "scenario": r.scenario, "group": prefix_group(r.scenario, r.labels),
        "trace_row": _label(r.labels, "row"), "turn": _label(r.labels, "turn"),
        "arrival_s": None if r.arrival_s is None else round(r.arrival_s, 6),
        "start_s": round(r.t_start, 6), "finish_s": round(r.t_end, 6),
        "decode_worker": getattr(r, "decode_worker", 0), "prefill_worker": getattr(r, "prefill_worker", 0),
        "tokens": r.n_tokens, "output_tokens": _output_tokens(r.labels),
        "cacheable_tokens": r.cacheable_tokens, "pages": r.pages_total,
        "pages_hit": r.pages_hit, "pages_hit_disk": r.pages_hit_disk, "pages_published": r.pages_published,
        "pages_already_present": r.pages_already_present, "pages_failed": r.pages_failed,
        **{f"misses_{MISS_NAMES[reason]}": misses.get(MISS_NAMES[reason]) for reason in REASONS},
        "tokens_hit": r.tokens_hit, "tokens_hit_disk": r.pages_hit_disk * r.page_tokens,
        "probe_ms": round(r.probe_ms, 3), "read_ms": round(r.read_ms, 3), "disk_read_ms": round(r.disk_read_ms, 3),
        "reload_ms": round(r.reload_ms, 3), "verify_ms": round(r.verify_ms, 3),
        "publish_probe_ms": round(r.publish_probe_ms, 3), "put_ms": round(r.put_ms, 3),
        "publish_ms": round(r.publish_ms, 3), "compute_ms": round(r.compute_ms, 3),
        "bytes_loaded": r.bytes_loaded, "bytes_written": r.bytes_written, "verified": r.verified,
        "mismatches": r.mismatches,
        "errors": ";".join(f"{code_name(k)}:{n}" for k, n in sorted(r.codes.items())),
        "ttft_saved_ms": saved,
    }


def row_values(row: dict) -> list:
    """``row`` as a list in :data:`NAMES` order (a column it lacks is None)."""
    return [row.get(c) for c in NAMES]


class RequestLog:
    """Streams rows to ``path`` as CSV (header first). ``OSError`` at open if it cannot be created; a write
    that fails later (disk full) stops the log: :attr:`error` says why and later rows are dropped (the run
    goes on). ``atomic``: write a temporary file beside ``path`` and rename it at :meth:`close` (``kvtui
    report``: the whole file or nothing); otherwise rows land in ``path`` as they come."""

    def __init__(self, path: str | os.PathLike, estimator=None, *, atomic: bool = False):
        self.path = Path(path)
        self.estimator = estimator
        self.rows = 0
        self.error: str | None = None
        self._tmp: str | None = None
        self._f: TextIO | None
        if atomic:
            fd, self._tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", dir=str(self.path.resolve().parent))
            self._f = io.open(fd, "w", newline="", encoding="utf-8", buffering=1)
        else:
            self._f = open(self.path, "w", newline="", encoding="utf-8", buffering=1)
        self._csv = csv.writer(self._f, lineterminator="\n")  # (writerow writes each line in one call)
        try:
            self._write_line(list(NAMES))
        except OSError:  # (a full disk already): no temporary file is left behind
            try:
                self._f.close()
            except OSError:
                pass
            if self._tmp is not None:
                Path(self._tmp).unlink(missing_ok=True)
            raise

    def _write_line(self, values: list) -> None:
        self._csv.writerow(["" if v is None else v for v in values])

    def add(self, result) -> None:
        """Write the row of one :class:`~kvtui.core.events.RequestResult`."""
        self.write_row(request_row(result, self.estimator))

    def write_row(self, row: dict) -> None:
        """Write one row (a dict of :data:`NAMES`; missing columns are empty)."""
        if self.error is not None or self._f is None:
            return
        try:
            self._write_line(row_values(row))
            self.rows += 1
        except (OSError, ValueError) as exc:
            self.error = f"{self.path}: {getattr(exc, 'strerror', None) or exc}; rows after {self.rows:,} dropped"

    def close(self) -> None:
        """Flush and close (an ``atomic`` log is renamed into place now; safe to call twice)."""
        f, self._f = self._f, None
        if f is None:
            return
        try:
            f.close()
        except OSError as exc:
            self.error = self.error or f"{self.path}: {exc.strerror or exc}"
        if self._tmp is not None:
            if self.error is None:
                mask = os.umask(0o022)
                os.umask(mask)
                os.chmod(self._tmp, 0o666 & ~mask)  # as a plain open would (mkstemp makes it 0600)
                os.replace(self._tmp, self.path)
            else:
                os.unlink(self._tmp)

    def discard(self) -> None:
        """Close an ``atomic`` log without renaming it into place (a failed report leaves no file)."""
        if self._tmp is not None:
            self.error = self.error or "discarded"
        self.close()


# Parquet column types (pyarrow names); every other column is int64
_PARQUET_TYPES = {"scenario": "string", "group": "string", "trace_row": "string", "turn": "string",
                  "errors": "string", "arrival_s": "float64", "start_s": "float64", "finish_s": "float64",
                  "ttft_saved_ms": "float64"}
PARQUET_ROW_GROUP = 4096  # rows held in memory before they are written as one row group


def parquet_available() -> bool:
    """Whether pyarrow (the optional ``parquet`` extra) is installed."""
    import importlib.util

    return importlib.util.find_spec("pyarrow") is not None


class ParquetLog(RequestLog):
    """:class:`RequestLog` as Parquet (needs pyarrow): rows are written in row groups of
    :data:`PARQUET_ROW_GROUP`, so at most that many are held in memory; columns ending in ``_ms`` are
    float64, the text ones strings, the rest int64. A killed run leaves no readable file (Parquet's footer
    is written at :meth:`close`): use CSV to follow a run as it goes."""

    _f: Any  # a pyarrow ParquetWriter; None once closed
    _tmp: str

    def __init__(self, path, estimator=None, *, atomic: bool = True):
        import pyarrow as pa
        import pyarrow.parquet as pq

        self.path = Path(path)
        self.estimator = estimator
        self.rows = 0
        self.error = None
        self._pa = pa
        self.schema = pa.schema([(c, _PARQUET_TYPES.get(c, "float64" if c.endswith("_ms") else "int64"))
                                 for c in NAMES])
        fd, self._tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", dir=str(self.path.resolve().parent))
        os.close(fd)
        self._f = pq.ParquetWriter(self._tmp, self.schema)
        self._pending: list[dict] = []

    def write_row(self, row: dict) -> None:
        if self.error is not None or self._f is None:
            return
        self._pending.append(row)
        self.rows += 1
        if len(self._pending) >= PARQUET_ROW_GROUP:
            self._flush()

    def _flush(self) -> None:
        if not self._pending:
            return
        rows, self._pending = self._pending, []
        try:
            cols = {c: [_typed(r.get(c), self.schema.field(c).type) for r in rows] for c in NAMES}
            self._f.write_table(self._pa.table(cols, schema=self.schema))
        except (OSError, ValueError, self._pa.ArrowException) as exc:
            self.error = f"{self.path}: {exc}; rows after {self.rows - len(rows):,} dropped"

    def close(self) -> None:
        if self._f is None:
            return
        self._flush()
        f, self._f = self._f, None
        try:
            f.close()
        except (OSError, self._pa.ArrowException) as exc:
            self.error = self.error or f"{self.path}: {exc}"
        if self.error is None:
            mask = os.umask(0o022)
            os.umask(mask)
            os.chmod(self._tmp, 0o666 & ~mask)
            os.replace(self._tmp, self.path)
        else:
            os.unlink(self._tmp)


def _typed(v, arrow_type):
    if v is None or v == "":
        return None
    s = str(arrow_type)
    if s == "string":
        return str(v)
    return float(v) if s == "double" else int(float(v))


def open_log(path, estimator=None, *, atomic: bool = False) -> RequestLog:
    """A :class:`ParquetLog` for a ``.parquet`` path (always written whole at the end), else a CSV
    :class:`RequestLog`. ``OSError`` if it cannot be created."""
    if str(path).lower().endswith(".parquet"):
        return ParquetLog(path, estimator)
    return RequestLog(path, estimator, atomic=atomic)


def markdown_table() -> str:
    """The docs' table of the log's columns (:data:`COLUMNS`)."""
    return "\n".join(["| column | unit, meaning |", "|---|---|"] + [f"| `{c}` | {u} |" for c, u in COLUMNS])


if __name__ == "__main__":  # python -m kvtui.export.request_log: the docs' table
    print(markdown_table())
