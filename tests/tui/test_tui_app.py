"""Pilot tests: every control reaches the controller with the right value and shows in the event log."""

from __future__ import annotations

import signal

import pytest
from textual.widgets import Input, Static
from tui_helpers import (
    PROCS,
    STATUS,
    STORE,
    SYNTH,
    AggSource,
    RecordingController,
    log_texts,
    pilot_test,
    screen_lines,
    settings_open,
)
from waits import pilot_wait_for

from kvtui.core.controls import SetKnob
from kvtui.core.knobs import RATE_STEPS
from kvtui.testing.demo import DemoController, DemoSource, StaticSource
from kvtui.tui.app import KvtuiApp, run_app
from kvtui.tui.fmt import fmt_count, fmt_int, fmt_pct, format_bytes
from kvtui.tui.screens import ConfirmScreen, HelpScreen
from kvtui.tui.widgets import EventLog, Kpis, PageGrid, ProcsPanel, StorePanel
from kvtui.tui.widgets.keybar import KeyBar

TICK_HZ = 10  # frames pulled 10 times a second, whatever the app's default


def app_for(source=None, controller="rec", **kw) -> KvtuiApp:
    ctl = RecordingController() if controller == "rec" else controller
    kw.setdefault("refresh_hz", TICK_HZ)
    return KvtuiApp(source or AggSource(), ctl, screenshot_dir=kw.pop("screenshot_dir", "screenshots"), **kw)


# -- knob controls ------------------------------------------------------------------------------------------
def _knobs(name: str, *values) -> list[SetKnob]:
    return [SetKnob(name, v) for v in values]


KNOB_CASES = [  # keys pressed from overlap 50 %, pool 4, rate 10, shared-system-prompt → controls sent, last log line
    (["right_square_bracket", "right_square_bracket"], _knobs("overlap", 0.55, 0.6), "overlap → 60 %"),
    (["plus", "equals_sign"], _knobs("overlap", 0.55, 0.6), "overlap → 60 %"),
    (["left_square_bracket"], _knobs("overlap", 0.45), "overlap → 45 %"),
    (["minus", "minus", "minus"], _knobs("overlap", 0.45, 0.4, 0.35), "overlap → 35 %"),
    (["full_stop", "greater_than_sign"], _knobs("pool", 5, 6), "pool → 6"),
    (["comma", "less_than_sign"], _knobs("pool", 3, 2), "pool → 2"),
    (["R"], _knobs("rate", 20.0), "rate → 20 req/s"),
    (["r", "r"], _knobs("rate", 5.0, 2.0), "rate → 2 req/s"),
    (["s"], _knobs("scenario", "few-shot"), "scenario → few-shot"),
    (["s", "s", "s"], _knobs("scenario", "few-shot", "multi-turn", "random"), "scenario → random"),
]


def test_knob_keys():
    """Each knob key sends one typed control (kvtui.core.controls) through Controller.send and logs it."""
    app = app_for()

    async def scenario(pilot):
        start = dict(app.knobs)
        for keys, controls, line in KNOB_CASES:
            app.controller.calls.clear()
            app.knobs = dict(start)
            await pilot.press(*keys)
            assert app.controller.calls == [("send", c) for c in controls], keys
            assert log_texts(app)[-1] == line, keys

    pilot_test(app, scenario)


def test_knobs_are_clamped():
    src = AggSource(workload={"kind": "synthetic", "scenario": "random", "overlap": 0.95, "pool": 1, "rate": 1000})
    app = app_for(src)

    async def scenario(pilot):
        await pilot.press("right_square_bracket", "right_square_bracket", "comma", "R", "s")
        ctl = app.controller
        assert ctl.knob_sent("overlap") == [SetKnob("overlap", 1.0)]  # the 2nd press changes nothing
        assert ctl.knob_sent("pool") == []  # already 1
        assert ctl.knob_sent("rate") == [SetKnob("rate", 0.0)]  # above the top step: closed loop
        assert ctl.knob_sent("scenario") == [SetKnob("scenario", "shared-system-prompt")]  # wraps around
        assert log_texts(app)[-3:] == ["overlap → 100 %", "rate → closed loop", "scenario → shared-system-prompt"]

    pilot_test(app, scenario)


