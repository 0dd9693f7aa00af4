"""Pilot tests of the modal screens (help, clear-store confirmation, settings), the command palette entries
and the screenshot keys."""

from __future__ import annotations

import os

from textual.widgets import Input
from tui_helpers import AggSource, RecordingController, log_texts, pilot_test, settings_open

from kvtui.core.controls import SetKnob, SetLayout
from kvtui.tui.app import KvtuiApp
from kvtui.tui.bindings import APP_BINDINGS, MODES, action_of
from kvtui.tui.screens import ConfirmScreen, HelpScreen
from kvtui.tui.widgets import EventLog


def app_for(**kw) -> KvtuiApp:
    kw.setdefault("refresh_hz", 10)  # the pauses below allow for 10 frames a second, whatever the default
    return KvtuiApp(AggSource(), RecordingController(), **kw)


# -- modal screens ------------------------------------------------------------------------------------------
def test_help_screen_lists_every_binding_and_closes():
    app = app_for()

    async def scenario(pilot):
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        listed = dict(app.screen.keys)
        assert len(app.screen.keys) == len({action_of(b) for b in [*MODES["live"], *APP_BINDINGS]})  # each once
        for key in ("?", "q", "^c", "p", "s", "f", "w", "c", "e", "r", "R", "]", "[", "<", ">", "^s", "^r"):
            assert any(key in k.split() for k in listed), key
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)
        await pilot.press("question_mark", "question_mark")
        assert not isinstance(app.screen, HelpScreen)

    pilot_test(app, scenario)


def test_clear_store_asks_first():
    app = app_for()

    async def scenario(pilot):
        for i, answer in enumerate(("n", "escape", "enter")):  # "No" has the focus, so Enter is safe
            await pilot.press("c")
            assert isinstance(app.screen, ConfirmScreen)
            await pilot.press(answer)
            assert not isinstance(app.screen, ConfirmScreen)
            assert log_texts(app)[-1] == "clear store cancelled" + (f" ×{i + 1}" if i else "")  # coalesced
        assert app.controller.calls == []
        await pilot.press("c", "y")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.controller.named("clear_store") == [("clear_store",)]
        assert log_texts(app)[-1] == "clearing the store…"  # (then the session's own event says what went)
        await pilot.press("c")
        await pilot.click("#yes")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert len(app.controller.named("clear_store")) == 2

    pilot_test(app, scenario)


def test_settings_modal_types_values():
    app = app_for()

    async def scenario(pilot):
        await pilot.press("e")
        assert settings_open(app)
        app.screen.query_one("#set-overlap", Input).value = "80"
        app.screen.query_one("#set-rate", Input).value = "0"
        app.screen.query_one("#set-pool", Input).value = "12"
        await pilot.press("enter")
        assert not settings_open(app)
        ctl = app.controller
        assert ctl.knob_sent("overlap") == [SetKnob("overlap", 0.8)]
        assert ctl.knob_sent("rate") == [SetKnob("rate", 0.0)] and ctl.knob_sent("pool") == [SetKnob("pool", 12)]
        assert {"overlap → 80 %", "rate → closed loop", "pool → 12"} <= set(log_texts(app))
        await pilot.press("e")
        app.screen.query_one("#set-pool", Input).value = "abc"
        await pilot.press("enter")
        assert settings_open(app)  # a bad value keeps the dialog open
        await pilot.press("escape")
        assert len(ctl.knob_sent("pool")) == 1

    pilot_test(app, scenario)


async def until_dialog_closed(pilot, timeout_s: float = 10.0) -> None:
    """Let a burst of keys play out (each hop between widgets is a message; a loaded machine takes longer)."""
    import time

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        await pilot.pause(0.05)
        if not settings_open(pilot.app) and pilot.app.controller.calls:
            return


def test_settings_keys_typed_in_a_burst_all_count():
    """e, Ctrl+U, 6, 1, Enter arriving together (a paste, ``tmux send-keys``, a busy machine): the dialog opens
    before the next key is routed, and the field's own keys (Ctrl+U, Enter) run in the order they came."""
    from textual import events

    app = app_for()

    async def scenario(pilot):
        await pilot.pause()
        for key, char in (("e", "e"), ("ctrl+u", None), ("6", "6"), ("1", "1"), ("enter", "\r")):
            event = events.Key(key, char)
            event.set_sender(app)
            app._driver.send_message(event)  # no wait between keys, unlike pilot.press
        await until_dialog_closed(pilot)
        assert not settings_open(app)
        assert app.controller.knob_sent("overlap") == [SetKnob("overlap", 0.61)]
        assert log_texts(app)[-1] == "overlap → 61 %"

    pilot_test(app, scenario)


def test_settings_tab_in_a_burst_moves_to_the_next_field():
    """e C-u 61 Tab C-u 3 Tab C-u 5 Enter in one go: each value lands in its own field (overlap, pool, rate)."""
    from textual import events

    app = app_for()

    async def scenario(pilot):
        await pilot.pause()
        keys = [("e", "e"), ("ctrl+u", None), ("6", "6"), ("1", "1"), ("tab", "\t"), ("ctrl+u", None), ("3", "3"),
                ("tab", "\t"), ("ctrl+u", None), ("5", "5"), ("enter", "\r")]
        for key, char in keys:
            event = events.Key(key, char)
            event.set_sender(app)
            app._driver.send_message(event)
        await until_dialog_closed(pilot)
        assert not settings_open(app)
        ctl = app.controller
        assert ctl.knob_sent("overlap") == [SetKnob("overlap", 0.61)]
        assert ctl.knob_sent("pool") == [SetKnob("pool", 3)] and ctl.knob_sent("rate") == [SetKnob("rate", 5.0)]

    pilot_test(app, scenario)


