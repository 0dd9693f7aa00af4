"""HA clusters without processes: etcd:// addresses, the --ha flag's checks, doctor's etcd line, outages that
answer INTERNAL_ERROR, and how the monitor shows the masters (real etcd and masters: tests/integration/test_ha.py)."""

from __future__ import annotations

import argparse
import time
from types import SimpleNamespace

import pytest

from kvtui.commands import doctor
from kvtui.config.cluster import add_cluster_arguments, ha_from_args
from kvtui.core.errors import KvtuiError
from kvtui.engine.driver import Driver
from kvtui.mooncake import ha
from kvtui.testing.fake_engine import FakeCluster, FakeEngine
from kvtui.tui.widgets.procs import with_roles


@pytest.mark.parametrize("text,endpoints", [
    ("etcd://127.0.0.1:2379", (("127.0.0.1", 2379),)),
    ("etcd://10.0.0.1:2379;10.0.0.2:2380", (("10.0.0.1", 2379), ("10.0.0.2", 2380))),
    ("etcd://[::1]:2379/", (("::1", 2379),)),
])
def test_etcd_addresses_list_their_endpoints(text, endpoints):
    assert ha.parse_etcd(text) == endpoints
    assert ha.parse_etcd(ha.etcd_url(endpoints)) == endpoints


@pytest.mark.parametrize("text,message", [
    ("http://127.0.0.1:2379", "must be etcd://HOST:PORT"),
    ("etcd://", "names no etcd endpoint"),
    ("etcd://127.0.0.1", "'127.0.0.1' is not HOST:PORT"),
    ("etcd://127.0.0.1:0", "is not HOST:PORT with a port within 1-65535"),
    ("etcd://127.0.0.1:70000", "is not HOST:PORT"),
    ("etcd://a:1;;b:2", "'' is not HOST:PORT"),
    ("etcd://a:1,b:2", "separated by ';'"),
])
def test_a_bad_etcd_address_is_one_line_naming_the_flag(text, message):
    """The backend says what is wrong with the address (no flag names); the config layer names the flag."""
    from kvtui.config.cluster import cluster_error_text
    from kvtui.mooncake.cluster import attach
    from kvtui.mooncake.errors import BadAddress
    from kvtui.mooncake.net import parse_etcd

    with pytest.raises(ValueError) as err:
        parse_etcd(text)
    assert message in str(err.value) and "\n" not in str(err.value) and "--" not in str(err.value)
    if text.startswith("etcd://"):
        with pytest.raises(BadAddress) as bad:
            attach(text, None)
        assert cluster_error_text(bad.value).startswith("--master ") and message in cluster_error_text(bad.value)


def _args(*argv: str) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    add_cluster_arguments(p)
    return p.parse_args(list(argv))


@pytest.mark.parametrize("argv,message", [
    (["--ha", "1"], "--ha must be within 2-5 masters, got 1"),
    (["--ha", "6"], "--ha must be within 2-5 masters, got 6"),
    (["--ha", "2", "--master", "etcd://127.0.0.1:2379"], "to attach to one, drop --ha"),
    (["--ha", "2", "--hosts", "auto"], "does not combine with --hosts auto"),
    (["--ha", "3", "--metrics-port", "9003"], "--metrics-port: with --ha every master has ports of its own"),
])
def test_ha_flag_checks(argv, message):
    with pytest.raises(KvtuiError, match=message):
        ha_from_args(_args(*argv))


def test_ha_needs_an_etcd_binary(monkeypatch):
    monkeypatch.setenv(ha.ETCD_BINARY_ENV, "/nonexistent/etcd")
    assert ha.etcd_binary() is None
    with pytest.raises(KvtuiError, match="apt-get install etcd-server"):
        ha_from_args(_args("--ha", "2"))
    ok, line = doctor.check_etcd()
    assert ok and line.startswith("note: etcd is not installed") and "apt-get install etcd-server" in line


