"""The store faults' loss check (kvtui.core.storeloss): which acknowledged pages a store-kill or a disk-full took
and why, the soak's lines, targets and exit figures built from it, and the injector's wiring with a fake cluster
(no store)."""

from __future__ import annotations

import pytest
from waits import wait_for

from kvtui.core.failover import loss_summary, loss_text
from kvtui.core.storeloss import (
    DISK_DROPPED,
    DISK_FULL,
    NOT_EVICTED,
    OUT_OF_ORDER,
    STORE_KILL,
    KeyCensus,
    classify,
    expected_text,
    unchecked,
)
from kvtui.engine.ledger import PublishedLedger
from kvtui.soak.faults import FaultRecord
from kvtui.soak.summary import fault_summary, format_soak


def _adds_up(r) -> None:
    assert r.pages_checked == r.pages_kept + r.gone_with_dram + r.pages_evicted + r.pages_lost
    assert r.pages_checked == r.memory_only + r.with_disk
    assert r.pages_lost == sum(r.lost_by_cause.values())


# -- which pages a fault took, and why ---------------------------------------------------------------------------
def test_a_store_kill_loses_the_pages_with_a_disk_replica_and_expects_those_only_its_dram_held():
    before = KeyCensus({"mem": (1, 0), "disk": (0, 1), "both": (1, 1), "kept": (0, 1), "absent": (0, 0),
                        "again": (1, 0)}, offloads=10, disk_evictions=0)
    after = KeyCensus({"mem": (0, 0), "disk": (0, 0), "both": (0, 0), "kept": (0, 1), "absent": (0, 0),
                       "again": (1, 0)}, offloads=12, disk_evictions=0)
    r = classify(1, STORE_KILL, 10.0, before, after, republished=["again"], checked_s=13.5)
    assert (r.pages_checked, r.memory_only, r.with_disk) == (5, 2, 3)  # ("absent" was not the store's to lose)
    assert (r.pages_kept, r.gone_with_dram, r.pages_lost) == (1, 2, 2)  # ("again" was gone: published anew)
    assert r.lost_by_cause == {DISK_DROPPED: 2} and set(r.lost_sample) == {"disk", "both"}
    assert r.republished == 1 and r.offloads == 2 and r.disk_evictions == 0
    _adds_up(r)
    assert r.text() == ("5 acknowledged pages checked: 1 kept, 2 gone with the store node's DRAM, 2 lost (disk "
                        "replica dropped 2); 1 of the gone published again since")


def test_a_store_kill_looked_at_before_the_client_ttl_ran_out_tells_the_tiers_evictions_from_the_drop():
    before = KeyCensus({"evicted": (0, 1), "dropped": (0, 1), "mem": (1, 0)}, 0, 3)
    predrop = KeyCensus({"evicted": (0, 0), "dropped": (0, 1), "mem": (1, 0)}, 0, 4)  # (the dead node's: listed)
    after = KeyCensus({}, 0, 5)
    r = classify(1, STORE_KILL, 10.0, before, after, predrop=predrop)
    assert (r.gone_with_dram, r.pages_evicted, r.pages_lost, r.lost_sample) == (1, 1, 1, ["dropped"])
    _adds_up(r)
    assert r.text() == ("3 acknowledged pages checked: 0 kept, 1 gone with the store node's DRAM, 1 evicted by the "
                        "disk tier, 1 lost (disk replica dropped 1)")
    blind = classify(1, STORE_KILL, 10.0, before, after)  # (no look before the drop: the tier's evictions count)
    assert blind.pages_lost == 2 and blind.text().endswith("the disk tier evicted meanwhile: an upper bound")


def test_a_store_kill_without_a_disk_tier_loses_nothing_it_was_not_expected_to():
    before = KeyCensus({f"k{i}": (1, 0) for i in range(4)})
    r = classify(2, STORE_KILL, 5.0, before, KeyCensus({}))
    assert (r.pages_checked, r.gone_with_dram, r.pages_lost, r.lost_by_cause) == (4, 4, 0, {})
    _adds_up(r)


def test_a_full_disk_tier_accounts_for_what_it_evicted_first_in_first_out():
    before = KeyCensus({"d1": (0, 1), "d2": (0, 1), "both": (1, 1), "m1": (1, 0), "m2": (1, 0)}, 100, 4)
    # the tier evicted its oldest pages (on disk before the fault) and then some offloaded during it: expected
    all_gone = KeyCensus({"d1": (0, 0), "d2": (0, 0), "both": (0, 0), "m1": (0, 0), "m2": (0, 1)}, 300, 9)
    r = classify(3, DISK_FULL, 20.0, before, all_gone)
    assert (r.pages_evicted, r.pages_lost, r.gone_with_dram, r.disk_evictions) == (4, 0, 0, 5)
    _adds_up(r)
    # a page only in memory before the fault gone while an older one stayed on disk: the tier's order does not
    # account for it
    d2_stayed = KeyCensus({"d1": (0, 0), "d2": (0, 1), "both": (0, 0), "m1": (0, 0), "m2": (0, 1)}, 300, 9)
    r = classify(3, DISK_FULL, 20.0, before, d2_stayed)
    assert (r.pages_evicted, r.pages_lost, r.lost_by_cause, r.lost_sample) == (2, 1, {OUT_OF_ORDER: 1}, ["m1"])
    _adds_up(r)
    # nothing evicted (or the counter unknown): every page gone is lost
    for counted in (4, None):
        r = classify(3, DISK_FULL, 20.0, before, KeyCensus(all_gone.replicas, 300, counted))
        assert (r.pages_evicted, r.pages_lost, r.lost_by_cause) == (0, 4, {NOT_EVICTED: 4})
        _adds_up(r)