def test_presses_that_change_nothing_are_not_sent():
    """At either end of a knob's range a press changes nothing: no controller call; the rate keys, whose ends
    are not visible on the knob, say why in the event log, the others stay quiet."""
    src = AggSource(workload={"kind": "synthetic", "scenario": "random", "overlap": 0.0, "pool": 1, "rate": 0.0})
    app = app_for(src)

    async def scenario(pilot):
        ctl = app.controller
        before = list(log_texts(app))
        await pilot.press("minus", "comma", "less_than_sign")
        assert ctl.calls == [] and log_texts(app) == before
        await pilot.press("R")  # closed loop is above the top step
        assert ctl.calls == []
        assert log_texts(app)[len(before):] == [
            "rate is already closed loop (the next request as soon as one finishes)"]
        # r from closed loop: the highest step not above the measured rate (0 here: the lowest step) …
        assert app.frame.rates.get("rps", 0.0) < RATE_STEPS[0]
        await pilot.press("r", "r")
        assert ctl.knob_sent("rate") == [SetKnob("rate", RATE_STEPS[0])]  # … and no further down
        assert log_texts(app)[len(before) + 1:] == [f"rate → {RATE_STEPS[0]:g} req/s",
                                                    f"rate is already at its lowest step ({RATE_STEPS[0]:g} req/s)"]
        await pilot.press("R", "R", "R")  # 0.5 → 1 → 2 → 5
        assert [c.value for c in ctl.knob_sent("rate")] == [0.5, 1, 2, 5]
        assert log_texts(app)[-3:] == ["rate → 1 req/s", "rate → 2 req/s", "rate → 5 req/s"]
        app.refresh_timer.pause()  # keep the frame below
        app.knobs["rate"] = 0.0  # closed loop again, with 2.3 req/s measured
        app.frame.rates["rps"] = 2.3
        await pilot.press("r")
        assert ctl.knob_sent("rate")[-1] == SetKnob("rate", 2.0)
        app.knob_keys.set("pool", 1)  # typed / palette values that change nothing are skipped too
        app.set_knob("scenario", "random")
        assert not ctl.knob_sent("pool") and not ctl.knob_sent("scenario")

    pilot_test(app, scenario)


def test_header_shows_a_request_before_the_engine_applies_it():
    """A key press shows in the header at once (the engine applies it before its next request, a frame
    later); if the engine never shows it (refused), its own value wins after ASKED_SHOWN_S."""
    app = app_for()  # RecordingController: the frames never change the knobs

    async def scenario(pilot):
        await pilot.pause()
        app.refresh_timer.pause()  # no new frame from here on
        assert "overlap 50 %" in app.query_one(Kpis).plain
        await pilot.press("right_square_bracket", "p")
        kpis = app.query_one(Kpis).plain
        assert "overlap 55 %" in kpis and "PAUSED" in kpis
        app.knob_state.shown_s = 0.0  # as if ASKED_SHOWN_S had passed
        app.apply(app.frame)
        kpis = app.query_one(Kpis).plain
        assert "overlap 50 %" in kpis and "PAUSED" not in kpis

    pilot_test(app, scenario)


def test_engine_echo_of_an_earlier_request_does_not_undo_a_newer_one():
    """R R from 20 req/s asks for 50 then 100; the engine applying 50 first must not make the next R ask for
    100 again (which logged "rate → 100 req/s" twice in a row)."""
    src = AggSource(workload={**SYNTH, "rate": 20.0})
    app = app_for(src)

    async def scenario(pilot):
        ctl = app.controller
        await pilot.press("R", "R")
        src.workload["rate"] = 50.0  # the first request arrives at the engine
        app.tick()
        assert app.knobs["rate"] == 100.0
        await pilot.press("R")
        assert ctl.knob_sent("rate") == [SetKnob("rate", 50.0), SetKnob("rate", 100.0), SetKnob("rate", 200.0)]
        assert log_texts(app)[-3:] == ["rate → 50 req/s", "rate → 100 req/s", "rate → 200 req/s"]
        for applied in (100.0, 200.0):
            src.workload["rate"] = applied
            app.tick()
        assert app.knobs["rate"] == 200.0 and app.knob_state.pending["rate"] == []
        src.workload["rate"] = 5.0  # changed by someone else: adopted
        app.tick()
        await pilot.press("R")
        assert ctl.knob_sent("rate")[-1] == SetKnob("rate", 10.0)

    pilot_test(app, scenario)