def test_doctor_names_etcd_and_its_version():
    if ha.etcd_binary() is None:
        pytest.skip("etcd is not installed (scripts/setup.sh --test installs etcd-server)")
    ok, line = doctor.check_etcd()
    assert ok and line.startswith("etcd 3.") and "--ha N" in line and "available" in line


def test_ha_clients_get_a_bounded_rpc_timeout(monkeypatch):
    monkeypatch.delenv("MC_RPC_TIMEOUT_MS", raising=False)
    assert dict(ha.ha_client_env())["MC_RPC_TIMEOUT_MS"] == str(ha.HA_RPC_TIMEOUT_MS)
    monkeypatch.setenv("MC_RPC_TIMEOUT_MS", "5000")  # the user's own choice wins
    assert dict(ha.ha_client_env())["MC_RPC_TIMEOUT_MS"] == "5000"


def _wait(cond, timeout_s: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while not cond() and time.monotonic() < deadline:
        time.sleep(0.02)
    return cond()


def _requests():
    import numpy as np

    from workload.request import Request

    for i in range(1_000_000):
        yield Request(req_id=i, tokens=np.arange(16, dtype=np.uint32), arrival_s=None, cacheable_tokens=16,
                      scenario="t")


@pytest.mark.parametrize("reachable,outage", [(False, True), (True, False)])
def test_internal_error_is_an_outage_only_when_the_master_does_not_answer(reachable, outage):
    """Dummy workers whose (non-HA) master died answer INTERNAL_ERROR, never RPC_FAIL: that holds dispatch when
    the master does not answer a probe; with the master answering it is a store node's fault, counted."""
    engine, cluster = FakeEngine(), FakeCluster()
    events = []
    d = Driver(engine, _requests(), lambda r: None, events.append, store_answers=cluster.reachable).start()
    try:
        assert _wait(lambda: d.completed > 0)
        cluster.answers = reachable
        engine.codes = {-1: 2}
        assert _wait(lambda: d.outage, 2.0) is outage
        if outage:
            said = [e.text for e in events if e.kind == "outage"]
            assert said == ["store unreachable (INTERNAL_ERROR): dispatch held"]
            engine.codes, cluster.answers = {}, True
            assert _wait(lambda: not d.outage)
            assert any("master back after" in e.text for e in events)
        else:
            assert d.completed > 10 and not any(e.kind == "outage" for e in events)
    finally:
        d.stop()
        assert d.done.wait(5)


def test_an_ha_failover_is_said_as_one():
    engine, cluster = FakeEngine(), FakeCluster()
    events = []
    d = Driver(engine, _requests(), lambda r: None, events.append, store_answers=cluster.reachable, ha=True).start()
    try:
        assert _wait(lambda: d.completed > 0)
        cluster.answers, engine.codes = False, {-901: 1}
        assert _wait(lambda: d.outage)
        engine.codes, cluster.answers = {}, True
        assert _wait(lambda: not d.outage)
    finally:
        d.stop()
        assert d.done.wait(5)
    texts = [e.text for e in events if e.kind == "outage"]
    assert texts[0] == ("no master serves (RPC_TIMEOUT): the leader is gone or hung, a failover is under way; "
                        "dispatch held")
    assert texts[1].startswith("the store answers again ") and "dispatch resumed" in texts[1]


def test_an_outage_is_dated_from_its_first_failed_call_not_its_answer():
    """A call to a dead leader can block seconds before it fails: the outage is said with how long before its
    first failed call began, and "answers again" measures from that call, not from the answer."""
    engine, cluster = FakeEngine(), FakeCluster()
    events = []
    d = Driver(engine, _requests(), lambda r: None, events.append, store_answers=cluster.reachable, ha=True).start()
    try:
        assert _wait(lambda: d.completed > 0)
        d.pause()
        assert _wait(lambda: d.completed + d.dropped == d.issued)
        time.sleep(0.3)  # (the last healthy request ended at least this long before the failing call's answer)
        engine.hung_s, cluster.answers, engine.codes = 4.3, False, {-900: 1}
        d.resume()
        assert _wait(lambda: d.outage)
        engine.codes, engine.hung_s, cluster.answers = {}, 0.0, True
        assert _wait(lambda: not d.outage, 5.0)
    finally:
        d.stop()
        assert d.done.wait(5)
    held, back = [e for e in events if e.kind == "outage"][:2]
    began = held.data["began_s"]
    assert held.t - began >= 0.25 and "its first failed call began" in held.text
    assert back.data["down_s"] >= back.data["held_s"] + 0.25
    assert back.text.startswith(f"the store answers again {back.data['down_s']:.1f} s after its first failed call")


def test_a_quiet_run_says_a_failover_is_under_way(capsys):
    from kvtui.commands.run import _progress
    from kvtui.metrics.store_full import StoreFullAlarm

    script = iter([True, False])

    class FakeSession:  # what _progress reads of a LiveSession of kvtui's HA cluster
        outage = False
        store_full = StoreFullAlarm(lambda failed, seconds: "")

        def wait(self, timeout_s):
            try:
                self.outage = next(script)
            except StopIteration:
                return True
            return False

        def outage_of(self):
            return "leader"

    _progress(FakeSession(), 0, quiet=True)
    assert capsys.readouterr().err.splitlines()[0] == (
        "kvtui: no master serves (the leader is gone or hung; the others elect a new one): dispatch held")


def test_the_processes_panel_names_each_master_with_its_role():
    procs = [{"name": "master-0", "role": "leader"}, {"name": "master-1", "role": "standby"}, {"name": "etcd"},
             {"name": "decode"}]
    names = [p["name"] for p in procs]
    assert with_roles(procs, names, 20) == ["master-0 leader", "master-1 standby", "etcd", "decode"]
    assert with_roles(procs, names, 13) == ["master-0 lead", "master-1 stby", "etcd", "decode"]
    assert with_roles(procs, names, 12) == ["mas-0 lead", "mas-1 stby", "etcd", "decode"]
    assert with_roles(procs, names, 9) == ["m0 lead", "m1 stby", "etcd", "decode"]
    assert with_roles(procs, names, 6) == names  # no room: the names alone


def test_an_attached_clusters_masters_get_process_rows_with_their_roles():
    from kvtui.live.session import with_roles

    procs = ({"name": "decode", "pid": 7, "cpu_percent": 1.0, "rss_bytes": 1 << 20},)
    store = {"masters": [{"name": "master-0", "role": "leader"}, {"name": "master-1", "role": "standby"}]}
    rows = with_roles(procs, store)
    assert [(r["name"], r.get("role"), r.get("remote")) for r in rows] == [
        ("decode", None, None), ("master-0", "leader", True), ("master-1", "standby", True)]


def test_a_master_is_what_its_health_says():
    s = ha.MasterState("master-1", "http://h:1", True, "leader", "leader_warmup", "127.0.0.1:5")
    assert s.word == "warm-up" and not s.serving
    assert ha.MasterState("master-0", "http://h:0", True, "leader", "serving").word == "leader"
    assert ha.MasterState("master-2", "http://h:2", False).word == "down"
    row = ha.MasterState("master-1", "http://h:1", True, "standby", "standby", "127.0.0.1:5", 3).as_row()
    assert row == {"name": "master-1", "url": "http://h:1", "up": True, "role": "standby", "ha_state": "standby",
                   "leader": "127.0.0.1:5", "lag": 3}
    assert ha.admin_names(["http://a:1", "http://b:2"]) == (("master-0", "http://a:1"), ("master-1", "http://b:2"))


def test_master_log_lines_are_read_by_mooncakes_codes(tmp_path):
    """A master's lines with a code (``err=-1401``, ``failed: INVALID_PARAMS``) and its role changes are read,
    named from Mooncake's table, with the key a line names; other lines are not kept; a line cut at the end of
    the file waits for the next read."""
    from kvtui.mooncake import masterlog

    e = masterlog.parse_line("W1207 20:18:36.180194 20182 master_service.cpp:4655] PutEnd: OpLog queue failed for "
                             "key=mc/m/abc, err=-1401")
    assert e is not None and (e.code, e.name, e.key) == (-1401, "TASK_PENDING_LIMIT_EXCEEDED", "mc/m/abc")
    assert e.what == "PutEnd: OpLog queue failed for key=…, err=-1401" and e.level == "W"
    r = masterlog.parse_line("E1207 20:19:11.210511 19735 master_service_supervisor.cpp:401] Standby restore "
                             "failed: INVALID_PARAMS")
    assert r is not None and (r.code, r.name, r.key) == (-600, "INVALID_PARAMS", None)
    t = masterlog.parse_line("W1207 20:19:00.000001  9651 x.cpp:1] commit err=-1002")
    assert t is not None and t.name == "ETCD_TRANSACTION_FAIL"
    role = masterlog.parse_line("I1207 20:18:20.539088 19735 master_service_supervisor.cpp:154] Master runtime "
                                "state -> serving, role=leader")
    assert role is not None and role.code is None and role.state == "serving"
    assert masterlog.parse_line("I1207 20:18:15.501464 19735 x.cpp:310] Master admin server started") is None
    assert masterlog.parse_line("WARNING: Logging before InitGoogleLogging()") is None
    log = tmp_path / "master-0.log"
    line = "W1207 20:18:36.180194 20182 m.cpp:1] PutEnd: OpLog queue failed for key=k{}, err=-1401\n"
    log.write_text("".join(line.format(i) for i in range(3)) + line.format(3)[:30])
    got, end = masterlog.read_entries(str(tmp_path), "master-0", 0)
    assert [g.key for g in got] == ["k0", "k1", "k2"] and end < log.stat().st_size
    with log.open("a") as f:
        f.write(line.format(3)[30:])
    more, _ = masterlog.read_entries(str(tmp_path), "master-0", end)
    assert [g.key for g in more] == ["k3"]
    assert masterlog.read_entries(str(tmp_path), "master-9", 5) == ([], 5)


class _Ledger:
    def __init__(self, acked):
        self.acked = acked

    def snapshot(self):
        return dict(self.acked)


def _glog(t: float, text: str, level: str = "W") -> str:
    """A glog line stamped at epoch seconds ``t`` (local time)."""
    from datetime import datetime

    d = datetime.fromtimestamp(t)
    return f"{level}{d:%m%d %H:%M:%S}.{d.microsecond:06d} 4242 m.cpp:1] {text}\n"


@pytest.mark.parametrize("restore", [False, True])
def test_lost_pages_are_put_down_to_the_codes_that_named_them(tmp_path, monkeypatch, restore):
    """The loss check (no master processes: their answers and logs are given): a lost key named by a master's
    ``err=-1401`` line is put down to TASK_PENDING_LIMIT_EXCEEDED; the others to the new leader's failed
    restore when it logged one, else 'lost without a trace'; keys acknowledged in the leader-kill window are
    counted apart; etcd, which answered every poll, is never named as a cause."""
    from kvtui.core.failover import KILL_WINDOW_S, RESTORE, UNTRACED
    from kvtui.mooncake.failover import FailoverHistory, FailoverWatch

    masters = (("master-0", "http://m0"), ("master-1", "http://m1"))
    now = [100.0]
    fault = now[0] - 1.0
    acked = {"k-oplog": fault - 0.5, "k-old": fault - 5.0, "k-window": fault + KILL_WINDOW_S[0] / 2,
             "k-kept": fault - 3.0}
    wall = time.time() - now[0]  # (epoch seconds of engine time 0)
    (tmp_path / "master-0.log").write_text(
        _glog(wall + fault - 0.4, "PutEnd: OpLog queue failed for key=k-oplog, err=-1401")
        + _glog(wall + fault - 11.0, "commit failed, err=-1002"))
    (tmp_path / "master-1.log").write_text(
        _glog(wall + fault + 4.0, "Master runtime state -> leader_warmup, role=leader", "I")
        + (_glog(wall + fault + 8.0, "Standby restore failed: INVALID_PARAMS", "E") if restore else ""))
    monkeypatch.setattr(ha, "capacity_bytes", lambda url, timeout_s=1.0: 1 << 20)
    monkeypatch.setattr(ha, "stored_keys", lambda url, timeout_s=5.0: {"k-kept"})
    monkeypatch.setattr(ha, "keys_found", lambda url, keys, timeout_s=5.0: {k: False for k in keys})
    monkeypatch.setattr(ha, "evicted_keys", lambda url, timeout_s=1.0: 0)
    endpoints = SimpleNamespace(masters=masters, embedded=True, log_dir=str(tmp_path))
    watch = FailoverWatch(1, "leader-kill", endpoints, lambda: now[0], _Ledger(acked), lambda k, t: None,
                          history=FailoverHistory(etcd_silent_s=lambda since: 0.0))
    watch.report.t_s, watch.report.old_leader, watch.report.new_leader = fault, "master-0", "master-1"
    watch._before, watch._t_pre = set(acked), fault - 0.1
    watch._check("http://m1")
    r = watch.report
    assert (r.pages_checked, r.pages_lost, r.evicted, r.lost_in_window) == (4, 3, 0, 1)
    rest = RESTORE + "INVALID_PARAMS" if restore else UNTRACED
    assert r.lost_by_cause == {"TASK_PENDING_LIMIT_EXCEEDED": 1, rest: 2}
    assert (r.restore_failed, r.restore_error) == ((True, "INVALID_PARAMS") if restore else (False, None))
    assert [(e["master"], e["name"], e["lines"]) for e in r.log_errors][:2] == [
        ("master-0", "ETCD_TRANSACTION_FAIL", 1), ("master-0", "TASK_PENDING_LIMIT_EXCEEDED", 1)]
    assert r.log_errors[0]["first_s"] == pytest.approx(-11.0, abs=0.01) and r.oplog_failed == 1
    assert r.roles_logged[0][1:] == ["master-1", "leader_warmup"] and r.etcd_silent_s == 0.0
    text = "\n".join(r.lines())
    assert "TASK_PENDING_LIMIT_EXCEEDED (-1401): named in master-0's 'PutEnd: OpLog queue failed for key=…, " \
           "err=-1401' lines" in text
    assert ("master-1 could not restore its standby state" in text) is restore
    assert ("lost without a trace in the masters' logs" in text) is not restore
    assert "1 acknowledged in the leader-kill window" in text and "2 beyond it" in text
    assert "ETCD_TRANSACTION_FAIL (-1002) ×1 from -11.0 s" in text and "etcd answered every poll" in text
    assert "etcd slow" not in text and "etcd slow" not in r.line()
    assert r.lost_beyond_window == 2


def test_a_failovers_hit_rate_before_during_and_after():
    """The report's hit rates: ``before`` as the session gave it at the fault, ``during`` over the requests that
    finished between the fault and kvtui's first publish after it (failed ones included), ``after`` over those of
    the AFTER_S that follow; requests later than that count nowhere."""
    from kvtui.core.events import RequestResult
    from kvtui.core.failover import AFTER_S
    from kvtui.core.pages import PageState as S
    from kvtui.mooncake.failover import FailoverWatch

    endpoints = SimpleNamespace(masters=(), embedded=False)
    watch = FailoverWatch(1, "leader-kill", endpoints, lambda: 0.0, None, lambda kind, text: None)
    watch.report.t_s, watch.report.hit_rate_before = 10.0, 0.75

    def result(t_end: float, hit: int, total: int = 4, codes=None, published: int = 0) -> RequestResult:
        return RequestResult(1, "x", 32, 32, 8, 4096, total, hit, bytes([S.HIT] * hit + [S.FAILED] * (total - hit)),
                             pages_published=published, codes=codes or {}, t_start=t_end - 0.1, t_end=t_end)

    watch.add(result(9.0, 4))  # (before the fault: not this watch's)
    watch.add(result(11.0, 0, codes={-900: 1}))  # the first error
    watch.add(result(12.0, 2, published=2))  # reloads and publishes again: the end of "during"
    assert watch.report.publish_s == pytest.approx(2.0)
    watch.add(result(12.0 + AFTER_S / 2, 3))
    watch.add(result(12.0 + AFTER_S + 1, 0))  # (after the window)
    watch.stop()
    watch.run()  # (its thread's body: stopped at once, it fills the report and ends)
    rep = watch.report
    assert (rep.hit_rate_before, rep.hit_rate_during, rep.hit_rate_after) == (0.75, 2 / 8, 3 / 4)
    assert "page hits 75% before, 25% during, 75% after" in rep.line()


def test_the_leader_watcher_reports_a_leader_that_stops_serving_unless_kvtuis_own_watch_runs(monkeypatch):
    """Two polls in a row that find the serving leader not serving: a change dated from the first of them, with
    kvtui's last sight of it serving; nothing while kvtui's own failover watch runs (pause), and after it the
    new leader is learnt afresh. With only etcd to go by, master_view naming another leader is a change; etcd
    not answering is not, but counts as silence."""
    from kvtui.mooncake.leaderwatch import LeaderWatcher

    masters = (("master-0", "http://m0"), ("master-1", "http://m1"))
    states = {"master-0": ha.MasterState("master-0", "http://m0", True, "leader", "serving"),
              "master-1": ha.MasterState("master-1", "http://m1", True, "standby", "standby")}
    monkeypatch.setattr(ha, "master_states", lambda ms, timeout_s=0.6, lag=False: [states[n] for n, _u in ms])
    seen = []
    w = LeaderWatcher("etcd://127.0.0.1:1", masters, seen.append, clock=lambda: 0.0)
    w._poll_masters(1.0)  # (learns master-0 leads)
    w._poll_masters(1.25)
    states["master-0"] = ha.MasterState("master-0", "http://m0", False)
    w._poll_masters(1.5)
    assert seen == []  # (one missed poll is not a failover)
    w._poll_masters(1.75)
    assert len(seen) == 1 and (seen[0].t, seen[0].last_ok, seen[0].old_leader) == (1.5, 1.25, "master-0")
    assert "master-0 stopped serving (it does not answer /health)" in seen[0].text
    states["master-1"] = ha.MasterState("master-1", "http://m1", True, "leader", "serving")
    w.pause()
    for t in (2.0, 2.25, 2.5):
        w._poll_masters(t)
    states["master-1"] = ha.MasterState("master-1", "http://m1", True, "standby", "standby")
    for t in (2.75, 3.0):
        w._poll_masters(t)
    assert len(seen) == 1  # (kvtui's own watch measures that one)
    w.resume()
    states["master-0"] = ha.MasterState("master-0", "http://m0", True, "leader", "serving")
    w._poll_masters(3.25)  # (learns master-0 leads again)
    states["master-0"] = ha.MasterState("master-0", "http://m0", True, "standby", "standby")
    w._poll_masters(3.5)
    w._poll_masters(3.75)
    assert len(seen) == 2 and seen[1].old_leader == "master-0" and "standby" in seen[1].how

    view = {"answered": True, "value": "127.0.0.1:5"}
    monkeypatch.setattr(ha, "etcd_read", lambda eps, key, timeout_s=1.0: (view["answered"], view["value"]))
    now = [10.0]
    only_etcd = LeaderWatcher("etcd://127.0.0.1:1", (), seen.append, clock=lambda: now[0])
    only_etcd._poll_view(10.0)
    view["answered"] = False
    now[0] = 10.5
    only_etcd._poll_view(10.5)
    view["answered"], now[0] = True, 12.5
    only_etcd._poll_view(12.5)
    assert len(seen) == 2 and only_etcd.etcd_silent_s(0.0) == pytest.approx(2.0)
    view["value"] = "127.0.0.1:6"
    only_etcd._poll_view(13.0)
    assert len(seen) == 3 and "names 127.0.0.1:6 instead of 127.0.0.1:5" in seen[2].how
