"""Store faults produced on demand against a real master: each test owns a small cluster."""

from __future__ import annotations

import signal
import time
import uuid

import pytest
from waits import wait_for

from kvtui.core.events import EngineEvent
from kvtui.core.layout import PageLayout
from kvtui.engine.driver import Driver
from kvtui.engine.engine import EngineOptions
from kvtui.launch import start_stack
from kvtui.metrics.aggregate import Aggregator
from kvtui.mooncake.cluster import ClusterOptions
from workload import SyntheticWorkload, WorkloadSpec

pytestmark = pytest.mark.integration
TINY = PageLayout(4, 2, 16, 8, 2)


def _stack(**cluster_kw):
    opts = EngineOptions(layout=TINY, model=f"f-{uuid.uuid4().hex[:6]}", store_bytes=cluster_kw.pop("store_bytes",
                                                                                                    64 << 20))
    return start_stack(opts, ClusterOptions(**cluster_kw))


def _driver(stack, agg, events, rate=0.0, **kw):
    wl = SyntheticWorkload(WorkloadSpec(scenario="shared-system-prompt", pool=2, prompt_tokens=64, page_tokens=8,
                                        rate=rate))
    return Driver(stack.engine, wl, agg.add, events.append, store_answers=stack.cluster.reachable, **kw)


def _kill_master(stack) -> int:
    """SIGKILL the embedded master and wait until it is gone; returns its pid."""
    return stack.cluster.signal("master", signal.SIGKILL)


def _wait_outage(driver, timeout_s: float = 15):
    """Wait until ``driver`` holds dispatch for an outage; returns its outage state."""
    return wait_for(lambda: driver.outage, timeout_s, "outage detected by the driver")


def _wait_requests(agg, n: int, timeout_s: float = 30, what: str = "", **more) -> dict:
    """Wait until ``agg`` counts more than ``n`` requests (and more than ``v`` of each ``more`` total);
    returns the totals."""
    def enough():
        t = agg.totals()
        return t if t["requests"] > n and all(t[k] > v for k, v in more.items()) else None

    return wait_for(enough, timeout_s, what or f"more than {n} requests", detail=agg.totals)


@pytest.mark.parametrize("rate", [0.0, 100.0])  # closed loop, and arrivals at a rate (another wait path)
def test_master_killed_and_restarted_holds_dispatch_then_resumes(rate):
    stack = _stack()
    agg, events = Aggregator(), []
    try:
        d = _driver(stack, agg, events, rate=rate).start()
        _wait_requests(agg, 5, pages_hit=0)
        _kill_master(stack)
        _wait_outage(d)
        held = agg.totals()["requests"]
        # the thing under test: nothing completes for 1 s (at 100 req/s and more, errors would pile up)
        time.sleep(1.0)
        assert agg.totals()["requests"] <= held + 1  # dispatch is held: errors do not pile up
        stack.cluster.restart_master()
        wait_for(lambda: not d.outage, 20, "resumed dispatch after the master restart")
        resumed = agg.totals()["requests"]
        after = _wait_requests(agg, resumed + 3, 20, "requests served by the restarted master")
        assert after["mismatches"] == 0
        assert agg.summary()["errors"].get("RPC_FAIL", 0) >= 1
        texts = [e.text for e in events if isinstance(e, EngineEvent) and e.kind == "outage"]
        assert any("unreachable" in t for t in texts) and any("back after" in t for t in texts)
    finally:
        d.stop()
        d.done.wait(15)
        stack.stop()


def test_a_dead_master_holds_dummy_workers_although_they_answer_internal_error():
    """Dummy workers (the default of an embedded store on one node) whose master is SIGKILLed answer
    INTERNAL_ERROR, never RPC_FAIL: the run must still see an outage (dispatch held, said), not go on at
    ~4.3 s per call in silence, and resume once the master is back."""
    stack = _stack(worker_client="dummy")
    agg, events = Aggregator(), []
    try:
        d = _driver(stack, agg, events).start()
        _wait_requests(agg, 5)
        _kill_master(stack)
        _wait_outage(d)
        texts = [e.text for e in events if isinstance(e, EngineEvent) and e.kind == "outage"]
        assert texts and texts[0].startswith("store unreachable (") and "dispatch held" in texts[0]
        held = agg.totals()["requests"]
        time.sleep(1.5)  # the thing under test: nothing completes while the master is down
        assert agg.totals()["requests"] <= held + 1
        stack.cluster.restart_master()
        wait_for(lambda: not d.outage, 30, "resumed dispatch after the master restart")
        resumed = agg.totals()["requests"]
        assert _wait_requests(agg, resumed + 3, 30, "requests served by the restarted master")["mismatches"] == 0
    finally:
        d.stop()
        d.done.wait(15)
        stack.stop()


