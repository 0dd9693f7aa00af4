"""kvtui soak's pure parts: the fault schedule (seeded, reproducible, at the rate asked), the growth slope
(least squares after a warm-up, restarts not counted as growth), the TIME_WAIT flag and the fault counts."""

from __future__ import annotations

import random

import pytest

from kvtui.soak.faults import FaultRecord, RecoveryTracker
from kvtui.soak.schedule import KINDS, LINK_CUT, MAX_GAP_S, WORKER_KILL, default_window, parse_kinds, schedule
from kvtui.soak.summary import (
    TIME_WAIT_S,
    fault_summary,
    fit_columns,
    growth_per_hour,
    percentiles,
    resource_growth,
    time_wait_check,
)


# -- the fault schedule ---------------------------------------------------------------------------------
def test_the_same_seed_gives_the_same_schedule_and_another_seed_another():
    a = schedule(7, 1800, 1.0)
    assert a == schedule(7, 1800, 1.0)
    assert a != schedule(8, 1800, 1.0)
    assert [f.t_s for f in a] != [f.t_s for f in schedule(8, 1800, 1.0)]


@pytest.mark.parametrize("duration_s, rate", [(1800, 1.0), (7200, 0.5), (60, 8.0), (3600, 6.0), (600, 0.1)])
def test_the_count_is_the_rate_times_the_span_and_faults_stay_in_it(duration_s, rate):
    start, tail = default_window(duration_s)
    span = duration_s - start - tail
    faults = schedule(3, duration_s, rate)
    assert len(faults) == round(rate * span / 60)
    assert all(start <= f.t_s < duration_s - tail for f in faults)
    assert [f.n for f in faults] == list(range(1, len(faults) + 1))
    times = [f.t_s for f in faults]
    assert times == sorted(times)
    if len(faults) > 1:  # never closer than min(slot / 2, MAX_GAP_S)
        gap = min(span / len(faults) / 2, MAX_GAP_S)
        assert min(b - a for a, b in zip(times, times[1:])) >= gap - 1e-3


def test_moments_are_random_within_their_slots_not_a_fixed_grid():
    faults = schedule(11, 3600, 2.0)
    start, tail = default_window(3600)
    slot = (3600 - start - tail) / len(faults)
    offsets = [f.t_s - start - i * slot for i, f in enumerate(faults)]
    assert all(0 <= o <= slot for o in offsets)
    assert max(offsets) - min(offsets) > slot / 3  # spread over the slot


def test_every_kind_comes_in_turn_and_worker_kills_alternate_roles():
    faults = schedule(5, 7200, 2.0)
    kinds = [f.kind for f in faults]
    k = len(KINDS)
    for i in range(0, len(kinds) - k + 1, k):  # each round holds every kind once
        assert sorted(kinds[i:i + k]) == sorted(KINDS)
    roles = [f.target for f in faults if f.kind == WORKER_KILL]
    assert abs(roles.count("decode") - roles.count("prefill")) <= 1
    assert {f.target for f in faults if f.kind != WORKER_KILL} <= {"master", "store", "segment", "link", "leader",
                                                                   "etcd", "disk"}


def test_kinds_can_be_chosen_and_bad_arguments_are_refused():
    only = schedule(1, 600, 3.0, ("store-full",))
    assert only and {f.kind for f in only} == {"store-full"}
    assert schedule(1, 600, 0.0) == ()
    assert schedule(1, 10, 0.1) == ()  # a span too short for one fault at this rate
    for bad in (dict(rate_per_min=-1.0), dict(rate_per_min=float("inf")), dict(duration_s=-5.0)):
        args = {"seed": 1, "duration_s": 600.0, "rate_per_min": 1.0, **bad}
        with pytest.raises(ValueError):
            schedule(**args)
    with pytest.raises(ValueError):
        schedule(1, 600, 1.0, ())
    with pytest.raises(ValueError):
        schedule(1, 600, 1.0, ("master-kill", "master-kill"))
    with pytest.raises(ValueError):
        schedule(1, 600, 1.0, ("reboot",))


