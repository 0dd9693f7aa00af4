"""Widget tests: render_line / render of single widgets with fixed data (no timer, no controller)."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.app import App, ComposeResult
from tui_helpers import result, run

import kvtui.tui
from kvtui.core.knobs import OVERLAP, POOL, RATE, RATE_STEPS
from kvtui.core.pages import PageState as S
from kvtui.metrics.frame import PageRow
from kvtui.metrics.latency import LatencyRecorder
from kvtui.tui.fmt import fmt_elapsed, fmt_mbps, fmt_ms, fmt_pct, fmt_rate
from kvtui.tui.widgets.event_log import EventLog, wrap_words
from kvtui.tui.widgets.kpis import workload_text
from kvtui.tui.widgets.latency import KINDS, Axis, LatencyPanel, bar_rows, bucket_of, merge_buckets, tick_text
from kvtui.tui.widgets.page_grid import CLASS, GLYPH, PageGrid, compress, scale_for

TCSS = Path(kvtui.tui.__file__).with_name("app.tcss")
ALL = [S.HIT, S.PUBLISHED, S.PRESENT, S.COMPUTED, S.PARTIAL, S.FAILED, S.EVICTED, S.MISMATCH]


def row(req_id: int, states) -> PageRow:
    return PageRow(req_id, "x", len(states) * 256, sum(1 for s in states if s == S.HIT), bytes(states))


class One(App):
    """Hosts one widget with the real stylesheet."""

    CSS_PATH = str(TCSS)

    def __init__(self, widget, width: int | None = None):
        super().__init__()
        self.widget = widget
        self.width = width

    def compose(self) -> ComposeResult:
        yield self.widget

    def on_mount(self) -> None:
        self.widget.styles.border = ("none", "black")  # content size = widget size
        self.widget.styles.padding = 0
        if self.width:
            self.widget.styles.width = self.width


def with_widget(widget, check, size=(60, 14), width=None):
    async def go():
        async with One(widget, width).run_test(size=size) as pilot:
            await pilot.pause()
            return check(widget)

    return run(go())


# -- page grid ----------------------------------------------------------------------------------------------
def test_compress_keeps_the_most_severe_page():
    assert compress(bytes([S.HIT, S.HIT, S.HIT, S.PUBLISHED]), 2) == [S.HIT, S.PUBLISHED]
    assert compress(bytes([S.HIT, S.MISMATCH, S.FAILED, S.EVICTED]), 4) == [S.MISMATCH]
    assert compress(bytes([S.HIT, S.PARTIAL]), 2) == [S.PARTIAL]
    assert compress(bytes([S.PUBLISHED, S.PRESENT, S.COMPUTED]), 3) == [S.COMPUTED]
    assert compress(bytes([S.HIT] * 5), 2) == [S.HIT] * 3
    assert compress(bytes([S.HIT, 99]), 2) == [99]  # unknown values are never hidden
    assert scale_for(250, 60) == 5 and scale_for(60, 60) == 1 and scale_for(0, 10) == 1


def test_grid_cells_glyphs_and_colours():
    """Every state has its own glyph and its own colour (published and present are no longer both blue)."""
    grid = PageGrid()
    grid.set_rows((row(7, ALL),))

    def check(g):
        assert g.render_line(0).text.split() == [str(p) for p in range(8)]  # the page-index ruler
        line = g.render_line(1)
        assert line.text.startswith("#7 ")
        pw = g.page_w
        assert pw == (g.size.width - 4) // len(ALL) and pw >= 3  # spread over the width, a separator each
        cells = line.text[4:4 + pw * len(ALL)]
        assert cells == "".join(GLYPH[s] * (pw - 1) + " " for s in ALL)
        assert "".join(GLYPH[s] for s in ALL) == "█▓▒░·XE!"
        styles = {}
        for seg in line:
            for ch in seg.text:
                styles.setdefault(ch, seg.style)
        for s in ALL:  # each state is drawn in its TCSS component style
            assert styles[GLYPH[s]] == g.get_component_rich_style(CLASS[s], partial=False), s
        looks = {(styles[GLYPH[s]].color, styles[GLYPH[s]].bgcolor) for s in ALL}
        assert len(looks) == len(ALL)  # every state its own colour too
        assert styles["X"].bgcolor != styles["█"].bgcolor  # errors stand out on a background
        assert g.scale == 1 and g.scale_note == f"1 page = {pw} columns"
        return True

    assert with_widget(grid, check)


def test_grid_fills_the_width_with_few_pages():
    """8 pages on 80 columns: each page 9 columns (8 glyphs and a separator), the ruler at page starts; from
    90 columns the labels also give the prompt length."""
    grid = PageGrid()
    grid.set_rows((row(1, [S.HIT] * 6 + [S.PUBLISHED] * 2), row(2, [S.HIT] * 8)))

    def check(g):
        assert g.page_w == 9 and g.scale == 1
        ruler, top = g.render_line(0).text, g.render_line(1).text
        assert top.startswith("#2 ") and top[4:4 + 18] == "█" * 8 + " " + "█" * 8 + " "
        assert len(top.rstrip()) == 4 + 8 * 9 - 1  # the grid is filled, not an 8-column strip
        assert [ruler.index(str(p), 4 + 9 * p - 1) for p in range(0, 8)] == [4 + 9 * p for p in range(8)]
        assert "1 page = 9 columns" in g.border_subtitle
        return True

    assert with_widget(grid, check, size=(80, 10))
    assert with_widget(PageGrid(), lambda g: (g.set_rows((row(2, [S.HIT] * 8),)),
                                              g.render_line(1).text.startswith("#2 2.0k "))[1], size=(100, 10))


def test_grid_newest_first_and_legend_at_bottom():
    grid = PageGrid()
    grid.set_rows(tuple(row(i, [S.HIT] * i) for i in range(1, 6)))

    def check(g):
        lines = [g.render_line(y).text for y in range(g.size.height)]
        assert lines[1].startswith("#5 ") and lines[5].startswith("#1 ")
        assert "hit" in lines[-1] or "hit" in lines[-2]
        assert any("mismatch" in ln for ln in lines[-2:])
        return True

    assert with_widget(grid, check)


def test_grid_compresses_long_rows_and_says_so():
    grid = PageGrid()
    long = [S.HIT] * 200 + [S.PUBLISHED] * 49 + [S.MISMATCH] + [S.PARTIAL]  # 251 cells, a 128k-token trace row
    grid.set_rows((row(1, [S.HIT] * 10), row(2, long)))

    def check(g):
        width = g.size.width
        assert g.scale == scale_for(len(long), width - 4) == 7
        assert g.scale_note == "1 cell = 7 pages (worst shown)"
        assert "1 cell = 7 pages" in g.border_subtitle
        top = g.render_line(1).text  # newest row (#2), under the ruler
        cells = top[4:].rstrip()
        assert len(top) == width and len(cells) == -(-len(long) // 7)
        assert cells.startswith("█" * 28) and "!" in cells  # the mismatch survives compression
        short = g.render_line(2).text[4:].rstrip()
        assert short == "██"  # 10 hits at 7 pages/cell
        assert g.render_line(0).text.split()[:3] == ["0", "28", "56"]  # ruler: page indices, 4 cells apart
        return True

    assert with_widget(grid, check, size=(40, 12))


def test_grid_marks_rows_of_the_same_prefix_group():
    """Rows of a group seen twice carry the group's marker and colour; a group seen once does not."""
    grid = PageGrid()
    rows = [PageRow(i, "shared-system-prompt", 2048, 6, bytes([S.HIT] * 6 + [S.PUBLISHED] * 2), group=g)
            for i, g in enumerate(["sys 1", "sys 2", "sys 1", ""])]
    grid.set_rows(tuple(rows))

    def check(g):
        lines = {y: g.render_line(y) for y in range(1, 5)}  # newest first: #3 "", #2 sys 1, #1 sys 2, #0 sys 1
        texts = {y: ln.text for y, ln in lines.items()}
        assert texts[2].startswith("#2 sys 1 ▌") and texts[4].startswith("#0 sys 1 ▌")
        assert texts[3].startswith("#1 sys 2  ") and "▌" not in texts[3] and "▌" not in texts[1]
        colour = {seg.text: seg.style.color for seg in lines[2] if seg.text.strip() in ("sys 1", "▌")}
        assert len(set(colour.values())) == 1 and colour[next(iter(colour))] != g.style_of("page-grid--label").color
        assert any("same prefix group" in g.render_line(y).text for y in range(g.size.height - 2, g.size.height))
        return True

    assert with_widget(grid, check, size=(70, 12))


