"""The engine's interface (kvtui.core.engine_api): the real engine and the shared fake offer every member of it,
subscribers are called in the order they subscribed and never replace one another, and a session's wiring
(the driver's event line, the Processes panel, a remote worker's row, results subscribers) goes through them."""

from __future__ import annotations

import os
from typing import Protocol

import numpy as np
import pytest
from waits import wait_for

from kvtui.core.engine_api import EngineAPI, RequestEngine
from kvtui.core.layout import PRESETS
from kvtui.core.subscribers import Subscribers
from kvtui.live import LiveSession
from kvtui.testing.fake_engine import FakeCluster, FakeEngine
from workload import Request


def _members(proto: type) -> set[str]:
    """The names a Protocol declares, its bases' included."""
    names: set[str] = set()
    for cls in proto.__mro__:
        if cls in (object, Protocol) or not getattr(cls, "_is_protocol", False):
            continue
        names |= {n for n in vars(cls) if not n.startswith("_")}
        names |= set(getattr(cls, "__annotations__", {}))
    return names


def _requests():
    i = 0
    while True:
        yield Request(req_id=i, tokens=np.arange(8, dtype=np.uint32), arrival_s=None, cacheable_tokens=8, scenario="t")
        i += 1


@pytest.mark.parametrize("make", ["engine", "fake"])
def test_the_real_engine_and_the_fake_offer_every_member(make):
    from kvtui.engine.engine import Engine, EngineOptions
    from kvtui.mooncake.client import ClusterEndpoints

    endpoints = ClusterEndpoints("127.0.0.1:1", "http://127.0.0.1:1/metadata", None)
    engine = Engine(EngineOptions(layout=PRESETS["tiny"]),
                    endpoints) if make == "engine" else FakeEngine()  # (not started)
    missing = sorted(n for n in _members(EngineAPI) if not hasattr(engine, n))
    assert _members(RequestEngine) < _members(EngineAPI) and not missing, missing
    options = engine.options
    assert not [n for n in ("layout", "store_bytes", "segment_on", "decode_workers", "remote_slots")
                if not hasattr(options, n)]


@pytest.mark.parametrize("make", ["mooncake", "fake"])
def test_the_real_cluster_and_the_fake_offer_every_member(make):
    from kvtui.core.cluster_api import ClusterOps, ClusterSettings
    from kvtui.mooncake.client import ClusterEndpoints
    from kvtui.mooncake.ops import MooncakeCluster

    endpoints = ClusterEndpoints("127.0.0.1:1", "http://127.0.0.1:1/metadata", None, embedded=False)
    cluster = MooncakeCluster.attach(endpoints) if make == "mooncake" else FakeCluster()
    missing = sorted(n for n in _members(ClusterOps) if not hasattr(cluster, n))
    assert not missing, missing
    assert not [n for n in _members(ClusterSettings) if not hasattr(cluster.settings, n)]
    assert cluster.embedded is False and cluster.store_bytes is None and cluster.pids() == {}
    with pytest.raises(RuntimeError, match="attached"):
        cluster.restart_master()


def test_subscribers_run_in_order_and_each_unsubscribes_alone():
    calls = []
    subs: Subscribers[[int]] = Subscribers()
    first = subs.subscribe(lambda n: calls.append(("a", n)))
    subs.subscribe(lambda n: calls.append(("b", n)))
    again = subs.subscribe(lambda n: calls.append(("a", n)))
    subs(1)
    first()
    first()  # (a second call removes nothing more)
    subs(2)
    again()
    subs(3)
    assert calls == [("a", 1), ("b", 1), ("a", 1), ("b", 2), ("a", 2), ("b", 3)] and len(subs) == 1


