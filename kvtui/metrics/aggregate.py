"""The aggregator: request results in, immutable :class:`Frame` snapshots and the run summary out.

Every figure a view shows comes from here (views compute nothing of their own), so a test that feeds known
results can check every number on screen. Thread-safe: the engine's threads call :meth:`Aggregator.add`
while a view's timer calls :meth:`Aggregator.frame`.
"""

from __future__ import annotations

import threading
import time
from collections import Counter, deque

from kvtui.core.codes import code_name
from kvtui.core.events import EngineEvent, RequestResult
from kvtui.metrics.frame import Frame, PageRow
from kvtui.metrics.latency import LatencyRecorder

LATENCIES = ("reload", "publish", "probe")
SERIES = ("reuse_MBps", "publish_MBps", "rps", "tokens_skipped_ps", "hit_rate")


def _mbps(nbytes: float, seconds: float) -> float:
    return nbytes / seconds / 1e6 if seconds > 0 else 0.0


_RATE_KEYS = ("requests", "bytes_loaded", "bytes_written", "tokens_hit", "pages_hit", "pages_total")


def _rates(a: tuple[float, dict], b: tuple[float, dict]) -> dict:
    """Per-second rates between two ``(t, counters)`` snapshots (MB/s = 10^6 B/s; hit_rate = pages 0..1)."""
    dt = b[0] - a[0]
    d = {k: b[1].get(k, 0) - a[1].get(k, 0) for k in _RATE_KEYS}
    per_s = (lambda v: v / dt) if dt > 0 else (lambda v: 0.0)
    return {"reuse_MBps": _mbps(d["bytes_loaded"], dt), "publish_MBps": _mbps(d["bytes_written"], dt),
            "rps": per_s(d["requests"]), "tokens_skipped_ps": per_s(d["tokens_hit"]),
            "hit_rate": d["pages_hit"] / d["pages_total"] if d["pages_total"] else 0.0}


