"""The text outputs a person reads, rendered from fixed results: every bench's table, the run summary and
``kvtui report`` fit 100 columns, say what their terms mean (a legend), name each figure as
:mod:`kvtui.metrics.figures` does and write its numbers with thousands separators."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from kvtui.bench.aggregate import format_aggregate
from kvtui.bench.link import format_link
from kvtui.bench.targets import TARGETS
from kvtui.bench.tcp_sweep import SETTINGS, format_tcp_sweep, setting_name
from kvtui.bench.trace import format_trace
from kvtui.commands.bench import format_bench, format_ui
from kvtui.commands.output import format_summary
from kvtui.core.text import WIDTH, rows, widest, wrap
from kvtui.metrics import figures as fig

DATA = Path(__file__).parent / "data"


def bench_result() -> dict:
    """A real ``kvtui bench --layout tiny --iterations 20 --json`` (2 cores, dummy workers)."""
    return json.loads((DATA / "bench_reuse_tiny.json").read_text())


def flat(text: str) -> str:
    """``text`` with its line breaks and runs of spaces as single spaces (wrapped sentences read whole)."""
    return " ".join(text.split())


def legend_terms(text: str) -> list[str]:
    """The terms of the table's Legend section."""
    legend = text[text.index("\nLegend\n") + len("\nLegend\n"):].splitlines()
    return [line[2:].split("  ")[0] for line in legend if line[2:3].strip()]


def test_the_layout_helpers_keep_to_the_width():
    assert max(map(len, wrap("word " * 80))) <= WIDTH
    lines = rows([("short", "x " * 90), ("a label wider than its column", "value")], 10)
    assert widest(lines) <= WIDTH and lines[0].startswith("  short       x x")
    assert lines[-2:] == ["  a label wider than its column", "              value"]
    assert widest(["é" * 100]) == 100  # columns are characters, not bytes


def test_the_reuse_bench_table_fits_100_columns_in_sections_with_a_legend():
    o = bench_result()
    text = format_bench(o)
    assert widest([text]) <= WIDTH, max(text.splitlines(), key=len)
    for title in ("Against the demo card (NOT this run's layout or prompt: see the Legend)",
                  "Reload (the decode worker reloads the shared prefix)", "Baselines (the same bytes, in the same run)",
                  "Request rate (8 s closed loop)", "TCP path (real clients: reads cross loopback TCP)",
                  "Recompute vs reload (estimate)", "Legend"):
        assert f"\n{title}\n" in text, title
    # the legend explains the demo card's column, the dummy clients the workers were, and met / NOT met
    assert legend_terms(text) == ["demo card", "dummy", "met / NOT met", "MB/s"]
    words = flat(text)
    assert "the figures of the Ollama × Mooncake demo kvtui grew from (Mooncake PR #2800" in words
    assert "NOT this run's layout or prompt: for scale, not like for like." in words
    assert "dummy clients of the store node's real client (mooncake_client), which owns the segment" in words
    assert "workers' store clients dummy (see the Legend)" in words
    assert "met when the ratio reaches it" in words and "The exit code ignores the targets" in words
    # labelled as the figures are
    for label in (fig.TOKENS_HIT.label, fig.RELOAD_HIT_RATE.label, fig.RELOAD_P50.label, fig.PUBLISH_BUSY.name,
                  fig.RELOAD_LATENCY.name, fig.RELOAD_PROBE_P50.label, fig.RELOAD_READ_P50.label, fig.VERIFY_MS.label,
                  fig.RAW_GET_P50.label, fig.TCP_P50.label, fig.MEMCPY_P50.label):
        assert f"\n  {label}  " in text, label
    assert f"\n  {fig.VERIFY_P50.label} / fill  " in text
    # every ratio on a row of its own, named by its figure, against its target
    lines = text.splitlines()
    for key, value in o["ratios"].items():
        row = next(x for x in lines if x.startswith(f"  {fig.RATIO_BY_KEY[key].name}  "))
        assert f"{value:.2f}×" in row
        if key in TARGETS:
            target = f"≥ {TARGETS[key]:g}"
            assert row.endswith(f"{target:<7}  {'met' if value >= TARGETS[key] else 'NOT met'}"), row
        else:
            assert "≥" not in row and "met" not in row
    # the demo card's figures beside this run's, converted from its MiB/s to MB/s
    assert "  reload throughput             593 MB/s (1 stream, p50)              4,502 MB/s (its 4,293 MiB/s)" in lines
    assert "  KV page hit rate              87.50% (224 of 256 pages)             87.50% (7 of 8)" in lines


