"""The keys of a frame's panels are defined once (kvtui.metrics.frame): producers write only those keys, and
the latency window the monitor labels is written by the aggregator that computes it."""

from __future__ import annotations

from kvtui.core.panels import FrameStatus, ProcRow, StoreScrape, WorkloadPanel
from kvtui.metrics.aggregate import Aggregator


def test_aggregator_writes_its_latency_window_into_the_status():
    agg = Aggregator(window_s=12.0)
    assert agg.frame().status["window_s"] == 12.0
    frame = agg.frame(status={"mode": "live", "paused": True})
    assert frame.status == {"window_s": 12.0, "mode": "live", "paused": True}


def test_demo_frames_use_only_the_declared_panel_keys():
    from kvtui.testing.demo import DemoSource

    src = DemoSource()
    for _ in range(30):
        frame = src.frame()
    assert frame.totals["requests"] > 0
    assert set(frame.status) <= set(FrameStatus.__annotations__), set(frame.status) - set(FrameStatus.__annotations__)
    assert set(frame.workload) <= set(WorkloadPanel.__annotations__)
    assert set(frame.store) <= set(StoreScrape.__annotations__)
    for row in frame.procs:
        assert set(row) <= set(ProcRow.__annotations__)


def test_samplers_fill_only_the_declared_panel_keys():
    import os

    from kvtui.mooncake.samplers import STORE_COUNTERS, STORE_GAUGES
    from kvtui.runtime.processes import ProcessSampler

    assert set(STORE_GAUGES.values()) | set(STORE_COUNTERS.values()) | {"up"} <= set(StoreScrape.__annotations__)
    rows = ProcessSampler({"self": os.getpid()}).sample()
    assert rows and all(set(r) <= set(ProcRow.__annotations__) for r in rows)
    assert {r["name"] for r in rows} >= {"kvtui"}
