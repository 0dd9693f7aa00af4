"""`kvtui bench --trace` and `--ui` end to end on a short run: the figures printed come from the replays."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvtui.bench.reuse import ReuseFigures
from kvtui.bench.tcp_sweep import TcpSweepFigures
from kvtui.bench.trace import TraceFigures
from kvtui.bench.ui import UiFigures
from kvtui.cli import main
from kvtui.testing.shapes import shape_errors
from workload import read_trace
from workload.stats import ideal_hits

pytestmark = pytest.mark.integration
TRACES = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "traces"
SMALL = ["--layers", "1", "--kv-heads", "1", "--head-dim", "1", "--elem-bytes", "1", "--page-tokens", "512"]


def test_bench_trace_rounds_replay_exactly_and_report_their_ratio(tmp_path):
    source = TRACES / "conversation_head1000.jsonl"
    if not source.exists():
        pytest.skip("../shared/data/traces is not present")
    trace = tmp_path / "head300.jsonl"
    trace.write_text("".join(source.read_text().splitlines(keepends=True)[:300]))
    rows, _ = read_trace(trace)
    ideal, _tokens = ideal_hits(rows)  # one request at a time, room for every page: 512-token pages = blocks
    out = tmp_path / "bench.json"
    assert main(["bench", "--trace", str(trace), *SMALL, "--rounds", "2", "--json", str(out)]) == 0
    b = json.loads(out.read_text())
    assert shape_errors(b, TraceFigures) == []  # every key and type as the bench's type declares them
    assert len(b["rounds"]) == 2 and ideal > 0
    for r in b["rounds"]:
        assert r["engine_pages_hit"] == r["bare_loop_pages_hit"] == r["two_process_loop_pages_hit"] == ideal
        assert r["engine_mismatches"] == 0
        assert r["engine_vs_bare_loop"] == pytest.approx(r["bare_loop_s"] / r["engine_s"])
        # the ratio splits into the hand-off between two processes and kvtui's own work
        assert r["engine_vs_two_process_loop"] == pytest.approx(r["two_process_loop_s"] / r["engine_s"])
        assert r["two_process_loop_vs_bare_loop"] == pytest.approx(r["bare_loop_s"] / r["two_process_loop_s"])
        assert (r["engine_vs_two_process_loop"] * r["two_process_loop_vs_bare_loop"]
                == pytest.approx(r["engine_vs_bare_loop"]))
        # CPU per request by process, measured: each worker and the loop did work, the cluster served both
        assert min(r["engine_cpu_ms_per_request"][p] for p in ("parent", "decode", "prefill", "master", "store")) > 0
        assert min(r["bare_loop_cpu_ms_per_request"][p] for p in ("loop", "master", "store")) > 0
        assert min(r["two_process_loop_cpu_ms_per_request"][p] for p in ("reader", "writer", "master", "store")) > 0
    for side in ("engine", "bare_loop", "two_process_loop"):
        key = f"{side}_cpu_ms_per_request"
        for proc, ms in b["cpu_ms_per_request"][side].items():  # median of 2 rounds
            assert ms == pytest.approx(sum(r[key][proc] for r in b["rounds"]) / 2)
    assert b["engine"]["seconds"] == min(r["engine_s"] for r in b["rounds"])
    assert b["bare_loop"]["seconds"] == min(r["bare_loop_s"] for r in b["rounds"])
    assert b["two_process_loop"]["seconds"] == min(r["two_process_loop_s"] for r in b["rounds"])
    split = sorted(r["engine_vs_two_process_loop"] for r in b["rounds"])
    assert b["ratios"]["engine_vs_two_process_loop"] == pytest.approx((split[0] + split[1]) / 2)
    ratios = sorted(r["engine_vs_bare_loop"] for r in b["rounds"])
    assert b["ratios"]["engine_vs_bare_loop"] == pytest.approx((ratios[0] + ratios[1]) / 2)  # median of 2 rounds
    assert (b["ratios"]["engine_vs_bare_loop_best_of"]
            == pytest.approx(b["bare_loop"]["seconds"] / b["engine"]["seconds"]))
    assert b["engine"]["requests_per_s"] == pytest.approx(300 / b["engine"]["seconds"])
    # what ran, for `kvtui compare`: the round count, the block size and a digest of the rows replayed
    assert b["round_count"] == 2 and b["block_tokens"] == 512 and len(b["trace_sha256"]) == 16


def test_bench_json_to_standard_output_is_the_json_alone(tmp_path, capsys):
    """``--json -``: standard output parses as the JSON (a pipe to jq works), the table goes to stderr."""
    from kvtui.core.traces import resolve_trace

    source = Path(resolve_trace("synthetic"))  # (shipped with the package)
    trace = tmp_path / "head50.jsonl"
    trace.write_text("".join(source.read_text().splitlines(keepends=True)[:50]))
    assert main(["bench", "--trace", str(trace), *SMALL, "--rounds", "1", "--json", "-"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["rows"] == 50
    assert "\n  engine ÷ bare loop  " in err and "CPU per request by process" in err
    table = err[err.index("kvtui bench --trace "):]  # (after the progress lines)
    assert max(len(line) for line in table.splitlines()) <= 100 and "\nLegend\n" in table


def test_bench_ui_reports_both_rates_and_the_paused_cpu(tmp_path):
    out = tmp_path / "ui.json"
    # 2 rounds (both orders of the ABBA alternation) of 0.5 s after each phase's 1.5 s start-up, then the 3 s
    # idle measurement: the rates' precision is the command's business (default 3 rounds of 8 s)
    assert main(["bench", "--ui", "--layout", "tiny", "--seconds", "0.5", "--rounds", "2", "--json", str(out)]) == 0
    b = json.loads(out.read_text())
    assert shape_errors(b, UiFigures) == []
    heads, mons = b["rounds"]["headless"], b["rounds"]["monitor"]
    assert len(heads) == len(mons) == 2 and min(heads) > 0 and min(mons) > 0
    assert b["headless_rps"] == max(heads) and b["monitor_rps"] == max(mons)
    per_round = sorted(m / h for m, h in zip(mons, heads))  # each round: the two sides back to back
    assert b["ratios"]["monitor_vs_headless"] == pytest.approx((per_round[0] + per_round[1]) / 2)  # their median
    assert b["ratios"]["monitor_vs_headless_best_of"] == pytest.approx(b["monitor_rps"] / b["headless_rps"])
    assert 0 <= b["idle_paused_cpu_percent"] < 100 and b["refresh_hz"] == 4.0


def test_bench_reuse_figures_and_ratios_come_from_the_same_run(tmp_path, monkeypatch, capsys):
    """The default bench on 1 MiB pages: every ratio is the quotient of the figures printed beside it, the
    publish figure is the median of its timed runs, the best stream count is never below one stream, and
    the environment and the demo card's figures travel in the JSON."""
    from kvtui.bench import rate
    from kvtui.bench.reuse import DEMO_CARD, PUBLISH_RUNS

    # the request-rate phase counts 2 s per --verify mode instead of 8 s (no flag sets it): the figures it gives
    # and the ratios made of them are checked alike
    measure_rate = rate.measure_rate
    monkeypatch.setattr(rate, "measure_rate", lambda engines, layout: measure_rate(engines, layout, seconds=2.0))
    out = tmp_path / "bench.json"
    layout = ["--layers", "4", "--kv-heads", "4", "--head-dim", "128", "--elem-bytes", "2", "--page-tokens", "128"]
    assert main(["bench", *layout, "--iterations", "3", "--max-streams", "2", "--store-size", "256MiB",
                 "--json", str(out)]) == 0
    table = capsys.readouterr().out
    b = json.loads(out.read_text())
    assert shape_errors(b, ReuseFigures) == []
    q, base = b["ratios"], b["baselines"]
    assert b["page_bytes"] == 1 << 20 and b["pages_hit"] == 1792 // 128 and b["verified"] is True
    assert q["connector_vs_raw"] == pytest.approx(b["reuse_read_MBps_p50"] / base["raw_get_MBps_p50"])
    assert q["reload_vs_loopback_tcp"] == pytest.approx(b["best_reuse_read_MBps_p50"] / base["loopback_tcp_MBps"])
    assert q["verify_vs_memcpy"] == pytest.approx(base["content"]["verify_MBps"] / base["content"]["memcpy_MBps"])
    assert q["fill_vs_memcpy"] == pytest.approx(base["content"]["fill_MBps"] / base["content"]["memcpy_MBps"])
    assert q["reload_vs_memcpy"] == pytest.approx(base["colocated_reload_MBps_p50"] / base["memcpy_MBps"])
    bus = base["memory_bus"]
    assert bus["two_vs_one"] == pytest.approx(bus["two_MBps"] / bus["one_MBps"])
    rr = b["request_rate"]
    # both --verify modes, each counted 2 s in two windows, alternated ABBA on one engine
    assert b["verify"] == "full" and rr["verify"] == "full" and rr["sampled"]["verify"] == "sampled"
    assert [w["verify"] for w in rr["windows"]] == ["full", "sampled", "sampled", "full"] and rr["window_s"] == 1.0
    for mode in (rr, rr["sampled"]):
        assert mode["seconds"] == 2.0 and mode["requests"] > 0 and mode["mismatches"] == 0
        assert mode["requests"] == sum(w["requests"] for w in rr["windows"] if w["verify"] == mode["verify"])
        assert mode["passes_ceiling"] == pytest.approx(mode["store_ms_mean"]
                                                       / (mode["store_ms_mean"] + mode["verify_and_fill_ms_mean"]))
        assert mode["verify_and_fill_ms_mean"] == pytest.approx(mode["verify_ms_mean"] + mode["fill_ms_mean"])
    assert q["request_rate_vs_store_bound"] == pytest.approx(rr["requests_per_s"] * rr["store_ms_mean"] / 1000)
    sampled = rr["sampled"]
    assert q["sampled_request_rate_vs_store_bound"] == pytest.approx(sampled["requests_per_s"]
                                                                     * sampled["store_ms_mean"] / 1000)
    assert q["request_rate_vs_passes_bound"] == pytest.approx(q["request_rate_vs_store_bound"] / rr["passes_ceiling"])
    assert "\n  --verify full " in table and "\n  --verify sampled " in table and "checked every byte" in table
    assert b["publish_runs"] == PUBLISH_RUNS and b["pages_published"] == 2048 // 128
    runs = b["publish_write_MBps_runs"]
    assert runs["min"] <= b["publish_write_MBps"] <= runs["max"]
    assert b["best_reuse_read_MBps_p50"] >= b["reuse_read_MBps_p50"]
    assert b["read_streams"]["1"]["MBps_p50"] == b["reuse_read_MBps_p50"]
    assert b["environment"]["cores"] >= 1 and "mooncake" in b["environment"]["mooncake"]
    assert b["demo_card"] == DEMO_CARD
    assert b["worker_client"] == "dummy"  # the default same-host path; the TCP path measured beside it
    tp = b["tcp_path"]
    assert tp["verified"] is True and tp["reuse_read_MBps_p50"] > 0
    assert q["tcp_reload_vs_loopback_tcp"] == pytest.approx(tp["reuse_read_MBps_p50"] / base["loopback_tcp_MBps"])
    assert q["tcp_connector_vs_raw"] == pytest.approx(tp["reuse_read_MBps_p50"] / tp["raw_get_MBps_p50"])


