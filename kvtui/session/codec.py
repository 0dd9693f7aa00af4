"""Frame ⇄ record conversion. A record holds what changed since the previous frame, so rows never grow
with session length: the newest page-grid rows, events and series points since the last record, plus the
current counters, rates, latency snapshots and panels (all bounded in size). The span a recording began
(:attr:`Frame.span`) is stored only in the records where it changed.

A reader rebuilds full frames by applying records in order with the same bounds as the live
:class:`~kvtui.metrics.aggregate.Aggregator` (rows 64, events 200, series 300 by default).
"""

from __future__ import annotations

import json
import zlib
from collections import deque
from typing import Any

from kvtui.core.events import EngineEvent
from kvtui.metrics.frame import Frame, PageRow, SpanStart
from kvtui.metrics.latency import LatencySnapshot

_ROW_HEAD = ("req_id", "scenario", "n_tokens", "pages_hit", "states")


def _lat(s: LatencySnapshot) -> list[Any]:
    return [s.count, s.p50, s.p90, s.p99, s.max, s.mean, s.min, [list(b) for b in s.buckets]]


def _unlat(v: list[Any]) -> LatencySnapshot:
    return LatencySnapshot(v[0], v[1], v[2], v[3], v[4], v[5], v[6], tuple((float(u), int(n)) for u, n in v[7]))


class FrameEncoder:
    """Encodes successive frames of one session as compressed delta records (``bytes``)."""

    def __init__(self) -> None:
        self.row_seq = self.event_seq = self.series_seq = 0
        self.span: SpanStart | None = None

    def encode(self, f: Frame) -> bytes:
        """The record of ``f`` relative to the previously encoded frame."""
        new_rows = min(f.row_seq - self.row_seq, len(f.rows))
        new_events = min(f.event_seq - self.event_seq, len(f.events))
        new_points = min(f.series_seq - self.series_seq, min((len(v) for v in f.series.values()), default=0))
        rec: dict[str, Any] = {
            "t": f.t, "totals": f.totals, "rates": f.rates, "errors": f.errors,
            "lat": {k: _lat(v) for k, v in f.latency.items()},
            "latw": {k: _lat(v) for k, v in f.latency_window.items()},
            "lats": {k: _lat(v) for k, v in f.latency_span.items()},
            "rows": [_row(r) for r in f.rows[len(f.rows) - new_rows:]] if new_rows > 0 else [],
            "events": ([[e.kind, e.t, e.text, e.data] for e in f.events[len(f.events) - new_events:]]
                       if new_events > 0 else []),
            "series": {k: list(v[len(v) - new_points:]) for k, v in f.series.items()} if new_points > 0 else {},
            "store": f.store, "procs": list(f.procs), "workload": f.workload, "status": f.status,
            **({"ttft": f.ttft} if f.ttft else {}), **({"wt": f.window_totals} if f.window_totals else {}),
            **({"workers": list(f.workers)} if f.workers else {}),
            "seq": [f.row_seq, f.event_seq, f.series_seq],
        }
        if f.span is not self.span and f.span != self.span:
            rec["span"] = f.span
        self.row_seq, self.event_seq, self.series_seq, self.span = f.row_seq, f.event_seq, f.series_seq, f.span
        return zlib.compress(json.dumps(rec, separators=(",", ":"), default=_default).encode(), 6)


_ROW_DEFAULTS = {k: v.default for k, v in PageRow.__dataclass_fields__.items() if k not in _ROW_HEAD}


def _row(r: PageRow) -> list[Any]:
    """A row as ``[req_id, scenario, n_tokens, pages_hit, states hex]`` plus, when any differs from its
    default, a dict of the detail fields (an older kvtui's file has only the five)."""
    extra = {k: getattr(r, k) for k, d in _ROW_DEFAULTS.items() if getattr(r, k) != d}
    return [r.req_id, r.scenario, r.n_tokens, r.pages_hit, r.states.hex(), *([extra] if extra else [])]


def _unrow(v: list[Any]) -> PageRow:
    extra = dict(v[5]) if len(v) > 5 else {}
    for k in ("keys", "codes", "misses"):
        if k in extra:
            extra[k] = tuple(tuple(x) if isinstance(x, list) else x for x in extra[k])
    if "reasons" in extra:  # (bytes are stored as hex, like states)
        extra["reasons"] = bytes.fromhex(extra["reasons"])
    extra = {k: x for k, x in extra.items() if k in _ROW_DEFAULTS}  # (fields of a newer kvtui are dropped)
    return PageRow(int(v[0]), v[1], int(v[2]), int(v[3]), bytes.fromhex(v[4]), **extra)


def _default(o: object) -> object:
    if isinstance(o, (bytes, bytearray)):
        return o.hex()
    if isinstance(o, (set, tuple)):
        return list(o)
    return str(o)


def decode_record(blob: bytes) -> dict[str, Any]:
    """The record dict of a stored blob (``ValueError`` if damaged)."""
    rec: dict[str, Any] = json.loads(zlib.decompress(blob))
    return rec


class FrameDecoder:
    """Rebuilds full frames from records applied in order (bounded like the live aggregator)."""

    def __init__(self, rows: int = 64, events: int = 200, history: int = 300) -> None:
        self.rows: deque[PageRow] = deque(maxlen=rows)
        self.events: deque[EngineEvent] = deque(maxlen=events)
        self.series: dict[str, deque[float]] = {}
        self.history = history
        self.span: SpanStart = {}

    def apply(self, rec: dict[str, Any]) -> Frame:
        """Apply one record and return the full frame it describes."""
        for r in rec["rows"]:
            self.rows.append(_unrow(r))
        for e in rec["events"]:
            self.events.append(EngineEvent(e[0], float(e[1]), e[2], e[3] or {}))
        for k, pts in rec["series"].items():
            self.series.setdefault(k, deque(maxlen=self.history)).extend(pts)
        for k in rec["rates"]:
            self.series.setdefault(k, deque(maxlen=self.history))
        seq = rec.get("seq", [0, 0, 0])
        if "span" in rec:
            self.span = rec["span"]
        return Frame(
            t=rec["t"], totals=rec["totals"], rates=rec["rates"],
            series={k: tuple(v) for k, v in self.series.items()},
            latency={k: _unlat(v) for k, v in rec["lat"].items()},
            latency_window={k: _unlat(v) for k, v in rec["latw"].items()},
            rows=tuple(self.rows), errors=rec["errors"], events=tuple(self.events), store=rec["store"],
            procs=tuple(rec["procs"]), workload=rec["workload"], status=rec["status"],
            row_seq=seq[0], event_seq=seq[1], series_seq=seq[2], span=self.span,
            latency_span={k: _unlat(v) for k, v in rec.get("lats", {}).items()}, ttft=rec.get("ttft", {}),
            window_totals=rec.get("wt", {}), workers=tuple(rec.get("workers", ())))
