"""The driver's controls with a fake engine (no store): pause holds issuing, knob changes apply while
paused, bounds stop the run, an RPC_FAIL holds dispatch until the master answers."""

from __future__ import annotations

import queue
import time

import numpy as np

from kvtui.core.layout import PageLayout
from kvtui.engine.driver import Driver
from kvtui.engine.engine import result_from
from workload import Request


class FakeEngine:
    """The engine interface the driver uses (begin_run / submit / next_result / hold / drain), answering at once."""

    def __init__(self):
        self.options = type("O", (), {"layout": PageLayout(1, 1, 1, 4, 1)})()
        self.codes: dict[int, int] = {}
        self.reachable = True
        self.submitted: queue.Queue = queue.Queue()
        self.limit = None
        self.drained = False
        self.holds: list[bool] = []

    def begin_run(self, n):
        self.limit = n

    def drain(self):
        self.drained = True

    def hold(self, held):
        self.holds.append(held)

    def submit(self, req):
        self.submitted.put(req)

    def next_result(self, timeout_s=None):
        try:
            req = self.submitted.get(timeout=timeout_s)
        except queue.Empty:
            return None
        reload = {"pages_hit": 0, "pages_total": 2, "bytes_loaded": 0, "verified": 0, "mismatches": 0,
                  "probe_ms": 0.1, "read_ms": 0.0, "verify_ms": 0.0, "stop_state": None, "codes": dict(self.codes)}
        publish = {"states": [1, 1], "stored": 2, "already_present": 0, "failed": 0, "bytes_written": 8,
                   "probe_ms": 0.1, "compute_ms": 0.0, "put_ms": 0.1, "codes": {}}
        return result_from(req, reload, publish, self.options.layout, 0.0, 0.0)

    def now(self):
        return time.monotonic()

    def master_reachable(self):
        return self.reachable


def requests():
    i = 0
    while True:
        yield Request(req_id=i, tokens=np.arange(8, dtype=np.uint32), arrival_s=None, cacheable_tokens=8,
                      scenario="t")
        i += 1


def test_bounds_and_pause_and_controls_while_paused():
    results, applied = [], []
    engine = FakeEngine()
    d = Driver(engine, requests(), results.append, max_requests=50).start()
    assert d.done.wait(5) and len(results) == 50 and d.issued == 50
    assert engine.limit == 1 and engine.drained  # the run began with its concurrency and ended with a drain

    d = Driver(FakeEngine(), requests(), results.append)
    d.pause()
    d.start()
    time.sleep(0.3)
    assert d.issued == 0 and d.paused
    d.control(lambda: applied.append("knob"))
    time.sleep(0.3)
    assert applied == ["knob"] and d.issued == 0  # applied while paused, nothing issued
    d.resume()
    time.sleep(0.2)
    assert d.issued > 0
    d.stop()
    assert d.done.wait(5)


def test_rpc_fail_holds_dispatch_until_master_answers():
    engine = FakeEngine()
    events = []
    d = Driver(engine, requests(), lambda r: None, events.append).start()
    time.sleep(0.1)
    engine.reachable = False
    engine.codes = {-900: 1}
    deadline = time.monotonic() + 3
    while not d.outage and time.monotonic() < deadline:
        time.sleep(0.02)
    assert d.outage
    time.sleep(0.2)
    held = d.issued
    time.sleep(0.5)
    assert d.issued <= held + 1
    engine.codes = {}
    engine.reachable = True
    deadline = time.monotonic() + 5
    while d.outage and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not d.outage and any("back after" in e.text for e in events)
    assert engine.holds[:2] == [True, False]  # the engine's submitted requests were held, then released
    d.stop()
    assert d.done.wait(5)

