"""The aggregator: request results in, immutable :class:`Frame` snapshots and the run summary out.

Every figure a view shows comes from here (views compute nothing of their own), so a test that feeds known
results can check every number on screen. Thread-safe: the engine's threads call :meth:`Aggregator.add`
while a view's timer calls :meth:`Aggregator.frame`.
"""

from __future__ import annotations

import threading
import time
from array import array
from collections import Counter, deque
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Literal, cast

from kvtui.core.codes import code_name
from kvtui.core.events import EngineEvent, RequestResult
from kvtui.core.misses import NAMES as MISS_NAMES, REASONS
from kvtui.core.pages import TIERS
from kvtui.core.panels import TtftPanel
from kvtui.metrics import figures as fig
from kvtui.metrics.frame import Frame, PageRow, SpanStart
from kvtui.metrics.latency import EMPTY, LatencyRecorder, LatencySnapshot
from kvtui.metrics.summary import MissFigures, RunSummary, TtftFields
from kvtui.metrics.tiers import reload_by_tier
from kvtui.metrics.ttft_saved import TtftTracker, summary_fields, tier_fields
from kvtui.metrics.workers import WorkerRow, WorkerTally

if TYPE_CHECKING:
    from kvtui.metrics.ttft import TtftEstimator

Labels = Iterable[tuple[str, str]]  # a request's workload labels, (key, value) pairs
Snapshots = dict[str, LatencySnapshot]  # latency snapshots by kind (LATENCIES)

LATENCIES = tuple(f.key for f in fig.LATENCY)  # reload, publish, probe
SERIES = tuple(f.key for f in fig.WALL)  # the keys of Frame.rates and Frame.series
COUNTERS = ("requests", "pages_total", "pages_hit", "tokens_input", "tokens_cacheable", "tokens_hit",
            "pages_published", "pages_already_present", "pages_failed", "verified_pages", "mismatches",
            "bytes_loaded", "bytes_written", fig.PROBE_ONLY.key, fig.UNUSABLE.key)  # integer totals
BUSY_MS = ("read_ms_total", "put_ms_total")  # float totals (ms)
IDEAL = ("ideal_tokens_hit", "ideal_pages_hit")  # trace rows: what an unbounded cache would have reloaded (totals
# carry them once a request had an ``ideal_hit_tokens`` label)
AIPERF = ("aiperf_share_sum", "aiperf_requests")  # trace rows: the sum of their aiperf shares (float) and how many
# (totals carry them once a request had an ``aiperf_share`` label; fig.AIPERF_SO_FAR is their quotient)
MISS_PAGES = tuple(f"misses_{MISS_NAMES[r]}" for r in REASONS)  # missed full pages by reason (kvtui.core.misses)
MISS_TOKENS = tuple(f"miss_tokens_{MISS_NAMES[r]}" for r in REASONS)  # their prompt tokens
MISS_FORGOTTEN = "miss_keys_forgotten"  # keys the miss reasons' history dropped (kvtui.core.misses.MAX_KEYS)
MISS_COUNTERS = MISS_PAGES + MISS_TOKENS + (MISS_FORGOTTEN,)  # totals carry them once a request had reasons
MISS_SHARES = tuple(f"miss_share_{MISS_NAMES[r]}" for r in REASONS)  # derived: tokens ÷ tokens_input


def tier_key(key: str, tier: str) -> str:
    """Where ``tier``'s figure ``key`` (a :data:`kvtui.metrics.figures.TIER_TOTALS` key) is in the totals."""
    return fig.TIER_TOTALS[key].format(tier=tier)


# a store with a disk tier: its share of the hits (totals carry them once the aggregator knows the store has one)
TIER_COUNTERS = tuple(tier_key(k, "disk") for k in ("pages_hit", "tokens_hit", "bytes_loaded"))  # integer totals
TIER_BUSY = (tier_key("read_ms_total", "disk"),)  # float totals (ms)
TIER_DERIVED = tuple(tier_key(k, t) for k in fig.TIER_TOTALS for t in TIERS if tier_key(k, t) not in TIER_COUNTERS
                     + TIER_BUSY)  # derived: memory's = the whole's − disk's; each tier's page hit rate
