"""`kvtui bench` without a store: its figures' arithmetic, its printed lines, and the flags it refuses before
starting anything; and the helpers the commands share (output files, the skipped-rows line)."""

from __future__ import annotations

import io
import json

import pytest

from kvtui.bench.reuse import _stats, reload_figures
from kvtui.bench.targets import TARGETS
from kvtui.bench.trace import format_trace
from kvtui.cli import main
from kvtui.commands.bench import format_ui
from kvtui.commands.output import write_json_atomic
from kvtui.config.paths import check_new_file
from kvtui.core.errors import KvtuiError
from kvtui.core.text import WIDTH, widest
from kvtui.core.units import parse_size
from kvtui.engine.connector import ReloadResult
from workload import TraceProblem, skipped_rows_text


def _run(ms: float, *, verified: int = 3, mismatches: int = 0) -> ReloadResult:
    return ReloadResult(pages_total=3, probe_ms=1.0, read_ms=ms - 1.0, bytes_loaded=4_000_000, verify_ms=ms / 10,
                        verified=verified, pages_hit=3, mismatches=mismatches)


def test_reload_figures_are_medians_of_the_reloads():
    figs = reload_figures([_run(4.0), _run(2.0), _run(8.0), _run(10.0)])
    assert figs["reload_ms"] == {"min": 2.0, "p50": 6.0, "mean": 6.0, "max": 10.0}  # even count: mean of the middle two
    # per-reload rates 4 MB / (2, 4, 8, 10 ms) = 2000, 1000, 500, 400 MB/s: median (1000 + 500) / 2
    assert figs["MBps_p50"] == pytest.approx(750.0)
    assert figs["verify_ms_p50"] == pytest.approx(0.6) and figs["verified"] is True
    # the read alone: 4 MB / (1, 3, 7, 9 ms) = 4000, 1333, 571, 444 MB/s; the probe 1 ms each time
    assert figs["probe_ms_p50"] == 1.0 and figs["read_MBps_p50"] == pytest.approx((4000 / 3 + 4000 / 7) / 2)


def test_a_mismatch_in_any_reload_is_not_verified():
    assert reload_figures([_run(2.0), _run(3.0, mismatches=1)])["verified"] is False
    assert reload_figures([_run(2.0, verified=2)])["verified"] is False
    assert _stats([5.0]) == {"min": 5.0, "p50": 5.0, "mean": 5.0, "max": 5.0}


def test_trace_lines_show_each_side_and_the_median_ratio_against_its_target():
    o = {"trace": "t.jsonl", "rows": 300, "rounds": [{"engine_vs_bare_loop": 0.9}, {"engine_vs_bare_loop": 0.7},
                                                   {"engine_vs_bare_loop": 0.85}],
         "engine": {"seconds": 10.0, "requests_per_s": 30.0, "pages_hit": 1234, "token_hit_rate": 0.5},
         "bare_loop": {"seconds": 8.0, "requests_per_s": 37.5, "pages_hit": 1234},
         "ratios": {"engine_vs_bare_loop": 0.85, "engine_vs_bare_loop_best_of": 0.8}}
    text = format_trace(o)
    lines = text.splitlines()
    assert "kvtui bench --trace t.jsonl: 300 rows, 3 round(s)" in text
    assert "                    seconds     req/s   pages hit" in lines
    assert "  engine               10.0      30.0       1,234  (50.00% of tokens)" in lines
    assert "  bare loop             8.0      37.5       1,234" in lines
    assert (f"  engine ÷ bare loop                    0.85×   ≥ {TARGETS['engine_vs_bare_loop']:g}    met"
            in lines)
    assert "  engine ÷ bare loop (best runs)        0.80×" in lines
    assert "the median of the rounds' ratios (0.90, 0.70, 0.85)." in text
    assert widest([text]) <= WIDTH and "\nLegend\n  met / NOT met  a ratio against its target" in text
    o["ratios"]["engine_vs_bare_loop"] = 0.5
    assert "NOT met" in format_trace(o)
    assert "warning" not in format_trace(o)
    o["rounds"][1].update(engine_pages_hit=10, bare_loop_pages_hit=9)  # evictions: the sides did different work
    assert "warning: the engine and the bare loops hit different pages" in format_trace(o)
    assert "two-process" not in format_trace(o)  # (without the two-process loop's figures)


