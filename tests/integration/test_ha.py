"""HA clusters, real ones: Debian's etcd and real masters with ``--enable_ha --enable_oplog`` on free loopback
ports. Attaching through ``etcd://`` (run and observe), ``kvtui run --ha 2`` from start to teardown (a normal end
and a SIGKILL of kvtui: every process and etcd's data folder gone), and a leader SIGKILLed during a run (the
failover holds dispatch, requests resume, no wrong byte). Skipped without etcd (scripts/setup.sh --test
installs etcd-server)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import psutil
import pytest
from waits import wait_for

import kvtui
from kvtui.cli import main
from kvtui.mooncake import ha

pytestmark = [pytest.mark.integration, pytest.mark.skipif(ha.etcd_binary() is None,
                                                          reason="etcd is not installed (apt-get install etcd-server)")]
ROOT = Path(kvtui.__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def ha_cluster(tmp_path_factory):
    """Someone else's HA cluster, as kvtui would attach to it: etcd, two masters with OpLog, a store node."""
    from kvtui.mooncake.cluster import ClusterOptions, EmbeddedCluster

    c = EmbeddedCluster(ClusterOptions(store_bytes=128 << 20, ha=2, worker_client="real",
                                       log_dir=str(tmp_path_factory.mktemp("ha-logs"))))
    c.start()
    yield c
    c.stop()


def _urls(cluster) -> str:
    return ",".join(url for _name, url in cluster.endpoints.masters)


def test_attached_through_etcd_a_run_reuses_pages_byte_exact(ha_cluster, tmp_path):
    out = tmp_path / "run.json"
    ep = ha_cluster.endpoints
    rc = main(["run", "--master", ep.master, "--metrics-url", _urls(ha_cluster), "--requests", "150", "--layout",
               "tiny", "--prompt-tokens", "128", "--quiet", "--json", str(out), "--model",
               f"ha-{uuid.uuid4().hex[:8]}"])
    assert rc == 0
    s = json.loads(out.read_text())
    assert s["requests"] == 150 and s["pages_hit"] > 0 and s["mismatches"] == 0 and s["errors"] == {}
    assert s["store_mode"] == "attached" and s["setup"]["ha"] == 2
    assert s["setup"]["store_capacity_bytes"] == 128 << 20  # (read from the serving master's /metrics)


def test_observe_shows_each_master_with_its_role_and_the_leader(ha_cluster, tmp_path):
    ep = ha_cluster.endpoints
    shot = tmp_path / "observe.svg"
    rc = main(["watch", "--observe", "--master", ep.master, "--metrics-url", _urls(ha_cluster), "--headless",
               "--duration", "3", "--size", "120x40", "--screenshot", str(shot)])
    assert rc == 0
    from kvtui.observe import ObserveSession

    session = ObserveSession(ep.masters[0][1], ep.master, masters=ep.masters)
    session.sample_once()
    store = session.sampler.panel
    roles = sorted(m["role"] for m in store["masters"])
    assert roles == ["leader", "standby"] and store["up"] is True
    assert store["leader"] == ha.master_view(ha.parse_etcd(ep.master))
    assert all("lag" in m for m in store["masters"] if m["role"] == "standby")
    svg = shot.read_text()
    assert "leader" in svg and "standby" in svg and "RPC" in svg  # (the masters' lines, the leader's address)


def _watch_children(pid: int, seen: dict, stop: threading.Event) -> None:
    parent = psutil.Process(pid)
    while not stop.is_set():
        try:
            for child in parent.children(recursive=True):
                seen.setdefault(child.pid, child)
        except psutil.Error:
            return
        time.sleep(0.05)


def _named(seen: dict, word: str) -> list[psutil.Process]:
    out = []
    for p in list(seen.values()):
        try:
            if word in " ".join(p.cmdline()):
                out.append(p)
        except psutil.Error:
            continue
    return out