TIER_KINDS = tuple(fig.TIER_LATENCY_KEYS[t] for t in TIERS)  # each tier's part of the reload latency
# a store that replicates hot keys: the hits that had a second memory replica (totals carry it once the aggregator
# knows the store replicates, or a result had one)
HOT_COUNTERS = (fig.HOT_PAGES_HIT.key,)
WINDOW_COUNTERS = ("requests", "pages_total", "pages_hit", "tokens_input", "tokens_hit", fig.PROBE_ONLY.key,
                   fig.UNUSABLE.key) + IDEAL + TIER_COUNTERS[:1]  # Frame.window_totals: these over the last window_s


def prefix_group(scenario: str, labels: Labels | None) -> str:
    """The prefix group of a request, from its workload labels: ``sys 3`` (shared-system-prompt: system
    prompt 3 of the pool), ``shot 2`` (few-shot template 2), ``conv 12`` (multi-turn conversation 12), ``pfx
    978`` (a trace row's prefix group, :class:`workload.trace.TraceWorkload`), ``""`` when it shares none
    (random)."""
    lab = dict(labels or ())
    if "conversation" in lab:
        return f"conv {lab['conversation']}"
    if "prefix" in lab:
        return f"pfx {lab['prefix']}"
    if "pool" in lab:
        return f"{'shot' if scenario == 'few-shot' else 'sys'} {lab['pool']}"
    return ""


def _ideal_tokens(labels: Labels | None) -> int | None:
    """The ``ideal_hit_tokens`` label of a trace row (None: the request has none)."""
    for k, v in labels or ():
        if k == "ideal_hit_tokens":
            return int(v)
    return None


def _aiperf_share(labels: Labels | None) -> float | None:
    """The ``aiperf_share`` label of a trace row (None: the request has none)."""
    for k, v in labels or ():
        if k == "aiperf_share":
            return float(v)
    return None


def _mbps(nbytes: float, seconds: float) -> float:
    return nbytes / seconds / fig.MB if seconds > 0 else 0.0


_RATE_KEYS = ("requests", "bytes_loaded", "bytes_written", "tokens_hit", "pages_hit", "pages_total", "ideal_pages_hit")


def _rates(a: tuple[float, dict[str, float]], b: tuple[float, dict[str, float]]) -> dict[str, float]:
    """The wall-clock figures (:data:`kvtui.metrics.figures.WALL`) between two ``(t, counters)`` snapshots:
    MB/s = 10^6 B/s, per-second rates, hit_rate = pages 0..1."""
    dt = b[0] - a[0]
    d = {k: b[1].get(k, 0) - a[1].get(k, 0) for k in _RATE_KEYS}
    per_s = (lambda v: v / dt) if dt > 0 else (lambda v: 0.0)
    return {fig.REUSE_WALL.key: _mbps(d["bytes_loaded"], dt), fig.PUBLISH_WALL.key: _mbps(d["bytes_written"], dt),
            fig.REQUESTS_WALL.key: per_s(d["requests"]), fig.SKIPPED_WALL.key: per_s(d["tokens_hit"]),
            fig.HIT_RATE_WALL.key: d["pages_hit"] / d["pages_total"] if d["pages_total"] else 0.0,
            fig.IDEAL_WALL.key: d["ideal_pages_hit"] / d["pages_total"] if d["pages_total"] else 0.0}