def test_trace_lines_split_the_ratio_into_the_hand_off_and_kvtuis_work():
    o = {"trace": "t.jsonl", "rows": 300,
         "rounds": [{"engine_vs_bare_loop": 0.6, "engine_pages_hit": 5, "bare_loop_pages_hit": 5,
                     "two_process_loop_pages_hit": 5}],
         "engine": {"seconds": 10.0, "requests_per_s": 30.0, "pages_hit": 1234, "token_hit_rate": 0.5},
         "bare_loop": {"seconds": 6.0, "requests_per_s": 50.0, "pages_hit": 1234},
         "two_process_loop": {"seconds": 7.5, "requests_per_s": 40.0, "pages_hit": 1234},
         "ratios": {"engine_vs_bare_loop": 0.6, "engine_vs_bare_loop_best_of": 0.6,
                    "engine_vs_two_process_loop": 0.75, "two_process_loop_vs_bare_loop": 0.8},
         "cpu_ms_per_request": {"engine": {"parent": 0.4}, "bare_loop": {"loop": 0.5},
                                "two_process_loop": {"reader": 0.5, "writer": 0.25}}}
    text = format_trace(o)
    flat = " ".join(text.split())
    assert "  two-process loop      7.5      40.0       1,234" in text.splitlines()
    assert "two-process loop ÷ bare loop 0.80×" in flat and "engine ÷ two-process loop 0.75×" in flat
    assert "two-process loop ÷ bare loop (the hand-off between two processes alone)" in flat
    assert "engine ÷ two-process loop (kvtui's own work" in flat
    assert "two-process loop  0.75 = reader 0.50 + writer 0.25" in text
    assert ("each the median of the rounds (a round's two multiply to its engine ÷ bare loop; their medians need "
            "not)") in flat
    assert "reader the two-process loop's reader (decode's part) writer its writer (prefill's part)" in flat
    assert "warning" not in text and widest([text]) <= WIDTH
    o["rounds"][0]["two_process_loop_pages_hit"] = 4  # the two-process loop alone did other work
    assert "warning: the engine and the bare loops hit different pages" in format_trace(o)


def test_trace_lines_add_each_sides_cpu_per_request_by_process():
    o = {"trace": "t.jsonl", "rows": 300, "rounds": [{"engine_vs_bare_loop": 0.9}],
         "engine": {"seconds": 10.0, "requests_per_s": 30.0, "pages_hit": 1234, "token_hit_rate": 0.5},
         "bare_loop": {"seconds": 8.0, "requests_per_s": 37.5, "pages_hit": 1234},
         "ratios": {"engine_vs_bare_loop": 0.9, "engine_vs_bare_loop_best_of": 0.9},
         "cpu_ms_per_request": {"engine": {"parent": 0.4, "decode": 0.3, "metadata": 0.001},
                                "bare_loop": {"loop": 0.5, "master": 0.25}}}
    text = format_trace(o)
    assert "CPU per request by process, each the median of the rounds (ms, user + system" in text
    assert "warning" not in text  # (no page counts to compare)
    assert "engine            0.70 = parent 0.40 + decode 0.30" in text  # (the idle metadata server left out)
    assert "bare loop         0.75 = loop 0.50 + master 0.25" in text
    legend = text[text.index("\nLegend\n"):].splitlines()
    assert "  metadata" not in " ".join(legend) and "  master         mooncake_master" in legend  # what is shown