def test_engine_changes_are_adopted():
    src = AggSource()
    app = app_for(src)

    async def scenario(pilot):
        src.workload["overlap"] = 0.2  # changed by someone else (e.g. the CLI)
        app.tick()
        await pilot.press("right_square_bracket")
        assert app.controller.knob_sent("overlap")[-1] == SetKnob("overlap", 0.25)

    pilot_test(app, scenario)


def test_pause_and_resume():
    src = AggSource()
    app = app_for(src)

    async def scenario(pilot):
        await pilot.press("p")
        src.status["paused"] = True
        app.tick()
        assert "PAUSED" in app.query_one(Kpis).plain
        await pilot.press("space")
        assert [c[0] for c in app.controller.calls] == ["pause", "resume"]
        assert log_texts(app)[-2:] == ["workload paused", "workload resumed"]

    pilot_test(app, scenario)


# -- view controls ------------------------------------------------------------------------------------------
def test_freeze_stops_applying_frames_but_keeps_pulling():
    src = AggSource()
    app = app_for(src, refresh_hz=15)

    async def scenario(pilot):
        await pilot.press("f")
        shown, pulled = app.shown, src.calls
        assert "FROZEN" in app.query_one(Kpis).plain
        await pilot_wait_for(pilot, lambda: src.calls > pulled + 2 and app.frame.t > shown.t, 10,
                             "frames pulled while frozen")  # the source keeps being read
        assert app.shown is shown  # ... but nothing new is drawn
        await pilot.press("f")
        assert app.shown is app.frame and "FROZEN" not in app.query_one(Kpis).plain
        assert log_texts(app)[-2:] == ["view frozen (workload keeps running)", "view live"]

    pilot_test(app, scenario)


def test_latency_window_toggle():
    app = app_for()

    async def scenario(pilot):
        from kvtui.tui.widgets import LatencyPanel
        panel = app.query_one(LatencyPanel)
        assert "last 30 s" in panel.border_title and panel.window
        await pilot.press("w")
        assert "whole session" in panel.border_title and not panel.window
        assert log_texts(app)[-1] == "latency: whole session"
        await pilot.press("w")
        assert "last 30 s" in panel.border_title

    pilot_test(app, scenario)


def test_one_timer_after_many_toggles():
    app = app_for()

    async def scenario(pilot):
        timer = app.refresh_timer
        for _ in range(100):
            app.action_toggle_pause()
            app.action_freeze()
            app.action_window()
        await pilot.press("p", "f", "w", "space")
        assert app.refresh_timer is timer
        ours = [t for t in app._timers if getattr(t, "_callback", None) == app.tick]
        assert len(ours) == 1
        assert len(app.controller.calls) == 102
        t = app.frame.t
        await pilot_wait_for(pilot, lambda: app.frame.t > t, 10, "a new frame: the timer still ticks")
        assert app.frame.t > app.shown.t or not app.frozen

    pilot_test(app, scenario)


# -- quit ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("key,code", [("q", 0), ("ctrl+c", 130)])
def test_quit_leaves_at_once(key, code):
    """q / ctrl+c end the app without waiting for the engine to stop (that takes seconds and the screen would
    look frozen meanwhile): run_app stops the controller after the terminal is back. ctrl+c exits 130, as
    an interrupted command does."""
    app = app_for()

    async def scenario(pilot):
        await pilot.press(key)
        await pilot.pause()
        assert not app.is_running or app._exit
        assert app.return_code == code
        assert app.controller.named("stop") == []

    pilot_test(app, scenario)


def test_run_app_stops_the_controller_after_quit(monkeypatch):
    mount = KvtuiApp.on_mount

    def on_mount(self):
        mount(self)
        self.set_timer(0.3, lambda: self.run_action("quit"))

    monkeypatch.setattr(KvtuiApp, "on_mount", on_mount)
    ctl = RecordingController()
    assert run_app(DemoSource(1), ctl, headless=True, duration_s=30) == 0
    assert ctl.named("stop") == [("stop",)]