def test_tcp_sweep_measures_every_setting_and_leaves_the_environment_as_it_was(tmp_path, monkeypatch):
    import os

    from kvtui.bench.tcp_sweep import SETTINGS, setting_name

    monkeypatch.setenv("MC_TCP_SLICE_SIZE", "131072")  # the user's own value comes back after the sweep
    out = tmp_path / "sweep.json"
    layout = ["--layers", "4", "--kv-heads", "4", "--head-dim", "128", "--elem-bytes", "2", "--page-tokens", "128"]
    # one round: each of the 6 settings on a cluster of its own (the command's default, 3 rounds in alternating
    # order, is for figures to go by)
    assert main(["bench", "--tcp-sweep", *layout, "--rounds", "1", "--iterations", "2", "--store-size", "256MiB",
                 "--json", str(out)]) == 0
    assert os.environ["MC_TCP_SLICE_SIZE"] == "131072"
    b = json.loads(out.read_text())
    assert shape_errors(b, TcpSweepFigures) == []
    rows = b["settings"]
    assert [r["name"] for r in rows] == [setting_name(s) for s in SETTINGS] and b["verified"] is True
    assert all(r["rounds_MBps"] == [r["MBps_p50"]] and r["MBps_p50"] > 0 for r in rows)
    best = max(rows, key=lambda r: r["MBps_p50"])
    assert b["best"] == best["name"] and len(b["loopback_tcp_rounds_MBps"]) == 1
    assert b["ratios"]["tcp_reload_vs_loopback_tcp"] == pytest.approx(best["MBps_p50"] / b["loopback_tcp_MBps"])
    assert b["ratios"]["best_vs_mooncake_default"] == pytest.approx(best["MBps_p50"] / rows[0]["MBps_p50"])
    assert b["environment"]["mc_settings"]["MC_TCP_SLICE_SIZE"] == "131072"