def test_a_legend_glyph_has_one_name_at_every_width():
    """A narrow grid abbreviates the legend's words (pub, comp, …), but never names a glyph otherwise: ▒ was
    "present" when wide and "peer" when narrow (a page another worker stored?) though it is a page the
    publish found already present in the store (PageState.PRESENT, counted in pages_already_present),
    whoever stored it; the help screen's line for it says so too."""
    from kvtui.tui.widgets.page_grid import STATES

    full = {state: word for state, _, _, word, _ in STATES}
    description = {state: text for state, _, _, _, text in STATES}
    seen: dict[int, set[str]] = {}
    for groups in (False, True):
        grid = PageGrid()
        grid.set_rows(tuple(PageRow(i, "x", 2048, 0, bytes(ALL + [S.HIT_DISK]), group="sys 1" if groups else "")
                            for i in range(3)))  # (a disk hit on screen: the legend names it)
        for width in range(20, 201):
            for line in grid.legend_lines(width, 40):
                for text, state in line:
                    if state >= 0:
                        seen.setdefault(state, set()).add(text.split(" ", 1)[1])
    assert set(seen) == set(full)
    for state, words in seen.items():  # the full word, or an abbreviation of it
        assert full[state] in words and all(full[state].startswith(w) for w in words), (state, words)
    assert full[S.PRESENT] == "present" and "peer" not in description[S.PRESENT]
    assert "already present" in description[S.PRESENT]