def test_ctrl_c_quits_from_a_modal_and_is_listed_with_q():
    """ctrl+c ends the monitor (Textual alone only says "press ctrl+q"), also over a modal; the footer does not
    show it, the help lists it with q."""
    app = app_for()
    before = signal.getsignal(signal.SIGTERM)

    async def scenario(pilot):
        # (what each does: test_tui_signals.py)
        assert set(app.exit_signals.installed) == {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}
        footer = {b.binding.key for b in app.screen.active_bindings.values() if b.binding.show}
        assert "ctrl+c" not in footer and "q" in footer
        await pilot.press("question_mark")
        assert ("q ^c", "quit") in app.screen.keys
        await pilot.press("escape", "e")  # ctrl+c from the settings dialog, where an Input has the focus
        assert settings_open(app) and isinstance(app.focused, Input)
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert not app.is_running or app._exit

    pilot_test(app, scenario)
    assert signal.getsignal(signal.SIGTERM) is before and not app.exit_signals.installed  # given back on unmount


# -- without a controller / replay / trace ------------------------------------------------------------------
@pytest.mark.parametrize("controller,status,workload", [
    (None, None, None),
    ("rec", {"mode": "replay", "paused": False}, None),
])
def test_workload_controls_disabled(controller, status, workload):
    app = app_for(AggSource(status=status, workload=workload), controller)

    async def scenario(pilot):
        before = list(log_texts(app))
        await pilot.press("right_square_bracket", "full_stop", "R", "s", "p", "c", "e")
        assert not (isinstance(app.screen, ConfirmScreen) or settings_open(app))
        assert log_texts(app) == before
        assert app.check_action("knob", ("overlap", 1)) is None and app.check_action("clear_store", ()) is None
        assert app.check_action("freeze", ()) is True
        if app.controller is not None:
            assert app.controller.calls == []
        await pilot.press("f", "w", "question_mark")  # view controls still work
        assert isinstance(app.screen, HelpScreen)

    pilot_test(app, scenario)


def test_trace_workload_shows_progress_and_disables_knobs():
    src = AggSource(workload={"kind": "trace", "name": "conversation", "done": 250, "total": 1000})
    app = app_for(src)

    async def scenario(pilot):
        assert "trace conversation · row 250/1,000 (25 %)" in app.query_one(Kpis).plain
        await pilot.press("right_square_bracket", "s", "p")
        assert [c[0] for c in app.controller.calls] == ["pause"]  # pause still works for a trace

    pilot_test(app, scenario)


def test_source_errors_are_reported_once():
    class Flaky(AggSource):
        def frame(self):
            if self.calls >= 1:
                self.calls += 1
                raise RuntimeError("collector gone")
            return super().frame()

    src = Flaky()
    app = app_for(src, refresh_hz=15)

    async def scenario(pilot):
        await pilot_wait_for(pilot, lambda: src.calls > 2, 10, "two failed frame reads")
        errors = [t for t in log_texts(app) if "collector gone" in t]
        assert errors == ["frame source failed: RuntimeError: collector gone"]

    pilot_test(app, scenario)


# -- figures on screen --------------------------------------------------------------------------------------
def test_figures_on_screen_equal_the_frame(agg_source):
    app = app_for(agg_source)

    async def scenario(pilot):
        f = app.shown
        tot = f.totals
        kpis = app.query_one(Kpis).plain
        assert f"requests {fmt_int(tot['requests'])}" in kpis and tot["requests"] == 4
        assert (f"prefill skipped {fmt_count(tot['tokens_hit'])}/{fmt_count(tot['tokens_input'])} tok "
                f"({fmt_pct(tot['token_hit_rate'])})") in kpis
        assert f"page hits {fmt_pct(tot['page_hit_rate'])}" in kpis
        assert f"reused {format_bytes(tot['bytes_loaded'])}" in kpis
        assert f"verified {fmt_int(tot['verified_pages'])} pages" in kpis
        assert f"mismatches {fmt_int(tot['mismatches'])}" in kpis and tot["mismatches"] == 1
        assert "store embedded ● up" in kpis and "overlap 50 % · pool 4 · 10 req/s" in kpis
        assert "elapsed 0:00" in kpis
        store = "\n".join(t.plain for t in app.query_one(StorePanel).lines(40))
        assert f"keys {fmt_int(STORE['keys'])}" in store and "3.0 GiB / 8.0 GiB" in store
        assert "alloc failures 2" in store and "put 12.5/s" in store
        procs = "\n".join(t.plain for t in app.query_one(ProcsPanel).lines(40))
        assert "prefill" in procs and "55.5%" in procs and format_bytes(PROCS[0]["rss_bytes"]) in procs
        grid = app.query_one(PageGrid)
        pw = grid.page_w  # pages spread over the width, under the page-index ruler
        top = grid.render_line(1).text
        assert top.startswith("#4  ") and top[4:].split() == ["█" * (pw - 1), "!" * (pw - 1), "X" * (pw - 1),
                                                              "X" * (pw - 1)]  # newest request on top
        assert app.query_one(EventLog).border_subtitle == "errors: NO_AVAILABLE_HANDLE ×2 +2 more"  # whole names

    pilot_test(app, scenario)