def test_a_check_that_could_not_be_made_says_why_and_counts_as_unchecked():
    r = unchecked(4, STORE_KILL, 50.0, "the soak ended first")
    assert r.pages_lost is None and r.text() == "acknowledged pages unchecked (the soak ended first)"
    loss = loss_summary([r.as_dict()], ["fault 4"])
    assert (loss["unchecked"], loss["unchecked_labels"]) == (1, ["fault 4 store-kill"])
    assert loss_text(loss) == "none (unchecked: fault 4 store-kill)"


# -- the soak's summary --------------------------------------------------------------------------------------------
def _summary(records: list, checks: list[dict], zero_lost: bool | None) -> dict:
    pages = loss_summary(checks, [f"fault {c['n']}" for c in checks])
    return {"elapsed_s": 150.0, "duration_s": 150.0, "chaos_per_min": 3, "seed": 0, "sample_s": 5,
            "warmup_s": 30.0, "verified_pages": 10, "mismatches": 0,
            "faults": fault_summary(records, (STORE_KILL, DISK_FULL)), "pages_lost": pages, "store_checks": checks,
            "requests": {"completed": 5, "per_s": 1.0, "lost": 0, "with_errors": 0, "dropped": 0, "abandoned": 0},
            "growth_per_hour": {"rss_MiB": {}, "fds": {}},
            "time_wait": {"last": 3, "max": 4, "per_h": None, "flagged": False, "why": ""},
            "tcp": {"established_last": 2}, "errors": {},
            "targets": {"every_fault_recovered": True, "zero_mismatches": True, "zero_pages_lost": zero_lost,
                        "zero_orphans": True, "kvtui_rss_ok": None, "fds_flat": True}}


def test_the_summary_gives_each_store_faults_check_and_counts_only_the_lost_pages():
    kill = classify(1, STORE_KILL, 10.0, KeyCensus({"a": (1, 0), "b": (0, 1), "c": (0, 1)}), KeyCensus({}))
    full = classify(2, DISK_FULL, 40.0, KeyCensus({"x": (0, 1), "y": (0, 1)}, 0, 0),
                    KeyCensus({"x": (0, 0), "y": (0, 1)}, 9, 1))
    checks = [kill.as_dict(), full.as_dict()]
    records = [FaultRecord(1, STORE_KILL, "store", 10.0, t_s=10.0, cleared_s=11.0, recovered_s=13.0,
                           loss_check=checks[0]),
               FaultRecord(2, DISK_FULL, "disk", 40.0, t_s=40.0, cleared_s=45.0, recovered_s=46.0,
                           loss_check=checks[1])]
    f = fault_summary(records, (STORE_KILL, DISK_FULL))
    assert f["pages_lost"] == 2 and f["by_kind"][STORE_KILL]["pages_lost"] == 2
    assert f["by_kind"][STORE_KILL]["pages_checked"] == {"checks": 1, "unchecked": 0, "checked": 3, "kept": 0,
                                                         "gone_with_dram": 1, "evicted": 0, "lost": 2}
    assert f["by_kind"][DISK_FULL]["pages_checked"]["evicted"] == 1
    loss = loss_summary(checks, ["fault 1", "fault 2"])
    assert (loss["pages_lost"], loss["failover_checks"], loss["by_cause"]) == (2, 0, {DISK_DROPPED: 2})
    assert loss_text(loss) == "2 acknowledged pages lost: fault 1 store-kill 2 (disk replica dropped 2)"
    assert expected_text(checks) == ("1 gone with the store node's DRAM, 1 evicted by the disk tier (expected, not "
                                     "counted)")
    out = format_soak(_summary(records, checks, False))
    assert ("store-kill          1 injected, 1 recovered; recovery p50 3.00 s, max 3.00 s; requests lost 0; "
            "acknowledged pages checked 3: 0 kept, 1 gone with the store node's DRAM, 2 lost") in out
    assert "acknowledged pages checked 2: 1 kept, 1 evicted by the disk tier, 0 lost" in out
    assert ("pages lost            2 acknowledged pages lost: fault 1 store-kill 2 (disk replica dropped 2); 1 gone "
            "with the store node's DRAM, 1 evicted by the disk tier (expected, not counted)") in out
    assert "0 pages lost False; 0 orphans" in out and "leader-kill window" not in out


