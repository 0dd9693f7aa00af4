"""The working-set estimate (workload/working_set.py) against the pages the workloads really issue, the store
plan built on it (kvtui/core/capacity.py), the one-line burst alarm (kvtui/metrics/store_full.py), and the
workload flag checks that turn silent no-ops into one-line errors (kvtui/config/workload.py)."""

from __future__ import annotations

import argparse
import hashlib
from dataclasses import replace

import pytest

from kvtui.config.cluster import add_cluster_arguments
from kvtui.config.layout import add_page_arguments, flag_message
from kvtui.config.workload import add_workload_arguments, workload_from_args
from kvtui.core.capacity import held_pages, plan_store, segment_for, size_flag, store_full_text
from kvtui.core.errors import KvtuiError
from kvtui.core.layout import PRESETS
from kvtui.metrics.store_full import StoreFullAlarm
from workload import SyntheticWorkload, TraceRow, WorkloadSpec
from workload.working_set import WorkingSet, synthetic_working_set, trace_working_set

MIB, GIB = 1 << 20, 1 << 30
SEED = PRESETS["seed"]


def _pages(req, page_tokens: int) -> list[bytes]:
    """The identity of each full page of a request: its whole token prefix (what the page key hashes)."""
    h, out = hashlib.sha256(), []
    tokens = req.tokens[: req.cacheable_tokens]
    for i in range(len(tokens) // page_tokens):
        h.update(tokens[i * page_tokens:(i + 1) * page_tokens].tobytes())
        out.append(h.copy().digest())
    return out


def test_multi_turn_estimate_is_the_pages_of_one_full_round_of_conversations():
    """Before any conversation restarts, every page ever issued is live (each turn re-reads its earlier
    turns), so the distinct pages of the first pool × turns requests are the working set exactly."""
    spec = WorkloadSpec(scenario="multi-turn", overlap=0.75, pool=5, prompt_tokens=64, page_tokens=8)
    ws = synthetic_working_set(spec)
    wl = SyntheticWorkload(spec)
    seen, longest, turns = set(), 0, 0
    while True:
        req = wl.next_request()
        if req.label("turn") == "1" and req.req_id >= spec.pool:
            break  # the first restart
        pages = _pages(req, 8)
        seen.update(pages)
        longest, turns = max(longest, len(pages)), max(turns, int(req.label("turn")))
    assert ws.pages == len(seen) and ws.prompt_pages == longest == 32  # 4 × 64 tokens
    assert ws.formula == "6 shared + 5 conversations × 26 pages" and turns == 7


def test_seed_multi_turn_defaults():
    ws = synthetic_working_set(WorkloadSpec(scenario="multi-turn", prompt_tokens=8 * 256, page_tokens=256))
    assert (ws.pages, ws.prompt_pages) == (6 + 8 * 26, 32)


@pytest.mark.parametrize("scenario", ["shared-system-prompt", "few-shot"])
def test_shared_prefix_estimate_counts_every_pool_prefix_and_the_unique_pages_in_flight(scenario):
    spec = WorkloadSpec(scenario=scenario, overlap=0.5, pool=3, prompt_tokens=80, page_tokens=8, zipf_s=0.0)
    wl = SyntheticWorkload(spec)
    shared = set()
    for _ in range(60):
        pages = _pages(wl.next_request(), 8)
        shared.update(pages[:5])  # 50 % of 10 pages
    ws = synthetic_working_set(spec, concurrency=2)
    assert len(shared) == 3 * 5 and ws.pages == 3 * 5 + 2 * 5 and ws.prompt_pages == 10


def test_random_keeps_only_the_requests_in_flight():
    ws = synthetic_working_set(WorkloadSpec(scenario="random", prompt_tokens=100, page_tokens=8), concurrency=3)
    assert (ws.pages, ws.prompt_pages) == (3 * 12, 12)


def test_length_spread_uses_the_longest_prompt():
    ws = synthetic_working_set(WorkloadSpec(scenario="random", prompt_tokens=100, length_spread=0.5, page_tokens=10))
    assert ws.prompt_pages == 15


def test_trace_estimate_is_the_distinct_full_blocks():
    rows = [TraceRow(1, 0, 1024, 1, (1, 2)), TraceRow(2, 5, 1500, 1, (1, 2, 3)),  # block 3 is partial
            TraceRow(3, 9, 2048, 1, (7, 8, 9, 10))]
    ws = trace_working_set(rows, 512, 256)
    assert (ws.pages, ws.prompt_pages) == ((2 + 4) * 2, 4 * 2)
    assert ws.formula == "6 distinct full blocks × 2 pages"
    with pytest.raises(ValueError, match="does not divide"):
        trace_working_set(rows, 512, 300)


def test_segment_arithmetic_keeps_the_working_set_below_the_watermark():
    page = 14 * MIB
    assert held_pages(GIB, page, 0.9) == 65  # 73 pages fit, 65 below 90 %
    need = segment_for(214, page, 0.9)
    assert need % MIB == 0 and held_pages(need, page, 0.9) >= 214 > held_pages(need - MIB, page, 0.9)
    assert size_flag(448 * MIB) == "448MiB" and size_flag(need) == "3.3GiB" and int(3.3 * GIB) >= need


def _ws(pages=214, prompt=32, source="multi-turn"):
    return WorkingSet(source, pages, prompt, "6 shared + 8 conversations × 26 pages")


def test_plan_sizes_the_default_store_up_for_the_working_set_within_free_memory():
    page = 14 * MIB
    small = plan_store(_ws(50, 8, "shared-system-prompt"), page, 0.9, given_bytes=None, available_bytes=20 * GIB,
                       default_bytes=GIB)
    assert small.segment_bytes == GIB and small.line == "" and not small.warning
    big = plan_store(_ws(), page, 0.9, given_bytes=None, available_bytes=20 * GIB, default_bytes=GIB)
    assert big.segment_bytes == segment_for(214, page, 0.9) and "multi-turn working set" in big.line
    assert "90 % eviction watermark" in big.line and len(big.line.splitlines()) == 1
    capped = plan_store(_ws(), page, 0.9, given_bytes=None, available_bytes=4 * GIB, default_bytes=GIB)
    assert capped.segment_bytes == 2 * GIB and capped.warning and "lower --pool" in capped.line
    with pytest.raises(ValueError, match="cannot hold one prompt"):
        plan_store(_ws(prompt=400), page, 0.9, given_bytes=None, available_bytes=4 * GIB, default_bytes=GIB)


def test_plan_warns_about_a_given_size_too_small_and_refuses_one_below_a_prompt():
    page = 14 * MIB
    ok = plan_store(_ws(), page, 0.9, given_bytes=4 * GIB, given_text="4GiB", available_bytes=20 * GIB,
                    default_bytes=GIB)
    assert ok.segment_bytes == 4 * GIB and ok.line == ""
    warn = plan_store(_ws(), page, 0.9, given_bytes=GIB, given_text="1GiB", available_bytes=20 * GIB,
                      default_bytes=GIB)
    assert warn.warning and warn.segment_bytes == GIB
    assert "--store-size 1GiB keeps 65 pages" in warn.line and "--store-size 3.3GiB would fit" in warn.line
    with pytest.raises(ValueError) as exc:
        plan_store(_ws(8, 8, "shared-system-prompt"), page, 0.9, given_bytes=16 * MIB, given_text="16MiB",
                   available_bytes=20 * GIB, default_bytes=GIB)
    assert "--store-size 16MiB has room for 1 page of" in str(exc.value)
    assert "--store-size 112MiB at least" in str(exc.value)
    more = plan_store(_ws(), page, 0.9, given_bytes=8 * GIB, given_text="8GiB", available_bytes=6 * GIB,
                      default_bytes=GIB)
    assert more.warning and "more than this machine's free memory" in more.line and "needs 3.3GiB" in more.line


def test_store_full_text_names_the_cause_and_the_remedy():
    page = 14 * MIB
    full = store_full_text(12, 1.0, _ws(), page, GIB, 0.9, 10.0)
    assert full.startswith("store full: 12 puts failed with NO_AVAILABLE_HANDLE in 1.0 s — the working set")
    assert "raise --store-size to 3.3GiB or lower --pool" in full
    leased = store_full_text(3, 1.2, _ws(20), page, GIB, 0.9, 10.0)
    assert "leased" in leased and "--lease-ttl" in leased
    gone = store_full_text(48, 1.0, _ws(20), page, GIB, 0.9, 10.0, dead_nodes=("store",))
    assert "the store node kvtui started is down, and its segment with it" in gone  # (the only node: unnamed)
    two = store_full_text(48, 1.0, _ws(20), page, GIB, 0.9, 10.0, dead_nodes=("store-0", "store-1"))
    assert "the store nodes kvtui started (store-0, store-1) are down, and their segments with them" in two
    assert "--lease-ttl" not in gone and "--store-size" not in gone  # (no remedy that cannot help)
    tier = store_full_text(30, 1.0, _ws(20), page, GIB, 0.9, 10.0, disk_tier=True)
    assert "full while the disk tier takes its evictions" in tier and "one offload round a second" in tier
    assert "--lease-ttl" not in tier  # (leases are not what holds DRAM here)


def test_alarm_makes_one_line_per_burst():
    alarm = StoreFullAlarm(lambda n, s: f"{n} in {s:.1f}", window_s=1.0, quiet_s=30.0)
    lines = [alarm.add(n, t / 10) for t, n in enumerate([0, 2, 3, 0, 1, 1, 1, 1, 1, 1, 1, 4, 5, 0])]
    made = [x for x in lines if x]
    assert made == ["16 in 1.0"]  # 2 + 3 + 7 × 1 + 4: the refused puts of the burst's first second
    for t in range(20, 300):
        assert alarm.add(1, t / 10) is None  # within the quiet 30 s of the line
    assert alarm.add(1, 31.2) == f"{5 + 280 + 1} in 30.0"  # every refused put since the line
    assert alarm.flush(40.0) is None and len(alarm.lines) == 2


def test_alarm_flushes_a_burst_the_run_ended_in():
    alarm = StoreFullAlarm(lambda n, s: f"{n}", window_s=1.0)
    assert alarm.add(5, 10.0) is None and alarm.flush(10.4) == "5" and alarm.flush(11.0) is None


def _parser():
    p = argparse.ArgumentParser()
    add_workload_arguments(p)
    add_page_arguments(p)
    add_cluster_arguments(p)
    return p


@pytest.mark.parametrize("argv,message", [
    (["--speed", "0"], "--speed applies to --trace replays only"),
    (["--speed", "2"], "--speed applies to --trace replays only"),
    (["--strict"], "--strict applies to --trace replays only"),
    (["--trace-block-tokens", "256"], "--trace-block-tokens applies to --trace replays only"),
    (["--layout", "tiny", "--prompt-tokens", "7"], r"--prompt-tokens 7 is less than one KV page \(--page-tokens 8\)"),
    (["--prompt-tokens", "0"], "^--prompt-tokens must be an integer"),
    (["--prompt-tokens", str(1 << 21)], "^--prompt-tokens must be an integer"),
    (["--seed", "-1"], "^--seed must be an integer >= 0"),
    (["--output-tokens", "0"], "^--output-tokens must be an integer between 1 and"),
])
def test_flags_that_would_change_nothing_are_errors_naming_flags(argv, message):
    with pytest.raises(KvtuiError, match=message) as exc:
        workload_from_args(_parser().parse_args(argv), SEED if "tiny" not in argv else PRESETS["tiny"])
    assert "_" not in str(exc.value).split(",")[0]


def test_trace_flags_need_a_trace_and_prompt_tokens_none(tmp_path):
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"timestamp": 0, "input_length": 600, "output_length": 1, "hash_ids": [1, 2]}\n')
    tiny = PRESETS["tiny"]
    with pytest.raises(KvtuiError, match="--prompt-tokens applies to synthetic scenarios only"):
        workload_from_args(_parser().parse_args(["--trace", str(trace), "--prompt-tokens", "64"]), tiny)
    with pytest.raises(KvtuiError, match="--output-tokens applies to synthetic scenarios only"):
        workload_from_args(_parser().parse_args(["--trace", str(trace), "--output-tokens", "64"]), tiny)
    with pytest.raises(KvtuiError, match="--page-tokens 300 does not divide --trace-block-tokens 512"):
        workload_from_args(_parser().parse_args(["--trace", str(trace)]), replace(tiny, page_tokens=300))
    with pytest.raises(KvtuiError, match="--trace-block-tokens must be at least 1"):
        workload_from_args(_parser().parse_args(["--trace", str(trace), "--trace-block-tokens", "0"]), tiny)
    plan = workload_from_args(_parser().parse_args(["--trace", str(trace), "--speed", "max", "--strict"]), tiny)
    assert plan.build().speed is None
    assert plan.working_set(tiny.page_tokens, 1).pages == 64  # one full block of 512 tokens, 8-token pages