class Aggregator:
    """Accumulates :class:`RequestResult` s and :class:`EngineEvent` s.

    ``rows``: page-grid rows kept (newest); ``history``: ticks of rate history kept; ``window_s``: length
    of the "last N seconds" latency window (tumbling sub-windows of ``window_s/6``); ``events_kept``: size
    of the event log. All buffers are bounded, so memory stays flat over a long run.
    """

    def __init__(self, rows: int = 64, history: int = 300, window_s: float = 30.0, events_kept: int = 200,
                 clock=time.monotonic):
        self._lock = threading.Lock()
        self._clock = clock
        self.t0 = clock()
        self._rows: deque[PageRow] = deque(maxlen=rows)
        self._events: deque[EngineEvent] = deque(maxlen=events_kept)
        self._series = {k: deque(maxlen=history) for k in SERIES}
        self._lat = {k: LatencyRecorder() for k in LATENCIES}
        self.window_s = window_s
        self._sub_s = window_s / 6
        self._win: deque[tuple[float, dict[str, LatencyRecorder]]] = deque(maxlen=6)
        self._window = {k: LatencyRecorder() for k in LATENCIES}
        self._lat_key: tuple | None = None  # (rows seen, live sub-windows) the cached snapshots are for
        self._lat_snaps: tuple[dict, dict] = ({}, {})
        self._c = Counter()
        self._codes = Counter()
        self._row_seq = self._event_seq = self._series_seq = 0
        self.rate_window_s = 2.0
        self.series_interval_s = 1.0
        self._ticks: deque[tuple[float, dict]] = deque()
        self._series_t = 0.0
        self._series_snap: tuple[float, dict] = (self.t0, {})

    # -- input ------------------------------------------------------------------------------------------
    def add(self, r: RequestResult) -> None:
        """Count one request's outcome."""
        with self._lock:
            c = self._c
            c["requests"] += 1
            c["pages_total"] += r.pages_total
            c["pages_hit"] += r.pages_hit
            c["tokens_input"] += r.n_tokens
            c["tokens_cacheable"] += r.pages_total * r.page_tokens
            c["tokens_hit"] += r.tokens_hit
            c["pages_published"] += r.pages_published
            c["pages_already_present"] += r.pages_already_present
            c["pages_failed"] += r.pages_failed
            c["verified_pages"] += r.verified
            c["mismatches"] += r.mismatches
            c["bytes_loaded"] += r.bytes_loaded
            c["bytes_written"] += r.bytes_written
            c["read_ms_total"] += r.read_ms
            c["put_ms_total"] += r.put_ms
            for code, n in r.codes.items():
                self._codes[code_name(code)] += n
            self._rows.append(PageRow(r.req_id, r.scenario, r.n_tokens, r.pages_hit, r.states))
            self._row_seq += 1
            now = self._clock()
            if not self._win or now - self._win[-1][0] >= self._sub_s:
                self._win.append((now, {k: LatencyRecorder() for k in LATENCIES}))
            win = self._win[-1][1]
            values = {"reload": r.reload_ms, "publish": r.publish_ms if r.pages_published else None,
                      "probe": r.probe_ms}
            for k, v in values.items():
                if v is not None:
                    self._lat[k].record(v)
                    win[k].record(v)

    def event(self, e: EngineEvent) -> None:
        """Append to the bounded event log."""
        with self._lock:
            self._events.append(e)
            self._event_seq += 1

    def now(self) -> float:
        """Seconds since the aggregator was created."""
        return self._clock() - self.t0

    # -- output -----------------------------------------------------------------------------------------
    def totals(self) -> dict:
        """Cumulative counters: requests, pages_total, pages_hit, tokens_input, tokens_hit, pages_published,
        pages_already_present, pages_failed, verified_pages, mismatches, bytes_loaded, bytes_written,
        and the derived ``page_hit_rate`` and ``token_hit_rate`` (0..1)."""
        with self._lock:
            return self._totals_locked()

    def _totals_locked(self) -> dict:
        c = self._c
        keys = ("requests", "pages_total", "pages_hit", "tokens_input", "tokens_cacheable", "tokens_hit",
                "pages_published", "pages_already_present", "pages_failed", "verified_pages", "mismatches",
                "bytes_loaded", "bytes_written")
        t = {k: int(c[k]) for k in keys}
        t["read_ms_total"] = float(c["read_ms_total"])
        t["put_ms_total"] = float(c["put_ms_total"])
        t["page_hit_rate"] = c["pages_hit"] / c["pages_total"] if c["pages_total"] else 0.0
        t["token_hit_rate"] = c["tokens_hit"] / c["tokens_input"] if c["tokens_input"] else 0.0
        return t

    def frame(self, **panels) -> Frame:
        """Return a new :class:`Frame`. Rates are per second over the last ``rate_window_s`` (2 s); the
        series get one value per ``series_interval_s`` (1 s), so sparklines span the last minutes.

        ``panels``: ``store``, ``procs``, ``workload``, ``status`` dicts from the samplers (keys:
        :mod:`kvtui.metrics.frame`); ``status["window_s"]`` is set to this aggregator's latency window.
        """
        panels["status"] = {"window_s": self.window_s, **panels.get("status", {})}
        with self._lock:
            now = self._clock()
            c = self._c
            snap = (now, {k: c[k] for k in _RATE_KEYS})
            self._ticks.append(snap)
            while len(self._ticks) > 2 and now - self._ticks[1][0] >= self.rate_window_s:
                self._ticks.popleft()
            rates = _rates(self._ticks[0], snap)
            if now - self._series_t >= self.series_interval_s:
                if self._series_t:
                    for k, v in _rates(self._series_snap, snap).items():
                        self._series[k].append(v)
                    self._series_seq += 1
                self._series_t, self._series_snap = now, snap
            live = tuple(t_sub for t_sub, _ in self._win if now - t_sub <= self.window_s)
            key = (self._row_seq, live)
            if key != self._lat_key:  # new results or a sub-window expired: recompute the six snapshots
                window = self._window  # reused: a fresh HdrHistogram per frame would churn ~0.5 MB at 10 Hz
                for rec in window.values():
                    rec.reset()
                for t_sub, recs in self._win:
                    if now - t_sub <= self.window_s:
                        for k in LATENCIES:
                            window[k].merge(recs[k])
                self._lat_key = key
                self._lat_snaps = ({k: r.snapshot() for k, r in self._lat.items()},
                                   {k: r.snapshot() for k, r in window.items()})
            return Frame(
                t=now - self.t0, totals=self._totals_locked(), rates=rates,
                series={k: tuple(v) for k, v in self._series.items()},
                latency=self._lat_snaps[0], latency_window=self._lat_snaps[1],
                rows=tuple(self._rows), errors=dict(self._codes), events=tuple(self._events),
                row_seq=self._row_seq, event_seq=self._event_seq, series_seq=self._series_seq, **panels)

    def summary(self) -> dict:
        """The run summary now (see :func:`summary_from_frame`)."""
        return summary_from_frame(self.frame())


def summary_from_frame(frame: Frame) -> dict:
    """The run summary (``kvtui run --json``, ``kvtui report``) of a frame: totals, ``errors`` by code name,
    whole-session latency percentiles (ms) for reload/publish/probe, and throughput over ``frame.t``.

    ``reuse_read_MBps`` / ``publish_write_MBps`` are bytes moved over the time spent in reads / puts
    (10^6 B/s); the per-second rates divide by the elapsed time. A live run and a recorded session give the
    same summary because both compute it here from the same final frame.
    """
    t = dict(frame.totals)
    elapsed = frame.t
    t.update({
        "elapsed_s": elapsed,
        "errors": dict(sorted(frame.errors.items())),
        "reload_ms": frame.latency["reload"].as_dict(),
        "publish_ms": frame.latency["publish"].as_dict(),
        "probe_ms": frame.latency["probe"].as_dict(),
        "throughput": {
            "requests_per_s": t.get("requests", 0) / elapsed if elapsed > 0 else 0.0,
            "tokens_skipped_per_s": t.get("tokens_hit", 0) / elapsed if elapsed > 0 else 0.0,
            "reuse_read_MBps": _mbps(t.get("bytes_loaded", 0), t.get("read_ms_total", 0.0) / 1e3),
            "publish_write_MBps": _mbps(t.get("bytes_written", 0), t.get("put_ms_total", 0.0) / 1e3),
        },
    })
    return t
