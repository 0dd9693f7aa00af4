"""The monitor ends when its live workload stops for good (a worker died and nothing rebuilds it)."""

from __future__ import annotations

import dataclasses

import pytest
from tui_helpers import RecordingController, pilot_test

from kvtui.core.errors import KvtuiError
from kvtui.testing.demo import DemoSource
from kvtui.tui.app import KvtuiApp, run_app

TICK_HZ = 10


class StoppingSource(DemoSource):
    """A live source whose workload stops with an error (a worker died) after ``after`` frames."""

    def __init__(self, after: int):
        super().__init__(2)
        self.after, self.frames = after, 0

    def frame(self):
        self.frames += 1
        frame = super().frame()
        if self.frames > self.after:
            frame = dataclasses.replace(frame, status={**(frame.status or {}),
                                                       "error": "prefill worker died (exit code -9)"})
        return frame


def test_the_monitor_ends_when_its_live_workload_stops_with_an_error():
    """A frame saying the workload stopped (a worker died, nothing rebuilds it) ends the monitor, its
    controller stopped, and run_app raises the one line `kvtui watch` exits 2 with."""
    ctl = RecordingController()
    with pytest.raises(KvtuiError, match=r"^watch stopped: prefill worker died \(exit code -9\)$"):
        run_app(StoppingSource(after=3), ctl, headless=True, duration_s=30)
    assert ctl.named("stop") == [("stop",)]
    app = KvtuiApp(StoppingSource(after=0), None, refresh_hz=TICK_HZ)  # a replay or a static view: it stays

    async def scenario(pilot):
        await pilot.pause(0.3)  # (the thing under test: 0.3 s of frames saying "stopped" end nothing here)
        assert app.is_running and app.stopped_by is None

    pilot_test(app, scenario)


def test_a_workload_stopped_before_the_monitor_mounted_ends_it_without_a_traceback(capfd):
    """A worker that died during start-up is in the very first frame, pulled while the monitor's dialogs still
    mount: the monitor ends after they did, with the one line and no Textual traceback."""
    with pytest.raises(KvtuiError, match=r"^watch stopped: prefill worker died"):
        run_app(StoppingSource(after=0), RecordingController(), headless=True, duration_s=30)
    err = capfd.readouterr().err
    assert "NoMatches" not in err and "Traceback" not in err, err
