"""Replay mode (a ReplayPlayer over a real recorded session file) and the ctrl+r recording toggle."""

from __future__ import annotations

import pytest
from conftest import SESSION_FRAMES, SESSION_TICK_S
from tui_helpers import AggSource, FakeClock, RecordingController, log_texts, pilot_test, settings_open

from kvtui.session.reader import ReplayPlayer, SessionReader
from kvtui.tui.app import KvtuiApp
from kvtui.tui.bindings import action_of
from kvtui.tui.fmt import fmt_count, fmt_int, fmt_pct, fmt_position
from kvtui.tui.screens import ConfirmScreen, HelpScreen
from kvtui.tui.widgets import Kpis, LatencyPanel
from kvtui.tui.widgets.kpis import replay_text


def test_replay_text():
    assert replay_text({"position": 65.34, "length": 199.2, "speed": 2, "paused": True}) \
        == "REPLAY 1:05.3 / 3:19.2 ×2 ⏸"
    assert replay_text({"position": 3.0, "length": 30, "speed": 0.5, "paused": False}) \
        == "REPLAY 0:03.0 / 0:30.0 ×0.5 ▶"
    # position and length are formatted alike: at the end they read the same (not 0:25.0 / 0:26)
    assert replay_text({"position": 25.04, "length": 25.04, "speed": 1, "ended": True}) \
        == "REPLAY 0:25.0 / 0:25.0 ×1 ■"
    assert replay_text({"position": 30, "length": 30, "speed": 1, "paused": False, "ended": True}).endswith("■")
    assert replay_text({}) == "REPLAY"


def test_replay_controls(session_file):
    reader = SessionReader(session_file)  # positions count from the first frame (t = 0.5 s)
    end = (SESSION_FRAMES - 1) * SESSION_TICK_S
    assert len(reader) == SESSION_FRAMES and reader.duration == pytest.approx(end)
    clock = FakeClock(100.0)
    player = ReplayPlayer(reader, clock=clock)
    app = KvtuiApp(None, None, player=player, refresh_hz=10)  # the pauses below allow for 10 frames a second
    length = fmt_position(end)  # 0:29.5, formatted like the position

    def shows(pos: float, speed: str = "×1", state: str = "⏸") -> None:
        """The header equals the recorded frame at ``pos`` and the badge says where we are."""
        assert player.position == pytest.approx(pos)
        tot = reader.frame_at(reader.index_at(pos)).totals
        assert app.shown.totals == tot
        kpis = app.query_one(Kpis).plain
        assert f"requests {fmt_int(tot['requests'])}" in kpis, (pos, kpis)
        assert (f"prefill skipped {fmt_count(tot['tokens_hit'])}/{fmt_count(tot['tokens_input'])} tok "
                f"({fmt_pct(tot['token_hit_rate'])})") in kpis
        assert f" REPLAY {fmt_position(pos)} / {length} {speed} {state} " in app.query_one(Kpis).chips
        assert "● REC" not in kpis  # the recorded frames said "recording": not a live recording

    async def scenario(pilot):
        shows(0.0, state="▶")  # starts at the first frame, playing (the fake clock stands still)
        assert reader.frame_at(0).totals["requests"] != reader.frame_at(20).totals["requests"]
        await pilot.press("space")
        assert log_texts(app)[-1] == "replay paused at 0:00.0"
        shows(0.0)
        clock.t += 50  # paused: the position stays
        app.tick()
        shows(0.0)
        await pilot.press("right")
        assert log_texts(app)[-1] == "seek → 0:10.0"
        shows(10.0)
        await pilot.press("right", "left", "left")
        assert log_texts(app)[-3:] == ["seek → 0:20.0", "seek → 0:10.0", "seek → 0:00.0"]
        shows(0.0)
        await pilot.press("end")
        assert log_texts(app)[-1] == f"seek → {length} (end)"
        shows(end)
        assert f" REPLAY {length} / {length} ×1 ⏸ " in app.query_one(Kpis).chips  # the same figure twice
        await pilot.press("home")
        assert log_texts(app)[-1] == "seek → 0:00.0 (start)"
        shows(0.0)
        await pilot.press("full_stop", "full_stop")  # the 2nd frame, the 3rd
        assert log_texts(app)[-2:] == ["step +1 → 0:00.5", "step +1 → 0:01.0"]
        shows(1.0)
        await pilot.press("comma", "comma")
        assert log_texts(app)[-2:] == ["step -1 → 0:00.5", "step -1 → 0:00.0"]
        shows(0.0)
        await pilot.press("plus", "greater_than_sign", "minus", "less_than_sign", "less_than_sign")
        assert log_texts(app)[-5:] == ["speed ×2", "speed ×4", "speed ×2", "speed ×1", "speed ×0.5"]
        shows(0.0, speed="×0.5")
        await pilot.press("equals_sign")
        await pilot.press("p")  # play again: 10 s of wall clock at ×1 is 10 s of session
        assert log_texts(app)[-1] == "replay playing from 0:00.0"
        clock.t += 10
        app.tick()
        shows(10.0, state="▶")
        clock.t += 100  # played to the end
        app.tick()
        shows(end, state="■")
        assert app.shown.status["replay"]["ended"]
        await pilot.press("space")  # at the end: play again from the start (not just pause)
        assert log_texts(app)[-1] == "replay restarted from 0:00.0"
        shows(0.0, state="▶")
        await pilot.press("end", "full_stop")  # paused at the end (a step pauses)
        shows(end, state="⏸")
        await pilot.press("space")
        assert log_texts(app)[-1] == "replay restarted from 0:00.0"
        shows(0.0, state="▶")
        clock.t += 5
        app.tick()
        shows(5.0, state="▶")

        # the live controls are hidden and do nothing; the view controls work
        before = len(log_texts(app))
        await pilot.press("s", "r", "R", "c", "e", "left_square_bracket", "ctrl+r")
        assert not (isinstance(app.screen, ConfirmScreen) or settings_open(app)) and len(log_texts(app)) == before
        footer = {action_of(b.binding)[0] for b in app.screen.active_bindings.values()}
        assert {"replay_pause", "replay_step", "replay_seek", "replay_start", "replay_end",
                "replay_speed", "freeze", "window", "screenshot", "help", "quit"} <= footer
        assert not footer & {"knob", "scenario", "settings", "toggle_pause", "clear_store", "toggle_recording"}
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert "Replay: go to start" in titles and "Set request rate" not in titles
        assert "Start / stop recording" not in titles
        await pilot.press("f")
        assert "FROZEN" in app.query_one(Kpis).plain
        await pilot.press("home")  # the player moves, the frozen view does not
        assert player.position == 0.0 and app.shown.status["replay"]["position"] == 5.0
        await pilot.press("f", "w")
        shows(0.0, state="▶")
        assert "whole session" in app.query_one(LatencyPanel).border_title
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        listed = dict(app.screen.keys)
        for keys in ("space p", ",", ".", "←", "→", "home", "end", "- <", "+ = >", "f", "w", "?", "q ^c"):
            assert keys in listed, keys
        assert not any("overlap" in d or "pool" in d for d in listed.values())
        await pilot.press("escape", "q")
        await pilot.pause()
        assert not app.is_running or app._exit

    pilot_test(app, scenario)


