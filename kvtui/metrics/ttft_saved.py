"""TTFT and prefill GPU time saved, accumulated per request: what the aggregator puts in ``Frame.ttft``
(:class:`~kvtui.core.panels.TtftPanel`) and the run summary's TTFT fields.

For each request that reloaded at least one page (``k = tokens_hit`` tokens), with the recompute time
``c = estimator.recompute_ms(k)`` (:mod:`kvtui.metrics.ttft`, an estimate) and the measured reload time
``r = reload_ms`` (probe + read): TTFT saved ``c − r`` (negative when the reload is slower than recomputing),
prefill GPU time saved ``c``, and the request counts as *slower* when ``r > c``. The probe of a request that
found nothing is not charged (a real engine probes too). Sums are exact; the session's and the span's
p50/p99 come from two HdrHistograms (values ≥ 0 and the magnitudes of values < 0, 3 significant digits), the
window's from the last ``window_kept`` requests of the last ``window_s`` seconds, exactly. Percentiles are
rank percentiles: the smallest value with at least p % of the values at or below it.

On a store with a disk tier each figure is also kept per tier (``tiers``): a tier's ``k`` is the tokens of the
pages reloaded from it, its ``c`` their share of the recompute estimate (by their positions in the prompt) and
its ``r`` the reload's time in it (:mod:`kvtui.metrics.tiers`); a request counts in each tier it reloaded a page
from, and the tiers' sums add up to the whole's.
"""

from __future__ import annotations

import math
from collections import deque
from typing import TYPE_CHECKING, Literal

import numpy as np

from kvtui.core.pages import TIERS
from kvtui.core.panels import TtftPanel, TtftStats
from kvtui.metrics import figures as fig
from kvtui.metrics.latency import LatencyRecorder
from kvtui.metrics.summary import TtftFields, TtftInputs, TtftNumbers
from kvtui.metrics.tiers import pages_by_tier, recompute_by_tier, reload_by_tier
from kvtui.metrics.ttft import NO_MODEL, TtftEstimator

if TYPE_CHECKING:
    from kvtui.core.events import RequestResult


class SignedRecorder:
    """Signed millisecond values (TTFT saved can be negative): ≥ 0 in one HdrHistogram, the magnitude of
    < 0 in another (each clamped to 1 µs .. 1 h by :class:`~kvtui.metrics.latency.LatencyRecorder`)."""

    def __init__(self) -> None:
        self.pos, self.neg = LatencyRecorder(), LatencyRecorder()

    def record(self, ms: float) -> None:
        """Record one value (ms)."""
        (self.pos if ms >= 0 else self.neg).record(abs(ms))

    @property
    def count(self) -> int:
        """Values recorded."""
        return self.pos.count + self.neg.count

    def percentile(self, p: float) -> float:
        """The rank-``ceil(p/100·n)`` value (ms; 0.0 when empty), within 3 significant digits."""
        n_neg, n = self.neg.count, self.count
        if n == 0:
            return 0.0
        rank = max(1, math.ceil(p / 100.0 * n))
        if rank <= n_neg:  # the rank-th smallest signed value is the (n_neg − rank + 1)-th smallest magnitude
            return -_at_rank(self.neg, n_neg - rank + 1)
        return _at_rank(self.pos, rank - n_neg)


def _at_rank(rec: LatencyRecorder, rank: int) -> float:
    """The ``rank``-th smallest value (1-based) of ``rec`` in ms: the highest value of its HdrHistogram bucket."""
    h = rec.hist
    counts = np.ctypeslib.as_array(h.counts)
    idx = np.nonzero(counts)[0]
    i = int(idx[int(np.searchsorted(np.cumsum(counts[idx]), rank))])
    return float(h.get_highest_equivalent_value(h.get_value_from_index(i))) / 1000.0


class _Totals:
    """One span of requests: counts, exact sums and a :class:`SignedRecorder` of TTFT saved; ``tiers``: the same
    per tier (made by the first :meth:`add_tier`)."""

    def __init__(self) -> None:
        self.count = self.tokens = self.slower = 0
        self.saved_ms = self.reload_ms = self.recompute_ms = 0.0
        self.rec = SignedRecorder()
        self.tiers: dict[str, _Totals] | None = None

    def add_tier(self, tier: str, k: int, reload: float, recompute: float) -> None:
        """Count one request's part in ``tier``."""
        if self.tiers is None:
            self.tiers = {t: _Totals() for t in TIERS}
        self.tiers[tier].add(k, recompute - reload, reload, recompute)

    def add(self, k: int, saved: float, reload: float, recompute: float) -> None:
        self.count += 1
        self.tokens += k
        self.saved_ms += saved
        self.reload_ms += reload
        self.recompute_ms += recompute
        self.slower += reload > recompute
        self.rec.record(saved)

    def stats(self) -> TtftStats:
        out = _stats(self.count, self.tokens, self.saved_ms, self.rec.percentile(50), self.rec.percentile(99),
                     self.reload_ms, self.recompute_ms, self.slower)
        if self.tiers is not None:
            out["tiers"] = {t: acc.stats() for t, acc in self.tiers.items()}
        return out