def derive(t: dict[str, float]) -> dict[str, float]:
    """Add the derived ``page_hit_rate`` and ``token_hit_rate`` (0..1) to totals ``t`` (in place; returned)."""
    t["page_hit_rate"] = t.get("pages_hit", 0) / t["pages_total"] if t.get("pages_total") else 0.0
    t["token_hit_rate"] = t.get("tokens_hit", 0) / t["tokens_input"] if t.get("tokens_input") else 0.0
    if "ideal_tokens_hit" in t:  # a trace: fig.IDEAL_SO_FAR
        t[fig.IDEAL_SO_FAR.key] = t["ideal_tokens_hit"] / t["tokens_input"] if t.get("tokens_input") else 0.0
    if "aiperf_requests" in t:  # a trace: fig.AIPERF_SO_FAR
        t[fig.AIPERF_SO_FAR.key] = t["aiperf_share_sum"] / t["aiperf_requests"] if t["aiperf_requests"] else 0.0
    if MISS_TOKENS[0] in t:  # fig.MISS_SHARE
        for tokens, share in zip(MISS_TOKENS, MISS_SHARES):
            t[share] = t[tokens] / t["tokens_input"] if t.get("tokens_input") else 0.0
    if TIER_COUNTERS[0] in t:  # a disk tier: memory's = the whole's − disk's (fig.TIER), each tier's hit rate
        for key in ("pages_hit", "tokens_hit", "bytes_loaded", "read_ms_total"):
            if key in t and tier_key(key, "disk") in t:
                t[tier_key(key, "memory")] = t[key] - t[tier_key(key, "disk")]
        for tier in TIERS:
            hit = t.get(tier_key("pages_hit", tier), 0)
            t[tier_key(fig.TIER_HIT_RATE.key, tier)] = hit / t["pages_total"] if t.get("pages_total") else 0.0
    return t


def miss_summary(t: Mapping[str, float]) -> dict[str, MissFigures] | None:
    """The summary's ``misses``: per reason name (:data:`kvtui.core.misses.NAMES`, in order) its ``pages``,
    ``tokens`` and ``share`` (:data:`kvtui.metrics.figures.MISS_SHARE`, 0..1) from totals ``t`` (after
    :func:`derive`); None when no request carried reasons."""
    if MISS_PAGES[0] not in t:
        return None
    return {MISS_NAMES[r]: {"pages": int(t[p]), "tokens": int(t[k]), "share": float(t.get(s, 0.0))}
            for r, p, k, s in zip(REASONS, MISS_PAGES, MISS_TOKENS, MISS_SHARES)}


class SeriesRing:
    """The last ``n`` points of one series, stored as C doubles in a fixed ``array('d')``.

    Not a deque of Python floats: those floats live as long as the series keeps them (300 points, 25 min
    when a soak samples every 5 s), scattered among short-lived objects in pymalloc's pools, which they keep
    from being freed; the ring's doubles are one allocation. :meth:`values` makes short-lived floats."""

    def __init__(self, n: int) -> None:
        self._buf = array("d", bytes(8 * n))
        self._n, self._next, self._len = n, 0, 0

    def append(self, value: float) -> None:
        """Add the newest point (the oldest goes once ``n`` are held)."""
        self._buf[self._next] = value
        self._next = (self._next + 1) % self._n
        self._len = min(self._len + 1, self._n)

    def values(self) -> tuple[float, ...]:
        """The points held, oldest first."""
        if self._len < self._n:
            return tuple(self._buf[: self._len])
        return tuple(self._buf[self._next:]) + tuple(self._buf[: self._next])

    def __len__(self) -> int:
        return self._len