def test_bench_disk_reloads_a_prefix_only_the_disk_tier_holds_against_the_same_bytes_read_raw(tmp_path, capsys):
    """`bench --disk` on 1 MiB pages, a prefix of 3 pages and 2 rounds a phase: every page of every timed reload
    of the prefix came from disk and none of the twin's, the raw reads returned the very bytes, each ratio is the
    quotient of the figures beside it, the tier's folder is gone, and `kvtui compare` reads the result."""
    import math

    from kvtui.bench.disk import DiskFigures

    out = tmp_path / "disk.json"
    layout = ["--layers", "4", "--kv-heads", "4", "--head-dim", "128", "--elem-bytes", "2", "--page-tokens", "128"]
    assert main(["bench", "--disk", *layout, "--prompt-tokens", "512", "--shared-tokens", "384", "--iterations", "2",
                 "--disk-path", str(tmp_path), "--json", str(out)]) == 0
    table = capsys.readouterr().out
    b = json.loads(out.read_text())
    assert shape_errors(b, DiskFigures) == []
    assert b["pages_reloaded"] == 3 and b["bytes_reloaded"] == 3 << 20 and b["verified"] is True
    assert b["tiers"]["disk_path"] == str(tmp_path) and b["disk_files"] >= 1
    assert [p.name for p in tmp_path.iterdir()] == ["disk.json"]  # the tier's kvtui-disk-* folder went with it
    phases = [b["warm"]] + ([b["cold"]] if b["cold"] is not None else [])
    assert b["cold"] is not None or b["cold_method"].startswith("not measured: ")
    for p in phases:
        assert p["pages_from_disk"] == 2 * 3 and p["memory_pages_from_disk"] == 0
        assert p["disk_reload"]["verified"] and p["memory_reload"]["verified"] and p["raw_read"]["verified"]
        assert min(p["disk_reload"]["MBps_p50"], p["raw_read"]["MBps_p50"], p["memory_reload"]["MBps_p50"]) > 0
    q, warm = b["ratios"], b["warm"]
    assert all(isinstance(v, float) and math.isfinite(v) and v > 0 for v in q.values())
    assert q["disk_reload_vs_raw_read"] == pytest.approx(warm["disk_reload"]["MBps_p50"]
                                                         / warm["raw_read"]["MBps_p50"])
    assert q["disk_vs_memory_reload"] == pytest.approx(warm["disk_reload"]["MBps_p50"]
                                                       / warm["memory_reload"]["MBps_p50"])
    assert ("cold_disk_reload_vs_raw_read" in q) == (b["cold"] is not None)
    assert "\n  disk reload ÷ raw file read " in table and "\n  raw file read   p50 " in table
    assert main(["compare", str(out), str(out)]) == 0 and "(bench --disk)" in capsys.readouterr().out