def test_flag_message_translates_the_workload_and_layout_fields():
    assert flag_message("prompt_tokens must be an integer") == "--prompt-tokens must be an integer"
    assert flag_message("layout field page-tokens must be a positive integer, got 0") == \
        "--page-tokens must be a positive integer, got 0"
    assert flag_message("unknown scenario 'x'") == "unknown --scenario 'x'"
    assert flag_message("no such trace file") == "no such trace file"


def test_the_plan_holds_the_working_set_the_store_is_sized_for():
    from kvtui.cli import build_parser
    from kvtui.config.plan import plan_from_args

    plan = plan_from_args(build_parser().parse_args(["run", "--scenario", "multi-turn", "--store-size", "5GiB"]))
    assert (plan.working_set.pages, plan.working_set.prompt_pages) == (214, 32)
    assert plan.cluster.store_bytes == 5 << 30 and plan.cluster.store_note == "" and plan.store_limit is None


@pytest.mark.parametrize("argv,needle", [
    (["run", "--speed", "0"], "--speed applies to --trace replays only"),
    (["watch", "--headless", "--duration", "1", "--strict"], "--strict applies to --trace replays only"),
    (["run", "--layout", "tiny", "--prompt-tokens", "3"], "--prompt-tokens 3 is less than one KV page"),
    (["run", "--store-size", "16MiB"], "--store-size 16MiB has room for 1 page of 14.0 MiB, not one prompt"),
    (["run", "--scenario", "multi-turn", "--store-size", "400MiB"], "not one prompt (32 pages"),
    (["run", "--page-tokens", "0"], "--page-tokens must be a positive integer"),
])
def test_cli_refuses_in_one_line_before_starting_anything(capsys, argv, needle):
    from kvtui.cli import main

    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("kvtui: error: ") and needle in err and len(err.splitlines()) == 1, err