def test_demo_controller_applies_the_typed_controls():
    """Keys → Controller.send → the demo's next frames show the knobs; its header agrees with the engine's."""
    src = DemoSource(4)
    app = KvtuiApp(src, DemoController(src), refresh_hz=TICK_HZ, layouts={"tiny": "…"})

    async def scenario(pilot):
        await pilot.press("right_square_bracket", "greater_than_sign", "R", "s")
        app.set_layout("tiny")
        app.tick()
        w = app.frame.workload
        assert (w["overlap"], w["pool"], w["rate"], w["scenario"], w["layout"]) == (0.8, 9, 50.0, "few-shot", "tiny")
        assert app.knob_state.pending == {k: [] for k in ("overlap", "pool", "rate", "scenario", "layout")}
        assert "overlap 80 %" in app.query_one(Kpis).plain and "50 req/s" in app.query_one(Kpis).plain

    pilot_test(app, scenario)
    with pytest.raises(TypeError, match="not a control"):
        DemoController(src).send(("set_overlap", 0.5))


# -- sizes --------------------------------------------------------------------------------------------------
def test_any_terminal_size():
    src = DemoSource(3)
    app = KvtuiApp(src, DemoController(src), refresh_hz=TICK_HZ)
    heights = (5, 60, 15, 16, 24, 9, 40, 21, 33, 12)
    sizes = [(w, heights[i % len(heights)]) for i, w in enumerate(range(20, 201, 9))]
    sizes += [(20, 5), (59, 60), (60, 15), (60, 16), (200, 5), (80, 24), (120, 40), (200, 60)]

    async def scenario(pilot):
        notice = app.query_one("#too-small", Static)
        for w, h in sizes:
            await pilot.resize_terminal(w, h)
            app.tick()
            small = w < 60 or h < 16
            assert notice.display is small and app.query_one("#dash").display is not small, (w, h)
            if small:
                assert f"{w}×{h}" in str(notice.render()) and "need ≥ 60×16" in str(notice.render())
        await pilot.pause()

    pilot_test(app, scenario, size=(20, 5))


def test_run_app_headless_writes_screenshot(tmp_path):
    src = DemoSource(1)
    ctl = RecordingController()
    out = tmp_path / "shots" / "watch.svg"
    assert run_app(src, ctl, headless=True, duration_s=0.3, screenshot=str(out), size=(100, 30)) == 0
    assert out.exists() and "<svg" in out.read_text()
    assert ctl.named("stop") == [("stop",)]
    assert src.t > 0


def test_static_source_without_controller_quits():
    app = KvtuiApp(StaticSource(DemoSource(2).frame()), None, refresh_hz=TICK_HZ)

    async def scenario(pilot):
        await pilot.press("p", "c", "q")
        await pilot.pause()
        assert not isinstance(app.screen, ConfirmScreen)

    pilot_test(app, scenario)


def test_bare_frame_renders():
    """A frame with every panel empty (nothing known yet) renders without error."""
    from kvtui.metrics.frame import Frame

    bare = Frame(t=0.0, totals={}, rates={}, series={}, latency={}, latency_window={}, rows=(), errors={},
                 events=(), status={"mode": "replay"})
    app = KvtuiApp(StaticSource(bare), None, refresh_hz=TICK_HZ)

    async def scenario(pilot):
        kpis = app.query_one(Kpis).plain
        assert "REPLAY" in kpis and "requests 0" in kpis and "—" in kpis
        assert "waiting for requests" in app.query_one(PageGrid).render_line(0).text
        await pilot.resize_terminal(80, 24)
        await pilot.press("w", "f")

    pilot_test(app, scenario)


