"""The monitor on a store with a disk tier: the grid draws a page reloaded from disk (▆) apart from one reloaded
from memory (█) and its legend names it; the header says where the hits came from; the Latency panel shows the
reload's memory and disk parts; the Store panel the disk's use, offloads, disk evictions and promotions; the row
details the reload's time on disk. Without a disk tier none of it shows."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from textual.app import App, ComposeResult
from tui_helpers import run

import kvtui.tui
from kvtui.core.pages import PageState as S
from kvtui.metrics.frame import PageRow
from kvtui.testing.demo import DEMO_DISK_BYTES, fixture_frame
from kvtui.tui.fmt import fmt_count
from kvtui.tui.widgets.kpis import Kpis
from kvtui.tui.widgets.latency import KINDS, TIER_KINDS, LatencyPanel
from kvtui.tui.widgets.page_grid import CLASS, GLYPH, SEVERITY, PageGrid, compress
from kvtui.tui.widgets.store_panel import StorePanel

TCSS = Path(kvtui.tui.__file__).with_name("app.tcss")
DISK = fixture_frame(disk_bytes=DEMO_DISK_BYTES)  # a tiered demo store: some hits from disk
ONE = fixture_frame()  # the same traffic on a store with one tier


class One(App):
    CSS_PATH = str(TCSS)

    def __init__(self, widget):
        super().__init__()
        self.widget = widget

    def compose(self) -> ComposeResult:
        yield self.widget

    def on_mount(self) -> None:
        self.widget.styles.border = ("none", "black")
        self.widget.styles.padding = 0


def with_widget(widget, check, size=(100, 12)):
    async def go():
        async with One(widget).run_test(size=size) as pilot:
            await pilot.pause()
            return check(widget)

    return run(go())


def row(req_id: int, states) -> PageRow:
    return PageRow(req_id, "x", len(states) * 256, sum(1 for s in states if s in (S.HIT, S.HIT_DISK)), bytes(states))


def test_the_grid_draws_a_disk_hit_apart_from_a_memory_hit():
    """render_line of a fixed row: ▆ cells in the disk-hit style, █ cells in the hit style; the legend names the
    disk hit; a compressed cell with a disk hit shows the disk hit, a partial tail outranks it."""
    assert GLYPH[S.HIT_DISK] == "▆" and GLYPH[S.HIT] == "█" and CLASS[S.HIT_DISK] == "page-grid--hit-disk"
    assert SEVERITY.index(S.PARTIAL) < SEVERITY.index(S.HIT_DISK) < SEVERITY.index(S.HIT)
    assert compress(bytes([S.HIT, S.HIT_DISK]), 2) == [S.HIT_DISK]
    assert compress(bytes([S.HIT_DISK, S.PARTIAL]), 2) == [S.PARTIAL]
    grid = PageGrid()
    grid.set_rows((row(1, [S.HIT, S.HIT, S.HIT_DISK, S.HIT_DISK, S.PUBLISHED]),))

    def check(g):
        line = g.render_line(1)  # under the ruler
        text = line.text
        assert text.startswith("#1 ") and "█" in text and "▆" in text and text.index("█") < text.index("▆")
        styles = {seg.text.strip()[:1]: seg.style for seg in line if seg.text.strip()}
        assert styles["▆"] == g.get_component_rich_style("page-grid--hit-disk", partial=False)
        assert styles["█"] == g.get_component_rich_style("page-grid--hit", partial=False)
        assert styles["▆"].color != styles["█"].color
        legend = " ".join(g.render_line(y).text for y in range(g.size.height - 2, g.size.height))
        assert "▆ disk hit" in legend
        return True

    assert with_widget(grid, check)


def test_the_legend_names_the_disk_hit_only_on_a_tiered_store():
    plain = PageGrid()
    plain.set_rows((row(1, [S.HIT, S.PUBLISHED]),))

    def legend(g):
        return " ".join(g.render_line(y).text for y in range(g.size.height - 2, g.size.height))

    assert "disk" not in with_widget(plain, legend)
    tiered = PageGrid()
    tiered.set_rows((row(1, [S.HIT, S.PUBLISHED]),))
    tiered.set_tiered(True)  # (no disk hit on screen yet: the legend still names it)
    assert "▆ disk hit" in with_widget(tiered, legend)


def test_the_header_says_where_the_hits_came_from():
    def chips(frame):
        def check(k):
            k.update_frame(frame)
            return k.chips

        return with_widget(Kpis(), check, size=(200, 6))

    t = DISK.totals
    chip = next(c for c in chips(DISK) if c.startswith("hits from"))
    assert chip == (f"hits from memory {100 * t['page_hit_rate_memory']:.1f} % · "
                    f"disk {100 * t['page_hit_rate_disk']:.1f} %")
    assert not [c for c in chips(ONE) if "disk" in c or c.startswith("hits from")]


def test_the_header_marks_disk_reads_slower_than_recompute():
    """The TTFT chips of a tiered frame: the disk tier's reload against recomputing its tokens, marked above 1."""
    window = {"count": 10, "p50_ms": 5.0, "p99_ms": 9.0, "ratio": 0.5,
              "tiers": {"memory": {"count": 9, "ratio": 0.2}, "disk": {"count": 4, "ratio": 1.6}}}
    frame = dataclasses.replace(DISK, ttft={"basis": "x", "short": "H100 @ 40 % MFU", "window": window})

    def check(k):
        k.update_frame(frame)
        return k.chips

    assert "⚠ disk reads 1.60× slower than recompute (est.)" in with_widget(Kpis(), check, size=(200, 8))
    window["tiers"]["disk"]["ratio"] = 0.7
    assert "disk vs recompute 0.70× (est.)" in with_widget(Kpis(), check, size=(200, 8))