def _planned(monkeypatch, argv):
    """The RunPlan ``kvtui ARGV`` (watch or run) starts with, taken where the command hands it on (nothing
    starts)."""
    import kvtui.commands.run as run_cmd
    import kvtui.commands.watch as watch_cmd
    from kvtui.cli import main

    seen = []
    monkeypatch.setattr(watch_cmd, "_run", lambda plan, *a, **k: seen.append(plan) or 0)
    monkeypatch.setattr(run_cmd, "_run", lambda plan, *a, **k: seen.append(plan) or 0)
    assert main(argv) == 0 and len(seen) == 1
    return seen[0]


def _holds(plan, spec, in_flight):
    """``spec``'s pages stay below the 90 % watermark of the plan's segment, and one publish of the requests in
    flight (each its whole prompt) fits above it: eviction only starts once a put has crossed the watermark."""
    page = plan.layout.layout.page_bytes
    ws = synthetic_working_set(spec, in_flight)
    store = plan.cluster.store_bytes
    return ws.pages <= held_pages(store, page, 0.9) and in_flight * ws.prompt_pages * page <= store - int(store * 0.9)


@pytest.mark.parametrize("argv", [
    ["watch"],  # the default
    ["watch", "--layout", "seed"],  # the demo card's layout
    ["watch", "--layout", "tiny"],
    ["watch", "--pool", "3", "--concurrency", "2"],
    ["watch", "--scenario", "multi-turn", "--overlap", "40", "--prompt-tokens", "1024"],
])
def test_the_monitors_store_holds_every_scenario_and_overlap_its_keys_reach(monkeypatch, argv):
    """``s`` cycles the scenarios, ``[`` / ``]`` step the overlap by 5 % and the settings dialog takes any whole
    percent: the store kvtui sizes for the monitor holds each of them at the pool, prompt length and
    concurrency it starts with (the default demo used to get 1 GiB: NO_AVAILABLE_HANDLE at overlap 0 % and in
    multi-turn)."""
    from kvtui.core.knobs import SCENARIOS

    plan = _planned(monkeypatch, [*argv, "--headless", "--duration", "1"])
    spec, in_flight = plan.workload.spec, plan.concurrency * plan.cluster.topology.decode_workers
    for scenario in SCENARIOS:
        for percent in range(101):
            setting = replace(spec, scenario=scenario, overlap=percent / 100)
            assert _holds(plan, setting, in_flight), (scenario, percent, plan.cluster.store_bytes >> 20)
    assert plan.store_limit == plan.cluster.store_bytes  # (a larger pool or page is checked when asked for)