def test_grid_empty_and_tiny_sizes_never_fail():
    grid = PageGrid()

    def check(g):
        assert "waiting" in g.render_line(0).text
        return True

    assert with_widget(grid, check)
    grid2 = PageGrid()
    grid2.set_rows((row(1, ALL * 10),))
    assert with_widget(grid2, lambda g: [g.render_line(y) for y in range(3)] and g.scale >= 1, size=(3, 2))


# -- latency ------------------------------------------------------------------------------------------------
def test_bucket_helpers():
    assert merge_buckets(((1, 1), (2, 2), (4, 3), (8, 4)), 2) == [(2.0, 3), (8.0, 7)]
    assert bucket_of(3.0, [(1, 0), (2, 0), (4, 0)]) == 2
    assert bucket_of(99.0, [(1, 0), (2, 0)]) == 1
    rows = bar_rows([0, 4, 8], 2)
    assert rows[0] == [0, 0, 8] and rows[1] == [0, 8, 8]
    assert [tick_text(v) for v in (0.25, 1.0, 16.0, 1024.0)] == ["250µs", "1ms", "16ms", "1.02s"]


def _frame_with_latency():
    from tui_helpers import AggSource
    src = AggSource([result(i, [S.HIT] * 3, reload_ms=0.5 + i % 40) for i in range(200)]
                    + [result(900, [S.PUBLISHED] * 3, reload_ms=0.0)])  # a probe-only reload
    return src.frame()