def test_cpu_per_request_is_the_difference_of_two_readings_per_request():
    import os

    from kvtui.bench.trace import cpu_ms_per_request, cpu_seconds

    before = {"a": 1.0, "b": 2.0, "gone": 5.0}
    after = {"a": 1.5, "b": 2.25, "new": 9.0}
    assert cpu_ms_per_request(before, after, 250) == {"a": 2.0, "b": 1.0}  # ms per request; only read both times
    sum(range(200_000))  # some CPU of this process
    mine = cpu_seconds({"me": os.getpid(), "nobody": 2 ** 22 + 12345})  # (a pid above pid_max: no process)
    assert set(mine) == {"me"} and mine["me"] > 0


def test_ui_lines_show_both_rates_the_ratio_and_the_paused_cpu():
    o = {"seconds": 2.0, "warm_up_seconds": 1.5, "refresh_hz": 4.0,
         "rounds": {"headless": [100.0, 80.0], "monitor": [90.0, 80.0]}, "headless_rps": 100.0,
         "monitor_rps": 90.0, "ratios": {"monitor_vs_headless": 0.95, "monitor_vs_headless_best_of": 0.9},
         "idle_paused_cpu_percent": 1.25}
    text = format_ui(o)
    assert text.startswith("2 round(s), requests counted over 2 s after 1.5 s; monitor at 4 Hz")
    assert "workload rate headless     100.0 req/s" in text and "with the monitor            90.0 req/s" in text
    assert "  monitor ÷ headless                    0.95×   ≥ 0.95   met" in text
    assert "  monitor ÷ headless (best runs)        0.90×" in text
    assert "the median of the rounds' ratios (0.90, 1.00)" in text
    assert "monitor CPU, paused          1.2 % of one core" in text
    assert widest([text]) <= WIDTH and "\nLegend\n  met / NOT met" in text


@pytest.mark.parametrize("argv, message", [
    (["bench", "--ui", "--layout", "tiny", "--rounds", "0"], "--rounds must be within 1-100, got 0"),
    (["bench", "--ui", "--layout", "tiny", "--seconds", "0"], "--seconds must be positive"),
    (["bench", "--ui", "--layout", "tiny", "--refresh-hz", "100"], "--refresh-hz must be within"),
    (["bench", "--layout", "tiny", "--iterations", "0"], "--iterations must be at least 1"),
    (["bench", "--layout", "tiny", "--max-streams", "0"], "--max-streams must be at least 1"),
    (["bench", "--layout", "tiny", "--rounds", "0"],
     "--rounds applies to bench --trace / bench --ui / bench --tcp-sweep only"),
    (["bench", "--layout", "tiny", "--seconds", "5"], "--seconds applies to bench --ui only"),
    (["bench", "--tcp-sweep", "--layout", "tiny", "--seconds", "3"], "--seconds applies to bench --ui only"),
    (["bench", "--trace", "synthetic", "--layout", "tiny", "--prompt-tokens", "512"],
     "--prompt-tokens applies to the default bench / bench --tcp-sweep / bench --link / bench --disk only"),
    (["bench", "--layout", "tiny", "--shared-tokens", "0"], "--shared-tokens must be within"),
    (["bench", "--link", "fast", "--layout", "tiny"], "--link rate must be bits per second"),
    (["bench", "--link", "1gbit", "--layout", "tiny", "--seconds", "3"], "--seconds applies to bench --ui only"),
    (["bench", "--layout", "tiny", "--store-size", "12 parsecs"], "--store-size: not a size"),
    (["bench", "--layout", "tiny", "--store-size", "8MiB"], "--store-size must be at least 16 MiB"),
    (["bench", "--trace", "synthetic", "--layout", "tiny", "--rounds", "101"],
     "--rounds must be within 1-100, got 101"),
    (["bench", "--trace", "synthetic", "--layout", "tiny", "--trace-block-tokens", "0"],
     "--trace-block-tokens must be at least 1, got 0"),
    (["bench", "--trace", "", "--layout", "tiny"], "bench: argument --trace: needs a shipped trace's name"),
    (["run", "--trace", " ", "--layout", "tiny"], "run: argument --trace: needs a shipped trace's name"),
    (["bench", "--layout", "tiny", "--trace-speedup", "2"], "no bench keeps arrival times"),
    (["bench", "--layout", "tiny", "--strict"], "unrecognized arguments: --strict (see kvtui bench --help)"),
    (["bench", "--layout", "tiny", "--json", "a.json", "--json=b.json"],
     "bench: --json given 2 times: an output goes to one file, and all but the last would be left unwritten"),
    (["report", "x.kvtui", "--svg", "a.svg", "--svg", "b.svg"], "report: --svg given 2 times"),
])
def test_bench_refuses_bad_flags_before_starting_anything(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "kvtui bench: network" not in err  # nothing was started


def test_bench_trace_refuses_pages_that_straddle_trace_blocks(tmp_path, capsys):
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"timestamp": 0, "input_length": 600, "output_length": 1, "hash_ids": [1, 2]}\n')
    assert main(["bench", "--trace", str(trace), "--layout", "tiny", "--page-tokens", "384"]) == 2
    assert "kvtui bench: network" not in capsys.readouterr().err