# -- the ledger and the engine's option ----------------------------------------------------------------------------
def test_the_ledger_forgets_only_pages_not_acknowledged_again_since():
    ledger = PublishedLedger()
    ledger.add(["a", "b", "c"], 1.0)
    ledger.add(["b"], 5.0)
    assert ledger.forget(["a", "b", "zz"], acked_before=3.0) == 1
    assert ledger.snapshot() == {"c": 1.0, "b": 5.0}


def test_a_soak_with_store_faults_asks_the_engine_to_keep_its_ledger(tmp_path):
    from kvtui.cli import build_parser
    from kvtui.commands.soak import _check_kinds, _plan
    from kvtui.config.plan import plan_from_args

    def soak_plan(*argv: str):
        args = build_parser().parse_args(["soak", "--layout", "tiny", "--store-size", "16MiB", *argv])
        return args, _check_kinds(args, _plan(args))

    args, plan = soak_plan("--chaos", "1", "--disk-size", "16MiB", "--disk-path", str(tmp_path))
    assert DISK_FULL in plan.kinds and STORE_KILL in plan.kinds and plan.checks_pages
    assert DISK_FULL not in soak_plan("--chaos", "1")[1].kinds  # (no disk tier: it does not apply)
    assert not soak_plan("--chaos", "1", "--faults", "worker-kill")[1].checks_pages
    assert not soak_plan()[1].checks_pages  # (no chaos: no fault)
    from dataclasses import replace

    run = plan_from_args(args, run_for_s=60.0, always_replace_workers=True, count_lost=True)
    assert not run.engine_options().ack_ledger and replace(run, ack_ledger=True).engine_options().ack_ledger


# -- the injector, with a fake cluster -----------------------------------------------------------------------------
def test_a_disk_full_fault_fills_through_the_backend_then_checks_the_pages_it_found_before(monkeypatch):
    from kvtui.config.workload import synthetic_description
    from kvtui.core.layout import PRESETS
    from kvtui.live import LiveSession
    from kvtui.soak.faults import Injector, RecoveryTracker
    from kvtui.soak.schedule import Fault
    from kvtui.testing.fake_engine import FakeCluster, FakeClusterOptions, FakeEngine
    from workload import SyntheticWorkload, WorkloadSpec

    class Filled(FakeCluster):  # the fill evicts the oldest pages on disk, and those that were only in memory
        def fill_store(self, **kw):
            out = super().fill_store(**kw)
            assert self.listed is not None
            self.listed.update({"d1": (0, 0), "m1": (0, 0)})
            self.disk_evictions += 1
            return out

    tiny = PRESETS["tiny"]
    engine = FakeEngine(tiny, store_bytes=16 << 20)
    engine.published = PublishedLedger()
    engine.published.add(["d1", "d2", "m1", "old"], 0.0)
    cluster = Filled(embedded=True, settings=FakeClusterOptions(disk_bytes=64 << 20))
    cluster.listed = {"d1": (0, 1), "d2": (0, 1), "m1": (1, 0)}  # ("old": evicted long since)
    spec = WorkloadSpec(scenario="shared-system-prompt", pool=3, prompt_tokens=4 * tiny.page_tokens,
                        page_tokens=tiny.page_tokens, rate=0.0)
    session = LiveSession(engine, SyntheticWorkload(spec), synthetic_description(spec), cluster=cluster)
    tracker, said = RecoveryTracker(), []
    session.subscribe_results(tracker.add)
    inj = Injector(session, (Fault(1, 0.0, DISK_FULL, "disk"),), tracker, end_s=60.0, recovery_timeout_s=30.0,
                   pause_s=1.0, note_pid=lambda name, pid: None, say=said.append)
    session.start()
    try:
        inj.start()
        inj.join(20.0)
        assert not inj.is_alive() and inj.error is None
    finally:
        session.stop()
    rec = inj.records[0]
    assert rec.error is None and rec.recovery_s is not None, rec
    assert cluster.fills == [{"object_bytes": 256 << 10, "max_bytes": (16 << 20) + (64 << 20),
                              "retry_refused_s": pytest.approx(60.0)}]
    c = rec.loss_check
    assert c is not None and (c["pages_checked"], c["pages_evicted"], c["pages_lost"]) == (3, 1, 1), c
    assert c["lost_by_cause"] == {OUT_OF_ORDER: 1} and c["lost_sample"] == ["m1"]  # (d2 stayed on disk)
    assert "old" not in engine.published.snapshot()  # (the look before the fault forgot it: not listed)
    wait_for(lambda: any("disk-full: 3 acknowledged pages checked" in line for line in said), 5.0, "the check's line",
             detail=lambda: said)