def test_the_first_screen_starts_on_a_laptop_with_4_gib_free_and_its_store_never_fills(monkeypatch):
    """`make watch` (kvtui watch, no flags) sized a 4.4 GiB segment for the seed layout: on a laptop with 4 GiB
    free it got half of that, with a warning, and evicted (the store panel red) once a key reached multi-turn.
    Its default layout's store fits whatever key is pressed; the seed demo is one flag away, said in --help."""
    import types

    import psutil

    from kvtui.cli import build_parser
    from kvtui.core.defaults import WATCH_LAYOUT
    from kvtui.core.knobs import SCENARIOS

    free = 4 * GIB
    monkeypatch.setattr(psutil, "virtual_memory", lambda: types.SimpleNamespace(available=free, total=2 * free))
    plan = _planned(monkeypatch, ["watch", "--headless", "--duration", "1"])
    assert plan.layout.name == WATCH_LAYOUT and not plan.cluster.store_note.startswith("warning")
    assert plan.cluster.store_bytes <= free // 2  # a store takes at most half the free memory
    spec, in_flight = plan.workload.spec, plan.concurrency * plan.cluster.topology.decode_workers
    assert all(_holds(plan, replace(spec, scenario=sc, overlap=pc / 100), in_flight)
               for sc in SCENARIOS for pc in range(101))
    seed = _planned(monkeypatch, ["watch", "--headless", "--duration", "1", "--layout", "seed"])
    assert seed.cluster.store_note.startswith("warning: store 2.0 GiB")  # (what `make watch` gave such a laptop)
    assert "--layout seed" in " ".join(build_parser().commands["watch"].description.split())