def test_latency_histograms_share_one_log_axis():
    """The three histograms are drawn on one scale (one Axis), its ticks labelled with units, each with its
    p50 / p90 / p99 markers on its axis row and its sample count; probe-only reloads are counted beside."""
    frame = _frame_with_latency()
    snaps = [frame.latency[k] for k, _ in KINDS]
    assert snaps[0].count == 200 and frame.totals["reloads_probe_only"] == 1

    def tall(p):
        p.update_frame(frame, window=False, window_label="last 30 s")
        lines = p.render().plain.split("\n")
        titles = [ln for ln in lines if ln.split(" ")[0] in ("reload", "publish", "probe") and " n " in ln]
        assert [t.split()[:3] for t in titles] == [["reload", "n", "200"], ["publish", "n", "1"],
                                                   ["probe", "n", "201"]]
        assert all("p50" in t and "p99" in t for t in titles)
        axis = Axis(snaps, p.size.width)
        marker_rows = [ln for ln in lines if "─" in ln]
        assert len(marker_rows) == 3 and all(ln.count("▲") >= 1 for ln in marker_rows)
        reload_axis = marker_rows[0]
        for value in (snaps[0].p50, snaps[0].p99):
            assert reload_axis[axis.col(value)] == "▲"  # each marker where its value lies on the shared axis
        ticks = lines[len(lines) - 2]
        assert "ms" in ticks and all(label in ticks for _, label in axis.ticks())
        assert "+1 probe-only (no read)" in lines[-1]
        assert "whole session" in p.border_title
        return True

    assert with_widget(LatencyPanel(), tall, size=(60, 20))

    def short(p):
        p.update_frame(frame, window=True, window_label="last 30 s")
        lines = p.render().plain.split("\n")
        assert lines[0].startswith("reload") and lines[2].startswith("probe") and " n 200 " in lines[0]
        assert "last 30 s" in p.border_title
        return True

    assert with_widget(LatencyPanel(), short, size=(60, 3))


def test_empty_latency_says_no_samples_yet():
    rec = LatencyRecorder()
    assert rec.snapshot().count == 0
    from tui_helpers import AggSource
    frame = AggSource().frame()

    def check(p):
        p.update_frame(frame, window=True, window_label="x")
        assert p.render().plain.count("no samples yet") == 3
        return True

    assert with_widget(LatencyPanel(), check, size=(50, 9))


# -- event log ----------------------------------------------------------------------------------------------
def test_event_log_merges_engine_and_ui_lines_and_wraps():
    from tui_helpers import AggSource
    frame = AggSource().frame()
    log = EventLog(keep=5)

    def check(lg):
        lg.update_frame(frame)
        lg.add_line(0.5, "overlap → 80 %")
        assert lg.texts == ["store up", "overlap → 80 %"]
        for i in range(10):
            lg.add_line(1 + i, f"line {i}")
        assert len(lg.entries()) == 5  # bounded
        lg.add_line(20, "a very long line " * 6)
        lines = lg.wrapped(30, 4)
        assert len(lines) == 4 and all(ln.cell_len <= 30 for ln in lines)
        lg.add_line(21, "recording stopped: kvtui-20261130-114921.kvtui")
        lines = [ln.plain for ln in lg.wrapped(34, 2)]  # 6 cells of time stamp, 28 of text
        assert lines == [" 0:21 recording stopped:", "      kvtui-20261130-114921.kvtui"]
        return True

    assert with_widget(log, check, size=(30, 6))


@pytest.mark.parametrize("width,lines", [
    (40, ["recording → kvtui-20261130-114921.kvtui"]),
    (30, ["recording →", "kvtui-20261130-114921.kvtui"]),  # fits on a line of its own: moved, not broken
    (27, ["recording →", "kvtui-20261130-114921.kvtui"]),
    (20, ["recording →", "kvtui-20261130-", "114921.kvtui"]),  # longer than a line: broken after a "-"
    (8, ["recordin", "g →", "kvtui-", "20261130", "-", "114921.k", "vtui"]),
])
def test_event_log_wraps_without_breaking_words(width, lines):
    assert wrap_words("recording → kvtui-20261130-114921.kvtui", width) == lines


def test_event_log_breaks_a_long_path_after_a_slash():
    text = "screenshot → screenshots/kvtui-20261130-114921.svg"
    assert wrap_words(text, 34) == ["screenshot →", "screenshots/", "kvtui-20261130-114921.svg"]
    for width in range(1, 60):
        lines = wrap_words(text, width)
        assert all(len(ln) <= width for ln in lines) and "".join(lines).replace(" ", "") == text.replace(" ", "")
    assert wrap_words("", 10) == [""]