class Aggregator:
    """Accumulates :class:`RequestResult` s and :class:`EngineEvent` s.

    ``rows``: page-grid rows kept (newest); ``history``: ticks of rate history kept; ``window_s``: length
    of the "last N seconds" latency window (tumbling sub-windows of ``window_s/6``); ``events_kept``: size
    of the event log. All buffers are bounded, so memory stays flat over a long run.

    The reload histogram records only reloads that loaded at least one page; the others are counted as
    ``reloads_probe_only`` (the probe found no leading page, so no read was issued) or ``reloads_unusable``
    (a read was issued but its first page was not usable). :meth:`begin_span` starts a span (a recording):
    from then on frames carry the totals at its start (``Frame.span``) and its own latencies.

    ``estimator``: a :class:`~kvtui.metrics.ttft.TtftEstimator`; with one, frames carry ``ttft``, the TTFT and
    prefill GPU time saved (:mod:`kvtui.metrics.ttft_saved`; its window is ``window_s`` too).

    ``tiered``: the store has a disk tier (or a result says a page came from one): totals carry each tier's share
    (:data:`TIER_COUNTERS`, :data:`TIER_BUSY` and :data:`TIER_DERIVED`), latencies each tier's part of the reload
    (:data:`TIER_KINDS`, :mod:`kvtui.metrics.tiers`), the summary a ``tiers`` object.

    ``replicated``: the store replicates hot keys (or a result says a hit had two memory replicas): totals and the
    summary carry :data:`HOT_COUNTERS` (:data:`kvtui.metrics.figures.HOT_PAGES_HIT`).
    """

    def __init__(self, rows: int = 64, history: int = 300, window_s: float = fig.LATENCY_WINDOW_S,
                 events_kept: int = 200, clock: Callable[[], float] = time.monotonic,
                 estimator: TtftEstimator | None = None, tiered: bool = False, replicated: bool = False) -> None:
        self._lock = threading.Lock()
        self._kinds: tuple[str, ...] = LATENCIES  # the latency histograms kept (+ TIER_KINDS on a tiered store)
        self._clock = clock
        self.t0 = clock()
        self._rows: deque[PageRow] = deque(maxlen=rows)
        self._events: deque[EngineEvent] = deque(maxlen=events_kept)
        self._series = {k: SeriesRing(history) for k in SERIES}
        self._lat = {k: LatencyRecorder() for k in LATENCIES}
        self.window_s = window_s
        self._sub_s = window_s / 6
        self._win: deque[tuple[float, dict[str, LatencyRecorder]]] = deque(maxlen=6)
        self._win_counts: deque[Counter[str]] = deque(maxlen=6)  # WINDOW_COUNTERS of each sub-window of _win
        self._window_totals: dict[str, float] = {}
        self._window = {k: LatencyRecorder() for k in LATENCIES}
        self._lat_key: tuple[int, tuple[float, ...]] | None = None  # (rows seen, live sub-windows) of the snapshots
        self._lat_snaps: tuple[Snapshots, Snapshots, Snapshots] = ({}, {}, {})
        self._c: Counter[str] = Counter()  # integer counters (COUNTERS, IDEAL)
        self._busy_ms = dict.fromkeys(BUSY_MS, 0.0)
        self._aiperf_sum = 0.0  # the float half of AIPERF (its count is the counter aiperf_requests)
        self._codes: Counter[str] = Counter()
        self._workers = WorkerTally()  # per-worker counts (kvtui.metrics.workers)
        self._span: SpanStart = {}  # {"t", "totals", "errors"} at the start of the span; {} when none
        self._span_lat: dict[str, LatencyRecorder] = {}
        self._row_seq = self._event_seq = self._series_seq = 0
        self.rate_window_s = fig.RATE_WINDOW_S
        self.series_interval_s = fig.SERIES_INTERVAL_S
        self._ticks: deque[tuple[float, dict[str, float]]] = deque()
        self._series_t = 0.0
        self._series_snap: tuple[float, dict[str, float]] = (self.t0, {})
        self._ttft = TtftTracker(estimator, window_s=window_s) if estimator is not None else None
        self._tiered = False
        self._replicated = replicated  # totals carry HOT_COUNTERS (set under the lock once a result has one)
        if tiered:
            self._enable_tiers()

    def _enable_tiers(self) -> None:
        """Count each tier from now on (the disk tier's counters and latency histograms; under the lock)."""
        self._tiered = True
        self._kinds = LATENCIES + TIER_KINDS
        self._busy_ms.update({k: self._busy_ms.get(k, 0.0) for k in TIER_BUSY})
        for recs in (self._lat, self._window, self._span_lat, *(r for _, r in self._win)):
            if recs is self._span_lat and not recs:
                continue
            for k in TIER_KINDS:
                recs.setdefault(k, LatencyRecorder())
        if self._ttft is not None:
            self._ttft.tiered = True

    # -- input ------------------------------------------------------------------------------------------
    def add(self, r: RequestResult) -> None:
        """Count one request's outcome."""
        with self._lock:
            c = self._c
            before = {k: c[k] for k in WINDOW_COUNTERS}
            c["requests"] += 1
            self._workers.add(r)
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
            self._busy_ms["read_ms_total"] += r.read_ms
            self._busy_ms["put_ms_total"] += r.put_ms
            if r.pages_hit_disk and not self._tiered:
                self._enable_tiers()
            if self._tiered:
                pages, tokens, nbytes = TIER_COUNTERS
                c[pages] += r.pages_hit_disk
                c[tokens] += r.pages_hit_disk * r.page_tokens
                c[nbytes] += r.pages_hit_disk * r.page_bytes
                self._busy_ms[TIER_BUSY[0]] += r.disk_read_ms
            if r.pages_replicated:
                self._replicated = True
            if self._replicated:
                c[HOT_COUNTERS[0]] += r.pages_replicated
            if not r.pages_hit:  # no page loaded: no reload latency (it would be a probe's or a failed read's)
                c[fig.PROBE_ONLY.key if r.read_ms <= 0 else fig.UNUSABLE.key] += 1
            if r.reasons:
                for page_key, token_key, reason in zip(MISS_PAGES, MISS_TOKENS, REASONS):
                    n = r.reasons.count(reason)
                    c[page_key] += n
                    c[token_key] += n * r.page_tokens
                c[MISS_FORGOTTEN] += r.keys_forgotten
            ideal = _ideal_tokens(r.labels)
            if ideal is not None:
                c["ideal_tokens_hit"] += ideal
                c["ideal_pages_hit"] += ideal // r.page_tokens if r.page_tokens else 0
            share = _aiperf_share(r.labels)
            if share is not None:
                self._aiperf_sum += share
                c["aiperf_requests"] += 1
            for code, n in r.codes.items():
                self._codes[code_name(code)] += n
            now = self._clock()
            self._rows.append(PageRow(
                r.req_id, r.scenario, r.n_tokens, r.pages_hit, r.states, group=prefix_group(r.scenario, r.labels),
                page_tokens=r.page_tokens, page_bytes=r.page_bytes, bytes_loaded=r.bytes_loaded,
                bytes_written=r.bytes_written, reload_ms=r.reload_ms, publish_ms=r.publish_ms, t=now - self.t0,
                keys=tuple(r.keys), codes=tuple((code_name(k), n) for k, n in r.codes.items()),
                ideal_pages=ideal // r.page_tokens if ideal is not None and r.page_tokens else -1,
                misses=tuple((k, n) for k, n in r.miss_counts().items() if n), reasons=bytes(r.reasons),
                disk_read_ms=r.disk_read_ms, pages_replicated=r.pages_replicated))
            self._row_seq += 1
            if self._ttft is not None:
                self._ttft.add(r, now)
            if not self._win or now - self._win[-1][0] >= self._sub_s:
                # the oldest sub-window's recorders are reset and reused: a dropped HdrHistogram is a reference
                # cycle (histogram ↔ its encoder) that only a rare full collection frees, so new ones every
                # sub-window would make kvtui's RSS grow between collections
                recs = self._win.popleft()[1] if len(self._win) == self._win.maxlen else None
                for rec in (recs or {}).values():
                    rec.reset()
                self._win.append((now, recs or {k: LatencyRecorder() for k in self._kinds}))
                self._win_counts.append(Counter())
            win = self._win[-1][1]
            counts = self._win_counts[-1]
            for k in WINDOW_COUNTERS:
                if k in c:  # (the ideal counters only once a trace row had its label)
                    counts[k] += c[k] - before[k]
            values = {fig.RELOAD_LATENCY.key: r.reload_ms if r.pages_hit else None,
                      fig.PUBLISH_LATENCY.key: r.publish_ms if r.pages_published else None,
                      fig.PROBE_LATENCY.key: r.probe_ms}
            if self._tiered:
                for tier, ms in reload_by_tier(r).items():
                    values[fig.TIER_LATENCY_KEYS[tier]] = ms
            for k, v in values.items():
                if v is not None:
                    self._lat[k].record(v)
                    win[k].record(v)
                    if self._span_lat:
                        self._span_lat[k].record(v)

    def event(self, e: EngineEvent) -> None:
        """Append to the bounded event log."""
        with self._lock:
            self._events.append(e)
            self._event_seq += 1

    @property
    def estimator(self) -> TtftEstimator | None:
        """The :class:`~kvtui.metrics.ttft.TtftEstimator` of ``Frame.ttft`` (None: frames carry none)."""
        return self._ttft.estimator if self._ttft is not None else None

    def set_estimator(self, estimator: TtftEstimator) -> None:
        """Estimate the requests from now on with ``estimator`` (a page layout switch changes the model);
        the figures so far stay. No-op for an aggregator created without one."""
        with self._lock:
            if self._ttft is not None:
                self._ttft.estimator = estimator

    def now(self) -> float:
        """Seconds since the aggregator was created."""
        return self._clock() - self.t0

    def begin_span(self) -> None:
        """Start a span (a recording begins): frames from now on carry ``span`` = ``{"t", "totals",
        "errors"}`` as they are at this moment and ``latency_span``, the latencies recorded since (see
        :func:`span_summary`). A second call starts a new span."""
        with self._lock:
            self._span = {"t": self._clock() - self.t0, "totals": self._totals_locked(), "errors": dict(self._codes)}
            self._span_lat = {k: LatencyRecorder() for k in self._kinds}
            self._lat_key = None
            if self._ttft is not None:
                self._ttft.begin_span()

    # -- output -----------------------------------------------------------------------------------------
    def totals(self) -> dict[str, float]:
        """Cumulative counters: :data:`COUNTERS` (ints), :data:`BUSY_MS` (ms, floats) and the derived
        ``page_hit_rate`` and ``token_hit_rate`` (0..1)."""
        with self._lock:
            return self._totals_locked()

    def errors(self) -> dict[str, int]:
        """Error codes counted so far, by value (what ``Frame.errors`` holds), without building a frame."""
        with self._lock:
            return dict(self._codes)

    def _totals_locked(self) -> dict[str, float]:
        c = self._c
        t: dict[str, float] = {k: int(c[k]) for k in COUNTERS}
        t.update({k: float(self._busy_ms[k]) for k in BUSY_MS})
        if "ideal_tokens_hit" in c:
            t.update({k: int(c[k]) for k in IDEAL})
        if "aiperf_requests" in c:
            t.update(aiperf_share_sum=self._aiperf_sum, aiperf_requests=int(c["aiperf_requests"]))
        if MISS_PAGES[0] in c:
            t.update({k: int(c[k]) for k in MISS_COUNTERS})
        if self._replicated:
            t.update({k: int(c[k]) for k in HOT_COUNTERS})
        if self._tiered:
            t.update({k: int(c[k]) for k in TIER_COUNTERS})
            t.update({k: float(self._busy_ms[k]) for k in TIER_BUSY})
        return derive(t)

    def frame(self, **panels: Any) -> Frame:
        """Return a new :class:`Frame`. Rates are per second over the last ``rate_window_s`` (2 s); the
        series get one value per ``series_interval_s`` (1 s), so sparklines span the last minutes (the
        figures of :data:`kvtui.metrics.figures.WALL`).

        ``panels``: ``store``, ``procs``, ``workload``, ``status`` dicts from the samplers (keys:
        :mod:`kvtui.metrics.frame`); ``status["window_s"]`` is set to this aggregator's latency window.
        """
        panels["status"] = {"window_s": self.window_s, **panels.get("status", {})}
        with self._lock:
            now = self._clock()
            c = self._c
            snap: tuple[float, dict[str, float]] = (now, {k: c[k] for k in _RATE_KEYS})
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
            if key != self._lat_key:  # new results or a sub-window expired: recompute the snapshots
                window = self._window  # reused: a fresh HdrHistogram per frame is garbage (and a cycle) every frame
                for rec in window.values():
                    rec.reset()
                for t_sub, recs in self._win:
                    if now - t_sub <= self.window_s:
                        for k in self._kinds:
                            window[k].merge(recs[k])
                wt: Counter[str] = Counter()
                for (t_sub, _), counts in zip(self._win, self._win_counts):
                    if now - t_sub <= self.window_s:
                        wt.update(counts)
                self._window_totals = derive({k: int(wt[k]) for k in WINDOW_COUNTERS
                                              if k in wt or k not in IDEAL + TIER_COUNTERS})
                self._lat_key = key
                self._lat_snaps = ({k: r.snapshot() for k, r in self._lat.items()},
                                   {k: r.snapshot() for k, r in window.items()},
                                   {k: r.snapshot() for k, r in self._span_lat.items()})
            return Frame(
                t=now - self.t0, totals=self._totals_locked(), rates=rates,
                series={k: v.values() for k, v in self._series.items()},
                latency=self._lat_snaps[0], latency_window=self._lat_snaps[1],
                rows=tuple(self._rows), errors=dict(self._codes), events=tuple(self._events),
                row_seq=self._row_seq, event_seq=self._event_seq, series_seq=self._series_seq,
                span=self._span, latency_span=self._lat_snaps[2], window_totals=self._window_totals,
                ttft=self._ttft.panel(now) if self._ttft is not None else TtftPanel(), workers=self._workers.rows(),
                **panels)

    def describe_worker(self, role: str, index: int, **info: Any) -> None:
        """Facts a worker's row in ``Frame.workers`` carries (:meth:`WorkerTally.describe`)."""
        with self._lock:
            self._workers.describe(role, index, **info)

    def set_worker_counts(self, prefill: int, decode: int, local_segments: bool = False) -> None:
        """The run's number of prefill and decode workers (idle ones get a row in ``Frame.workers``), and
        whether the decode workers own segments (``--segment-on decode``: their local share is defined)."""
        with self._lock:
            self._workers.set_counts(prefill, decode)
            self._workers.local_segments = bool(local_segments)

    def summary(self) -> RunSummary:
        """The run summary now (see :func:`summary_from_frame`)."""
        return summary_from_frame(self.frame())