def test_recording_toggle(tmp_path):
    src = AggSource()
    ctl = RecordingController(str(tmp_path / "a.kvtui"))
    app = KvtuiApp(src, ctl, refresh_hz=10)  # the pauses below allow for 10 frames a second

    async def scenario(pilot):
        footer = {action_of(b.binding)[0]: b.enabled for b in app.screen.active_bindings.values()}
        assert footer.get("toggle_recording") is True and "replay_pause" not in footer
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert "Start / stop recording" in titles and "Replay: play / pause" not in titles
        await pilot.press("ctrl+r")
        assert ctl.named("toggle_recording") == [("toggle_recording",)]
        assert log_texts(app)[-1] == f"recording → {tmp_path / 'a.kvtui'}"
        assert "● REC" not in app.query_one(Kpis).plain  # the badge follows the frames, not the key
        src.status.update(recording=True, record_path=str(tmp_path / "a.kvtui"))
        app.tick()
        assert " ● REC " in app.query_one(Kpis).chips
        await pilot.press("ctrl+r")
        assert log_texts(app)[-1] == f"recording stopped: {tmp_path / 'a.kvtui'}"
        src.status["recording"] = False
        app.tick()
        assert "● REC" not in app.query_one(Kpis).plain

        def broken():
            raise OSError("read-only file system")

        ctl.toggle_recording = broken
        await pilot.press("ctrl+r")
        assert log_texts(app)[-1] == "recording failed: OSError: read-only file system"
        app.controller = object()  # a controller without toggle_recording
        await pilot.press("ctrl+r")
        assert log_texts(app)[-1] == "recording is unavailable (the controller cannot record)"
        app.controller = None
        assert app.check_action("toggle_recording", ()) is None

    pilot_test(app, scenario)


def test_demo_controller_records_a_replayable_session(tmp_path):
    from kvtui.testing.demo import DemoController, DemoSource

    src = DemoSource(2)
    ctl = DemoController(src, record_dir=str(tmp_path))
    on, path = ctl.toggle_recording()
    frames = [src.frame() for _ in range(5)]
    assert on and frames[-1].status["recording"] and frames[-1].status["record_path"] == path
    ctl.stop()  # stops the recording too
    assert src.writer is None and "recording" not in src.frame().status
    reader = SessionReader(path)
    assert len(reader) == 5 and reader.final_frame().totals == frames[-1].totals