def test_stop_during_a_master_outage_finishes_the_run():
    stack = _stack()
    agg, events = Aggregator(), []
    try:
        d = _driver(stack, agg, events).start()
        _wait_requests(agg, 5)
        _kill_master(stack)
        _wait_outage(d)
        d.stop()  # the requests decode holds for the dead master are dropped instead of waiting for it
        assert d.done.wait(40), "the run did not finish after stop during an outage"
        assert d.completed + d.dropped + d.abandoned == d.issued and d.error is None  # held: dropped unrun
    finally:
        d.stop()
        stack.stop()


def test_restart_from_the_live_session_shows_the_new_master_in_the_processes_panel():
    from kvtui.config.workload import synthetic_description
    from kvtui.live import LiveSession

    stack = _stack()
    spec = WorkloadSpec(scenario="shared-system-prompt", pool=2, prompt_tokens=64, page_tokens=8)
    session = LiveSession(stack.engine, SyntheticWorkload(spec), synthetic_description(spec), cluster=stack.cluster,
                          layout_text="tiny")
    session.want("test", 20)  # the frames the test reads
    try:
        session.start()
        old_pid = _kill_master(stack)
        session.restart_master()
        new_pid = stack.cluster.process("master").pid
        assert new_pid != old_pid

        def master_row() -> dict:
            return {p["name"]: p for p in session.frame().procs}.get("master", {})

        wait_for(lambda: master_row().get("pid") == new_pid and master_row()["alive"], 10,
                 f"new master (pid {new_pid}, alive) in the processes panel", detail=master_row)
    finally:
        session.stop()


def test_store_node_killed_counts_errors_without_stall():
    stack = _stack(client_ttl_s=3)
    agg, events = Aggregator(), []
    try:
        d = _driver(stack, agg, events).start()
        _wait_requests(agg, 5)
        stack.cluster.signal("store", signal.SIGKILL)
        n0 = agg.totals()["requests"]

        def store_errors() -> int:
            errors = agg.summary()["errors"]
            return sum(errors.get(name, 0) for name in ("TRANSFER_FAIL", "OBJECT_NOT_FOUND", "NO_AVAILABLE_HANDLE"))

        # the engine goes on (no stall) and counts the store errors of the dead segment owner
        t = _wait_requests(agg, n0 + 5, 10, "progress after the segment owner died (the engine stalled)")
        wait_for(store_errors, 10, "store errors counted for the dead segment owner", detail=agg.summary)
        assert agg.totals()["mismatches"] == 0 and t["mismatches"] == 0
    finally:
        d.stop()
        d.done.wait(15)
        stack.stop()


def test_full_store_backs_off_and_never_loops_on_a_put():
    # the smallest segment Mooncake accepts (16 MiB) and 1 MiB pages: a 24-page request cannot fit
    big = PageLayout(32, 8, 128, 8, 2)
    opts = EngineOptions(layout=big, model=f"full-{uuid.uuid4().hex[:6]}", store_bytes=16 << 20)
    stack = start_stack(opts, ClusterOptions(lease_ttl_ms=1000))
    engine = stack.engine
    agg, events = Aggregator(), []
    try:
        wl = SyntheticWorkload(WorkloadSpec(scenario="random", prompt_tokens=8 * 24, page_tokens=8))
        # 10 requests, each refused: the decode worker's back-off doubles up to its 1 s maximum (0.05 s … 1 s)
        d = Driver(engine, wl, agg.add, events.append, max_requests=10)
        d.start()
        assert d.done.wait(90)
        t = agg.totals()
        s = agg.summary()
        assert t["requests"] == 10
        assert s["errors"].get("NO_AVAILABLE_HANDLE", 0) > 0
        assert t["pages_failed"] == s["errors"]["NO_AVAILABLE_HANDLE"]  # one failed put per page, no retries
        assert d.backoffs > 0
    finally:
        stack.stop()


@pytest.mark.parametrize("master", ["killed", "paused"])
def test_a_stopped_store_node_exits_whatever_the_master_does(tmp_path, master):
    """A store node told to stop while its master is dead or hung (SIGSTOP) still exits: at once when the
    master is gone, within CLOSE_TIMEOUT_S when it hangs (one was found hours after its kvtui had gone)."""
    from kvtui.mooncake.cluster import EmbeddedCluster
    from kvtui.mooncake.store_node import CLOSE_TIMEOUT_S

    c = EmbeddedCluster(ClusterOptions(store_bytes=32 << 20, log_dir=str(tmp_path)))
    c.start()
    m, s = c.process("master"), c.process("store")
    try:
        if master == "killed":
            m.popen.kill()
            m.popen.wait()
        else:
            m.popen.send_signal(signal.SIGSTOP)
        t0 = time.monotonic()
        s.popen.send_signal(signal.SIGTERM)
        rc = s.popen.wait(CLOSE_TIMEOUT_S + 10)
        took = time.monotonic() - t0
    finally:
        if master == "paused":
            m.popen.send_signal(signal.SIGCONT)
        c.stop()
    if master == "killed":
        assert rc == 0 and took < 3, (rc, took)
    else:
        assert rc in (0, -signal.SIGALRM) and took < CLOSE_TIMEOUT_S + 3, (rc, took)