def _stats(count: float, tokens: float, saved: float, p50: float, p99: float, reload: float, recompute: float,
           slower: float) -> TtftStats:
    """A :class:`~kvtui.core.panels.TtftStats` dict (ms, s, ratio reload ÷ recompute, 0 when no recompute)."""
    return {"count": int(count), "tokens": int(tokens), "total_ms": float(saved), "p50_ms": float(p50),
            "p99_ms": float(p99), "reload_ms": float(reload), "gpu_s": float(recompute) / 1e3,
            "slower": int(slower), "ratio": float(reload) / recompute if recompute > 0 else 0.0}


def _window_of(k: np.ndarray, saved: np.ndarray, reload: np.ndarray, recompute: np.ndarray) -> TtftStats:
    """The :class:`~kvtui.core.panels.TtftStats` of the requests of one window (arrays of their figures)."""
    n = len(saved)
    if not n:
        return _stats(0, 0, 0.0, 0.0, 0.0, 0.0, 0.0, 0)
    s = np.sort(saved)

    def pct(p: float) -> float:
        return float(s[max(1, math.ceil(p / 100.0 * n)) - 1])

    return _stats(n, k.sum(), saved.sum(), pct(50), pct(99), reload.sum(), recompute.sum(),
                  int((reload > recompute).sum()))


class TtftTracker:
    """Accumulates the TTFT figures of :class:`~kvtui.core.events.RequestResult` s under ``estimator``.
    Not thread-safe by itself: the :class:`~kvtui.metrics.aggregate.Aggregator` calls it under its lock.

    ``window_s``: the window of the live figures (the Latency panel's, 30 s); ``window_kept``: at most this
    many requests in it; ``rate_window_s``: the window of the GPU-seconds-saved-per-second rate (2 s);
    ``tiered``: the store has a disk tier, the figures are kept per tier too (the aggregator sets it)."""

    def __init__(self, estimator: TtftEstimator, window_s: float = fig.LATENCY_WINDOW_S, window_kept: int = 8192,
                 rate_window_s: float = fig.RATE_WINDOW_S) -> None:
        self.estimator = estimator
        self.window_s, self.rate_window_s = window_s, rate_window_s
        self._session = _Totals()
        self._span: _Totals | None = None
        # (t, k, saved, reload, recompute, then per tier of TIERS: k, reload, recompute; a tier without pages: 0, -1, 0)
        self._recent: deque[tuple[float, ...]] = deque(maxlen=window_kept)
        self.tiered = False
        self._gpu_ms = 0.0  # Σ recompute ms: the rate's counter
        self._ticks: deque[tuple[float, float]] = deque()
        self._seq = 0
        self._cache: tuple[int, TtftStats, TtftStats | None] | None = None
        self._window_cache: tuple[tuple[int, int], TtftStats] | None = None

    def add(self, r: RequestResult, now: float) -> None:
        """Count one request (nothing when it reloaded no page or the estimate is off); ``now`` in the
        aggregator's clock (s)."""
        est = self.estimator
        if not r.pages_hit or not est.active:
            return
        k = r.tokens_hit
        recompute, reload = est.recompute_ms(k), r.reload_ms
        saved = recompute - reload
        parts: list[float] = []
        if self.tiered:
            pages, rel, rec = pages_by_tier(r), reload_by_tier(r), recompute_by_tier(r, est)
            for tier in TIERS:
                parts += (pages[tier] * r.page_tokens, rel[tier], rec[tier]) if tier in rel else (0, -1.0, 0.0)
        for acc in (self._session, self._span):
            if acc is not None:
                acc.add(k, saved, reload, recompute)
                for i, tier in enumerate(TIERS):
                    if parts and parts[3 * i + 1] >= 0:
                        acc.add_tier(tier, int(parts[3 * i]), parts[3 * i + 1], parts[3 * i + 2])
        self._recent.append((now, k, saved, reload, recompute, *parts))
        self._gpu_ms += recompute
        self._seq += 1

    def begin_span(self) -> None:
        """Start a span (a recording began): ``span`` counts from now on."""
        self._span = _Totals()
        self._cache = None

    def _window(self, now: float) -> TtftStats:
        recent = self._recent
        while recent and now - recent[0][0] > self.window_s:
            recent.popleft()
        key = (self._seq, len(recent))
        if self._window_cache is None or self._window_cache[0] != key:
            self._window_cache = (key, self._window_stats())
        return self._window_cache[1]

    def _window_stats(self) -> TtftStats:
        if not self._recent:
            return _stats(0, 0, 0.0, 0.0, 0.0, 0.0, 0.0, 0)
        none = (0.0, -1.0, 0.0) * len(TIERS)  # (a request counted before the tracker knew of tiers)
        a = np.array([x[1:] if len(x) > 5 else x[1:] + none for x in self._recent], dtype=float)
        out = _window_of(a[:, 0], a[:, 1], a[:, 2], a[:, 3])  # k, saved, reload, recompute
        if self.tiered:
            out["tiers"] = {}
            for i, tier in enumerate(TIERS):
                k, reload, recompute = a[:, 4 + 3 * i], a[:, 5 + 3 * i], a[:, 6 + 3 * i]
                has = reload >= 0  # (the requests that reloaded a page from the tier, of those counted before it was)
                out["tiers"][tier] = _window_of(k[has], recompute[has] - reload[has], reload[has], recompute[has])
        return out

    def panel(self, now: float) -> TtftPanel:
        """The :class:`~kvtui.core.panels.TtftPanel` now (one call per frame: it also advances the rate)."""
        est = self.estimator
        self._ticks.append((now, self._gpu_ms))
        while len(self._ticks) > 2 and now - self._ticks[1][0] >= self.rate_window_s:
            self._ticks.popleft()
        (t0, g0), (t1, g1) = self._ticks[0], self._ticks[-1]
        out: TtftPanel = {"basis": est.basis, "short": est.short, "window_s": self.window_s,
                     "gpu_s_per_s": (g1 - g0) / 1e3 / (t1 - t0) if t1 > t0 else 0.0}
        if not est.active:
            out["off"] = est.off or NO_MODEL
        if self._cache is None or self._cache[0] != self._seq:
            self._cache = (self._seq, self._session.stats(), self._span.stats() if self._span else None)
        out["session"] = self._cache[1]
        if self._cache[2] is not None:
            out["span"] = self._cache[2]
        out["window"] = self._window(now)
        return out