def summary_from_frame(frame: Frame) -> RunSummary:
    """The run summary (``kvtui run --json``, :class:`~kvtui.metrics.summary.RunSummary`) of a frame: totals,
    ``errors`` by code name, whole-session latency percentiles (ms) for reload/publish/probe, and the
    ``throughput`` figures of :data:`kvtui.metrics.figures.RUN` over ``frame.t`` (``elapsed_s``), and the TTFT
    estimates (:func:`kvtui.metrics.ttft_saved.summary_fields`: ``ttft_saved_ms``, ``prefill_gpu_s_saved``,
    ``reload_vs_recompute``, …), and ``workers``: the per-worker figures (:mod:`kvtui.metrics.workers`), each
    with its process's ``pid`` and emulated ``host`` address (None without hosts) from ``frame.procs``."""
    procs = {p.get("name"): p for p in frame.procs}
    workers: list[WorkerRow] = [{**w, "pid": procs.get(w["name"], {}).get("pid", w.get("pid")),
                "host": procs.get(w["name"], {}).get("host", w.get("host"))} for w in frame.workers]
    s = _summary(frame.totals, frame.errors, frame.latency, frame.t, summary_fields(frame.ttft))
    s["workers"] = workers
    _add_tier_ttft(s, frame.ttft, "session")
    return s