def test_skipped_rows_are_said_one_way():
    assert skipped_rows_text([]) == ""
    problems = [TraceProblem(7, "bad JSON: Expecting value (column 1)"), TraceProblem(9, "'input_length' is 0")]
    assert skipped_rows_text(problems) == ("skipped 2 bad trace rows "
                                           "(first: line 7: bad JSON: Expecting value (column 1))")


def test_output_files_are_new_and_written_whole(tmp_path, capsys):
    path = tmp_path / "out.json"
    write_json_atomic(str(path), {"b": 1, "a": [1.5]})
    text = path.read_text()
    assert json.loads(text) == {"a": [1.5], "b": 1} and text.index('"a"') < text.index('"b"')
    assert list(tmp_path.iterdir()) == [path]  # no temporary file left behind
    with pytest.raises(KvtuiError, match="exists already"):
        check_new_file(str(path), "--record")
    with pytest.raises(KvtuiError, match="does not exist"):
        check_new_file(str(tmp_path / "missing" / "s.kvtui"), "--record")
    write_json_atomic("-", {"x": 2})
    assert json.loads(capsys.readouterr().out) == {"x": 2}


def test_screen_size_flag():
    assert parse_size("120x40") == (120, 40) and parse_size("80X24") == (80, 24)
    for bad in ("120", "axb", "0x10"):
        with pytest.raises(KvtuiError, match="--size"):
            parse_size(bad)


def test_the_request_rate_ratio_is_the_share_of_time_in_store_calls():
    from kvtui.bench.rate import rate_figures, store_ms
    from kvtui.core.events import RequestResult

    rs = [RequestResult(req_id=i, scenario="s", n_tokens=8, cacheable_tokens=8, page_tokens=8, page_bytes=1,
                        pages_total=1, pages_hit=1, states=b"\x01", probe_ms=1.0, read_ms=3.0, publish_probe_ms=0.5,
                        put_ms=1.5, verify_ms=2.0, compute_ms=1.0, bytes_loaded=4_000_000, bytes_written=1_000_000)
          for i in range(50)]
    assert store_ms(rs[0]) == 6.0
    f = rate_figures(rs, seconds=0.5)  # 100 req/s: 10 ms each, 6 of them in store calls
    assert f["requests_per_s"] == 100 and f["store_ms_mean"] == 6.0 and f["wall_ms_per_request"] == 10
    assert f["store_bound_rps"] == pytest.approx(1000 / 6) and f["request_rate_vs_store_bound"] == pytest.approx(0.6)
    assert f["verify_and_fill_ms_mean"] == 3.0
    assert f["passes_ceiling"] == pytest.approx(6 / 9)  # 6 ms of store calls, 3 of the two passes over memory
    # 4 MB in 2 ms, 1 MB in 1 ms
    assert f["verify_MBps"] == pytest.approx(2000) and f["fill_MBps"] == pytest.approx(1000)
    with pytest.raises(ValueError, match="no request finished"):
        rate_figures([], 1.0)