def test_the_request_rate_step_shows_both_verify_modes_and_their_targets():
    """A real ``kvtui bench --json`` on the seed layout (2 cores): the request-rate section gives each --verify
    mode its rate, store bound, passes and ceiling, in the window order it ran, within 100 columns; the first
    line says how the other steps checked their pages."""
    o = json.loads((DATA / "bench_reuse_seed.json").read_text())
    text = format_bench(o)
    assert widest([text]) <= WIDTH, max(text.splitlines(), key=len)
    assert "\nRequest rate (8 s closed loop per --verify mode, windows full sampled sampled full)\n" in text
    assert "loaded pages checked every byte (--verify full) but in the request-rate step" in flat(text)
    rr, lines = o["request_rate"], text.splitlines()
    for f in (rr, rr["sampled"]):
        head = f"  {'--verify ' + f['verify']:<28}  {f['requests_per_s']:.1f} req/s closed loop"
        at = lines.index(head)
        assert lines[at + 1].startswith(f"    store-bound rate            {f['store_bound_rps']:.1f} req/s")
        assert f"(verify {f['verify_ms_mean']:.2f} + fill {f['fill_ms_mean']:.2f})" in lines[at + 2]
        passes = next(x for x in lines[at:] if x.startswith("    with only those two passes  "))
        assert f"  {f['passes_ceiling']:.2f}× the store-bound rate, were they kvtui's only work" in passes
    for key in ("request_rate_vs_passes_bound", "sampled_request_rate_vs_store_bound"):
        row = next(x for x in lines if x.startswith(f"  {fig.RATIO_BY_KEY[key].name}  "))
        value = o["ratios"][key]
        assert row.endswith(f"{'met' if value >= TARGETS[key] else 'NOT met'}") and f"≥ {TARGETS[key]:g}" in row
    assert o["ratios"]["request_rate_vs_passes_bound"] == pytest.approx(
        o["ratios"]["request_rate_vs_store_bound"] / rr["passes_ceiling"])


def test_the_reuse_bench_table_on_the_cards_layout_with_an_estimate_and_real_clients():
    from kvtui.bench.reuse import DEMO_CARD

    o = bench_result()
    o.update(page_bytes=DEMO_CARD["page_bytes"], worker_client="real", recompute_ms=96.0, reload_vs_recompute=1.2,
             ttft_saved_ms={"p50": -10.0}, ttft_estimate={"basis": "prefill at 1,000 tok/s (measured, "
                                                                        "--prefill-tokens-per-s) " * 3})
    text = format_bench(o)
    assert widest([text]) <= WIDTH
    assert "\nAgainst the demo card\n" in text and "NOT this run's layout" not in text
    assert legend_terms(text) == ["demo card", "real", "met / NOT met", "MB/s"]
    assert ("RELOAD SLOWER THAN RECOMPUTE (Σ reload/Σ recompute 1.20×: 19.2 ms lost per request on average)"
            in flat(text))
    del o["demo_card"]  # a result without the card: its figures in a section of their own, no card in the legend
    text = format_bench(o)
    assert "\nReuse\n  prefill skipped " in text and "demo card" not in text and widest([text]) <= WIDTH