def test_the_latency_panel_shows_the_reloads_memory_and_disk_parts():
    def titles(frame):
        def check(p):
            p.update_frame(frame, window=False, window_label="last 30 s")
            return p.kinds, [ln for ln in p.render().plain.split("\n") if " n " in ln]

        return with_widget(LatencyPanel(), check, size=(60, 30))

    kinds, lines = titles(DISK)
    assert kinds == KINDS[:1] + TIER_KINDS + KINDS[1:]
    assert [ln.split(" n ")[0].strip() for ln in lines] == ["reload", "└ mem", "└ disk", "publish", "probe"]
    counts = {k: DISK.latency[k].count for k, _ in TIER_KINDS}
    assert lines[2].split()[3] == f"{counts['reload_disk']:,}" and counts["reload_disk"] > 0
    kinds, lines = titles(ONE)
    assert kinds == KINDS and len(lines) == 3

    def short(p):  # (a panel of 5 lines, 80×24: the three kinds keep a line each, the parts give way)
        p.update_frame(DISK, window=False, window_label="last 30 s")
        return p.kinds, p.render().plain.split("\n")

    kinds, lines = with_widget(LatencyPanel(), short, size=(60, 5))
    assert kinds == KINDS and [ln.split()[0] for ln in lines[:3]] == ["reload", "publish", "probe"]


def test_the_store_panel_shows_the_disk_tier():
    def text(frame):
        def check(p):
            p.update_frame(frame)
            return "\n".join(t.plain for t in p.lines(34))

        return with_widget(StorePanel(), check, size=(34, 12))

    s = DISK.store
    shown = text(DISK)
    assert f"offloaded {s['offloaded_keys']:,}" in shown and "disk evicted 0" in shown and "promoted 0" in shown
    assert "\nmem  " in shown and "\ndisk " in shown and "/ 64.0 GiB" in shown
    assert "evicted " + str(s["evicted_keys"]) not in shown  # a DRAM eviction is an offload here
    plain = text(ONE)
    assert "disk" not in plain and "offloaded" not in plain and "\nused " in plain

    def narrow(p):  # (22 cells, 80×24: short words, no byte lines, both bars within the first 5 lines)
        p.update_frame(DISK)
        return [t.plain for t in p.lines(22)]

    lines = with_widget(StorePanel(), narrow, size=(22, 12))
    assert lines[0].startswith("keys ") and "offload " in lines[0] and "GiB" not in "".join(lines)
    assert [ln.split()[0] for ln in lines[3:5]] == ["mem", "disk"]


def test_the_store_panel_shows_the_hot_hits_and_the_masters_copies():
    """A store that replicates hot keys: one line more, the hits with a hot replica and the copies started and done;
    short words when narrow; nothing of it on a store that does not replicate."""
    hot = fixture_frame(replicate_hot=True)

    def lines(frame, width):
        def check(p):
            p.update_frame(frame)
            return [t.plain for t in p.lines(width)]

        return with_widget(StorePanel(), check, size=(width, 12))

    s, n = hot.store, int(hot.totals["pages_hit_replicated"])
    wide = lines(hot, 50)
    assert f"hot hits {n:,}  copies {s['copies_started']:,} started · {s['copies_done']:,} done" in wide
    narrow = lines(hot, 22)  # (80×24: as many lines as a store without replication, the byte line left out)
    assert f"hot {fmt_count(n)}  copies {s['copies_done']}/{s['copies_started']}" in narrow
    assert all(len(ln) <= 22 for ln in narrow) and len(narrow) == len(lines(ONE, 22)) and "GiB" not in "".join(narrow)
    assert not [ln for ln in lines(ONE, 50) if "hot" in ln or "copies" in ln]


def test_row_details_say_the_reloads_time_on_disk():
    from kvtui.tui.screens.row_detail import detail_lines

    r = dataclasses.replace(row(3, [S.HIT, S.HIT_DISK, S.HIT_DISK]), reload_ms=7.5, disk_read_ms=5.25, page_tokens=256)
    lines = [str(x) for x in detail_lines(r)]
    assert any("5.25 ms of it reading 2 pages from disk" in ln for ln in lines), lines
    summary = next(x for x in detail_lines(r) if isinstance(x, tuple) and x[0] == "summary")
    assert (S.HIT_DISK, "2 disk hit") in summary[1]
    assert not any("from disk" in str(x) for x in detail_lines(row(4, [S.HIT])))
