"""Every figure is defined once (kvtui.metrics.figures): the docs' reference table is that definition, names are unique,
and the aggregator, the summary, the monitor's labels and the bench table all take theirs from it."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from kvtui.metrics import figures as fig

REFERENCE = Path(__file__).resolve().parents[2] / "docs" / "reference" / "figures.md"


def test_the_docs_table_is_the_module():
    assert fig.markdown_table() in REFERENCE.read_text(), "docs/reference/figures.md differs: make docs"


def test_one_name_per_figure_and_one_label_per_panel():
    names = Counter(f.name for f in fig.FIGURES)
    assert not [n for n, k in names.items() if k > 1]
    assert len(set(fig.FIGURES)) == len(fig.FIGURES)
    for group in (fig.WALL, fig.RUN, fig.LATENCY, fig.BENCH):
        assert len({f.label for f in group}) == len(group)
        assert len({f.key for f in group}) == len(group)
    # the three "reuse read MB/s" of old are three names now
    assert len({fig.REUSE_WALL.name, fig.REUSE_BUSY.name, fig.RELOAD_P50.name}) == 3


def test_aggregator_and_summary_use_the_figures_keys():
    from kvtui.metrics.aggregate import Aggregator

    agg = Aggregator()
    frame = agg.frame()
    assert set(frame.rates) == set(frame.series) == {f.key for f in fig.WALL}
    assert set(frame.latency) == {f.key for f in fig.LATENCY}
    s = agg.summary()
    assert list(s["throughput"]) == [f.key for f in fig.RUN]
    assert all(f.field == "throughput." + f.key for f in fig.RUN if "," not in f.field)
    assert all(f.field in s for f in fig.LATENCY + fig.RELOAD_COUNTS)
    assert agg.rate_window_s == fig.RATE_WINDOW_S and agg.window_s == fig.LATENCY_WINDOW_S


def test_monitor_labels_come_from_the_figures():
    from kvtui.tui.widgets.latency import KINDS
    from kvtui.tui.widgets.throughput import RATES, Throughput

    assert [(k, label) for k, label, _ in RATES] == [(f.key, f.label) for f in fig.WALL]
    assert list(KINDS) == [(f.key, f.label) for f in fig.LATENCY]
    assert Throughput().border_title == fig.WALL_TITLE and f"{fig.RATE_WINDOW_S:g} s" in fig.WALL_TITLE


def test_text_outputs_name_the_figures():
    from kvtui.commands.bench import format_bench
    from kvtui.commands.output import format_summary
    from kvtui.metrics.aggregate import Aggregator

    text = format_summary(Aggregator().summary())
    for f in (fig.REUSE_BUSY, fig.PUBLISH_BUSY, fig.RELOAD_LATENCY, fig.PUBLISH_LATENCY, fig.PROBE_ONLY):
        assert f.name in text, f.name
    assert fig.REUSE_WALL.name not in text and "reuse read " not in text.replace(fig.REUSE_BUSY.name, "")
    stats = {"min": 1.0, "p50": 2.0, "mean": 2.0, "max": 3.0}
    bench = {"reload_ms": stats, "tokens_skipped": 1792, "tokens_requested": 2048, "hit_rate": 7 / 8, "pages_hit": 7,
             "pages_total": 8, "bytes_reloaded": 7 << 20, "iterations": 20, "reuse_read_MBps_p50": 900.0,
             "best_reuse_read_MBps_p50": 950.0, "best_read_streams": 1, "publish_write_MBps": 500.0,
             "verify_ms_p50": 1.0, "verified": True, "tiny": {"pages_hit": 3, "pages_total": 4, "verified": True},
             "read_streams": {"1": {"MBps_p50": 900.0}},
             "baselines": {"raw_get_MBps_p50": 950.0, "loopback_tcp_MBps": 1500.0, "colocated_reload_MBps_p50": 1e3,
                           "memcpy_MBps": 1200.0},
             "ratios": {"connector_vs_raw": 0.95, "reload_vs_loopback_tcp": 0.6, "reload_vs_memcpy": 0.83}}
    table = format_bench(bench)
    assert fig.RELOAD_P50.label in table and fig.PUBLISH_BUSY.name in table and fig.RELOAD_LATENCY.name in table
    assert "reuse read" not in table and fig.BEST_STREAMS_VS_RAW.name not in table
    bench["ratios"].update(best_streams_vs_raw=0.947, tcp_connector_vs_raw=1.016)
    bench["tcp_path"] = {"reuse_read_MBps_p50": 1200.0, "reload_ms": stats, "raw_get_MBps_p50": 1180.0,
                         "verified": True}
    bench["ratios"]["tcp_reload_vs_loopback_tcp"] = 0.8
    lines = format_bench(bench).splitlines()
    # every ratio on a row of its own, named by its figure, with its target where it has one
    assert f"  {fig.BEST_STREAMS_VS_RAW.name:<34}    0.95×" in lines
    assert f"  {fig.TCP_CONNECTOR_VS_RAW.name:<34}    1.02×" in lines
    assert f"  {fig.CONNECTOR_VS_RAW.name:<34}    0.95×   ≥ 0.97   NOT met" in lines
    assert f"  {fig.RELOAD_VS_TCP.name:<34}    0.60×   ≥ 1      NOT met" in lines
    assert f"  {fig.TCP_RELOAD_VS_TCP.name:<34}    0.80×   ≥ 0.8    met" in lines
    from kvtui.bench.reuse import DEMO_CARD

    bench.update(demo_card=DEMO_CARD, page_bytes=DEMO_CARD["page_bytes"])
    table = format_bench(bench)
    assert "Against the demo card\n" in table and "NOT this run's layout" not in table
    bench["page_bytes"] = 4096  # e.g. --layout tiny: the card's column is said not to compare like for like
    table = format_bench(bench)
    assert "Against the demo card (NOT this run's layout or prompt: see the Legend)" in table
    assert "NOT this run's layout or prompt: for scale, not like for like." in " ".join(table.split())


def test_counts_and_ratios_are_named_once_and_every_target_has_its_ratio():
    from kvtui.bench.targets import TARGETS

    every = fig.FIGURES + fig.COUNTS + fig.BENCH + fig.RATIOS + (fig.RELOAD_HIT_RATE, fig.VERIFY_MS)
    names = Counter(f.name for f in set(every))
    assert not [n for n, k in names.items() if k > 1]
    assert set(TARGETS) <= set(fig.RATIO_BY_KEY)
    assert all(f.unit == "×" and f.field.startswith(f"ratios.{f.key}") for f in fig.RATIOS)
    from kvtui.metrics.aggregate import BUSY_MS, COUNTERS

    counted = {field.strip() for f in fig.COUNTS + fig.RELOAD_COUNTS for field in f.field.split(",")}
    assert set(COUNTERS + BUSY_MS) <= counted  # every counter of the summary has its name


def test_numbers_are_written_one_way():
    assert fig.number(4293.4, "MB/s") == "4,293" and fig.show(fig.REUSE_BUSY, 4293.4) == "4,293 MB/s"
    assert fig.show(fig.RELOAD_LATENCY, 1.547) == "1.55 ms" and fig.show(fig.TTFT_SAVED, 12.34) == "12.3 ms"
    assert fig.show(fig.HIT_RATE_SESSION, 0.645) == "64.50%" and fig.show(fig.CONNECTOR_VS_RAW, 0.616) == "0.62×"
    assert fig.number(0.0125, "%", sign=True) == "+1.25 pp" and fig.number(-1234.5, "ms", sign=True) == "-1,234.50"
    assert fig.number(0.2, "MB/s", sign=True) == "±0"  # a change that rounds to nothing
    assert fig.number(1_056_768, "bytes") == "1,056,768" and fig.number(12345, "") == "12,345"
    assert fig.number(0.1172, "") == "0.1172" and fig.number(1234.5, "") == "1,234"  # no unit: by magnitude