def test_restart_master_is_offered_only_while_the_embedded_master_is_down():
    src = AggSource()
    ctl = RecordingController()
    app = KvtuiApp(src, ctl, refresh_hz=TICK_HZ)

    async def scenario(pilot):
        assert app.check_action("restart_master", ()) is False  # hidden while the master is up
        await pilot.press("M")
        assert ctl.named("restart_master") == []
        src.status["outage"] = True
        await pilot_wait_for(pilot, lambda: app.check_action("restart_master", ()) is True, 10, "M offered")
        assert any("press M to restart" in t for t in log_texts(app))
        await pilot.press("M")
        await pilot_wait_for(pilot, lambda: ctl.named("restart_master"), 10, "the restart asked for")
        assert ctl.named("restart_master") == [("restart_master",)]
        src.status["store_mode"] = "attached"  # not ours to restart
        await pilot_wait_for(pilot, lambda: app.check_action("restart_master", ()) is False, 10, "M withdrawn")

    pilot_test(app, scenario)


def test_k_says_why_it_does_not_act_on_another_clusters_masters_and_f_shows_the_reports():
    """Attached to an HA cluster: K is offered, and pressing it says kvtui did not start these masters (nothing
    sent to the controller); once a failover was measured F opens every report whole; the store panel marks its
    figures stale while no master answers; the attached masters have rows with their roles."""
    from kvtui.core.failover import FailoverReport
    from kvtui.tui.app import NOT_OUR_MASTERS
    from kvtui.tui.screens import FailoverScreen

    report = FailoverReport(1, "external", 12.0, "master-0", "master-1", 4.1, 9.2, pages_checked=900, pages_lost=3,
                            lost_by_cause={"untraced": 3}, how="master-0 stopped serving")

    class Ctl(RecordingController):
        def failover_reports(self):
            return [report.lines()]

    src = AggSource(status={**STATUS, "store_mode": "attached", "ha": True})
    ctl = Ctl()
    app = KvtuiApp(src, ctl, refresh_hz=TICK_HZ)

    async def scenario(pilot):
        await pilot_wait_for(pilot, lambda: app.check_action("kill_leader", ()) is True, 10, "K offered")
        assert app.check_action("failovers", ()) is True  # (an HA cluster: F says there is no failover yet)
        await pilot.press("F")
        await pilot_wait_for(pilot, lambda: "no failover measured yet" in app.query_one(KeyBar).plain, 10, "F's reason")
        assert not isinstance(app.screen, FailoverScreen)
        await pilot.press("K")
        await pilot_wait_for(pilot, lambda: NOT_OUR_MASTERS in log_texts(app), 10, "K's reason")
        assert ctl.calls == [] or all(c[0] != "kill_leader" for c in ctl.calls)
        src.status["failovers"] = 1
        await pilot_wait_for(pilot, lambda: app._gate is not None and app._gate.failovers, 10, "the failover seen")
        await pilot.press("F")
        await pilot_wait_for(pilot, lambda: isinstance(app.screen, FailoverScreen), 10, "the report screen")
        text = "\n".join(screen_lines(app))
        assert "failover 1 (external) at 12.0 s: master-0 → master-1" in text
        assert "lost without a trace in the masters' logs" in text
        await pilot.press("escape")
        store = app.query_one(StorePanel)
        store.store = {**STORE, "up": False}
        assert "no master answers" in store.lines(40)[0].plain and store.border_subtitle == "stale"
        procs = app.query_one(ProcsPanel)  # (an attached master's row: its role, no pid, CPU or RSS)
        procs.procs = (*PROCS, {"name": "master-0", "role": "leader", "remote": True})
        lines = [t.plain for t in procs.lines(60)]
        assert any(line.startswith("master-0 leader") and line.rstrip().endswith("—") for line in lines), lines

    pilot_test(app, scenario)