def _add_tier_ttft(s: RunSummary, panel: TtftPanel, which: Literal["session", "span"]) -> None:
    """Each tier's TTFT fields (:func:`kvtui.metrics.ttft_saved.tier_fields`) into the summary's ``tiers``."""
    tiers = s.get("tiers")
    if tiers:
        for tier, fields in tier_fields(panel, which).items():
            tiers[tier].update(fields)


def span_summary(final: Frame, first: Frame) -> RunSummary:
    """The summary of a recorded span (``kvtui report``): what happened between the start of the span and
    ``final``, with the same fields as :func:`summary_from_frame` (no ``workers``) and ``span``. Counters and
    ``errors`` are ``final``'s minus those at the start of the span (``final.span``, written by
    :meth:`Aggregator.begin_span`), latencies are the span's own and ``elapsed_s`` runs from the span's start.

    A recording made before frames carried a span falls back to the first recorded frame ``first`` as the
    start, and to whole-session latencies (``latency_covers`` says ``"session"``; else ``"span"``)."""
    base: SpanStart = final.span or {"t": first.t, "totals": first.totals, "errors": first.errors}
    latency = final.latency_span or final.latency
    b, e = base.get("totals", {}), base.get("errors", {})
    totals = {k: v - b.get(k, 0) for k, v in final.totals.items()
              if k in COUNTERS or k in BUSY_MS or k in IDEAL or k in MISS_COUNTERS or k in TIER_COUNTERS + TIER_BUSY
              or k in HOT_COUNTERS}
    errors = {k: v - e.get(k, 0) for k, v in final.errors.items() if v - e.get(k, 0)}
    which: Literal["session", "span"] = "span" if (final.ttft or {}).get("span") else "session"
    s = _summary(derive(totals), errors, latency, final.t - float(base.get("t", 0.0)),
                 summary_fields(final.ttft, which))
    _add_tier_ttft(s, final.ttft, which)
    s["span"] = {"from_s": float(base.get("t", 0.0)), "to_s": final.t,
                 "latency_covers": "span" if final.latency_span else "session"}
    return s