_NONE: TtftNumbers = {"ttft_saved_ms": None, "prefill_gpu_s_saved": None, "reload_vs_recompute": None,
         "reloads_slower_than_recompute": None}


def _fields(s: TtftStats) -> TtftNumbers:
    """The summary's four TTFT figures of stats ``s`` (see :func:`summary_fields`)."""
    return {"ttft_saved_ms": {"total": s.get("total_ms", 0.0), "p50": s.get("p50_ms", 0.0), "p99": s.get("p99_ms", 0.0),
                              "count": s.get("count", 0)},
            "prefill_gpu_s_saved": s.get("gpu_s", 0.0),
            "reload_vs_recompute": s.get("ratio") if s.get("count") else None,
            "reloads_slower_than_recompute": s.get("slower", 0)}


def _which(panel: TtftPanel, which: Literal["session", "span"]) -> TtftStats | None:
    """The panel's ``which`` stats (the session's when it has none); None when there is no estimate."""
    s = panel.get(which) or panel.get("session") or {}
    return None if not panel or (panel.get("off") and not s.get("count")) else s


def summary_fields(panel: TtftPanel, which: Literal["session", "span"] = "session") -> TtftFields:
    """The run summary's TTFT fields from a frame's ``ttft`` panel (its ``which`` stats, ``session`` or
    ``span``): ``ttft_saved_ms`` {total, p50, p99, count} (ms), ``prefill_gpu_s_saved`` (s),
    ``reload_vs_recompute`` (Σ reload ÷ Σ recompute), ``reloads_slower_than_recompute`` (requests) and
    ``ttft_estimate`` (``basis``, and ``off`` when there is no estimate). The figures are None when there
    is no estimate (a tiny or custom layout, or a frame without the panel: ``off`` says why)."""
    if not panel:
        return {**_NONE, "ttft_estimate": {"off": "no TTFT estimate in this run"}}
    est: TtftInputs = {"basis": panel.get("basis", "")}
    if panel.get("off"):
        est["off"] = panel["off"]
    s = _which(panel, which)
    return {**(_NONE if s is None else _fields(s)), "ttft_estimate": est}


def tier_fields(panel: TtftPanel, which: Literal["session", "span"] = "session") -> dict[str, TtftNumbers]:
    """Each tier's TTFT fields (:data:`kvtui.metrics.figures.TIER`: those of :func:`summary_fields` but
    ``ttft_estimate``, of the tier's part of each reload), by tier; None figures without an estimate."""
    s = _which(panel, which)
    tiers = (s or {}).get("tiers") or {}
    return {t: _fields(tiers[t]) if s is not None and t in tiers else _NONE.copy() for t in TIERS}