@pytest.mark.parametrize("argv", [["run"], ["run", "--overlap", "0"], ["run", "--scenario", "random"],
                                  ["run", "--scenario", "multi-turn"], ["run", "--pool", "12"]])
def test_a_run_gets_a_store_that_holds_its_own_knobs(monkeypatch, argv):
    plan = _planned(monkeypatch, argv)
    assert _holds(plan, plan.workload.spec, plan.concurrency), plan.cluster.store_bytes >> 20
    note = plan.cluster.store_note
    assert note.startswith(f"store {plan.cluster.store_bytes / GIB:.1f} GiB: ") and "--store-size overrides" in note


def test_the_monitor_on_a_given_store_size_plans_for_the_knobs_it_starts_with(monkeypatch):
    """With --store-size the store is the user's: the monitor starts on it when it holds the starting prompt
    (a multi-turn turn of this prompt would not fit, which is the user's call), and refuses no change."""
    plan = _planned(monkeypatch, ["watch", "--headless", "--duration", "1", "--prompt-tokens", "4096", "--pool", "1",
                                  "--store-size", "512MiB"])
    assert plan.cluster.store_bytes == 512 * MIB and plan.store_limit is None
    assert plan.working_set.setting == "" and plan.working_set.source == "shared-system-prompt"


def test_a_given_store_size_is_the_users_call_and_says_what_would_fit():
    from kvtui.cli import build_parser
    from kvtui.config.plan import plan_from_args

    plan = plan_from_args(build_parser().parse_args(["run", "--overlap", "0", "--store-size", "1GiB"]))
    assert plan.cluster.store_bytes == GIB and plan.store_limit is None
    assert plan.cluster.store_note.startswith("warning: --store-size 1GiB has 102.4 MiB above the 90 % eviction "
                                              "watermark, less than one publish of the requests in flight (8 pages")
    assert plan.cluster.store_note.endswith("expect refused puts; --store-size 1.1GiB would fit")