TRACE = {"trace": "conversation-head", "rows": 2_000, "rounds": [{"engine_vs_bare_loop": 0.7}] * 3,
         "engine": {"seconds": 61.5, "requests_per_s": 32.5, "pages_hit": 123_456, "token_hit_rate": 0.5},
         "bare_loop": {"seconds": 40.1, "requests_per_s": 49.9, "pages_hit": 123_456},
         "two_process_loop": {"seconds": 52.3, "requests_per_s": 38.2, "pages_hit": 123_456},
         "ratios": {"engine_vs_bare_loop": 0.7, "engine_vs_bare_loop_best_of": 0.65,
                    "engine_vs_two_process_loop": 0.85, "two_process_loop_vs_bare_loop": 0.77},
         "cpu_ms_per_request": {"engine": {"parent": 4.25, "decode": 3.5, "prefill": 2.25, "master": 1.0,
                                           "store": 0.75, "metadata": 0.05},
                                "bare_loop": {"loop": 5.0, "master": 1.0, "store": 0.75},
                                "two_process_loop": {"reader": 5.0, "writer": 2.5, "master": 1.0, "store": 0.75}}}
UI = {"seconds": 8.0, "warm_up_seconds": 2.0, "refresh_hz": 4.0, "rounds": {"headless": [1_200.0, 1_100.0],
                                                                            "monitor": [1_150.0, 1_000.0]},
      "headless_rps": 1_200.0, "monitor_rps": 1_150.0,
      "ratios": {"monitor_vs_headless": 0.93, "monitor_vs_headless_best_of": 0.96}, "idle_paused_cpu_percent": 0.4}
_SWEEP_ROWS = [{"name": setting_name(s), "MBps_p50": 1_234.5 * (i + 1), "vs_loopback_tcp": 0.2 * (i + 1)}
               for i, s in enumerate(SETTINGS)]
TCP_SWEEP = {"settings": _SWEEP_ROWS, "best": _SWEEP_ROWS[-1]["name"], "rounds": 3, "loopback_tcp_MBps": 6_383.2,
             "verified": True, "ratios": {"tcp_reload_vs_loopback_tcp": 1.2, "best_vs_mooncake_default": 6.0}}
LINK = {"iterations": 20, "link": {"text": "1gbit", "rate_bps": 1e9, "delay_s": 0, "rate_MBps": 125.0},
        "pages_reloaded": 7, "bytes_reloaded": 7 * 14_680_064, "publish": {"pages": 8, "put_ms": 1_000, "MBps": 110.2},
        "reload": {"reload_ms": {"p50": 880.1}, "MBps_p50": 116.8}, "raw_MBps_p50": 55.0,
        "ratios": {"reload_vs_link": 0.45, "raw_vs_link": 0.44}, "targets": {"reload_vs_link": 0.9, "met": False},
        "verified": True}
AGGREGATE = {"link": {"text": "1gbit", "rate_MBps": 125.0},
             "runs": [{"decode_workers": m, "aggregate_MBps_p50": 118.0 * m, "links_MBps": 125.0 * m,
                       "per_worker_MBps_p50": [117.9] * m} for m in (1, 2, 8)],
             "ratios": {"aggregate_vs_links": {"1": 0.94, "2": 0.93, "8": 0.85}},
             "targets": {"aggregate_vs_links": 0.9, "met": False}, "verified": True}


@pytest.mark.parametrize("render, result, ratios", [
    (format_trace, TRACE, {"engine_vs_bare_loop": "NOT met", "engine_vs_bare_loop_best_of": "",
                           "engine_vs_two_process_loop": "", "two_process_loop_vs_bare_loop": ""}),
    (format_ui, UI, {"monitor_vs_headless": "NOT met", "monitor_vs_headless_best_of": ""}),
    (format_tcp_sweep, TCP_SWEEP, {"tcp_reload_vs_loopback_tcp": "met", "best_vs_mooncake_default": ""}),
    (format_link, LINK, {"reload_vs_link": "NOT met", "raw_vs_link": ""}),
    (format_aggregate, AGGREGATE, {}),
], ids=["trace", "ui", "tcp-sweep", "link", "aggregate"])
def test_every_bench_table_fits_100_columns_and_names_its_ratios(render, result, ratios):
    text = render(copy.deepcopy(result))
    assert widest([text]) <= WIDTH, max(text.splitlines(), key=len)
    assert "met / NOT met" in legend_terms(text)
    lines = text.splitlines()
    for key, verdict in ratios.items():
        row = next(x for x in lines if x.startswith(f"  {fig.RATIO_BY_KEY[key].name}  "))
        assert row.endswith(verdict) if verdict else "met" not in row, row