# -- formatting and knobs -----------------------------------------------------------------------------------
def test_formatters_carry_units():
    assert fmt_ms(0.25) == "250 µs" and fmt_ms(3.456) == "3.46 ms" and fmt_ms(1234) == "1.23 s"
    assert fmt_mbps(123.45) == "123.5 MB/s" and fmt_mbps(2345) == "2.35 GB/s"
    assert fmt_pct(0.4123) == "41.2 %" and fmt_rate(12.34) == "12.3/s" and fmt_rate(45600) == "45.6k/s"
    assert fmt_elapsed(83.4) == "1:23" and fmt_elapsed(4000) == "1:06:40"


@pytest.mark.parametrize("current,up,measured,expected", [
    (10, True, 0, 20), (10, False, 0, 5), (0.5, False, 0, 0.5), (1000, True, 0, 0.0),
    (0, True, 0, 0.0), (0, False, 73.0, 50), (0, False, 0.1, RATE_STEPS[0]), (7, True, 0, 10), (7, False, 0, 5)])
def test_rate_steps(current, up, measured, expected):
    assert RATE.stepped(current, up, measured) == expected


@pytest.mark.parametrize("knob,current,up,expected", [
    (OVERLAP, 0.5, True, 0.55), (OVERLAP, 0.61, True, 0.65), (OVERLAP, 0.61, False, 0.55), (OVERLAP, 1.0, True, 1.0),
    (OVERLAP, 0.0, False, 0.0), (POOL, 4, True, 5), (POOL, 1, False, 1)])
def test_knob_steps_land_on_the_grid_and_stop_at_the_ends(knob, current, up, expected):
    assert knob.stepped(current, up) == pytest.approx(expected)


# -- header: store state ------------------------------------------------------------------------------------
def test_store_state_unknown_before_the_first_scrape_is_not_down():
    """The first (recorded) frame has ``store["up"] is None`` (no scrape yet; the status then says
    ``store_up: False``): the header shows "—", not DOWN. Only False is down."""
    import dataclasses

    from tui_helpers import AggSource

    from kvtui.tui.widgets.kpis import Kpis, store_up

    base = AggSource().frame()

    def frame(up, status_up=True):
        store = {**base.store, "up": up} if up != "absent" else dict(base.store)
        return dataclasses.replace(base, store=store, status={**base.status, "store_up": status_up})

    assert store_up(frame(None, False)) is None and store_up(frame(False, False)) is False
    assert store_up(frame(True)) is True and store_up(frame("absent", True)) is True
    assert store_up(frame("absent", False)) is False

    def check(kpis):
        out = {}
        for name, f in (("unknown", frame(None, False)), ("down", frame(False, False)), ("up", frame(True))):
            kpis.update_frame(f)
            out[name] = next(c for c in kpis.chips if c.startswith("store"))
        return out

    assert with_widget(Kpis(), check, size=(200, 6)) == {
        "unknown": "store embedded ● —", "down": "store embedded ● DOWN", "up": "store embedded ● up"}


def test_the_header_title_follows_the_width_after_its_frame():
    """The title chip shows from TITLE_FROM columns; a frame shown before a resize is rebuilt on the resize."""
    from tui_helpers import AggSource

    from kvtui.tui.widgets.kpis import TITLE_FROM, Kpis

    kpis = Kpis()
    frame = AggSource().frame()

    async def go():
        async with One(kpis).run_test(size=(TITLE_FROM - 20, 6)) as pilot:
            await pilot.pause()
            kpis.update_frame(frame)
            narrow = list(kpis.chips)
            await pilot.resize_terminal(TITLE_FROM + 20, 6)
            await pilot.pause()
            wide = list(kpis.chips)
            await pilot.resize_terminal(TITLE_FROM - 20, 6)
            await pilot.pause()
            return narrow, wide, list(kpis.chips)

    narrow, wide, narrow_again = run(go())
    assert narrow[0] != "kvtui" and wide[0] == "kvtui" and wide[1:] == narrow and narrow_again == narrow