def test_settings_rejects_values_out_of_range():
    """The dialog keeps the command line's ranges: each bad field is named in the dialog, nothing is applied."""
    app = app_for()

    async def scenario(pilot):
        await pilot.press("e")
        for key, raw in (("overlap", "150"), ("rate", "-5"), ("pool", "2.5")):
            app.screen.query_one(f"#set-{key}", Input).value = raw
        await pilot.press("enter")
        assert settings_open(app)
        shown = str(app.screen.query_one("#settings-error").render())
        for part in ("must be within 0-100 %, got 150", "must be at least 0 req/s, got -5",
                     "must be a whole number, got 2.5"):
            assert part in shown, shown
        app.screen.query_one("#set-rate", Input).value = "abc"
        await pilot.press("enter")
        assert "not a number: 'abc'" in str(app.screen.query_one("#settings-error").render())
        await pilot.press("escape")
        assert app.controller.calls == []

    pilot_test(app, scenario)


def test_command_palette_entries():
    app = app_for(layouts={"seed": "28×4×128 …", "tiny": "4×2×16 …"})

    async def scenario(pilot):
        titles = [c.title for c in app.get_system_commands(app.screen)]
        for t in ("Set prefix overlap %", "Set request rate", "Set pool size", "Scenario: multi-turn",
                  "Toggle latency window", "Save SVG screenshot"):
            assert t in titles
        assert [t for t in titles if "screenshot" in t.lower()] == ["Save SVG screenshot"]  # not Textual's too
        cmd = next(c for c in app.get_system_commands(app.screen) if c.title == "Scenario: multi-turn")
        cmd.callback()
        assert app.controller.knob_sent("scenario") == [SetKnob("scenario", "multi-turn")]
        cmd = next(c for c in app.get_system_commands(app.screen) if c.title == "Layout: tiny")
        assert "4×2×16 …" in cmd.help
        cmd.callback()
        assert app.controller.sent(SetLayout) == [SetLayout("tiny")]
        assert log_texts(app)[-1] == "layout tiny asked for (after the requests under way)"
        assert app_for().layouts == {}  # no presets given: no layout entries
        await pilot.press("ctrl+p")  # the entries are built while the palette is the active screen
        assert app.screen is not app.main_screen
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert {"Set prefix overlap %", "Layout: seed", "Scenario: few-shot"} <= set(titles)
        await pilot.press("e", "escape")  # e is a letter in the palette's search, not the settings key
        assert not settings_open(app)
        cmd = next(c for c in app.get_system_commands(app.screen) if c.title == "Set request rate")
        cmd.callback()
        await pilot.pause()
        assert settings_open(app) and app.screen.focused.id == "set-rate"

    pilot_test(app, scenario)


def test_screenshot_keys_write_svg(tmp_path):
    app = app_for(screenshot_dir=str(tmp_path / "shots"), clock=lambda: 0.0)

    async def scenario(pilot):
        await pilot.press("S")
        await pilot.press("ctrl+s")
        files = sorted(os.listdir(tmp_path / "shots"))
        assert len(files) == 2 and all(f.endswith(".svg") for f in files)
        assert "<svg" in (tmp_path / "shots" / files[0]).read_text()
        assert log_texts(app)[-1].startswith("screenshot → ")

    pilot_test(app, scenario)


def test_screenshot_into_a_bad_folder_keeps_running(tmp_path):
    """--screenshot-dir naming a file: one error line in the event log, the monitor keeps running."""
    not_a_dir = tmp_path / "passwd"
    not_a_dir.write_text("root:x:0:0\n")
    app = app_for(screenshot_dir=str(not_a_dir), clock=lambda: 0.0)

    async def scenario(pilot):
        before = len(log_texts(app))
        await pilot.press("S")
        await pilot.pause()
        assert app.is_running and not app._exit
        new = log_texts(app)[before:]
        assert len(new) == 1 and new[0].startswith("screenshot failed: FileExistsError:"), new
        assert app.query_one(EventLog).entries()[-1].kind == "error"
        assert app.action_screenshot() is None
        await pilot.press("f")  # still alive
        assert log_texts(app)[-1].startswith("view frozen")
        assert not_a_dir.read_text() == "root:x:0:0\n"

    pilot_test(app, scenario)


def test_resize_under_a_modal():
    app = app_for()

    async def scenario(pilot):
        await pilot.press("question_mark")
        for w, h in ((30, 8), (120, 40), (59, 15)):
            await pilot.resize_terminal(w, h)
        await pilot.press("escape")
        assert "59×15" in str(app.main_screen.query_one("#too-small").render())

    pilot_test(app, scenario)


def test_settings_fields_are_the_knobs_of_the_command_line():
    """The dialog parses with kvtui.core.knobs (Knob.parse): the same units, ranges and messages as the flags."""
    from kvtui.core.knobs import KNOBS, POOL
    from kvtui.tui.screens.settings import FIELDS, parse

    assert [k for k, _ in FIELDS] == list(KNOBS.values())  # every knob, in the table's order
    labels = {k.name: label for k, label in FIELDS}
    assert (labels["overlap"], labels["pool"], labels["rate"]) == ("prefix overlap (%)", "pool size",
                                                                   "request rate (req/s, 0 = closed loop)")
    assert parse({"overlap": " 61 ", "rate": "0", "pool": "12"}) == ({"overlap": 0.61, "rate": 0.0, "pool": 12}, [])
    assert parse({"overlap": "", "rate": ""}) == ({}, [])
    too_big = int(POOL.high) + 1
    assert parse({"pool": str(too_big), "overlap": "-1"}) == (
        {}, ["prefix overlap (%): must be within 0-100 %, got -1",
             f"pool size: must be within 1-{int(POOL.high)}, got {too_big}"])
