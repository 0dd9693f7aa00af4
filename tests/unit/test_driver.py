"""The driver's controls with a fake engine (no store): pause holds issuing, typed controls reach the one
handler while paused, bounds stop the run, an RPC_FAIL holds dispatch until the master answers."""

from __future__ import annotations

import time

import numpy as np
import pytest
from waits import wait_for

from kvtui.core.controls import SetKnob
from kvtui.core.engine_api import WorkerError
from kvtui.core.layout import PageLayout
from kvtui.engine.driver import Driver
from kvtui.testing.fake_engine import FakeCluster, FakeEngine
from workload import Request


def _engine() -> FakeEngine:
    """The engine of every test here: answers at once, pages of 4 tokens."""
    return FakeEngine(PageLayout(1, 1, 1, 4, 1))


def requests():
    i = 0
    while True:
        yield Request(req_id=i, tokens=np.arange(8, dtype=np.uint32), arrival_s=None, cacheable_tokens=8,
                      scenario="t")
        i += 1


def test_bounds_and_pause_and_controls_while_paused():
    results, applied = [], []
    engine = _engine()
    d = Driver(engine, requests(), results.append, max_requests=50).start()
    assert d.done.wait(5) and len(results) == 50 and d.issued == 50
    assert engine.runs == [1] and engine.drains == 1  # the run began with its concurrency and ended with a drain

    d = Driver(_engine(), requests(), results.append, on_control=lambda c: applied.append((c, d.issued)))
    d.pause()
    d.start()
    time.sleep(0.3)  # (the thing under test: nothing is issued in 0.3 s while paused)
    assert d.issued == 0 and d.paused
    d.send(SetKnob("overlap", 0.5))
    d.send(SetKnob("pool", 3))
    wait_for(lambda: len(applied) == 2, 5, "both controls applied", interval_s=0.01)
    assert applied == [(SetKnob("overlap", 0.5), 0), (SetKnob("pool", 3), 0)]  # in order, while paused, nothing issued
    d.resume()
    wait_for(lambda: d.issued > 0, 5, "a request issued after resume", interval_s=0.01)
    d.stop()
    assert d.done.wait(5)


def test_send_takes_only_control_messages_and_needs_a_handler():
    d = Driver(_engine(), requests(), lambda r: None, on_control=lambda c: None)
    with pytest.raises(TypeError):
        d.send(lambda: None)  # closures are not controls
    with pytest.raises(RuntimeError):
        Driver(_engine(), requests(), lambda r: None).send(SetKnob("pool", 2))


def test_the_handler_runs_before_the_next_request_and_may_wait_idle():
    """Each control is handled before the next request is drawn: requests drawn after it see its effect;
    ``wait_idle`` from the handler returns once the submitted requests have finished."""
    seen = []
    state = {"pool": 1}

    def reqs():
        for i in range(10_000):
            seen.append(state["pool"])
            yield Request(req_id=i, tokens=np.arange(8, dtype=np.uint32), arrival_s=None, cacheable_tokens=8,
                          scenario="t")

    d = None

    def handle(c):
        idle.append(d.wait_idle(5.0) and d.completed + d.dropped == d.issued)
        state["pool"] = c.value
        marks.append(len(seen))

    idle, marks = [], []
    d = Driver(_engine(), reqs(), lambda r: None, on_control=handle).start()
    wait_for(lambda: d.issued > 20, 5, "20 requests issued", interval_s=0.01)
    d.send(SetKnob("pool", 7))
    wait_for(lambda: marks and len(seen) > marks[0] + 5, 5, "5 requests drawn after the control", interval_s=0.01)
    d.stop()
    assert d.done.wait(5)
    assert idle == [True]
    assert set(seen[:marks[0]]) == {1} and set(seen[marks[0]:]) == {7}


def test_rpc_fail_holds_dispatch_until_master_answers():
    engine, cluster = _engine(), FakeCluster()
    events = []
    d = Driver(engine, requests(), lambda r: None, events.append, store_answers=cluster.reachable).start()
    wait_for(lambda: d.completed > 0, 5, "a finished request", interval_s=0.01)
    cluster.answers = False
    engine.codes = {-900: 1}
    wait_for(lambda: d.outage, 3, "an outage", interval_s=0.02)
    # the thing under test, as sleeps: once the requests dispatched before the outage have had 0.2 s to
    # come back, nothing more is issued for 0.5 s
    time.sleep(0.2)
    held = d.issued
    time.sleep(0.5)
    assert d.issued <= held + 1
    engine.codes = {}
    cluster.answers = True
    wait_for(lambda: not d.outage, 5, "the end of the outage")
    assert any("back after" in e.text for e in events)
    assert engine.holds[:2] == [True, False]  # the engine's submitted requests were held, then released
    d.stop()
    assert d.done.wait(5)


def test_a_quiet_run_says_when_an_outage_holds_dispatch_and_when_it_ends(capsys):
    """``kvtui run`` with stderr not a terminal (``_progress(quiet=True)``) has no status line, so an outage's
    start and end are one stderr line each."""
    from kvtui.commands.run import _progress
    from kvtui.metrics.store_full import StoreFullAlarm

    script = iter([False, True, True, False])

    class FakeSession:  # what _progress reads of a LiveSession
        outage = False
        store_full = StoreFullAlarm(lambda failed, seconds: "")

        def wait(self, timeout_s):
            try:
                self.outage = next(script)
            except StopIteration:
                return True
            return False

        def outage_of(self):
            return "master"

    assert _progress(FakeSession(), 0, quiet=True) == 0
    err = capsys.readouterr().err.splitlines()
    assert err == ["kvtui: store unreachable (RPC_FAIL: the master, or the store node of dummy workers): dispatch held",
                   "kvtui: the store answers again: dispatch resumed"]


def test_a_worker_dead_before_the_run_began_ends_it_as_its_error():
    """begin_run meets a dead worker (killed during start-up): start() does not raise, the run is done at once
    with that error, and run() raises it (kvtui run then summarises, kvtui watch's frames carry it)."""
    engine = _engine()
    engine.begin_error = WorkerError("decode worker died (exit code -9)")
    d = Driver(engine, iter([]), lambda r: None)
    assert d.start() is d and d.done.is_set() and str(d.error) == "decode worker died (exit code -9)"
    assert (d.issued, d.completed, d.abandoned) == (0, 0, 0)
    with pytest.raises(WorkerError):
        Driver(engine, iter([]), lambda r: None).run()