def test_the_grid_title_says_why_pages_missed_in_the_longest_form_that_fits():
    grid = PageGrid()
    assert grid.title_for(200) == "Page grid · newest first"  # no reasons yet
    grid.set_misses({"misses_first_use": 30, "miss_share_first_use": 0.4123, "misses_evicted": 2,
                     "miss_share_evicted": 0.0312, "misses_after_break": 1, "miss_share_after_break": 0.001,
                     "misses_in_flight": 0, "miss_share_in_flight": 0.0})
    full = f"Page grid · newest first · missed: first use {fmt_pct(0.4123)} · evicted {fmt_pct(0.0312)} · " \
           f"after a break {fmt_pct(0.001)}"
    assert grid.title_for(200) == full
    widths = [len(grid.title_for(w)) + 4 for w in (90, 70, 55, 45, 40)]
    assert all(n <= w for n, w in zip(widths, (90, 70, 55, 45, 40)))  # each fits its width
    assert grid.title_for(40) == f"missed first {fmt_pct(0.4123, 0)} · evicted {fmt_pct(0.0312, 0)} …"
    assert grid.title_for(20) == "Page grid · newest first"  # too narrow for any: the plain title


def test_row_details_name_the_reasons_of_the_row_misses():
    from kvtui.tui.screens.row_detail import detail_lines

    r = PageRow(3, "x", 1024, 1, bytes([S.HIT, S.PUBLISHED, S.PRESENT, S.PRESENT]),
                misses=(("evicted", 1), ("after_break", 2)))
    assert "missed: 1 evicted · 2 after a break" in [str(x) for x in detail_lines(r)]
    assert not any(str(x).startswith("missed:") for x in detail_lines(row(4, [S.HIT])))  # (none known)


def test_grid_cells_show_why_a_page_missed():
    """A computed page whose reason is not first use is drawn with the reason's glyph (e n b f), in the row
    and in a compressed cell (below errors, above computed states); the legend names only the reasons on the
    rows shown, and an error state or first use keeps its glyph."""
    import itertools

    from kvtui.core.misses import MissReason as R
    from kvtui.tui.widgets.page_grid import REASON_BASE, cells_of

    states = [S.HIT, S.PUBLISHED, S.PRESENT, S.PUBLISHED, S.COMPUTED, S.EVICTED, S.PUBLISHED, S.PARTIAL]
    reasons = bytes([R.NONE, R.EVICTED, R.AFTER_BREAK, R.NEVER_STORED, R.IN_FLIGHT, R.EVICTED, R.FIRST_USE])
    assert cells_of(bytes(states), reasons) == [S.HIT, REASON_BASE + R.EVICTED, REASON_BASE + R.AFTER_BREAK,
                                                REASON_BASE + R.NEVER_STORED, REASON_BASE + R.IN_FLIGHT,
                                                S.EVICTED, S.PUBLISHED, S.PARTIAL]
    assert cells_of(bytes(states), b"") == states  # no reasons (an older recording): the states
    assert compress(cells_of(bytes(states), reasons), 8) == [S.EVICTED]  # the error outranks a reason
    assert compress(cells_of(bytes(states[:5]), reasons), 5) == [REASON_BASE + R.EVICTED]
    grid = PageGrid()
    grid.set_rows((PageRow(1, "x", 4000, 1, bytes(states), reasons=reasons), row(2, [S.HIT, S.PUBLISHED])))

    def check(g):
        lines = [g.render_line(y).text for y in range(g.size.height)]
        drawn = lines[2][lines[2].index("█"):].replace(" ", "")  # row #1 (under #2), one run per page
        assert "".join(k for k, _ in itertools.groupby(drawn)) == "█ebnfE▓·"
        legend = " ".join(lines[-2:])
        assert all(f"{c} {w}" in legend for c, w in (("e", "evicted earlier"), ("n", "never stored"),
                                                       ("b", "after a break"), ("f", "in flight")))
        cells = [seg for seg in g.render_line(2) if seg.text.strip().startswith("e")]
        assert cells[0].style.color == g.style_of("page-grid--miss-evicted").color
        return True

    assert with_widget(grid, check, size=(120, 12))
    only = PageGrid()
    only.set_rows((PageRow(1, "x", 512, 0, bytes([S.PRESENT]), reasons=bytes([R.AFTER_BREAK])),))

    def narrow(g):
        legend = " ".join(g.render_line(y).text for y in range(g.size.height - 2, g.size.height))
        assert "b after a break" in legend and "evicted earlier" not in legend and "never" not in legend
        return True

    assert with_widget(only, narrow, size=(80, 12))
    every = PageGrid()
    every.set_rows((PageRow(1, "x", 4000, 1, bytes(states), reasons=reasons),))

    def short(g):  # 70 columns: 12 entries need the short words to stay within 2 lines
        legend = [g.render_line(y).text for y in range(g.size.height - 2, g.size.height)]
        assert all(f"{c} {w}" in " ".join(legend) for c, w in (("e", "gone"), ("n", "never"), ("b", "break"),
                                                                ("f", "flight"), ("▒", "pres")))
        return True

    assert with_widget(every, short, size=(70, 12))


