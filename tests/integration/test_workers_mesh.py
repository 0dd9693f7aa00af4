"""N prefill × M decode workers against a real master (kvtui.core.topology, kvtui.engine.routing): every
request is routed, verified and counted once, per-worker figures add up to the totals, prefix-affinity keeps
a prefix group on one decode worker, one decode worker keeps exact replay, and a dead worker is replaced."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid

import pytest
from waits import wait_for

from kvtui.core.layout import PageLayout
from kvtui.engine.driver import Driver
from kvtui.engine.engine import Engine, EngineOptions, Lost
from kvtui.launch import start_stack
from kvtui.metrics.aggregate import Aggregator
from kvtui.mooncake.cluster import ClusterOptions
from kvtui.mooncake.ops import MooncakeCluster
from workload import SyntheticWorkload, WorkloadSpec

pytestmark = pytest.mark.integration
TINY = PageLayout(4, 2, 16, 8, 2)
KVTUI = [sys.executable, "-m", "kvtui.cli"]


def _workload(pool=3, seed=0):
    return SyntheticWorkload(WorkloadSpec(scenario="shared-system-prompt", pool=pool, prompt_tokens=64,
                                          page_tokens=8, seed=seed))


def _run(engine, n, concurrency=1, pool=3, seed=0):
    """Drive ``n`` requests; (aggregator, results in finishing order)."""
    agg, results = Aggregator(), []
    agg.set_worker_counts(engine.options.prefill_workers, engine.options.decode_workers,
                          local_segments=engine.options.segment_on == "decode")

    def on_result(r):
        agg.add(r)
        results.append(r)

    Driver(engine, _workload(pool, seed), on_result, concurrency=concurrency, max_requests=n).run()
    return agg, results


def _engine(endpoints, **kw):
    e = Engine(EngineOptions(layout=TINY, model=f"mesh-{uuid.uuid4().hex[:6]}", **kw), endpoints=endpoints)
    e.start()
    return e


def test_round_robin_over_three_decode_and_two_prefill_workers_adds_up(fresh_cluster):
    e = _engine(fresh_cluster.endpoints, prefill_workers=2, decode_workers=3)
    try:
        names = set(e.worker_pids())
        assert names == {"prefill-0", "prefill-1", "decode-0", "decode-1", "decode-2"}
        assert len(set(e.worker_pids().values())) == 5
        agg, results = _run(e, 60, concurrency=2)
    finally:
        e.stop()
    frame = agg.frame()
    t = frame.totals
    assert t["requests"] == 60 and t["mismatches"] == 0 and t["verified_pages"] == t["pages_hit"] > 0
    decode = [w for w in frame.workers if w["role"] == "decode"]
    prefill = [w for w in frame.workers if w["role"] == "prefill"]
    assert [w["requests"] for w in decode] == [20, 20, 20]  # round-robin: request k to decode worker k mod 3
    assert all(w["requests"] > 0 for w in prefill) and sum(w["requests"] for w in prefill) == 60
    for key in ("pages_total", "pages_hit", "bytes_loaded", "verified_pages"):
        assert sum(w[key] for w in decode) == t[key]
    for key in ("pages_published", "pages_already_present", "bytes_written"):
        assert sum(w[key] for w in prefill) == t[key]
    assert t["pages_published"] + t["pages_already_present"] + t["pages_hit"] + t["pages_failed"] >= t["pages_total"]
    assert sorted(r.req_id for r in results) == list(range(60))  # each request once


def test_prefix_affinity_keeps_each_prefix_group_on_one_decode_worker(fresh_cluster):
    e = _engine(fresh_cluster.endpoints, decode_workers=3, route="prefix-affinity")
    try:
        _agg, results = _run(e, 45, concurrency=2, pool=3)
    finally:
        e.stop()
    by_group: dict[str, set[int]] = {}
    for r in results:
        by_group.setdefault(r.keys[0], set()).add(r.decode_worker)
    assert len(by_group) == 3 and all(len(w) == 1 for w in by_group.values())
    assert sorted(next(iter(w)) for w in by_group.values()) == [0, 1, 2]  # the groups were spread


def test_one_decode_worker_replays_exactly_whatever_the_prefill_workers(fresh_cluster):
    outcomes = []
    model = f"exact-{uuid.uuid4().hex[:6]}"
    for n_prefill in (1, 3):
        e = Engine(EngineOptions(layout=TINY, model=model, prefill_workers=n_prefill),
                   endpoints=fresh_cluster.endpoints)
        e.start()
        try:
            e.clear_store()
            _agg, results = _run(e, 40, pool=4, seed=7)
        finally:
            e.stop()
        outcomes.append([(r.req_id, r.pages_hit, r.pages_published, r.pages_already_present) for r in results])
    assert sorted(outcomes[0]) == sorted(outcomes[1])  # the same hits and publishes, request by request


def test_a_killed_decode_worker_is_replaced_with_its_requests_counted_lost(fresh_cluster):
    e = _engine(fresh_cluster.endpoints, decode_workers=2, replace_dead_workers=True)
    try:
        before = e.worker_pids()
        os.kill(before["decode-1"], signal.SIGKILL)
        lost, done = [], []
        e.begin_run(1)
        for _, req in zip(range(20), _workload()):
            e.submit(req)
        deadline = time.monotonic() + 30
        while len(lost) + len(done) < 20 and time.monotonic() < deadline:
            r = e.next_result(timeout_s=1.0)
            if r is not None:
                (lost if isinstance(r, Lost) else done).append(r)
        assert len(lost) + len(done) == 20  # every request accounted for
        assert lost and all("decode-1" in x.reason for x in lost)
        rep = e.replacements[-1]
        assert rep.dead == ("decode-1",) and rep.exit_codes == (-signal.SIGKILL,)
        assert set(rep.pids) == set(before) and not set(rep.pids.values()) & set(before.values())
        assert e.process(next(iter(_workload()))).mismatches == 0  # the rebuilt workers serve requests
    finally:
        e.stop()


def test_run_json_lists_every_worker_and_bad_counts_get_one_line(tmp_path, cluster):
    out = tmp_path / "run.json"
    ep = cluster.endpoints
    proc = subprocess.run(KVTUI + ["run", "--requests", "30", "--layout", "tiny", "--quiet", "--decode-workers", "2",
                                   "--route", "least-loaded", "--master", ep.master, "--metadata", ep.metadata_url,
                                   "--json", str(out)], capture_output=True, text=True, timeout=90)
    assert proc.returncode == 0, proc.stderr[-2000:]
    s = json.loads(out.read_text())
    assert s["setup"]["decode_workers"] == 2 and s["setup"]["route"] == "least-loaded"
    names = [w["name"] for w in s["workers"]]
    assert names == ["decode-0", "decode-1", "prefill"]
    assert sum(w["requests"] for w in s["workers"] if w["role"] == "decode") == s["requests"] == 30
    assert all(isinstance(w["pid"], int) for w in s["workers"])
    for argv, words in ((["--decode-workers", "0"], "--decode-workers must be within 1-8"),
                        (["--prefill-workers", "9"], "--prefill-workers must be within 1-8"),
                        (["--segment-on", "decode", "--decode-workers", "8", "--store-size", "64MiB"],
                         "splits the store into 8 segments"),
                        (["--store-nodes", "8", "--store-size", "64MiB"], "--store-nodes 8 splits the store"),
                        (["--store-nodes", "2", "--segment-on", "decode"], "--store-nodes starts embedded store nodes"),
                        (["--store-nodes", "0"], "--store-nodes must be within 1-8")):
        bad = subprocess.run(KVTUI + ["run", "--requests", "1", "--layout", "tiny"] + argv, capture_output=True,
                             text=True, timeout=60)
        assert bad.returncode == 2 and words in bad.stderr and "Traceback" not in bad.stderr, bad.stderr
        assert len(bad.stderr.strip().splitlines()) == 1


def _killing_after(n: int, victim: int):
    """``(results, on_result)``: a driver callback that keeps every result and SIGKILLs ``victim`` at the n-th."""
    done: list = []

    def on_result(r):
        done.append(r)
        if len(done) == n:
            os.kill(victim, signal.SIGKILL)

    return done, on_result


def test_a_run_goes_on_after_a_worker_dies_and_says_what_was_lost(fresh_cluster):
    from kvtui.core.events import EngineEvent

    e = _engine(fresh_cluster.endpoints, prefill_workers=2, decode_workers=2, replace_dead_workers=True)
    events: list[EngineEvent] = []
    done, on_result = _killing_after(10, e.worker_pids()["prefill-1"])
    try:
        d = Driver(e, _workload(), on_result, events.append, concurrency=1, max_requests=60)
        d.run()
    finally:
        e.stop()
    assert d.completed + d.dropped == d.issued == 60 and d.lost == d.dropped > 0
    said = [x for x in events if x.kind == "error" and "worker died" in x.text]
    assert len(said) == 1 and "prefill-1" in said[0].text
    assert f"{d.lost} requests submitted and unfinished lost" in said[0].text
    assert all(r.mismatches == 0 for r in done) and len(done) == d.completed > 10


def test_with_rerun_lost_the_interrupted_requests_run_again_and_every_request_finishes(fresh_cluster):
    e = _engine(fresh_cluster.endpoints, decode_workers=2, replace_dead_workers=True)
    done, on_result = _killing_after(10, e.worker_pids()["decode-1"])
    try:
        d = Driver(e, _workload(), on_result, concurrency=1, max_requests=60, rerun_lost=True)
        d.run()
    finally:
        e.stop()
    assert d.rerun > 0 and d.lost == d.dropped == 0 and d.completed == d.issued == 60
    assert sorted(r.req_id for r in done) == list(range(60)) and all(r.mismatches == 0 for r in done)


def test_a_stop_during_a_worker_rebuild_abandons_it_and_leaves_no_worker(fresh_cluster):
    """A worker died and the collector rebuilds the chain: a stop meanwhile waits for the chain lock (it never
    goes on without it), the rebuild gives up (its new workers' start-up abandoned), and every worker, old and
    new, is gone when the stop returns, well within a second."""
    import threading

    import psutil

    from kvtui.core.engine_api import WorkerError

    me = psutil.Process()

    def workers() -> list[psutil.Process]:  # the worker processes this test has started
        out = []
        for p in me.children():
            try:
                if "spawn_main" in " ".join(p.cmdline()):
                    out.append(p)
            except psutil.Error:
                pass
        return out

    e = _engine(fresh_cluster.endpoints, decode_workers=2, replace_dead_workers=True)
    old = {p.pid for p in workers()}
    ended: list = []

    def collector() -> None:
        try:
            while True:
                e.next_result(timeout_s=1.0)
        except WorkerError as exc:
            ended.append(exc)

    try:
        e.begin_run(1)
        os.kill(e.worker_pids()["decode-1"], signal.SIGKILL)
        for _, req in zip(range(10), _workload()):
            e.submit(req)
        threading.Thread(target=collector, daemon=True).start()
        new = wait_for(lambda: [p for p in workers() if p.pid not in old], 30, "the rebuild's new workers",
                       interval_s=0.01)
        stopper = threading.Thread(target=e.stop, daemon=True)
        stopper.start()
        stopper.join(timeout=2.5)  # the new workers' start-up takes up to 5 s: the stop must not wait for it
        assert not stopper.is_alive(), "the stop waited for the rebuild's start-up"
    finally:
        e.stop()
    _gone, alive = psutil.wait_procs(new, timeout=0.1)
    assert alive == [] and not [p for p in workers() if p.pid in old]
    wait_for(lambda: ended, 5, "the collector's WorkerError")
    assert "abandoned" in str(ended[0]) and e.replacements == []


def test_prefix_affinity_makes_every_reload_local_where_round_robin_reads_remote_segments():
    local = {}
    for route in ("prefix-affinity", "round-robin"):
        stack = start_stack(EngineOptions(layout=TINY, model=f"loc-{uuid.uuid4().hex[:6]}", segment_on="decode",
                                          store_bytes=96 << 20, decode_workers=3, route=route), ClusterOptions())
        # (an embedded cluster: every decode worker contributes a 32 MiB segment, no store node)
        try:
            agg, _results = _run(stack.engine, 60, concurrency=1, pool=3)
        finally:
            stack.stop()
        decode = [w for w in agg.frame().workers if w["role"] == "decode"]
        assert sum(w["bytes_loaded"] for w in decode) > 0
        local[route] = 100.0 * sum(w["bytes_local"] for w in decode) / sum(w["bytes_loaded"] for w in decode)
        if route == "prefix-affinity":
            assert all(w["local_share"] == 1.0 for w in decode if w["bytes_loaded"])
    assert local["round-robin"] < 90.0, local  # a group's pages live on one segment; its readers are all three


def test_store_nodes_share_the_segment_and_the_allocator_spreads_pages_over_them():
    from kvtui.mooncake.client import open_client

    stack = start_stack(EngineOptions(layout=TINY, model=f"nodes-{uuid.uuid4().hex[:6]}", store_bytes=96 << 20),
                        ClusterOptions(store_nodes=3))
    e, cluster = stack.engine, stack.cluster
    try:
        names = set(cluster.pids())
        assert {"store-0", "store-1", "store-2"} <= names and "store" not in names
        assert cluster.sample_store()["capacity_bytes"] == 96 << 20  # three segments of 32 MiB
        agg, results = _run(e, 30, pool=3)
        assert agg.frame().totals["mismatches"] == 0 and agg.frame().totals["pages_hit"] > 0
        client = open_client(e.endpoints.as_dict())
        try:
            keys = [k for r in results for k in r.keys]
            places = set(client.replica_segments(keys)) - {""}
        finally:
            client.close()
        assert len(places) >= 2, places  # no worker owns a segment: Mooncake picks among the three
        cluster.signal("store-1", signal.SIGKILL)
        assert not cluster.restart_store()  # the dead one only (real clients: the workers stay)
        assert cluster.process("store-1").alive() and cluster.process("store-0").alive()
    finally:
        stack.stop()


def test_the_processes_panel_follows_the_workers_a_live_session_rebuilt(fresh_cluster):
    from kvtui.live import LiveSession

    e = _engine(fresh_cluster.endpoints, decode_workers=2, replace_dead_workers=True)
    session = LiveSession(e, _workload(), {"kind": "synthetic"},
                          cluster=MooncakeCluster.attach(fresh_cluster.endpoints), owns_engine=True, rerun_lost=True)
    try:
        session.start()
        old = e.worker_pids()
        os.kill(old["decode-0"], signal.SIGKILL)

        def sampled() -> dict:
            return {row["name"]: row["pid"] for row in session.panels.proc_sampler.sample()}

        wait_for(lambda: e.replacements and sampled().get("decode-0") != old["decode-0"], 30,
                 "rebuilt workers in the processes panel", interval_s=0.1, detail=lambda: (e.replacements, sampled()))
        assert sampled()["decode-0"] == e.worker_pids()["decode-0"] != old["decode-0"]
    finally:
        session.stop()