# -- throughput units, footer text --------------------------------------------------------------------------
def test_throughput_values_keep_their_units():
    """Values are updated without a layout pass: each must still show its unit after growing from a short
    first text (it lost "MB/s", "tok/s", "%" at 120×40 until a resize)."""
    import dataclasses

    from kvtui.testing.demo import fixture_frame
    from kvtui.tui.widgets import Throughput
    from kvtui.tui.widgets.throughput import RATES

    base = fixture_frame()
    zero = dataclasses.replace(base, rates={key: 0.0 for key, _, _ in RATES})
    big = dataclasses.replace(base, rates={"reuse_MBps": 1234.5, "publish_MBps": 999.9, "rps": 12_345.0,
                                           "tokens_skipped_ps": 12_345.0, "hit_rate": 1.0})
    src = StaticSource(zero)
    app = KvtuiApp(src, None, refresh_hz=TICK_HZ)

    async def scenario(pilot):
        tp = app.query_one(Throughput)
        for size in ((80, 24), (120, 40)):
            await pilot.resize_terminal(*size)
            for frame in (zero, big):
                src._frame = frame
                app.tick()
                await pilot.pause()
            shown = 0
            for key, _, fmt in RATES:
                label = tp.query_one(f"#tp-value-{key}")
                if not label.display:
                    continue  # page hit rate: only ≥ 100×32
                want = fmt(float(big.rates[key]))
                assert label.render_line(0).text.strip() == want, (size, key)
                assert label.region.right <= tp.content_region.right, (size, key)
                assert any(want in line for line in screen_lines(app)), (size, key)
                shown += 1
            assert shown == (5 if size == (120, 40) else 4)
        assert {"1.23 GB/s", "999.9 MB/s", "12.3k req/s", "12.3k tok/s", "100.0 %"} <= set(tp.values.values())

    pilot_test(app, scenario, size=(80, 24))


def test_footer_text_at_120_columns(session_file):
    """Every footer item reads "key description", separated from the next (no "seekhome", no "rates scenario"
    with the s key lost)."""
    from kvtui.session.reader import ReplayPlayer, SessionReader

    live = KvtuiApp(AggSource(), RecordingController(), refresh_hz=TICK_HZ)
    replay = KvtuiApp(None, None, player=ReplayPlayer(SessionReader(session_file), clock=lambda: 0.0),
                      refresh_hz=TICK_HZ)
    expected = {
        live: "? help q quit p pause [] overlap <> pool rR rate s scenario f freeze w window e set… c clear ^r rec "
              "S shot    ^p palette",
        replay: "? help q quit space play/pause ,. step ←→ seek home first end last -+ speed f freeze w window "
                "S shot          ^p palette",
    }
    for app, text in expected.items():
        async def scenario(pilot, app=app):
            await pilot.pause()
            return screen_lines(app)[-1]

        assert pilot_test(app, scenario).rstrip() == text


def test_a_store_node_outage_of_dummy_workers_is_named_and_a_failed_restart_is_one_line():
    """An outage while the master kvtui started is alive (``outage_of`` "store": the store node of dummy
    workers died) says so in the event log and offers no master restart; a master restart that fails
    (here: the master still runs) is an event-log line, not the end of the monitor."""
    src = AggSource()
    ctl = RecordingController()

    def refused():
        raise RuntimeError("the master is still running")

    ctl.restart_master = refused
    app = KvtuiApp(src, ctl, refresh_hz=TICK_HZ)

    async def scenario(pilot):
        src.status.update(outage=True, outage_of="store")
        await pilot_wait_for(pilot, lambda: any("the store node kvtui started is down" in t for t in log_texts(app)),
                             10, "the store node's outage in the event log", detail=lambda: log_texts(app))
        assert app.check_action("restart_master", ()) is False
        assert not any("press M to restart" in t for t in log_texts(app))
        src.status["outage_of"] = "master"
        await pilot_wait_for(pilot, lambda: app.check_action("restart_master", ()) is True, 10, "M offered")
        await pilot.press("M")
        await pilot_wait_for(pilot, lambda: any("master restart failed: the master is still running" in t
                                                for t in log_texts(app)), 10, "the failed restart's line",
                             detail=lambda: log_texts(app))
        assert app.is_running

    pilot_test(app, scenario)

