"""Per-worker figures (:data:`kvtui.metrics.figures.WORKERS`) counted from the requests' results: each
:class:`~kvtui.core.events.RequestResult` names its decode and prefill worker (``decode_worker``,
``prefill_worker``), so every worker's counts add up to the run's totals (requests, pages, bytes)."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from kvtui.core.topology import worker_name
from kvtui.metrics import figures as fig

if TYPE_CHECKING:
    from kvtui.core.events import RequestResult

WorkerRow = dict[str, Any]
"""One worker's row of ``Frame.workers``: ``role``, ``index``, ``name``, counters, figures by their keys and what
:meth:`WorkerTally.describe` said (plain JSON values of mixed types, recorded and replayed as they are)."""

#: per role, counter → the RequestResult field it adds up ("errors": every failing code of the request)
DECODE_FIELDS = {"requests": None, "pages_total": "pages_total", "pages_hit": "pages_hit",
                 "bytes_loaded": "bytes_loaded", "bytes_local": "bytes_local", "verified_pages": "verified",
                 "mismatches": "mismatches", "errors": None, "read_ms_total": "read_ms"}
PREFILL_FIELDS = {"requests": None, "pages_published": "pages_published",
                  "pages_already_present": "pages_already_present", "pages_failed": "pages_failed",
                  "bytes_written": "bytes_written", "errors": None, "put_ms_total": "put_ms"}
DECODE_COUNTS = tuple(k for k in DECODE_FIELDS if not k.endswith("_ms_total"))
PREFILL_COUNTS = tuple(k for k in PREFILL_FIELDS if not k.endswith("_ms_total"))


def _frac(num: float, den: float) -> float:
    return num / den if den else 0.0


def _mbps(nbytes: float, ms: float) -> float:
    return nbytes / (ms / 1e3) / fig.MB if ms > 0 else 0.0


class WorkerTally:
    """Counts per worker. :meth:`add` one result; :meth:`rows` gives one dict per worker seen (decode first,
    by index): ``role``, ``index``, ``name`` (:func:`~kvtui.core.topology.worker_name`, given the counts
    ``set_counts`` was told, else the highest index seen + 1; a described worker's own), the counters above,
    ``read_ms_total`` / ``put_ms_total`` (ms), and the figures of :data:`~kvtui.metrics.figures.WORKERS` by their keys
    (shares and rates as fractions 0–1, as the summary's; ``local_share`` None unless :attr:`local_segments`). Not
    thread-safe (the aggregator calls it under its lock)."""

    def __init__(self) -> None:
        self.local_segments = False  # decode workers own segments (--segment-on decode): local_share is defined
        self._c: dict[tuple[str, int], Counter[str]] = {}
        self._counts: dict[str, int] = {}
        self._info: dict[tuple[str, int], dict[str, Any]] = {}  # what describe() said of a worker (name, host, remote)

    def describe(self, role: str, index: int, **info: Any) -> None:
        """Facts of worker ``index`` of ``role`` its row carries (a remote worker's ``name``, ``host``,
        ``pid``, ``remote=True``); they replace the derived name."""
        self._info[(role, int(index))] = dict(info)
        self._c.setdefault((role, int(index)), Counter())

    def set_counts(self, prefill: int, decode: int) -> None:
        """How many workers of each role the run has (so idle ones get a row, and names are right)."""
        self._counts = {"prefill": int(prefill), "decode": int(decode)}
        for role, n in self._counts.items():
            for i in range(n):
                self._c.setdefault((role, i), Counter())

    def add(self, r: RequestResult) -> None:
        """Count one :class:`~kvtui.core.events.RequestResult`."""
        errors = sum(r.codes.values())
        for role, index, fields in (("decode", r.decode_worker, DECODE_FIELDS),
                                    ("prefill", r.prefill_worker, PREFILL_FIELDS)):
            c = self._c.setdefault((role, index), Counter())
            c["requests"] += 1
            c["errors"] += errors
            for key, attr in fields.items():
                if attr is not None:
                    c[key] += getattr(r, attr)

    def rows(self) -> tuple[WorkerRow, ...]:
        """One dict per worker (see the class)."""
        out: list[WorkerRow] = []
        for role, counts in (("decode", DECODE_COUNTS), ("prefill", PREFILL_COUNTS)):
            keys = sorted(i for (r, i) in self._c if r == role)
            if not keys:
                continue
            n = self._counts.get(role) or keys[-1] + 1  # (the local workers' count: names as their processes')
            total = sum(self._c[(role, i)]["requests"] for i in keys)
            for i in keys:
                c = self._c[(role, i)]
                name = worker_name(role, i, n) if i < n else f"{role}-{i}"  # (beyond: a remote one, described)
                row: WorkerRow = {"role": role, "index": i, "name": name, **{k: int(c[k]) for k in counts},
                       **self._info.get((role, i), {})}
                row[fig.WORKER_SHARE.key] = _frac(c["requests"], total)
                if role == "decode":
                    row["read_ms_total"] = float(c["read_ms_total"])
                    row[fig.WORKER_HIT_RATE.key] = _frac(c["pages_hit"], c["pages_total"])
                    row[fig.WORKER_LOCAL.key] = (_frac(c["bytes_local"], c["bytes_loaded"]) if self.local_segments
                                                 else None)
                    row[fig.WORKER_REUSE_BUSY.key] = _mbps(c["bytes_loaded"], c["read_ms_total"])
                else:
                    row["put_ms_total"] = float(c["put_ms_total"])
                    row[fig.WORKER_PUBLISH_BUSY.key] = _mbps(c["bytes_written"], c["put_ms_total"])
                out.append(row)
        return tuple(out)