def test_segment_for_makes_room_above_the_watermark_for_one_publish():
    page = 14 * MIB
    assert segment_for(8, page, 0.9, burst_pages=8) == 1120 * MIB  # 8 × 14 MiB = 10 % of 1,120 MiB
    assert segment_for(214, page, 0.9, burst_pages=32) == 4480 * MIB > segment_for(214, page, 0.9)
    burst = store_full_text(3, 1.0, replace(_ws(20), burst_pages=8), page, GIB, 0.9, 10.0)
    assert "one publish of the requests in flight (8 pages of 14.0 MiB = 112.0 MiB) does not fit the 102.4 MiB" in burst
    assert "raise --store-size to 1.1GiB" in burst and "--lease-ttl" not in burst


def test_a_trace_too_big_names_a_layout_only_when_it_fits():
    """The hint for a trace the machine cannot hold names ``--layout tiny`` only when tiny's bytes per token
    fit; with a layout already smaller than tiny it says to replay fewer rows instead."""
    tiny = PRESETS["tiny"].bytes_per_token

    def line(page_bytes: int, pages: int) -> str:
        ws = WorkingSet("trace", pages, 40, "the longest row")
        return plan_store(ws, page_bytes, 0.9, given_bytes=None, available_bytes=2 * GIB, default_bytes=64 * MIB,
                          page_tokens=512).line

    small = line(512 * 2, 4_000_000)  # 2 B/token, as the guide's trace runs: far below tiny's
    assert "--layout tiny" not in small and "replay fewer rows (--requests N)" in small
    big = line(512 * 4 * tiny, 1_500)  # four times tiny's: tiny fits
    assert f"--layout tiny has {tiny:,}" in big and "B/token fits" in big


def test_output_tokens_reach_the_spec_and_the_description():
    """--output-tokens (a start-up flag, the scenario's decode length) reaches the workload and what the monitor,
    a recording and --json describe; without it, the workload's own default."""
    from workload import WorkloadSpec

    tiny = PRESETS["tiny"]
    plan = workload_from_args(_parser().parse_args(["--output-tokens", "300"]), tiny)
    assert plan.spec.output_tokens == 300 and plan.description["output_tokens"] == 300
    plan = workload_from_args(_parser().parse_args([]), tiny)
    assert plan.spec.output_tokens == WorkloadSpec().output_tokens == plan.description["output_tokens"]


def test_tiered_line_says_what_goes_to_disk_and_when_even_disk_is_short() -> None:
    from kvtui.core.capacity import tiered_line

    ws = WorkingSet("multi-turn", 50, 8, "8 prompts × 6 shared pages", burst_pages=8)
    page = 14 << 20
    assert tiered_line(ws, page, 0.9, 2 << 30, 4 << 30) == ""  # DRAM keeps it all: nothing to say
    line = tiered_line(ws, page, 0.9, 256 << 20, 2 << 30)
    assert line.startswith("tiers: ") and "keeps 16 pages below its 90 % eviction watermark" in line
    assert "2.0 GiB disk tier" in line and "warning" not in line
    short = tiered_line(ws, page, 0.9, 256 << 20, 300 << 20)
    assert short.startswith("warning: ") and "--disk-size 700MiB would hold it" in short