def tier_summary(totals: dict[str, float], latency: Snapshots) -> dict[str, dict[str, Any]]:
    """The summary's ``tiers``: per tier (``memory``, ``disk``) its figures of :data:`kvtui.metrics.figures.TIER`
    that totals and latencies hold (``totals`` after :func:`derive`; the TTFT ones come from the TTFT panel)."""
    out: dict[str, dict[str, Any]] = {}
    for tier in TIERS:
        d: dict[str, Any] = {}
        for f in fig.TIER:
            if f.key in fig.TIER_TOTALS:
                d[fig.tier_field(f)] = totals.get(tier_key(f.key, tier), 0)
            elif f is fig.TIER_RELOAD:
                d[fig.tier_field(f)] = latency.get(fig.TIER_LATENCY_KEYS[tier], EMPTY).as_dict()
        out[tier] = d
    return out


def _summary(totals: dict[str, float], errors: Mapping[str, int], latency: Snapshots, elapsed: float,
             ttft: TtftFields) -> RunSummary:
    """The summary fields: ``totals`` (the miss counters gathered in ``misses``: :func:`miss_summary`) and
    ``elapsed_s``; ``errors`` sorted by name; ``reload_ms`` … ``probe_ms``
    (:meth:`~kvtui.metrics.latency.LatencySnapshot.as_dict`); ``throughput``: the figures of
    :data:`kvtui.metrics.figures.RUN` (MB/s = 10^6 B/s over the busy time, per-second rates over
    ``elapsed`` seconds); then the TTFT fields ``ttft``; ``tiers`` (:func:`tier_summary`) on a tiered store."""
    # the totals' keys are COUNTERS, BUSY_MS, IDEAL, AIPERF, HOT_COUNTERS and derive()'s, named once more by RunTotals
    # (tests/unit/test_metrics.py checks that the two agree); the tier counters go to ``tiers``
    t = cast("RunSummary", {k: v for k, v in totals.items() if k not in MISS_COUNTERS and k not in MISS_SHARES
                            and k not in TIER_COUNTERS + TIER_BUSY + TIER_DERIVED})
    t["misses"] = miss_summary(totals)
    if TIER_COUNTERS[0] in totals:
        t["tiers"] = tier_summary(totals, latency)
    if totals.get(MISS_FORGOTTEN):  # (the reasons are approximate: see kvtui.core.misses)
        t["misses_keys_forgotten"] = int(totals[MISS_FORGOTTEN])
    per_s = (lambda v: v / elapsed) if elapsed > 0 else (lambda v: 0.0)
    t["elapsed_s"] = elapsed
    t["errors"] = dict(sorted(errors.items()))
    t["reload_ms"] = latency.get(fig.RELOAD_LATENCY.key, EMPTY).as_dict()  # (the fields of fig.LATENCY)
    t["publish_ms"] = latency.get(fig.PUBLISH_LATENCY.key, EMPTY).as_dict()
    t["probe_ms"] = latency.get(fig.PROBE_LATENCY.key, EMPTY).as_dict()
    t["throughput"] = {  # (the keys of fig.RUN)
        "reuse_read_MBps": _mbps(t.get("bytes_loaded", 0), t.get("read_ms_total", 0.0) / 1e3),
        "publish_write_MBps": _mbps(t.get("bytes_written", 0), t.get("put_ms_total", 0.0) / 1e3),
        "requests_per_s": per_s(t.get("requests", 0)),
        "tokens_skipped_per_s": per_s(t.get("tokens_hit", 0)),
    }
    t["ttft_saved_ms"] = ttft["ttft_saved_ms"]
    t["prefill_gpu_s_saved"] = ttft["prefill_gpu_s_saved"]
    t["reload_vs_recompute"] = ttft["reload_vs_recompute"]
    t["reloads_slower_than_recompute"] = ttft["reloads_slower_than_recompute"]
    t["ttft_estimate"] = ttft["ttft_estimate"]
    return t
