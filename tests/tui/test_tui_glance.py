"""Pilot tests of the monitor at a glance (issue 14): a page-grid row's detail panel, a trace's speed changed
live, the scenario keys during a trace, the coalesced event log, reserved badge places, "—" while paused, what
80×24 keeps, and the settings dialog built once."""

from __future__ import annotations

import dataclasses

from tui_helpers import AggSource, RecordingController, log_texts, pilot_test, result, screen_lines
from waits import pilot_wait_for

from kvtui.core.knobs import KNOBS
from kvtui.core.pages import PageState as S
from kvtui.testing.demo import DemoController, DemoSource, StaticSource, fixture_frame
from kvtui.tui.app import KvtuiApp
from kvtui.tui.screens import RowDetailScreen, SettingsScreen
from kvtui.tui.widgets import Kpis, PageGrid, ProcsPanel, StorePanel, Throughput
from kvtui.tui.widgets.keybar import KeyBar


def _results():
    """Four requests of two prefix groups, with keys and codes (newest last)."""
    out = []
    for i, (group, states) in enumerate([("1", [S.PUBLISHED] * 6), ("2", [S.PUBLISHED] * 6),
                                         ("1", [S.HIT] * 4 + [S.PUBLISHED] * 2),
                                         ("1", [S.HIT] * 3 + [S.EVICTED, S.PUBLISHED, S.PARTIAL])], start=1):
        r = result(i, states, codes={-704: 1} if S.EVICTED in states else None)
        out.append(dataclasses.replace(r, labels=(("pool", group),),
                                       keys=(f"mc/ollama/m/first{i}", f"mc/ollama/m/last{i}")))
    return out


def test_row_detail_opens_on_enter_and_on_a_click():
    app = KvtuiApp(AggSource(_results()), RecordingController(), refresh_hz=10)

    async def scenario(pilot):
        grid = app.query_one(PageGrid)
        assert app.focused is grid  # Enter reaches the grid without a click first
        await pilot.press("enter")  # no cursor yet: the newest row
        assert isinstance(app.screen, RowDetailScreen) and app.screen.row.req_id == 4
        text = app.screen.text(80).plain
        for part in ("Request #4", "prefix group sys 1", "█ 3 hit", "E 1 evicted", "▓ 1 published", "reload ",
                     "(probe + read)", "first key mc/ollama/m/first4", "last key  mc/ollama/m/last4",
                     "OBJECT_NOT_FOUND ×1", "█" * 3 + "E▓·"):
            assert part in text, (part, text)
        await pilot.press("escape")
        assert app.screen is app.main_screen
        await pilot.press("down", "down", "enter")  # the cursor appears on the newest row, then one down
        assert app.screen.row.req_id == 3
        await pilot.press("enter")  # Enter closes it too
        y = 1 + 3  # the ruler, then the rows newest first: #4, #3, #2, #1
        await pilot.click(PageGrid, offset=(10, y + 1))  # (+1: the grid's top border)
        assert isinstance(app.screen, RowDetailScreen) and app.screen.row.req_id == 1
        assert "prefix group sys 1" in app.screen.text(80).plain
        await pilot.press("escape")
        assert grid.row_at(0) is None  # the ruler line is no row

    pilot_test(app, scenario)


def _trace_app(**kw):
    src = DemoSource(trace="synthetic", speed=2.0, tick_s=0.5, per_tick=13)
    return src, KvtuiApp(src, DemoController(src), refresh_hz=10, **kw)


def test_trace_speed_changes_live_and_the_header_says_so():
    src, app = _trace_app()

    async def scenario(pilot):
        kpis = app.query_one(Kpis)

        async def header_says(*parts, speed="unchanged"):
            def said():
                return (speed == "unchanged" or src.trace.speed == speed) and all(p in kpis.plain for p in parts)

            await pilot_wait_for(pilot, said, 10, f"speed {speed} and {parts} in the header",
                                 detail=lambda: (src.trace.speed, kpis.plain))

        await header_says("×2", "ETA", "trace synthetic")
        await pilot.press("plus")
        await header_says("×4", speed=4.0)
        assert "trace speed → ×4" in log_texts(app)
        await pilot.press("minus", "minus", "minus")
        await header_says("×0.5", speed=0.5)
        await pilot.press("minus")  # the lowest speed: said in the status line, nothing sent
        assert src.trace.speed == 0.5 and "already ×0.5" in app.query_one(KeyBar).plain
        for speed in (1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, None):  # one step a press, each applied
            await pilot.press("plus")
            await pilot_wait_for(pilot, lambda speed=speed: src.trace.speed == speed, 10, f"trace speed {speed}")
        await header_says("max", "ETA ~")  # above ×64: as fast as possible; ETA estimated from the request rate
        done = src.workload["done"]
        await pilot_wait_for(pilot, lambda: src.workload["done"] > done, 10, "more rows at the new speed")

    pilot_test(app, scenario)