def test_the_aggregate_and_link_tables_judge_each_ratio():
    lines = format_aggregate(copy.deepcopy(AGGREGATE)).splitlines()
    name = fig.AGGREGATE_VS_LINKS.name
    assert f"  {name + ', M = 2':<34}    0.93×   ≥ 0.9    met" in lines
    assert f"  {name + ', M = 8':<34}    0.85×   ≥ 0.9    NOT met" in lines
    text = format_link(copy.deepcopy(LINK))
    assert "the raw reads are as far below the link: this machine, not the link, is the limit here" in flat(text)
    trace = format_trace(copy.deepcopy(TRACE))
    assert "parent         kvtui's own process (hashing, routing, results into metrics)" in trace  # CPU legend


def _summary(**more) -> dict:
    from kvtui.metrics.aggregate import Aggregator

    s = Aggregator().summary()
    s.update(requests=12_345, tokens_hit=1_234_567, tokens_input=2_345_678, pages_hit=23_456, pages_total=34_567,
             token_hit_rate=0.5263, page_hit_rate=0.6786, pages_published=11_111, verified_pages=23_456, **more)
    s["throughput"].update(reuse_read_MBps=4_293.4, publish_write_MBps=1_332.2, tokens_skipped_per_s=123_456.0)
    s["errors"] = {"OBJECT_NOT_FOUND": 1_234}
    return s


def test_the_run_summary_fits_100_columns_with_thousands_separators():
    text = format_summary(_summary(ttft_saved_ms={"p50": 12.34, "p99": 45.6, "total": 12_345.6, "count": 1_234},
                                   prefill_gpu_s_saved=1_234.5, reload_vs_recompute=1.3,
                                   reloads_slower_than_recompute=3,
                                   ttft_estimate={"basis": "prefill at 1,000 tok/s (measured) " * 4}))
    assert widest([text]) <= WIDTH
    lines = text.splitlines()
    assert "prefill skipped       1,234,567 of 2,345,678 tokens (52.63%)" in lines
    assert "KV page hits          23,456 of 34,567 full pages (67.86%)" in lines
    assert "throughput            reuse read (busy) 4,293 MB/s · publish write (busy) 1,332 MB/s" in lines
    assert "                      123,456 tokens skipped/s" in lines
    assert "store errors          OBJECT_NOT_FOUND ×1,234" in lines
    assert "TTFT saved (estimate) p50 12.3 ms · p99 45.6 · total 12.35 s over 1,234 reloads" in lines
    assert "                      GPU time saved 1,234.50 s · reload/recompute 1.30×" in lines
    assert "                      RELOAD SLOWER THAN RECOMPUTE (3 of 1,234 requests)" in lines