def test_memory_bus_times_one_copy_against_two_at_once():
    from kvtui.bench.baselines import memory_bus

    bus = memory_bus(1 << 20, iterations=3)
    assert bus["one_MBps"] > 0 and bus["two_MBps"] > 0
    assert bus["two_vs_one"] == pytest.approx(bus["two_MBps"] / bus["one_MBps"])


class _Terminal(io.StringIO):
    def __init__(self, tty: bool) -> None:
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty

    def fileno(self) -> int:
        return 2


@pytest.mark.parametrize("tty, columns, width", [(False, 300, 100), (True, 60, 60), (True, 300, 300)])
def test_bench_progress_lines_fit_the_terminal_or_100_columns(monkeypatch, tty, columns, width):
    """A progress line of kvtui bench reached 203 columns: each is wrapped to the terminal's width, or 100
    columns when stderr is not a terminal, its words kept whole and its text unchanged."""
    import os
    import sys

    from kvtui.bench.engines import say

    stream = _Terminal(tty)
    monkeypatch.setattr(sys, "stderr", stream)
    monkeypatch.setattr(os, "get_terminal_size", lambda fd: os.terminal_size((columns, 24)))
    words = [f"word{i:03d}" for i in range(60)]
    say(" ".join(words))
    lines = stream.getvalue().splitlines()
    assert len(lines) > 1 and max(map(len, lines)) <= width and lines[0].startswith("kvtui bench: word000")
    assert " ".join(line.strip() for line in lines).split()[2:] == words


def test_the_figures_the_bench_computes_have_the_shape_their_type_declares():
    """What the pure steps return is what their TypedDicts declare, key for key and type for type."""
    from kvtui.bench.baselines import ContentFigures, MemoryBus, content_vs_memcpy, memory_bus
    from kvtui.bench.rate import RateFigures, rate_figures
    from kvtui.bench.reuse import ReloadFigures, Stats
    from kvtui.core.events import RequestResult
    from kvtui.testing.shapes import shape_errors

    rs = [RequestResult(req_id=i, scenario="s", n_tokens=8, cacheable_tokens=8, page_tokens=8, page_bytes=1,
                        pages_total=1, pages_hit=1, states=b"\x01", probe_ms=1.0, read_ms=3.0, verify_ms=2.0)
          for i in range(3)]  # (nothing computed: fill_MBps is None)
    assert shape_errors(rate_figures(rs, 1.0), RateFigures) == []
    assert shape_errors(reload_figures([_run(4.0), _run(2.0)]), ReloadFigures) == []
    assert shape_errors(_stats([1.0, 2.0]), Stats) == []
    assert shape_errors(memory_bus(1 << 16, iterations=2), MemoryBus) == []
    assert shape_errors(content_vs_memcpy(4096, 2, iterations=2), ContentFigures) == []


def test_every_ratio_a_bench_writes_is_a_figure_and_every_target_judges_one():
    """The ratios the benches' types declare are :data:`kvtui.metrics.figures.RATIOS` (each named and explained
    there), and each target of :data:`TARGETS` is the target of one of them."""
    from kvtui.bench.aggregate import AggregateRatios
    from kvtui.bench.disk import DiskRatios
    from kvtui.bench.link import LinkRatios
    from kvtui.bench.reuse import ReuseRatios
    from kvtui.bench.tcp_sweep import TcpSweepRatios
    from kvtui.bench.trace import TraceRatios
    from kvtui.bench.ui import UiRatios
    from kvtui.metrics.figures import RATIO_BY_KEY

    keys = {k for t in (ReuseRatios, TraceRatios, UiRatios, TcpSweepRatios, LinkRatios, DiskRatios)
            for k in t.__required_keys__ | t.__optional_keys__}
    assert keys | {"aggregate_vs_links"} == set(RATIO_BY_KEY)
    assert "aggregate_vs_links" in AggregateRatios.__required_keys__  # (by M: {"1": ratio, …})
    assert set(TARGETS) <= set(RATIO_BY_KEY)
