"""The aggregator's latency window reuses its sub-windows' HdrHistograms instead of making new ones: a dropped
``hdrh`` HdrHistogram is a reference cycle (histogram ↔ encoder) freed only by a full collection, and new
ones every sub-window grew kvtui's RSS by ~6 MiB a minute (found by ``kvtui soak``)."""

from __future__ import annotations

import kvtui.metrics.aggregate as aggregate
from kvtui.core.events import RequestResult


def _result(i: int, reload_ms: float) -> RequestResult:
    return RequestResult(req_id=i, scenario="s", n_tokens=64, cacheable_tokens=64, page_tokens=8, page_bytes=4096,
                         pages_total=8, pages_hit=6, states=bytes([1] * 8), probe_ms=0.0, read_ms=reload_ms)


def test_the_window_stops_making_histograms_once_full_and_still_forgets_old_values(monkeypatch):
    made = []

    class Counting(aggregate.LatencyRecorder):
        def __init__(self):
            super().__init__()
            made.append(self)

    monkeypatch.setattr(aggregate, "LatencyRecorder", Counting)
    now = [0.0]
    agg = aggregate.Aggregator(window_s=6.0, clock=lambda: now[0])  # six sub-windows of 1 s
    base = len(made)
    for i in range(40):  # 40 sub-windows: slow reloads first, fast ones in the last six
        now[0] = float(i)
        agg.add(_result(i, 100.0 if i < 34 else 1.0))
    per_window = len(aggregate.LATENCIES)
    assert len(made) - base == 6 * per_window  # made while the window filled, reused after
    f = agg.frame()
    assert f.latency_window["reload"].count == 6 and f.latency_window["reload"].max < 2  # the old are gone
    assert f.latency["reload"].count == 40