def test_parse_kinds():
    assert parse_kinds("all") == KINDS
    assert parse_kinds("store-full, worker-kill,store-full") == ("store-full", "worker-kill")
    assert parse_kinds(LINK_CUT) == (LINK_CUT,)  # a known kind (refused later without --hosts auto)
    assert LINK_CUT in KINDS  # (drawn only where it applies: kvtui.soak.faults.why_unavailable)
    with pytest.raises(ValueError, match="unknown fault kind reboot"):
        parse_kinds("master-kill,reboot")


# -- growth per hour ------------------------------------------------------------------------------------
def test_a_straight_line_gives_its_slope_per_hour():
    t = [i * 5.0 for i in range(100)]
    g = growth_per_hour(t, [100 + 0.01 * x for x in t])  # 0.01 per second = 36 per hour
    assert g["per_h"] == pytest.approx(36.0)
    assert g["stderr_per_h"] == pytest.approx(0.0, abs=1e-6)
    assert g["samples"] == 100 and g["from_s"] == 0 and g["to_s"] == 495


def test_the_fit_uses_every_sample_not_the_two_ends():
    rng = random.Random(2)
    t = [i * 5.0 for i in range(360)]  # 30 minutes, flat with noise, and a spike at the last sample
    y = [50.0 + rng.gauss(0, 0.5) for _ in t]
    y[-1] += 40.0
    g = growth_per_hour(t, y)
    two_points = (y[-1] - y[0]) / (t[-1] - t[0]) * 3600
    assert two_points > 70
    assert abs(g["per_h"]) < 10 and g["stderr_per_h"] > 0


def test_the_warmup_is_left_out():
    t = [i * 5.0 for i in range(200)]
    y = [min(x, 300.0) * 0.1 for x in t]  # rises for 5 minutes, then flat
    assert growth_per_hour(t, y)["per_h"] > 10
    g = growth_per_hour(t, y, warmup_s=300.0)
    assert g["per_h"] == pytest.approx(0.0, abs=1e-9) and g["from_s"] == 300.0


def test_a_restart_starts_a_new_incarnation_not_growth():
    t = [float(i) for i in range(60)]
    pid = [1] * 30 + [2] * 30
    y = [500.0] * 30 + [100.0] * 30  # a restarted master starts small: naive fit says it shrinks
    assert growth_per_hour(t, y)["per_h"] < -1000
    g = growth_per_hour(t, y, pid)
    assert g["per_h"] == pytest.approx(0.0, abs=1e-9) and g["incarnations"] == 2
    rising = [10 + 2 * (x % 30) for x in t]  # each incarnation rises 2 per second
    assert growth_per_hour(t, rising, pid)["per_h"] == pytest.approx(7200.0)


def test_missing_samples_are_skipped_and_too_few_give_none():
    t = [0.0, 5.0, 10.0, 15.0, 20.0]
    assert growth_per_hour(t, [1.0, None, 3.0, float("nan"), 5.0])["per_h"] == pytest.approx(0.2 * 3600)
    assert growth_per_hour(t[:2], [1.0, 2.0]) is None
    assert growth_per_hour([1.0, 1.0, 1.0], [1.0, 2.0, 3.0]) is None  # no spread in time
    with pytest.raises(ValueError):
        growth_per_hour(t, [1.0])


def test_time_wait_growth_is_flagged_only_when_it_is_judged_and_significant():
    t = [TIME_WAIT_S + i * 5.0 for i in range(120)]
    counts = [60 + int(x / 30) for x in t]  # +120 an hour
    flag = time_wait_check(counts, growth_per_hour(t, counts), 28232)
    assert flag["judged"] and flag["flagged"] and "grows" in flag["why"] and flag["last"] == counts[-1]
    assert not time_wait_check([60] * len(t), growth_per_hour(t, [60] * len(t)), 28232)["flagged"]
    early = growth_per_hour([i * 2.0 for i in range(30)], [10 + i for i in range(30)])  # the first minute
    assert not time_wait_check(counts, early, 28232)["judged"]
    assert time_wait_check([20000], None, 28232)["flagged"]  # half the ephemeral ports