def test_a_worker_rebuild_reaches_the_driver_and_the_session_both():
    """The driver's event line and the session's Processes panel each subscribe: neither replaces the other,
    and neither hears of rebuilds after the session stopped."""
    engine = FakeEngine()
    session = LiveSession(engine, iter(()), {"kind": "trace", "name": "t", "done": 0, "total": 0, "complete": False},
                          cluster=FakeCluster())
    session.want("test", 50)  # the frames the test reads
    session.driver.pause()
    session.start()
    try:
        engine.pids = {"decode": os.getppid()}  # (a process that exists: the sampler keeps only those)
        engine.replace_workers(dead=("decode",), exit_codes=(-9,), lost=2)
        wait_for(lambda: any(e.text.startswith("worker died (decode exit code -9)") for e in session.frame().events),
                 5, "the event 'worker died (decode exit code -9)'", interval_s=0.01)
        assert {row["name"] for row in session.panels.proc_sampler.sample()} == {"kvtui", "decode"}
    finally:
        session.stop()
    engine.replace_workers(dead=("prefill",))  # the driver unsubscribed when its run ended, the session at stop
    assert not any("prefill exit code" in e.text for e in session.frame().events)


def test_a_remote_join_gives_the_worker_its_row():
    from kvtui.engine.remote import open_listener

    engine = FakeEngine()
    session = LiveSession(engine, iter(()), {"kind": "trace", "name": "t", "done": 0, "total": 0, "complete": False},
                          cluster=FakeCluster())
    session.want("test", 50)  # the frames the test reads
    session.listen(open_listener(("127.0.0.1", 0), "token"))
    session.driver.pause()
    session.start()
    try:
        engine.join_remote(role="decode", index=1, name="remote-decode-0", host="10.0.0.2", pid=4242)
        rows = [w for w in session.frame().workers if w.get("name") == "remote-decode-0"]
        assert rows and rows[0]["host"] == "10.0.0.2" and rows[0]["remote"]
    finally:
        session.stop()
    engine.join_remote(role="decode", index=2, name="remote-decode-1")  # the session unsubscribed at stop
    assert not [w for w in session.frame().workers if w.get("name") == "remote-decode-1"]


def test_results_subscribers_see_every_result_in_order():
    from kvtui.config.workload import synthetic_description
    from workload import SyntheticWorkload, WorkloadSpec

    engine = FakeEngine()
    spec = WorkloadSpec(scenario="shared-system-prompt", pool=3, prompt_tokens=64, page_tokens=8, rate=0.0)
    session = LiveSession(engine, SyntheticWorkload(spec), synthetic_description(spec), max_requests=20,
                          cluster=FakeCluster())
    seen: list[tuple[str, int]] = []
    session.subscribe_results(lambda r: seen.append(("first", r.req_id)))
    session.subscribe_results(lambda r: seen.append(("second", r.req_id)))
    session.start()
    try:
        assert session.wait(5.0) and session.error is None
    finally:
        session.stop()
    assert seen == [(who, i) for i in range(20) for who in ("first", "second")]


def test_the_fake_holds_and_drains_as_decode_workers_do():
    """Held requests wait; a release answers them; a drain while held drops them (each a Dropped); a new run
    discards what an earlier one left and clears its hold."""
    from kvtui.core.engine_api import Dropped
    from kvtui.core.events import RequestResult

    engine = FakeEngine(PRESETS["tiny"])
    reqs = _requests()
    engine.begin_run(1)
    engine.hold(True)
    engine.submit(next(reqs))
    assert engine.next_result(0.05) is None
    engine.hold(False)
    assert isinstance(engine.next_result(1.0), RequestResult)
    engine.hold(True)
    engine.submit(next(reqs))
    engine.submit(next(reqs))
    engine.drain()
    assert [type(engine.next_result(1.0)) for _ in range(2)] == [Dropped, Dropped]
    engine.submit(next(reqs))  # held still: waits
    engine.begin_run(1)  # discards it, releases the hold
    engine.submit(next(reqs))
    result = engine.next_result(1.0)
    assert isinstance(result, RequestResult) and result.req_id == 4 and engine.next_result(0.05) is None