@pytest.mark.parametrize("end", ["normal", "sigkill"])
def test_run_ha_2_starts_etcd_and_masters_and_leaves_nothing(tmp_path, end):
    """``kvtui run --ha 2``: etcd, two masters (one serving), a store node and the workers; at the end (the
    run's own, or a SIGKILL of kvtui: then the parent-death signal and etcd's janitor) every process is gone,
    and so is etcd's data folder."""
    out = tmp_path / "run.json"
    bound = ["--requests", "300"] if end == "normal" else ["--duration", "120"]
    proc = subprocess.Popen([sys.executable, "-m", "kvtui.cli", "run", "--ha", "2", "--layout", "tiny", "--quiet",
                             "--json", str(out), "--model", f"ha-{uuid.uuid4().hex[:8]}", *bound],
                            env=dict(os.environ, PYTHONPATH=str(ROOT), KVTUI_ISOLATE="off"), cwd=tmp_path,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    seen: dict[int, psutil.Process] = {}
    stop = threading.Event()
    tracker = threading.Thread(target=_watch_children, args=(proc.pid, seen, stop), daemon=True)
    tracker.start()
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and proc.poll() is None:
        if len(_named(seen, "mooncake_master")) == 2 and len(_named(seen, "spawn_main")) >= 2 \
                and _named(seen, "--data-dir"):  # (etcd, the masters and the workers run)
            break
        time.sleep(0.1)
    etcd = _named(seen, "--data-dir")
    assert etcd and len(_named(seen, "mooncake_master")) == 2, proc.stderr.read() if proc.poll() is not None else ""
    data = Path(etcd[0].cmdline()[etcd[0].cmdline().index("--data-dir") + 1]).parent
    assert data.name.startswith("kvtui-etcd-") and data.exists()
    if end == "sigkill":
        time.sleep(1.0)  # (requests under way)
        os.kill(proc.pid, signal.SIGKILL)
    rc = proc.wait(120)
    stop.set()
    tracker.join(2)
    err = proc.stderr.read()
    gone, alive = psutil.wait_procs(list(seen.values()), timeout=15)
    assert alive == [], [" ".join(p.cmdline()) for p in alive]
    deadline = time.monotonic() + 10  # (the janitor deletes it once etcd is gone)
    while data.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not data.exists(), f"etcd's data folder {data} was left behind"
    if end == "normal":
        assert rc == 0, err
        s = json.loads(out.read_text())
        assert s["requests"] == 300 and s["mismatches"] == 0 and s["setup"]["ha"] == 2
        assert s["failovers"]["n"] == 0 and s["failovers"]["pages_lost"]["pages_lost"] == 0  # (said, not left out)
    else:
        assert rc == -signal.SIGKILL


def test_a_leader_killed_during_a_run_fails_over_and_requests_resume_byte_exact():
    """SIGKILL of the serving master while requests flow (OpLog on, dummy workers): the failover is an outage
    (dispatch held, said in the event log), a standby serves within seconds, requests resume, no wrong byte;
    the Processes panel shows each master's role, the killed one no longer the leader."""
    from kvtui.config.workload import synthetic_description
    from kvtui.core.layout import PageLayout
    from kvtui.engine.engine import EngineOptions
    from kvtui.launch import start_stack
    from kvtui.live import LiveSession
    from kvtui.mooncake.cluster import ClusterOptions
    from workload import SyntheticWorkload, WorkloadSpec

    stack = start_stack(EngineOptions(layout=PageLayout(4, 2, 16, 8, 2), model=f"ha-{uuid.uuid4().hex[:6]}",
                                      store_bytes=64 << 20), ClusterOptions(ha=2, worker_client="dummy"))
    cluster = stack.cluster
    spec = WorkloadSpec(scenario="shared-system-prompt", pool=2, prompt_tokens=64, page_tokens=8)
    session = LiveSession(stack.engine, SyntheticWorkload(spec), synthetic_description(spec), cluster=cluster,
                          layout_text="tiny")
    session.want("test", 10)

    def roles() -> dict:
        return {p["name"]: p.get("role") for p in session.frame().procs}

    def wait(cond, timeout_s: float, what: str) -> None:
        deadline = time.monotonic() + timeout_s
        while not cond():
            assert time.monotonic() < deadline, f"no {what} within {timeout_s:g} s: {roles()}"
            time.sleep(0.1)

    try:
        session.start()
        wait(lambda: sorted(filter(None, roles().values())) == ["leader", "standby"], 15, "roles")
        assert "etcd" in roles()
        wait(lambda: session.agg.totals()["requests"] > 50, 15, "requests")
        leader = next(name for name, role in roles().items() if role == "leader")
        t_kill = time.monotonic()
        cluster.signal(leader, signal.SIGKILL)
        wait(lambda: session.outage, 10, "outage")
        wait(lambda: not session.outage, 40, "end of the outage")
        down_s = time.monotonic() - t_kill
        resumed = session.agg.totals()["requests"]
        wait(lambda: session.agg.totals()["requests"] > resumed + 50, 15, "requests after the failover")
        # (a kill kvtui did not cause through K: measured as a failover all the same, and the dead master started
        # again as a standby once another serves)
        wait(lambda: roles().get(leader) not in (None, "leader") and "leader" in roles().values(), 5, "the new roles")
        assert session.agg.totals()["mismatches"] == 0
        texts = [e.text for e in session.frame().events if e.kind == "outage"]
        assert texts[0].startswith("no master serves (") and "a failover is under way" in texts[0], texts
        assert any(t.startswith("the store answers again ") for t in texts), texts
        assert cluster.dead_process() is None  # (a dead master is a failover, not a lost cluster)
        assert down_s < 35, f"the failover took {down_s:.1f} s"
    finally:
        session.stop()


def _ha_session(oplog: bool = True):
    """A live session over ``--ha 2`` (dummy workers, OpLog on or off) with a roomy store: nothing is evicted,
    so every page kvtui published stays stored unless a failover loses it."""
    from kvtui.config.workload import synthetic_description
    from kvtui.core.layout import PageLayout
    from kvtui.engine.engine import EngineOptions
    from kvtui.launch import start_stack
    from kvtui.live import LiveSession
    from kvtui.mooncake.cluster import ClusterOptions
    from workload import SyntheticWorkload, WorkloadSpec

    stack = start_stack(EngineOptions(layout=PageLayout(4, 2, 16, 8, 2), model=f"ha-{uuid.uuid4().hex[:6]}",
                                      store_bytes=64 << 20), ClusterOptions(ha=2, worker_client="dummy", oplog=oplog))
    spec = WorkloadSpec(scenario="shared-system-prompt", pool=4, prompt_tokens=64, page_tokens=8, overlap=0.5)
    session = LiveSession(stack.engine, SyntheticWorkload(spec), synthetic_description(spec), cluster=stack.cluster,
                          layout_text="tiny")
    session.want("test", 10)
    return stack.engine, session


def _settled(session) -> bool:
    c = session.counts()
    return c.issued == c.completed + c.dropped


def _batch_query(url: str, keys: list[str]) -> dict[str, bool]:
    """Per key, whether the master at admin ``url`` has it (``/batch_query_keys``: no lease; another endpoint
    than the one the failover check uses)."""
    import urllib.parse

    from kvtui.mooncake.net import http_get

    out = {}
    for i in range(0, len(keys), 50):
        chunk = keys[i:i + 50]
        status, body = http_get(f"{url}/batch_query_keys?keys={urllib.parse.quote(','.join(chunk), safe=',/')}", 5)
        assert status == 200, body
        data = json.loads(body)["data"]
        out.update({k: bool(data.get(k, {}).get("ok")) for k in chunk})
    return out


def _gone_at_stop(engine, session) -> None:
    """Stop the session; every process of the cluster and etcd's data folder must be gone."""
    procs = [psutil.Process(pid) for pid in session.cluster.pids().values() if psutil.pid_exists(pid)]
    procs += [psutil.Process(pid) for pid in engine.worker_pids().values() if psutil.pid_exists(pid)]
    etcd = psutil.Process(session.cluster.pids()["etcd"]).cmdline()
    data = Path(etcd[etcd.index("--data-dir") + 1]).parent
    session.stop()
    _gone, alive = psutil.wait_procs(procs, timeout=10)
    assert alive == [] and not data.exists()


def test_a_leader_killed_with_oplog_loses_no_settled_page_and_the_failover_is_reported():
    """K in the monitor (LiveSession.kill_leader) with OpLog: the failover report times the election, the new
    leader's serving and kvtui's first reload and publish; every page published before the kill is still
    stored (the check agrees with another endpoint), requests resume, no wrong byte, nothing left at exit."""
    engine, session = _ha_session(oplog=True)
    try:
        session.start()
        wait_for(lambda: session.agg.totals()["pages_published"] > 40, 20, "published pages")
        session.pause()  # (every put settled before the kill: the loss under load is the soak's to measure)
        wait_for(lambda: _settled(session), 10, "the requests under way to finish")
        published = sorted(engine.published.snapshot())
        watch = session.kill_leader()
        session.resume()
        wait_for(lambda: {p["name"]: p.get("role") for p in session.frame().procs}.get(watch.report.old_leader)
                 == "down", 10, "the killed master's row saying down")
        wait_for(lambda: session.failovers, 60, "the failover report")
        r = session.failovers[0]
        assert r.old_leader and r.new_leader and r.new_leader != r.old_leader
        assert 0 < r.leader_s <= r.serving_s <= r.reload_s and r.publish_s is not None
        assert r.pages_lost == 0 and r.pages_checked >= len(published) and r.evicted == 0
        assert r.restore_failed is False  # (its log read: the new leader restored its standby state)
        assert r.hit_rate_during is not None and 0 <= r.hit_rate_during <= 1  # (requests failed, then resumed)
        url = dict(engine.endpoints.masters)[r.new_leader]
        assert all(_batch_query(url, published).values())
        resumed = session.agg.totals()["requests"]
        wait_for(lambda: session.agg.totals()["requests"] > resumed + 30, 20, "requests after the failover")
        assert session.agg.totals()["mismatches"] == 0
        wait_for(lambda: session.cluster.process(watch.report.old_leader).alive(), 20, "the killed master back")
        st = wait_for(lambda: session.frame().status.get("failovers") and session.frame().status, 5,
                      "the failover in the frames' status")
        assert st["failovers"] == 1 and st["failover_pages_lost"] == 0 and st["failover_serving_s"] == r.serving_s
        texts = [e.text for e in session.frame().events]
        assert any(t.startswith(f"failover 1: {r.new_leader} serves after ") for t in texts), texts
        _gone_at_stop(engine, session)
    finally:
        session.stop()


def test_without_oplog_a_leader_kill_reports_every_lost_page_exactly():
    """Masters without OpLog: a new leader knows no key. The report counts exactly the pages kvtui had
    published and can no longer find (another endpoint says the same of each)."""
    engine, session = _ha_session(oplog=False)
    try:
        session.start()
        wait_for(lambda: session.agg.totals()["pages_published"] > 40, 20, "published pages")
        session.pause()
        wait_for(lambda: _settled(session), 10, "the requests under way to finish")
        published = sorted(engine.published.snapshot())
        session.kill_leader()
        wait_for(lambda: session.failovers, 60, "the failover report")
        r = session.failovers[0]
        url = dict(engine.endpoints.masters)[r.new_leader]
        present = _batch_query(url, published)
        assert r.evicted == 0 and r.pages_checked == len(published)
        assert r.pages_lost == sum(not ok for ok in present.values()) == len(published)
        wait_for(lambda: session.frame().status.get("failover_pages_lost") == len(published), 5,
                 "the loss in the frames' status", detail=lambda: session.frame().status)
    finally:
        session.stop()


def test_a_hung_leader_costs_about_a_failover_not_the_30_s_rpc_timeout():
    """SIGSTOP of the leader for longer than its etcd lease: a standby takes over; kvtui's clients (with
    MC_RPC_TIMEOUT_MS=2000, kvtui.mooncake.ha) reload again within seconds of it serving, not after Mooncake's
    default 30 s per call in flight. The continued master steps down; no page stored before is lost, no byte
    is wrong."""
    from kvtui.mooncake import ha as ha_mod

    engine, session = _ha_session(oplog=True)
    try:
        session.start()
        wait_for(lambda: session.agg.totals()["pages_published"] > 40, 20, "published pages")
        session.pause()  # (puts settled: one acknowledged in the leader's last milliseconds may be lost, see the docs)
        wait_for(lambda: _settled(session), 10, "the requests under way to finish")
        leader = session.cluster.leader()
        watch = session.watch_failover("leader-hang")
        session.cluster.signal(leader, signal.SIGSTOP)
        session.resume()
        try:
            wait_for(lambda: watch.report.leader_s is not None, 30, "another master leading")
        finally:
            session.cluster.signal(leader, signal.SIGCONT)
            watch.cleared()
        wait_for(lambda: session.failovers, 60, "the failover report")
        r = session.failovers[0]
        assert r.new_leader != leader and r.reload_s is not None
        assert r.reload_s - r.serving_s < ha_mod.HA_RPC_TIMEOUT_MS / 1000 * 3, r.line()
        assert r.pages_lost == 0 and session.agg.totals()["mismatches"] == 0
        states = {s.name: s.word for s in ha_mod.master_states(engine.endpoints.masters)}
        wait_for(lambda: {s.name: s.word for s in ha_mod.master_states(engine.endpoints.masters)}[leader]
                 in ("standby", "catch-up"), 20, "the continued master standing by", detail=lambda: states)
    finally:
        session.stop()


def test_a_leader_killed_by_another_process_gets_the_whole_report_with_the_loss_check():
    """Embedded: the serving master SIGKILLed by the test (os.kill: not kvtui's K) while kvtui's workers run. The
    cluster's leader watcher sees it; the session measures it as failover 1, kind ``external``: the same report
    as K's (times, the loss check against the pages kvtui published, the masters' logged roles and codes); the
    dead master starts again as a standby. Puts settled before the kill: none is lost."""
    from kvtui.core.failover import EXTERNAL

    engine, session = _ha_session(oplog=True)
    try:
        session.start()
        wait_for(lambda: session.agg.totals()["pages_published"] > 40, 20, "published pages")
        session.pause()  # (the loss in the leader's last milliseconds under load is the soak's to measure)
        wait_for(lambda: _settled(session), 10, "the requests under way to finish")
        published = sorted(engine.published.snapshot())
        leader = session.cluster.leader()
        assert leader is not None
        os.kill(session.cluster.pids()[leader], signal.SIGKILL)
        session.resume()
        r = wait_for(lambda: session.failovers and session.failovers[0], 60, "the report of a failover kvtui did not "
                     "cause", detail=lambda: [e.text for e in session.frame().events][-5:])
        assert r.kind == EXTERNAL and r.old_leader == leader and r.new_leader not in (None, leader), r.lines()
        assert leader in r.how and r.detected_s is not None and r.detected_s < 2.0
        assert 0 < r.leader_s <= r.serving_s and r.reload_s is not None
        assert r.pages_lost == 0 and r.pages_checked >= len(published) and r.evicted == 0, r.lines()
        assert r.restore_failed is False and r.window_s is not None and r.lost_in_window == 0
        assert [r.new_leader, "serving"] in [row[1:] for row in r.roles_logged], r.roles_logged
        texts = [e.text for e in session.frame().events]
        assert any(t.startswith("the leader changed, not by kvtui: ") and "failover 1" in t for t in texts), texts
        wait_for(lambda: session.frame().status.get("failovers") == 1, 5, "the failover in the frames' status")
        assert session.failover_reports()[0] == r.lines()
        wait_for(lambda: session.cluster.process(leader).alive(), 20, "the killed master back as a standby")
        assert session.agg.totals()["mismatches"] == 0
    finally:
        session.stop()


def test_an_attached_run_reports_a_leader_killed_by_someone_else(tmp_path):
    """Attached (``kvtui run --master etcd://… --metrics-url …``) to an HA cluster the test started: the test
    SIGKILLs its leader mid-run. The run's summary has the failover's whole report with the loss check on kvtui's
    own acknowledged pages; the run exits 1 exactly when it says pages were lost, and only in the leader-kill
    window (a kill under load loses at most the puts of the leader's last milliseconds)."""
    from kvtui.core.failover import EXTERNAL
    from kvtui.mooncake.cluster import ClusterOptions, EmbeddedCluster

    cluster = EmbeddedCluster(ClusterOptions(store_bytes=128 << 20, ha=2, worker_client="real",
                                             log_dir=str(tmp_path / "logs")))
    cluster.start()
    out = tmp_path / "run.json"
    ep = cluster.endpoints
    try:
        proc = subprocess.Popen([sys.executable, "-m", "kvtui.cli", "run", "--master", ep.master, "--metrics-url",
                                 _urls(cluster), "--duration", "60", "--layout", "tiny", "--prompt-tokens", "128",
                                 "--quiet", "--json", str(out), "--model", f"ha-{uuid.uuid4().hex[:8]}"],
                                env=dict(os.environ, PYTHONPATH=str(ROOT)), cwd=tmp_path,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        serving = wait_for(lambda: ha.serving_url(ep.masters), 20, "a serving master")
        wait_for(lambda: (ha.master_metric(serving, "master_key_count") or 0) > 200, 40, "kvtui's pages stored")
        leader = next(name for name, url in ep.masters if url == serving)
        os.kill(cluster.process(leader).pid, signal.SIGKILL)
        stdout, stderr = proc.communicate(timeout=120)
    finally:
        cluster.stop()
    s = json.loads(out.read_text())
    reps = s["failovers"]["reports"]
    assert len(reps) == 1, stderr
    r = reps[0]
    assert r["kind"] == EXTERNAL and r["old_leader"] == leader and r["new_leader"] not in (None, leader), r
    assert r["serving_s"] is not None and r["reload_s"] is not None, r
    assert r["pages_lost"] is not None and r["pages_checked"] > 0, r
    if s["errors"].get("RPC_FAIL"):  # (the first calls to the dead leader fail at once, before kvtui sees it)
        assert r["requests_failed"] >= 1 and "RPC_FAIL" in r["errors"], r
    assert r["restore_failed"] is None  # (another's masters: their logs are not kvtui's to read)
    assert (r["pages_lost"] or 0) == (r["lost_in_window"] or 0), r  # (none beyond the leader-kill window)
    assert proc.returncode == (1 if r["pages_lost"] else 0), stderr
    assert "acknowledged pages lost:" in stdout and f"failover 1 ({EXTERNAL})" in stdout