def test_resource_growth_reads_the_series_columns():
    t = [float(i * 5) for i in range(100)]
    cols = {k: [None] * len(t) for k in fit_columns(("kvtui", "master"))}
    cols["t_s"] = t
    cols["rss_bytes_kvtui"] = [50 * 2**20 + x / 3600 * 2**20 for x in t]  # 1 MiB an hour
    cols["pid_kvtui"] = [7.0] * len(t)
    cols["fds_kvtui"] = [15.0] * len(t)
    cols["keys"] = [100.0 * (i % 50) for i in range(len(t))]  # a master restarted halfway, growing 20/s
    cols["pid_master"] = [1.0] * 50 + [2.0] * 50
    cols["tcp_time_wait"] = [60.0] * len(t)
    g = resource_growth(cols, ("kvtui", "master"), warmup_s=0.0)
    assert g["rss_MiB"]["kvtui"]["per_h"] == pytest.approx(1.0)
    assert g["fds"]["kvtui"]["per_h"] == pytest.approx(0.0)
    assert "master" not in g["rss_MiB"]  # never sampled: left out
    assert g["keys"]["per_h"] == pytest.approx(72000.0) and g["keys"]["incarnations"] == 2
    assert g["tcp_established"] is None and g["tcp_time_wait"]["per_h"] == pytest.approx(0.0)


# -- faults and recovery --------------------------------------------------------------------------------
class _R:
    def __init__(self, t_start, t_end, codes=None, mismatches=0):
        self.t_start, self.t_end, self.codes, self.mismatches = t_start, t_end, codes or {}, mismatches


def test_recovery_needs_a_healthy_run_after_the_fault_was_cleared():
    tr = RecoveryTracker()
    rec = FaultRecord(1, "master-kill", "master", 10.0)
    tr.begin(rec)
    rec.t_s = 10.0
    tr.add(_R(9.0, 9.5))  # before the fault: not counted
    tr.add(_R(10.1, 10.2, {-900: 2}))  # failed during it
    tr.cleared(rec, 11.0)
    tr.add(_R(10.5, 11.2))  # healthy but started before it was cleared
    tr.add(_R(11.1, 11.3))
    tr.add(_R(11.3, 11.4, {-900: 1}))  # a late RPC_FAIL: the healthy run starts again
    for k in range(6):
        tr.add(_R(11.5 + k * 0.5, 11.6 + k * 0.5))
    assert tr.recovered.is_set() and rec.recovered_s == pytest.approx(11.6)
    assert rec.recovery_s == pytest.approx(1.6)
    assert rec.failed == 2 and rec.errors == {"RPC_FAIL": 3}
    assert tr.completed == 11 and tr.with_errors == 2


def test_fault_counts_add_up():
    recs = [FaultRecord(1, "master-kill", "master", 5.0, t_s=5.0, cleared_s=6.0, recovered_s=8.0),
            FaultRecord(2, "worker-kill", "decode", 20.0, t_s=21.0, cleared_s=22.0, recovered_s=22.5, lost=9),
            FaultRecord(3, "master-kill", "master", 40.0, t_s=40.0, cleared_s=41.0, recovered_s=None),
            FaultRecord(4, "store-full", "segment", 60.0, error="skipped: the soak ended before its turn")]
    s = fault_summary(recs, ("master-kill", "worker-kill", "store-full"))
    assert (s["scheduled"], s["injected"], s["recovered"], s["not_recovered"], s["skipped"]) == (4, 3, 2, 1, 1)
    assert s["lost"] == 9 and s["recovery_s"] == {"count": 2, "p50": 2.25, "max": 3.0}
    mk = s["by_kind"]["master-kill"]
    assert (mk["injected"], mk["recovered"], mk["recovery_s"]["max"]) == (2, 1, 3.0)
    assert sum(b["injected"] for b in s["by_kind"].values()) == s["injected"]
    assert percentiles([]) == {"count": 0, "p50": None, "max": None}