def test_scenario_keys_during_a_trace_say_why_once():
    src, app = _trace_app()

    async def scenario(pilot):
        bar = app.query_one(KeyBar)
        footer = await pilot_wait_for(pilot, lambda: "-+ speed" in bar.plain and bar.plain, 10, "the trace's key bar")
        assert "-+ speed" in footer and "overlap" not in footer and "scenario" not in footer and "rate" not in footer
        for key in ("right_square_bracket", "right_square_bracket", "right_square_bracket"):
            await pilot.press(key)
        assert "overlap: a knob of the synthetic scenarios" in bar.plain  # the status line says why
        said = [t for t in log_texts(app) if "a knob of the synthetic scenarios" in t]
        assert said == ["overlap: a knob of the synthetic scenarios; a trace replays its rows as recorded "
                        "(trace keys: - + speed, p pause)"]  # once, not three times
        await pilot.press("e")
        last = list(KNOBS)[-1]  # "overlap, pool and rate": every knob the dialog would take
        assert not isinstance(app.screen, SettingsScreen) and f"and {last}: a knob of the synthetic" in bar.plain
        assert src.workload["kind"] == "trace"

    pilot_test(app, scenario)


def test_identical_log_lines_coalesce():
    app = KvtuiApp(AggSource(workload={"kind": "synthetic", "scenario": "random", "rate": 0.0}),
                   RecordingController(), refresh_hz=10)

    async def scenario(pilot):
        for _ in range(15):
            await pilot.press("R")  # already closed loop: the same line each time
        lines = [t for t in log_texts(app) if t.startswith("rate is already closed loop")]
        assert lines == ["rate is already closed loop (the next request as soon as one finishes) ×15"]
        assert any("×15" in line for line in screen_lines(app))
        await pilot.press("f", "f", "R")  # another line between: a new run starts
        assert log_texts(app)[-1] == "rate is already closed loop (the next request as soon as one finishes)"

    pilot_test(app, scenario)


def test_badges_have_reserved_places():
    """REC / FROZEN turning on change only their own cells of the header; PAUSED takes its place without
    changing the number of lines (its rates read "—")."""
    src = AggSource(_results())
    app = KvtuiApp(src, RecordingController(), refresh_hz=10)

    async def scenario(pilot):
        kpis = app.query_one(Kpis)

        def header():
            return screen_lines(app)[:kpis.size.height]

        await pilot_wait_for(pilot, lambda: "last 30 s" in "".join(header()), 10, "the header drawn", detail=header)
        cut = kpis.size.width - kpis.badge_width + 1  # +1: the header's left padding
        before = header()
        src.status["recording"] = True
        app.tick()
        await pilot.press("f")  # FROZEN (the frame with REC applied just before)
        after = await pilot_wait_for(pilot, lambda: "FROZEN" in "".join(header()) and header(), 10, "FROZEN drawn",
                                     detail=header)
        assert len(after) == len(before) == kpis.size.height >= 3
        assert [ln[:cut] for ln in after] == [ln[:cut] for ln in before]
        assert "● REC" in after[0][cut:] and "FROZEN" in after[2][cut:] and "PAUSED" not in after[1]
        assert not any(b in "".join(before) for b in ("● REC", "PAUSED", "FROZEN"))
        await pilot.press("f")
        src.status["paused"] = True
        app.tick()
        paused = await pilot_wait_for(pilot, lambda: "PAUSED" in "".join(header()) and header(), 10, "PAUSED drawn",
                                      detail=header)
        assert len(paused) == len(before) and "PAUSED" in paused[1][cut:] and "— last 30 s" in "".join(paused)

    pilot_test(app, scenario)


