"""Long runs and signals: flat memory over thousands of requests; SIGTERM tears down cleanly."""

from __future__ import annotations

import gc
import signal
import sqlite3
import subprocess
import sys
import tracemalloc
import uuid
from contextlib import closing

import psutil
import pytest
from waits import wait_for

from kvtui.core.layout import PageLayout
from kvtui.engine.driver import Driver
from kvtui.engine.engine import Engine, EngineOptions
from kvtui.metrics.aggregate import Aggregator
from workload import SyntheticWorkload, WorkloadSpec

pytestmark = pytest.mark.integration


def _ours(snapshot):
    """Allocations made outside pytest's own machinery (captured output, reports, ...)."""
    return snapshot.filter_traces([tracemalloc.Filter(False, "*_pytest*"), tracemalloc.Filter(False, "*pluggy*"),
                                   tracemalloc.Filter(False, tracemalloc.__file__)])


def _size(snapshot) -> int:
    return sum(s.size for s in snapshot.statistics("filename"))


def test_memory_stays_flat_over_thousands_of_requests(cluster, monkeypatch):
    layout = PageLayout(1, 1, 8, 8, 1)  # 128-byte pages: thousands of requests in seconds
    # the miss reasons' key history is bounded too: at 2,000 keys here (full before the first snapshot: every
    # request has 2 pages of its own), at kvtui.core.misses.MAX_KEYS in a run
    monkeypatch.setattr("kvtui.core.misses.MAX_KEYS", 2_000)
    engine = Engine(EngineOptions(layout=layout, model=f"mem-{uuid.uuid4().hex[:6]}"), endpoints=cluster.endpoints)
    engine.start()
    # every bounded buffer is full after a few seconds: rate series (5 points, one a second) and the latency
    # window (6 sub-windows of 0.5 s, each 3 HdrHistograms); growth after that would be a leak
    agg = Aggregator(history=5, window_s=3.0)
    me = psutil.Process()
    try:
        wl = SyntheticWorkload(WorkloadSpec(scenario="shared-system-prompt", pool=16, prompt_tokens=64, page_tokens=8))
        frames = []
        d = Driver(engine, wl, agg.add, max_requests=6000)
        d.start()
        rss, traced = {}, {}
        tracemalloc.start()
        try:
            while not d.done.wait(0.05):
                frames.append(agg.frame())  # a UI pulling frames the whole time
                frames = frames[-5:]
                n = agg.totals()["requests"]
                full = all(len(v) == 5 for v in frames[-1].series.values()) and len(agg._win) == agg._win.maxlen
                if n >= 1500 and full and "early" not in rss:
                    gc.collect()
                    rss["early"], traced["early"] = me.memory_info().rss, _ours(tracemalloc.take_snapshot())
            gc.collect()
            rss["late"], traced["late"] = me.memory_info().rss, _ours(tracemalloc.take_snapshot())
        finally:
            tracemalloc.stop()
        assert agg.totals()["requests"] == 6000
        f = agg.frame()
        assert len(f.rows) <= 64 and len(f.events) <= 200 and all(len(v) <= 300 for v in f.series.values())
        # bounded buffers: Python objects kept do not grow with the request count (4,500 more requests
        # retaining even 200 bytes each would be 900 kB), and RSS stays within allocator noise
        grown = _size(traced["late"]) - _size(traced["early"])
        top = traced["late"].compare_to(traced["early"], "lineno")[:8]
        assert grown < 512 << 10, "\n".join(map(str, top))
        assert rss["late"] - rss["early"] < 24 << 20, rss
    finally:
        engine.stop()


def _frames(path) -> int:
    """Frames recorded so far in a session file being written (0 until it can be read)."""
    try:
        with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:  # closed at once: an open reader
            return int(db.execute("SELECT count(*) FROM frames").fetchone()[0])  # would keep the writer from closing
    except sqlite3.Error:
        return 0


def test_sigterm_stops_run_cleanly_and_keeps_the_session(tmp_path):
    rec = tmp_path / "t.kvtui"
    proc = subprocess.Popen([sys.executable, "-m", "kvtui.cli", "run", "--duration", "60", "--layout", "tiny",
                             "--store-size", "32MiB", "--quiet", "--record", str(rec)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    parent = psutil.Process(proc.pid)

    def running() -> list[psutil.Process] | None:  # the cluster and workers up, and more than 5 frames recorded
        assert proc.poll() is None, f"kvtui run exited ({proc.returncode}) first"
        kids = parent.children(recursive=True)
        return kids if len(kids) >= 5 and _frames(rec) > 5 else None

    kids = wait_for(running, 30, "kvtui run's processes and 6 recorded frames")
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=15)  # (TimeoutExpired: the SIGTERM did not end the run)
    assert "Traceback" not in err
    gone, alive = psutil.wait_procs(kids, timeout=10)
    assert alive == []
    from kvtui.session.reader import SessionReader

    r = SessionReader(rec)
    assert not r.damaged and len(r) > 5