# -- the command's bad input: one line, exit 2, before anything starts --------------------------------------
@pytest.mark.parametrize("argv, says", [
    (["--duration", "ten"], "--duration must be a duration such as 2h"),
    (["--duration", "0"], "--duration must be positive"),
    (["--chaos", "-1"], "--chaos must be a non-negative number"),
    (["--sample-s", "0"], "--sample-s must be positive"),
    (["--duration", "1h", "--warmup", "2h"], "--warmup must be shorter than --duration"),
    (["--faults", "reboot"], "unknown fault kind reboot"),
    (["--chaos", "1", "--faults", "link-cut"], "--faults link-cut: link-cut needs emulated hosts (--hosts auto)"),
    (["--chaos", "1", "--faults", "store-kill", "--segment-on", "decode"], "store-kill needs the embedded store node"),
    (["--chaos", "1", "--faults", "disk-full"], "disk-full needs the embedded store with a disk tier (--disk-size)"),
    (["--chaos", "1", "--faults", "master-kill", "--master", "127.0.0.1:9", "--metadata", "http://127.0.0.1:9/m"],
     "master-kill needs the embedded cluster"),
    (["--json", "same.csv", "--series", "same.csv"], "--json and --series name the same file"),
])
def test_bad_soak_flags_are_one_line_and_exit_2(argv, says, capsys, tmp_path, monkeypatch):
    from kvtui.cli import main

    monkeypatch.chdir(tmp_path)
    assert main(["soak", "--layout", "tiny", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("kvtui: error: ") and says in err and "\n" not in err, err


def test_parse_duration():
    from kvtui.commands.soak import parse_duration

    assert [parse_duration(x, "--d") for x in ("90", "90s", "30m", "2h", "1h30m", "1.5m")] == [90, 90, 1800, 7200,
                                                                                              5400, 90]


def test_a_new_incarnation_settles_before_it_is_fitted():
    t = [float(i) for i in range(200)]
    pid = [1] * 100 + [2] * 100
    fds = [30.0] * 100 + [min(30 + (x - 100) / 5, 36) for x in t[100:]]  # a new worker opens 6 fds in 30 s
    raw = growth_per_hour(t, fds, pid)
    assert raw["per_h"] > 50 and raw["rise"] > 3
    g = growth_per_hour(t, fds, pid, settle_s=40.0)
    assert g["per_h"] == pytest.approx(0.0, abs=1e-9) and g["samples"] == 160 and g["rise"] == 0


def test_the_summary_says_when_its_slopes_are_projections_and_prints_no_unit_after_n_a():
    from kvtui.soak.summary import SHORT_FIT_S, fault_summary, format_soak

    def summary(elapsed_s: float) -> dict:
        return {"elapsed_s": elapsed_s, "duration_s": elapsed_s, "chaos_per_min": 0, "seed": 0, "sample_s": 5,
                "warmup_s": 120.0, "verified_pages": 10, "mismatches": 0, "faults": fault_summary([], ()),
                "requests": {"completed": 5, "per_s": 1.0, "lost": 0, "with_errors": 0, "dropped": 0, "abandoned": 0},
                "growth_per_hour": {"rss_MiB": {"kvtui": {"per_h": 1.5}}, "fds": {"kvtui": {"per_h": 0.0}}},
                "time_wait": {"last": 3, "max": 4, "per_h": None, "flagged": False, "why": ""},
                "tcp": {"established_last": 2}, "errors": {},
                "targets": {"every_fault_recovered": True, "zero_mismatches": True, "zero_orphans": True,
                            "kvtui_rss_ok": False, "fds_flat": True}}

    short = format_soak(summary(120.0 + 17))
    assert "slopes fitted over 17 s of samples: projections to an hour" in short
    assert "recovery p50 n/a, max n/a" in short and "n/a s" not in short
    assert "projections" not in format_soak(summary(120.0 + SHORT_FIT_S))


def test_a_run_the_soak_ends_after_it_began_recovers_the_fault_marked_cut_short():
    """A fault whose healthy run had begun when the soak ended recovered (at that run's first request), though
    the run was shorter than STABLE_N over STABLE_S; one with no healthy request after it was cleared did not."""
    tr = RecoveryTracker()
    rec = FaultRecord(1, "leader-hang", "leader", 10.0, t_s=10.0)
    tr.begin(rec)
    tr.cleared(rec, 17.0)
    tr.add(_R(17.5, 23.5))
    tr.end(soak_ended=True)
    assert rec.recovered_s == 23.5 and rec.cut_short and rec.recovery_s == pytest.approx(13.5)
    open_rec = FaultRecord(2, "leader-hang", "leader", 30.0, t_s=30.0)
    tr.begin(open_rec)
    tr.cleared(open_rec, 37.0)
    tr.end(soak_ended=True)
    assert open_rec.recovered_s is None
    open_rec.cut_short = True  # (as the injector marks one the soak ended)
    s = fault_summary([rec, open_rec], ("leader-hang",))
    assert (s["recovered"], s["not_recovered"], s["cut_short"]) == (1, 1, 1)


def _lost_report(n: int, kind: str, lost: int, in_window: int | None, causes: dict) -> dict:
    from kvtui.core.failover import KILL_WINDOW_S, FailoverReport

    window = list(KILL_WINDOW_S) if in_window is not None else None
    return FailoverReport(n, kind, 10.0 * n, pages_checked=lost + 100, pages_lost=lost, evicted=0,
                          lost_by_cause=causes, window_s=window, lost_in_window=in_window).as_dict()


def test_acknowledged_pages_lost_fail_the_soak_and_say_where_and_by_which_code():
    """Lost pages are summed beyond and within the leader-kill window, per fault, by cause; the summary's line
    names each fault and its codes, the targets say False, the kinds' lines give their pages."""
    from kvtui.core.failover import UNTRACED, loss_summary, loss_text
    from kvtui.soak.summary import format_soak

    reports = [_lost_report(1, "etcd-outage", 4926, None, {"TASK_PENDING_LIMIT_EXCEEDED": 3901, UNTRACED: 1025}),
               _lost_report(2, "leader-kill", 6, 6, {UNTRACED: 6}),
               _lost_report(3, "leader-kill", 0, 0, {})]
    loss = loss_summary(reports, ["fault 1", "fault 2", "fault 4"])
    assert (loss["pages_lost"], loss["beyond_window"], loss["in_window"]) == (4932, 4926, 6)
    assert loss["by_cause"] == {"TASK_PENDING_LIMIT_EXCEEDED": 3901, UNTRACED: 1031}
    text = loss_text(loss)
    assert text == ("4,932 acknowledged pages lost: 4,926 beyond the leader-kill window, 6 within it; fault 1 "
                    "etcd-outage 4,926 (TASK_PENDING_LIMIT_EXCEEDED 3,901, untraced 1,025); fault 2 leader-kill 6, 6 "
                    "in the window (untraced 6)")
    assert loss_text(loss_summary(reports[2:])) == "none"
    recs = [FaultRecord(1, "etcd-outage", "etcd", 10.0, t_s=10.0, cleared_s=17.0, recovered_s=25.0,
                        failover=reports[0])]
    summary = {"elapsed_s": 150.0, "duration_s": 150.0, "chaos_per_min": 3, "seed": 0, "sample_s": 5,
               "warmup_s": 30.0, "verified_pages": 10, "mismatches": 0,
               "faults": fault_summary(recs, ("etcd-outage",)), "pages_lost": loss,
               "requests": {"completed": 5, "per_s": 1.0, "lost": 0, "with_errors": 0, "dropped": 0, "abandoned": 0},
               "growth_per_hour": {"rss_MiB": {}, "fds": {}},
               "time_wait": {"last": 3, "max": 4, "per_h": None, "flagged": False, "why": ""},
               "tcp": {"established_last": 2}, "errors": {},
               "targets": {"every_fault_recovered": True, "zero_mismatches": True, "zero_pages_lost": False,
                           "zero_pages_lost_in_window": False, "zero_orphans": True, "kvtui_rss_ok": None,
                           "fds_flat": True}}
    out = format_soak(summary)
    assert f"pages lost            {text}" in out
    assert "requests lost 0; acknowledged pages lost 4,926" in out
    assert "0 pages lost False; 0 lost in the leader-kill window False" in out
