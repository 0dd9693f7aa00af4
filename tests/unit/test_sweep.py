"""Capacity sweeps without a store: how each point's store is sized (kvtui.core.sweep), the result file, its
plot (matplotlib) and screen (textual-plotext), ``kvtui report SWEEP.json`` and the sweep's bad input."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from kvtui.cli import main
from kvtui.core.capacity import held_pages
from kvtui.core.defaults import MIN_SEGMENT_BYTES
from kvtui.core.layout import PageLayout
from kvtui.core.sweep import (
    CURVES,
    SWEEP_BASE,
    SweepPoint,
    SweepResult,
    auto_elem_bytes,
    format_sweep_table,
    format_tokens,
    min_capacity_tokens,
    point_size,
    segment_bytes_for,
    sweep_from_dict,
)
from kvtui.core.units import parse_token_list, parse_tokens

WM = 0.9


# --- sizing -----------------------------------------------------------------------------------------------

def test_a_point_holds_exactly_its_capacity_in_pages_below_the_watermark():
    lay = replace(SWEEP_BASE, elem_bytes=8)  # 8 KiB pages, one per 512-token block
    s = point_size(1_000_000, 512, lay, WM)
    assert (s.blocks, s.pages, s.page_bytes) == (1953, 1953, 8192)  # 1,000,000 // 512 blocks
    assert s.segment_bytes == -(-1953 * 8192 * 10 // 9)  # ceil(pages · page_bytes / 0.9), to the byte
    assert held_pages(s.segment_bytes, 8192, WM) == 1953  # the master starts evicting at the 1,954th page
    assert 1953 * 8192 / s.segment_bytes <= WM < 1954 * 8192 / s.segment_bytes
    assert s.segment_bytes >= MIN_SEGMENT_BYTES


def test_pages_are_whole_blocks_of_the_offline_model():
    lay = PageLayout(1, 1, 1, 128, 64)  # 4 pages per 512-token block
    s = point_size(1_000_300, 512, lay, WM)
    assert s.blocks == 1953 and s.pages == 1953 * 4  # the LRU model keeps capacity // block_tokens blocks


def test_per_object_overhead_enters_the_segment():
    assert segment_bytes_for(100, 1000, 0.5, overhead=24) == 100 * 1024 * 2
    for pages, page, wm in ((1953, 8192, 0.9), (7, 1000, 0.9), (12345, 4096, 0.85), (3, 3, 1.0)):
        seg = segment_bytes_for(pages, page, wm)
        assert pages * page / seg <= wm and pages * page / (seg - 1) > wm  # the smallest that holds them


def test_auto_element_size_is_the_smallest_power_of_two_reaching_16_MiB():
    assert auto_elem_bytes(1_000_000, 512, SWEEP_BASE, WM) == 8  # 1,953 pages: 1 KiB → 2 MiB, 8 KiB → 17 MiB
    assert auto_elem_bytes(10_000_000, 512, SWEEP_BASE, WM) == 1  # 19,531 KiB pages already fill 17 MiB
    assert auto_elem_bytes(100_000, 512, SWEEP_BASE, WM) == 128
    for cap in (1_000_000, 100_000, 512 * 7):
        elem = auto_elem_bytes(cap, 512, SWEEP_BASE, WM)
        assert point_size(cap, 512, replace(SWEEP_BASE, elem_bytes=elem), WM).segment_bytes >= MIN_SEGMENT_BYTES
        if elem > 1:
            with pytest.raises(ValueError):
                point_size(cap, 512, replace(SWEEP_BASE, elem_bytes=elem // 2), WM)


def test_a_capacity_below_16_MiB_of_pages_is_refused_naming_what_would_fit():
    with pytest.raises(ValueError) as exc:
        point_size(1_000_000, 512, SWEEP_BASE, WM)  # 1,953 pages of 1 KiB
    text = str(exc.value)
    least = min_capacity_tokens(SWEEP_BASE, 512, WM)
    assert text.startswith("--capacity 1,000,000: 1,953 pages of 1.0 KiB need a 2.1 MiB segment")
    assert f"at least {least:,} tokens" in text and "pages of at least 7,732 bytes" in text
    assert segment_bytes_for(1953, 7732, WM) >= MIN_SEGMENT_BYTES > segment_bytes_for(1953, 7731, WM)
    assert point_size(least, 512, SWEEP_BASE, WM).segment_bytes >= MIN_SEGMENT_BYTES
    with pytest.raises(ValueError):
        point_size(least - 512, 512, SWEEP_BASE, WM)
    with pytest.raises(ValueError, match="less than one trace block"):
        point_size(511, 512, replace(SWEEP_BASE, elem_bytes=1 << 16), WM)
    with pytest.raises(ValueError, match="does not divide"):
        point_size(1_000_000, 512, PageLayout(1, 1, 1, 384, 8), WM)


def test_token_counts_and_lists():
    assert parse_tokens("1M") == 10**6 and parse_tokens("2.5M") == 2_500_000 and parse_tokens("500k") == 500_000
    assert parse_token_list(["1M,3M", "10M"]) == [10**6, 3 * 10**6, 10**7]
    with pytest.raises(ValueError, match="bad --capacity 'x1'"):
        parse_token_list(["1M,x1"])
    with pytest.raises(ValueError, match="empty item"):
        parse_token_list(["1M,,3M"])
    assert [format_tokens(n) for n in (10**6, 3 * 10**6, 2_500_000, 500_000, 4096, 10**9)] == \
        ["1M", "3M", "2.5M", "500k", "4.1k", "1G"]


# --- the result file, its plot and screen -------------------------------------------------------------------

def _result(n: int = 3) -> SweepResult:
    caps = [1_000_000, 3_000_000, 10_000_000][:n]
    pts = tuple(SweepPoint(c, c // 512, c // 512, segment_bytes_for(c // 512, 8192, WM), lru,
                           real_token_hit_rate=real, keys_at_end=c // 600, evicted_keys=100 * i, pages_failed=i,
                           elapsed_s=1.0,
                           min_token_hit_rate=best)
                for i, (c, real, lru, best) in enumerate(zip(caps, (0.10, 0.25, 0.55), (0.15, 0.32, 0.59),
                                                             (0.38, 0.56, 0.65))))
    return SweepResult("synthetic", 3993, 512, 61_194_628, 0.6504, replace(SWEEP_BASE, elem_bytes=8).as_dict(), pts,
                       sizing={"rule": "pages = …", "elem_bytes_auto": True}, store={"lease_ttl_s": 10.0})


def test_the_result_round_trips_through_json_and_refuses_what_is_not_one():
    r = replace(_result(), synthesis={"prefix_scale": 2.0})
    doc = json.loads(json.dumps(r.to_dict()))
    assert doc["kind"] == "kvtui-sweep" and doc["format"] == 1 and doc["page_bytes"] == 8192
    assert sweep_from_dict(doc) == r
    with pytest.raises(ValueError, match="not a kvtui sweep result"):
        sweep_from_dict({"kind": "other"})
    with pytest.raises(ValueError, match="format 9"):
        sweep_from_dict({**doc, "format": 9})
    with pytest.raises(ValueError, match="'points' is missing"):
        sweep_from_dict({k: v for k, v in doc.items() if k != "points"})
    bad = {**doc, "points": [{**doc["points"][0], "real_token_hit_rate": 7}]}
    with pytest.raises(ValueError, match="point 1: real_token_hit_rate must be within 0..1"):
        sweep_from_dict(bad)
    bad = {**doc, "points": [{**doc["points"][0], "min_token_hit_rate": -1}]}
    with pytest.raises(ValueError, match="point 1: min_token_hit_rate must be within 0..1"):
        sweep_from_dict(bad)
    text = format_sweep_table(r)
    assert "1,000,000 tok" in text and "10.00 %" in text and "15.00 %" in text and "-5.00 pt" in text
    assert "optimal (MIN)" in text and "38.00 %" in text
    assert "unbounded ideal 65.04 %" in text and "trace synthesis: prefix scale 2" in text


def test_a_sweep_file_without_the_optimal_curve_still_reads_and_shows():
    doc = _result().to_dict()
    for p in doc["points"]:
        del p["min_token_hit_rate"]  # a sweep written before the optimal curve existed
    r = sweep_from_dict(doc)
    assert all(p.min_token_hit_rate is None for p in r.points)
    assert "—" in format_sweep_table(r).splitlines()[-1]
    from kvtui.bench.sweep_plot import sweep_figure
    from kvtui.tui.widgets.sweep_curve import SweepCurve

    assert [ln.get_label() for ln in sweep_figure(r).axes[0].get_lines()] == [c for c in CURVES if c != CURVES[2]]
    assert SweepCurve(r).series()[CURVES[2]] == ([], [])


def test_the_plot_has_four_labelled_lines_on_a_log_capacity_axis(tmp_path):
    from kvtui.bench.sweep_plot import save_plot, sweep_figure

    r = _result()
    ax = sweep_figure(r).axes[0]
    assert ax.get_xscale() == "log"
    lines = ax.get_lines()
    assert [ln.get_label() for ln in lines] == list(CURVES)
    assert list(lines[0].get_xdata()) == [1_000_000, 3_000_000, 10_000_000]
    assert [round(y, 6) for y in lines[0].get_ydata()] == [10.0, 25.0, 55.0]  # percent
    assert [round(y, 6) for y in lines[1].get_ydata()] == [15.0, 32.0, 59.0]
    assert [round(y, 6) for y in lines[2].get_ydata()] == [38.0, 56.0, 65.0]
    assert list(lines[3].get_ydata()) == pytest.approx([65.04] * 3)
    assert "tokens" in ax.get_xlabel() and "log" in ax.get_xlabel() and "%" in ax.get_ylabel()
    save_plot(r, str(tmp_path / "s.svg"))
    save_plot(r, str(tmp_path / "s.png"), "png")
    svg = (tmp_path / "s.svg").read_text()
    assert svg.lstrip().startswith("<?xml") and all(name in svg for name in CURVES)
    assert (tmp_path / "s.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.png", "s.svg"]  # no temporary file left


def test_the_screen_curve_draws_the_four_series():
    from kvtui.tui.widgets.sweep_curve import SweepCurve, y_top

    r = _result()
    series = SweepCurve(r).series()
    assert list(series) == list(CURVES)
    xs, ys = series[CURVES[0]]
    assert xs == [1_000_000, 3_000_000, 10_000_000] and ys == pytest.approx([10.0, 25.0, 55.0])
    assert series[CURVES[2]][1] == pytest.approx([38.0, 56.0, 65.0])
    assert series[CURVES[3]][1] == pytest.approx([65.04] * 3)
    assert y_top(r) == 80.0  # 20 % above the highest curve (65 %), in tens


def _write(tmp_path: Path, result: SweepResult) -> Path:
    path = tmp_path / "sweep.json"
    path.write_text(json.dumps(result.to_dict()))
    return path


def test_report_shows_a_sweep_file_and_its_screen_as_svg(tmp_path, capsys):
    path = _write(tmp_path, _result())
    svg = tmp_path / "screen.svg"
    rc = main(["report", str(path), "--svg", str(svg)])
    out = capsys.readouterr().out
    assert rc == 0
    assert "trace synthetic: 3,993 rows" in out and "3,000,000 tok" in out
    text = svg.read_text().replace("&#160;", " ")  # Rich writes each space of the screen so
    assert text.lstrip().startswith("<svg") and "real Mooncake store" in text
    assert "offline" in text and "3M" in text and "10M" in text
    out_json = tmp_path / "again.json"
    assert main(["report", str(path), "--json", str(out_json)]) == 0
    assert sweep_from_dict(json.loads(out_json.read_text())) == _result()


def test_report_refuses_json_that_is_not_a_sweep_in_one_line(tmp_path, capsys):
    path = tmp_path / "x.json"
    path.write_text('{"kind": "something else"}')
    assert main(["report", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("kvtui: error: ") and "not a kvtui sweep result" in err
    assert "kvtui compare reads it" not in err
    path.write_text('{"requests": 3, "throughput": {}}')  # a run's --json
    assert main(["report", str(path)]) == 2
    assert "(a run's --json is its summary already: kvtui compare reads it)" in capsys.readouterr().err
    path.write_text('{"kind": "kvtui-sweep", "format": 1')  # cut short
    assert main(["report", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not valid JSON" in err


# --- bad input of kvtui sweep: one line, exit 2, before any store starts -------------------------------

@pytest.mark.parametrize("argv, says", [
    (["sweep", "--trace", "synthetic"], "the following arguments are required: --capacity"),
    (["sweep", "--trace", "synthetic", "--capacity", "1M,lots"], "bad --capacity 'lots'"),
    (["sweep", "--trace", "synthetic", "--capacity", "1M,,3M"], "empty item"),
    (["sweep", "--trace", "synthetic", "--capacity", "100"], "less than one trace block"),
    (["sweep", "--trace", "no-such-trace", "--capacity", "1M"], "no-such-trace: no such trace file"),
    (["sweep", "--trace", "synthetic", "--capacity", "1M", "--elem-bytes", "1"], "below Mooncake's smallest"),
    (["sweep", "--trace", "synthetic", "--capacity", "1M", "--lease-ttl", "0"], "--lease-ttl must be positive"),
    (["sweep", "--trace", "synthetic", "--capacity", "1M", "--page-tokens", "384"], "does not divide"),
    (["sweep", "--trace", "synthetic", "--capacity", "1M", "--json", "/no/such/dir/x.json"], "--json: folder"),
    (["sweep", "--trace", "synthetic", "--capacity", "1M", "--trace-speedup", "2"], "changes no hit rate of a sweep"),
    (["sweep", "--trace", "synthetic", "--capacity", "1M", "--prefix-scale", "0"], "--prefix-scale must be a positive"),
])
def test_bad_input_is_one_line_and_exit_2(argv, says, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("kvtui: error: ") and says in err, err


def test_help_names_every_flag_with_units(capsys):
    assert main(["sweep", "--help"]) == 0
    out = capsys.readouterr().out
    for text in ("--capacity", "tokens", "--lease-ttl", "SECONDS", "--svg", "log scale", "--png", "16 MiB"):
        assert text in out


@pytest.mark.parametrize("n, said", [(1, "interrupted: 1 point finished"), (2, "interrupted: 2 points finished")])
def test_an_interrupted_sweep_counts_its_points_in_words(n, said):
    """It said "1 points finished"; every count in words goes through one helper (kvtui.core.text.plural)."""
    from kvtui.core.sweep import describe_sweep

    assert describe_sweep(replace(_result(n), interrupted=True))[-1] == said


# --- repeats and miss reasons ----------------------------------------------------------------------------

def _misses(first: float, evicted: float) -> dict:
    shares = {"first_use": first, "evicted": evicted, "never_stored": 0.01, "after_break": 0.002, "in_flight": 0.0}
    return {k: {"pages": int(v * 1000), "tokens": int(v * 512_000), "share": v} for k, v in shares.items()}


def _repeated() -> SweepResult:
    """Two points of three repeats each, rates that differ as a wall-clock lease makes them."""
    from kvtui.core.sweep import PointRun, PointSize

    points = []
    for cap, rates in ((1_000_000, (0.3393, 0.3695, 0.3512)), (3_000_000, (0.52, 0.52, 0.53))):
        size = PointSize(cap, cap // 512, cap // 512, 8192, segment_bytes_for(cap // 512, 8192, WM))
        runs = [PointRun(real_token_hit_rate=r, pages_hit=int(r * 1000), evicted_keys=7 + i, misses=_misses(0.3,
                                                                                                            0.6 - r))
                for i, r in enumerate(rates)]
        points.append(SweepPoint.of_runs(size, 0.30 if cap < 2_000_000 else 0.50, runs, 0.4))
    return SweepResult("synthetic", 3993, 512, 61_194_628, 0.6504, replace(SWEEP_BASE, elem_bytes=8).as_dict(),
                       tuple(points), store={"lease_ttl_s": 2.0, "repeats": 3})


def test_a_point_of_repeats_is_its_median_repeat_with_every_repeat_kept():
    from kvtui.core.sweep import PointRun, median_run

    small, big = _repeated().points
    assert small.real_token_hit_rate == 0.3512 and small.real_range() == (0.3393, 0.3695)
    assert small.evicted_keys == 9 and small.pages_hit == 351  # the median repeat's figures, all of them
    assert [r.real_token_hit_rate for r in small.runs] == [0.3393, 0.3695, 0.3512]  # in the order run
    assert big.real_range() == (0.52, 0.53)
    assert median_run([PointRun(real_token_hit_rate=0.2),
                       PointRun(real_token_hit_rate=0.4)]).real_token_hit_rate == 0.2  # a rate that was measured
    with pytest.raises(ValueError, match="at least one run"):
        median_run([])
    one = SweepPoint(1_000_000, 1953, 1953, 20 << 20, 0.3, real_token_hit_rate=0.25)  # a file written before repeats
    assert one.real_range() == (0.25, 0.25)


def test_repeats_round_trip_and_show_as_a_range_with_the_miss_reasons():
    r = _repeated()
    doc = json.loads(json.dumps(r.to_dict()))
    assert [len(p["runs"]) for p in doc["points"]] == [3, 3]  # every repeat kept
    assert doc["points"][0]["runs"][1]["misses"]["evicted"]["share"] == pytest.approx(0.6 - 0.3695)
    assert sweep_from_dict(doc) == r
    bad = json.loads(json.dumps(doc))
    bad["points"][0]["runs"][0]["real_token_hit_rate"] = 2
    with pytest.raises(ValueError, match="point 1, run 1: real_token_hit_rate must be within 0..1"):
        sweep_from_dict(bad)
    text = format_sweep_table(r)
    assert "35.12 % (33.93–36.95)" in text and "52.00 % (52.00–53.00)" in text
    assert "the median of 3 repeats" in text
    why = text.split("why the prompt tokens missed", 1)[1]
    assert "first use" in why and "never stored" in why and "in flight" in why
    assert "30.00 %" in why and "24.88 %" in why  # first use, and the median repeat's evicted share
    assert "why the prompt tokens missed" not in format_sweep_table(_result())  # a file without reasons


def test_the_plot_and_the_screen_curve_show_the_range_of_the_repeats():
    from matplotlib.collections import PolyCollection

    from kvtui.bench.sweep_plot import sweep_figure
    from kvtui.tui.widgets.sweep_curve import SweepCurve

    r = _repeated()
    ax = sweep_figure(r).axes[0]
    band = [c for c in ax.collections if isinstance(c, PolyCollection)]
    assert len(band) == 1 and "lowest to highest repeat" in band[0].get_label()
    ys = band[0].get_paths()[0].vertices[:, 1]
    assert min(ys) == pytest.approx(33.93) and max(ys) == pytest.approx(53.0)
    assert ax.get_lines()[0].get_label().startswith(CURVES[0]) and "median of 3" in ax.get_lines()[0].get_label()
    xs, lows, highs = SweepCurve(r).real_ranges()
    assert xs == [1_000_000, 3_000_000]
    assert lows == pytest.approx([33.93, 52.0]) and highs == pytest.approx([36.95, 53.0])
    assert SweepCurve(_result()).real_ranges() == ([], [], [])
    assert not [c for c in sweep_figure(_result()).axes[0].collections if isinstance(c, PolyCollection)]


def test_report_of_a_repeated_sweep_shows_ranges_and_reasons(tmp_path, capsys):
    path = _write(tmp_path, _repeated())
    svg = tmp_path / "screen.svg"
    assert main(["report", str(path), "--svg", str(svg)]) == 0
    out = capsys.readouterr().out
    assert "35.12 % (33.93–36.95)" in out and "why the prompt tokens missed" in out
    text = svg.read_text().replace("&#160;", " ")
    assert "33.93–36.95" in text and "after a break" in text


@pytest.mark.parametrize("bad", ["0", "101"])
def test_repeat_out_of_range_is_one_line(bad, capsys):
    assert main(["sweep", "--trace", "synthetic", "--capacity", "4M", "--repeat", bad]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"--repeat must be within 1-100, got {bad}" in err


def test_the_sweep_lease_is_run_s_lease(capsys):
    from kvtui.config.cluster import LEASE_S

    assert main(["sweep", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert f"(default {LEASE_S:g} s, as kvtui run's" in out and "--repeat N" in out


# --- DRAM × disk sweeps -------------------------------------------------------------------------------------

LAY4 = replace(SWEEP_BASE, elem_bytes=4)  # 4 KiB pages, one per 512-token block


def test_pairs_are_every_capacity_with_every_disk_in_ascending_order():
    from kvtui.core.sweep import pair_sizes

    sizes, skipped = pair_sizes([4_000_000, 2_000_000], [10_000_000, 0], 512, LAY4, WM)
    assert [(s.capacity_tokens, s.disk_tokens) for s in sizes] == [
        (2_000_000, 0), (2_000_000, 10_000_000), (4_000_000, 0), (4_000_000, 10_000_000)]
    assert not skipped
    dram = point_size(2_000_000, 512, LAY4, WM)
    assert sizes[0] == dram  # a disk of 0 is no tier: the DRAM-only point, sized as before
    tiered = sizes[1]
    assert (tiered.blocks, tiered.pages, tiered.segment_bytes) == (dram.blocks, dram.pages, dram.segment_bytes)
    assert tiered.disk_blocks == 10_000_000 // 512 and tiered.disk_pages == tiered.disk_blocks
    assert tiered.disk_bytes == tiered.disk_pages * LAY4.page_bytes  # the model's disk blocks, no watermark
    assert tiered.total_tokens == 12_000_000 and tiered.label() == "2M + 10M disk" and dram.label() == "2M"
    assert pair_sizes([2_000_000], [], 512, LAY4, WM) == ([dram], [])  # no --disk: DRAM only, as before
    quarter = PageLayout(1, 1, 1, 128, 64)  # 4 pages per block: the disk holds whole blocks of pages
    (_, four), _ = pair_sizes([8_000_000], [0, 9_000_000], 512, quarter, WM)
    assert four.disk_pages == 9_000_000 // 512 * 4 and four.disk_bytes == four.disk_pages * quarter.page_bytes


def test_a_disk_below_its_dram_segment_is_left_out_naming_the_least_that_would_do():
    from kvtui.core.sweep import SkippedPair, disk_size, pair_sizes
    from kvtui.mooncake.errors import Conflict
    from kvtui.mooncake.tiers import check_disk

    sizes, skipped = pair_sizes([2_000_000, 8_000_000], [0, 4_000_000], 512, LAY4, WM)
    assert [(s.capacity_tokens, s.disk_tokens) for s in sizes] == [(2_000_000, 0), (2_000_000, 4_000_000),
                                                                  (8_000_000, 0)]
    (left,) = skipped
    assert (left.capacity_tokens, left.disk_tokens) == (8_000_000, 4_000_000)
    with pytest.raises(Conflict):  # the store's own rule agrees: such a tier would wedge it
        check_disk(left.disk_bytes, left.segment_bytes)
    for s in sizes:
        check_disk(s.disk_bytes or s.segment_bytes, s.segment_bytes)
    dram = point_size(8_000_000, 512, LAY4, WM)
    least = disk_size(dram, left.least_disk_tokens, 512, LAY4)
    assert not isinstance(least, SkippedPair) and least.disk_bytes >= dram.segment_bytes
    assert isinstance(disk_size(dram, left.least_disk_tokens - 512, 512, LAY4), SkippedPair)  # the least, to a block
    assert "--capacity 8M with --disk 4M" in left.text() and format_tokens(left.least_disk_tokens) in left.text()
    # the same capacity on disk is a little short: the segment holds its pages below the 90 % watermark
    assert isinstance(disk_size(dram, 8_000_000, 512, LAY4), SkippedPair)
    with pytest.raises(ValueError, match="--disk 100 is less than one trace block"):
        pair_sizes([2_000_000], [100], 512, LAY4, WM)


def test_disk_lists_take_0_as_no_tier():
    assert parse_token_list(["0,4M", "8M"], "--disk", allow_zero=True) == [0, 4_000_000, 8_000_000]
    with pytest.raises(ValueError, match="--disk must be 0 tokens or more, got -1M"):
        parse_token_list(["-1M"], "--disk", allow_zero=True)
    with pytest.raises(ValueError, match="--capacity must be at least 1 token, got 0"):
        parse_token_list(["0"])


def _disk_misses(evicted: float) -> dict:
    return _misses(0.3, evicted)


def _tiered(repeats: int = 3, model: bool = True) -> SweepResult:
    """Two DRAM sizes × (no disk, a 10M disk), ``repeats`` repeats each, as a DRAM × disk sweep writes them."""
    from kvtui.core.sweep import PointRun, pair_sizes

    sizes, _ = pair_sizes([2_000_000, 4_000_000], [0, 10_000_000], 512, LAY4, WM)
    points = []
    for k, size in enumerate(sizes):
        base = 0.2 + 0.05 * k
        runs = []
        for i in range(repeats):
            real = base + 0.01 * i
            disk = 0.0 if not size.disk_tokens else real / 3
            runs.append(PointRun(real_token_hit_rate=real, pages_hit=100 + i, tokens_hit=512 * (100 + i),
                                 pages_failed=1000 * k + i,
                                 pages_published=3 * size.pages + size.disk_pages,
                                 keys_at_end=size.pages + size.disk_pages // 2, evicted_keys=50 * k,
                                 real_disk_token_hit_rate=disk, pages_hit_disk=(30 + i) if size.disk_tokens else 0,
                                 tokens_hit_disk=512 * (30 + i) if size.disk_tokens else 0,
                                 disk_keys_at_end=size.disk_pages // 2 if size.disk_tokens else None,
                                 disk_used_bytes_at_end=size.disk_pages // 2 * 4096 if size.disk_tokens else None,
                                 misses=_disk_misses(0.5 - real)))
        lru = 0.21 + 0.05 * (size.capacity_tokens // 2_000_000)
        tiers = (lru - 0.05, 0.3, lru + 0.25) if size.disk_tokens else (lru, 0.0, lru)
        points.append(SweepPoint.of_runs(size, lru, runs, 0.6 if size.disk_tokens else 0.45,
                                         tiers if model else None))
    return SweepResult("synthetic", 3993, 512, 61_194_628, 0.6504, LAY4.as_dict(), tuple(points),
                       sizing={"rule": "pages = …", "elem_bytes_auto": True, "disk_rule": "disk pages = …",
                               "skipped_pairs": [{"capacity_tokens": 8_000_000, "disk_tokens": 4_000_000,
                                                  "disk_bytes": 1, "segment_bytes": 2,
                                                  "least_disk_tokens": 8_890_368}]},
                       store={"lease_ttl_s": 2.0, "repeats": repeats})


def test_the_tier_table_splits_the_hits_by_tier_and_fits_100_columns():
    from kvtui.core.sweep import (
        TIER_HEAD,
        TIER_LEGEND,
        TIER_STORE_HEAD,
        is_tiered,
        misses_head,
        tier_rows,
        tier_store_rows,
    )

    r = _tiered()
    assert is_tiered(r) and not is_tiered(_result())
    rows = tier_rows(r)
    assert len(rows) == len(r.points) and {len(row) for row in rows} == {len(TIER_HEAD)}
    for p, row in zip(r.points, rows):
        lo, hi = p.real_range()
        assert row[:2] == (format_tokens(p.capacity_tokens), format_tokens(p.disk_tokens) if p.disk_tokens else "0")
        assert row[2] == f"{p.real_token_hit_rate * 100:.2f} ({lo * 100:.2f}–{hi * 100:.2f})"
        assert row[3] == f"{(p.real_token_hit_rate - p.real_disk_token_hit_rate) * 100:.2f}"
        assert row[4] == f"{p.real_disk_token_hit_rate * 100:.2f}"
        assert row[5:8] == tuple(f"{x * 100:.2f}" for x in (p.model_token_hit_rate, p.model_memory_token_hit_rate,
                                                            p.model_disk_token_hit_rate))
        assert row[8] == f"{p.min_token_hit_rate * 100:.2f}"
        assert row[9] == f"{(p.real_token_hit_rate - p.model_token_hit_rate) * 100:+.2f}"
        assert row[10] == f"{p.pages_failed:,}"
    store = tier_store_rows(r)
    assert {len(row) for row in store} == {len(TIER_STORE_HEAD)}
    dram_only, tiered = store[0], store[1]
    assert dram_only[4:6] == ("—", "—") and tiered[4] == f"{r.points[1].disk_pages:,}"
    assert tiered[7] == f"{r.points[1].disk_keys_at_end:,}"
    assert tiered[9] == f"{r.points[1].pages_published - r.points[1].keys_at_end:,}"  # gone from both tiers
    assert misses_head(r)[:3] == ("DRAM", "disk", "hit")
    text = format_sweep_table(r)
    lines = text.splitlines()
    table = lines[lines.index(TIER_LEGEND[0]):]
    assert all(len(line) <= 100 for line in table), max(table, key=len)
    assert "left out (a disk tier below its DRAM segment wedges the store): 8M + 4M disk (needs 8.89M)" in text
    assert "disk tier: disk pages = …" in text and "why the prompt tokens missed" in text
    no_model = tier_rows(_tiered(1, model=False))  # a file without the model's figures
    assert [row[5] for row in no_model] == ["—"] * 4 and [row[9] for row in no_model] == ["—"] * 4


def test_a_tiered_sweep_round_trips_every_figure_and_an_old_file_still_reads():
    r = _tiered()
    doc = json.loads(json.dumps(r.to_dict()))
    assert sweep_from_dict(doc) == r
    p = doc["points"][1]
    for name in ("disk_tokens", "disk_blocks", "disk_pages", "disk_bytes", "model_token_hit_rate",
                 "model_memory_token_hit_rate", "model_disk_token_hit_rate", "real_disk_token_hit_rate",
                 "pages_hit_disk", "tokens_hit_disk", "disk_read_ms", "disk_keys_at_end", "disk_used_bytes_at_end"):
        assert p[name] == getattr(r.points[1], name), name
    assert [run["pages_hit_disk"] for run in p["runs"]] == [run.pages_hit_disk for run in r.points[1].runs]
    for field, value in (("disk_tokens", -1), ("model_disk_token_hit_rate", 2), ("real_disk_token_hit_rate", -0.5)):
        bad = json.loads(json.dumps(doc))
        bad["points"][1][field] = value
        with pytest.raises(ValueError, match=f"point 2: {field} must be"):
            sweep_from_dict(bad)
    shipped = Path(__file__).parents[2] / "screenshots" / "sweep-synthetic.json"
    old = sweep_from_dict(json.loads(shipped.read_text()))  # written before disk tiers
    assert old.points and all(q.disk_tokens == 0 and q.model_token_hit_rate is None for q in old.points)
    text = format_sweep_table(old)
    assert "offline LRU" in text and "of it" not in text  # the DRAM-only table, as before


def test_the_tier_plot_draws_one_colour_per_disk_size_with_the_model_dashed_beside_it(tmp_path):
    from kvtui.bench.sweep_plot import save_plot, sweep_figure
    from kvtui.core.sweep import tier_lines
    from kvtui.tui.widgets.sweep_curve import SweepCurve

    r = _tiered()
    lines = tier_lines(r)
    assert [(line.disk_tokens, line.name) for line in lines] == [(0, "DRAM only"), (10_000_000, "+ 10M disk")]
    for line in lines:
        pts = [p for p in r.points if p.disk_tokens == line.disk_tokens]
        assert line.capacities == tuple(p.capacity_tokens for p in pts) == (2_000_000, 4_000_000)
        assert line.real == pytest.approx([100 * p.real_token_hit_rate for p in pts])
        assert line.low == pytest.approx([100 * p.real_range()[0] for p in pts])
        assert line.model == pytest.approx([100 * p.model_token_hit_rate for p in pts])
        assert line.best == pytest.approx([100 * p.min_token_hit_rate for p in pts])
    ax = sweep_figure(r).axes[0]
    assert ax.get_xscale() == "log" and "DRAM" in ax.get_xlabel()
    drawn = ax.get_lines()
    named = [ln for ln in drawn if not ln.get_label().startswith("_")]
    assert [ln.get_label() for ln in named] == ["DRAM only", "+ 10M disk"]
    for line, real in zip(lines, named):
        same = [ln for ln in drawn if ln.get_color() == real.get_color() and ln is not real]
        model = next(ln for ln in same if ln.get_linestyle() == "--")
        best = next(ln for ln in same if ln.get_marker() == "_")
        assert list(real.get_ydata()) == pytest.approx(line.real) and list(real.get_xdata()) == list(line.capacities)
        assert list(model.get_ydata()) == pytest.approx(line.model)
        assert list(best.get_ydata()) == pytest.approx(line.best)
    assert len({ln.get_color() for ln in named}) == 2
    save_plot(r, str(tmp_path / "t.png"), "png")
    assert (tmp_path / "t.png").read_bytes()[:4] == b"\x89PNG"
    old = _tiered(1, model=False)  # no model figures: a DRAM-only line falls back to LRU, a disk line has none
    dram, disk = tier_lines(old)
    assert dram.model == pytest.approx([100 * p.lru_token_hit_rate for p in old.points if not p.disk_tokens])
    assert disk.model == (None, None)
    series = SweepCurve(r).tier_series()
    assert list(series) == [f"{what} · {name}" for name in ("DRAM only", "+ 10M disk") for what in ("real", "model",
                                                                                                      "MIN")]
    assert series["model · + 10M disk"] == ([2_000_000, 4_000_000], pytest.approx(lines[1].model))


def test_compare_keys_the_points_of_a_tiered_sweep_by_capacity_and_disk():
    from kvtui.commands.compare import figures_of

    figs = figures_of(_tiered().to_dict())
    assert "points[2000000].real_token_hit_rate" in figs
    assert figs["points[2000000+10000000].real_disk_token_hit_rate"] == _tiered().points[1].real_disk_token_hit_rate


@pytest.mark.parametrize("argv, says", [
    (["--capacity", "4M", "--disk", "-1M"], "--disk must be 0 tokens or more, got -1M"),
    (["--capacity", "4M", "--disk", "100"], "--disk 100 is less than one trace block"),
    (["--capacity", "8M", "--disk", "0,4M"], "--disk 4M: every disk tier would be smaller than the DRAM segment"),
    (["--capacity", "4M", "--disk-path", "/tmp"], "give their sizes too (--disk)"),
    (["--capacity", "4M", "--disk", "8M", "--disk-path", "/no/such/dir"], "--disk-path /no/such/dir: not an existing"),
])
def test_bad_disk_input_is_one_line_and_exit_2(argv, says, capsys):
    assert main(["sweep", "--trace", "synthetic", *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("kvtui: error: ") and says in err, err


def test_a_disk_larger_than_the_free_space_is_refused_before_any_store(monkeypatch, capsys):
    import collections
    import shutil

    usage = collections.namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda path: usage(1 << 30, 1 << 30, 1 << 20))
    assert main(["sweep", "--trace", "synthetic", "--capacity", "4M", "--disk", "8M"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is more than the free space in" in err and "--disk-path" in err