def test_report_writes_its_numbers_with_thousands_separators(tmp_path, capsys):
    """``kvtui report`` of a recording: every number of a thousand or more has its separators."""
    import re

    from kvtui.cli import main
    from kvtui.core.events import RequestResult
    from kvtui.metrics.aggregate import Aggregator
    from kvtui.session.writer import SessionWriter

    clock = [100.0]
    agg = Aggregator(clock=lambda: clock[0])
    path = tmp_path / "s.kvtui"
    w = SessionWriter(path, {"page_bytes": 1 << 20, "workload": {"kind": "synthetic"}})
    agg.begin_span()
    for i in range(1_200):  # 1,200 requests of 8 pages of 1 MiB, 6 reloaded in 2 ms: ~3,100 MB/s busy
        clock[0] += 0.01
        agg.add(RequestResult(req_id=i, scenario="s", n_tokens=2_048, cacheable_tokens=2_048, page_tokens=256,
                              page_bytes=1 << 20, pages_total=8, pages_hit=6, states=bytes([1] * 6 + [2] * 2),
                              pages_published=2, bytes_loaded=6 << 20, bytes_written=2 << 20, verified=6,
                              probe_ms=0.5, read_ms=2.0, put_ms=1.0))
        if i % 100 == 99:
            w.write(agg.frame())
    w.close()
    assert main(["report", str(path)]) == 0
    text = capsys.readouterr().out
    assert not re.search(r"(?<![\d.,])\d{4,}", text), "a number of 1,000 or more without separators"
    assert "requests              1,200 in 12.0 s (100.0 req/s)" in text
    assert "prefill skipped       1,843,200 of 2,457,600 tokens (75.00%)" in text
    assert "reuse read (busy) 3,146 MB/s · publish write (busy) 2,097 MB/s" in text
    assert widest([text]) <= WIDTH


def test_a_trace_runs_summary_says_its_ideal_hit_rate_beside_what_was_skipped():
    """A trace replay's summary names the unbounded cache's hit rate (fig.IDEAL_SO_FAR) under the tokens it
    skipped; a synthetic run's has no such line."""
    from kvtui.metrics import figures as fig

    traced = format_summary(_summary(ideal_token_hit_rate=0.4131)).splitlines()
    line = next(x for x in traced if fig.IDEAL_SO_FAR.name in x)
    assert "41.31%" in line and traced.index(line) == next(
        i for i, x in enumerate(traced) if x.startswith(fig.TOKENS_HIT.label)) + 1
    assert widest(traced) <= WIDTH
    assert not any(fig.IDEAL_SO_FAR.name in x for x in format_summary(_summary()).splitlines())


def test_the_summary_says_the_store_as_the_master_left_it():
    """``store`` (the master's counts at the last scrape, kvtui.metrics.figures.STORE_COUNTS) is one line of
    the summary with the Store panel's labels; a run with nothing scraped has none."""
    from kvtui.commands.output import store_counts
    from kvtui.metrics import figures as fig

    scrape = {"keys": 1_234, "evicted_keys": 56_789, "alloc_failures": 0, "used_bytes": 12 << 20,
              "capacity_bytes": 64 << 20, "put_rps": 12.5, "get_rps": 3.0, "clients": 3}
    store = store_counts(scrape)
    assert store == {f.key: scrape[f.key] for f in fig.STORE_COUNTS}  # (no rates, no clients)
    lines = format_summary(_summary(store_at_end=store)).splitlines()
    assert "store (master)        keys 1,234 · evicted 56,789 · alloc failures 0 · used 12.0 MiB of 64.0 MiB" in lines
    assert store_counts(None) == {} and not any(x.startswith("store (master)") for x in format_summary(
        _summary(store_at_end={})).splitlines())


def test_the_summary_says_when_the_miss_reasons_are_approximate():
    """Once the miss reasons' history forgot keys (kvtui.core.misses.MAX_KEYS), the summary says how many,
    under the misses line; an exact run says nothing of it."""
    from kvtui.core.misses import MAX_KEYS

    misses = {"first_use": {"pages": 10, "tokens": 80, "share": 0.5}}
    lines = format_summary(_summary(misses=misses, misses_keys_forgotten=12_345)).splitlines()
    assert f"                      approximate: the history forgot 12,345 keys (it keeps {MAX_KEYS:,})" in lines
    assert not any("approximate" in x for x in format_summary(_summary(misses=misses)).splitlines())


@pytest.mark.parametrize("n, noun, nouns, said", [
    (0, "point", None, "0 points"), (1, "point", None, "1 point"), (2, "point", None, "2 points"),
    (1234, "row", None, "1,234 rows"), (1, "mismatch", "mismatches", "1 mismatch"),
    (3, "mismatch", "mismatches", "3 mismatches"),
])
def test_counts_in_words(n, noun, nouns, said):
    from kvtui.core.text import plural

    assert plural(n, noun, nouns) == said