def test_the_header_says_when_pages_are_checked_by_sample():
    """A session whose engine checks pages by sample (--verify sampled) says so in its frames' status, and the
    header's chip reads "verified by sample" ("sampled" when narrow); a full check keeps the plain "verified"
    and no status key."""
    import dataclasses

    from tui_helpers import AggSource

    from kvtui.config.workload import synthetic_description
    from kvtui.core.layout import PRESETS
    from kvtui.live import LiveSession
    from kvtui.testing.fake_engine import FakeCluster, FakeEngine, FakeOptions
    from kvtui.tui.widgets.kpis import Kpis
    from workload import SyntheticWorkload, WorkloadSpec

    spec = WorkloadSpec(scenario="shared-system-prompt", pool=3, prompt_tokens=64, page_tokens=8)
    for verify in ("full", "sampled"):
        engine = FakeEngine(PRESETS["tiny"], options=FakeOptions(verify=verify))
        session = LiveSession(engine, SyntheticWorkload(spec), synthetic_description(spec), cluster=FakeCluster())
        assert session._build_frame().status.get("verify") == (None if verify == "full" else "sampled")
    base = AggSource().frame()

    def chips(compact: int, status: dict) -> str:
        def check(kpis):
            kpis.compact = compact  # (the app sets it from the terminal's width)
            kpis.update_frame(dataclasses.replace(base, status={**base.status, **status}))
            return next(c for c in kpis.chips if c.startswith(("verified", "sampled")))
        return with_widget(Kpis(), check, size=(200, 8))

    assert chips(0, {"verify": "sampled"}).startswith("verified by sample ")
    assert chips(0, {}).startswith("verified ") and not chips(0, {}).startswith("verified by")
    assert chips(1, {"verify": "sampled"}).startswith("sampled ")


def test_row_details_say_what_an_unbounded_cache_would_have_hit():
    """A trace row's ideal line: pages lost to the store, all of them hit, or none to hit (every page a first
    use) — never "0 pages hit — all of them hit"."""
    import dataclasses

    from kvtui.tui.screens.row_detail import detail_lines

    def ideal_line(states, ideal: int) -> str:
        lines = [str(x) for x in detail_lines(dataclasses.replace(row(5, states), ideal_pages=ideal))]
        return next(x for x in lines if x.startswith("ideal"))

    assert ideal_line([S.HIT, S.PUBLISHED], 2).endswith("2 pages hit → 1 lost to the store's capacity or concurrency")
    assert ideal_line([S.HIT, S.PUBLISHED], 1).endswith("1 page hit — the store hit all of them")
    assert ideal_line([S.PUBLISHED, S.PUBLISHED], 0).endswith("0 pages hit (every page a first use)")


def test_the_multi_turn_header_says_the_overlap_is_of_first_turns():
    """Issue 43: "overlap 25 %" beside 75 % hits read as a contradiction in multi-turn, where the overlap sets a
    conversation's first turn only (later turns share the whole previous turn)."""
    w = {"kind": "synthetic", "scenario": "multi-turn", "overlap": 0.25, "pool": 8, "rate": 0.0}
    assert workload_text(w) == "multi-turn · 1st-turn overlap 25 % · pool 8 · closed loop"
    assert workload_text(w, short=1) == "multi-turn · 1st-turn ovl 25 % · pool 8 · closed loop"
    assert workload_text({**w, "scenario": "few-shot"}) == "few-shot · overlap 25 % · pool 8 · closed loop"