def test_paused_rates_show_a_dash():
    frame = fixture_frame()
    paused = dataclasses.replace(frame, status={**frame.status, "paused": True})
    app = KvtuiApp(StaticSource(paused), None, refresh_hz=10)

    async def scenario(pilot):
        tp = app.query_one(Throughput)
        assert set(tp.values.values()) <= {"—", ""}
        assert "— last 30 s" in app.query_one(Kpis).plain and "PAUSED" in app.query_one(Kpis).plain

    pilot_test(app, scenario)


def test_80x24_keeps_the_important_rows():
    """At 80×24 the processes panel shows prefill and decode first; the footer and the store panel never cut
    a word; the page grid keeps at least 8 request rows."""
    frame = fixture_frame()
    procs = tuple(frame.procs) + ({"name": "metadata", "pid": 41005, "cpu_percent": 0.0, "rss_bytes": 60 << 20},
                                  {"name": "store", "pid": 41006, "cpu_percent": 14.0, "rss_bytes": 130 << 20})
    app = KvtuiApp(StaticSource(dataclasses.replace(frame, procs=procs)), DemoController(DemoSource()), refresh_hz=10)

    async def scenario(pilot):
        shown = [t.plain for t in app.query_one(ProcsPanel).render().split()]
        assert shown[0].startswith("prefill") or shown[1].startswith("prefill")
        assert any(s.startswith("decode") for s in shown[:3])
        footer = app.query_one(KeyBar)
        items, _ = footer.fit(80)
        text = footer.plain
        for keys, name, _, _ in items:
            assert f"{keys} {name}" in text  # every key with its whole name
        assert text.rstrip().endswith("^p palette")
        store = app.query_one(StorePanel)
        for line in store.lines(store.size.width):
            assert line.cell_len <= store.size.width and "…" not in line.plain
        grid = app.query_one(PageGrid)
        assert len(grid._visible()) >= 8

    pilot_test(app, scenario, size=(80, 24))


def test_settings_dialog_is_built_once():
    """The settings screen is composed at start and shown again on each e (no screen built per opening)."""
    app = KvtuiApp(AggSource(), RecordingController(), refresh_hz=10)

    async def scenario(pilot):
        screen = app.get_screen("settings")
        assert isinstance(screen, SettingsScreen) and screen.is_mounted  # built before the first e
        inputs = list(screen.query("Input"))
        for _ in range(2):
            await pilot.press("e")
            assert app.screen is screen and list(screen.query("Input")) == inputs
            assert screen.focused.id == "set-overlap" and screen.focused.value == "50"
            await pilot.press("escape")
            assert app.screen is app.main_screen

    pilot_test(app, scenario)


def test_processes_on_emulated_hosts_show_their_address_where_it_fits():
    """With ``--hosts auto`` each process row carries its host's address: shown after the name when the
    panel is wide enough, dropped (never cut mid-word) when it is not."""
    frame = fixture_frame()
    procs = ({"name": "store", "pid": 41006, "cpu_percent": 14.0, "rss_bytes": 130 << 20, "host": "10.77.0.11"},
             {"name": "kvtui", "pid": 41007, "cpu_percent": 3.0, "rss_bytes": 90 << 20, "host": "10.77.0.1"},
             {"name": "metadata", "pid": 41008, "cpu_percent": 0.0, "rss_bytes": 60 << 20, "host": "10.77.0.10"})
    app = KvtuiApp(StaticSource(dataclasses.replace(frame, procs=procs)), DemoController(DemoSource()), refresh_hz=10)

    async def scenario(pilot):
        panel = app.query_one(ProcsPanel)
        wide = [t.plain for t in panel.lines(60)]
        assert wide[1].startswith("store 10.77.0.11") and wide[2].startswith("kvtui 10.77.0.1 ")
        assert wide[3].startswith("metadata 10.77.0.10")
        middle = [t.plain for t in panel.lines(44)]  # "metadata 10.77.0.10" does not fit: every row short
        assert middle[1].startswith("store .11 ") and middle[2].startswith("kvtui .1 ")
        assert middle[3].startswith("metadata .10")
        at_120 = [t.plain for t in panel.lines(37)]  # (120 columns: 11 cells for the name)
        assert at_120[1].startswith("store .11 ") and at_120[3].startswith("metadata ") and ".10" not in at_120[3]
        narrow = [t.plain for t in panel.lines(18)]
        assert narrow[1].split()[0] == "store" and "10.77" not in narrow[1] and ".11" not in narrow[1]

    pilot_test(app, scenario)
