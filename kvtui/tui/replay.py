"""The monitor's replay keys (only with a player): play / pause, step, seek, start / end, speed.

These are the keys of the monitor's replay mode (``MODES["replay"]`` of :mod:`kvtui.tui.bindings`); each key
pulls the frame at the new position at once and says in the event log where the playback is.
:class:`ReplayKeys` is a part the app owns (``app.replay_keys``); the app's ``action_replay_*`` methods call
it, and it reaches the app only through :class:`ReplayHost`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Callable, Protocol

from kvtui.metrics.frame import Frame
from kvtui.tui.bindings import SEEK_STEP_S
from kvtui.tui.fmt import fmt_position, fmt_speed
from kvtui.tui.protocols import Player

__all__ = ["ReplayHost", "ReplayKeys"]


class ReplayHost(Protocol):
    """What :class:`ReplayKeys` uses of the monitor: its ``player`` (None outside replay mode: the app then
    hides these keys), the newest ``frame``, ``tick()`` (pull a frame now) and its event log."""

    @property
    def player(self) -> Player | None: ...
    @property
    def frame(self) -> Frame | None: ...
    def tick(self) -> None: ...
    def log_line(self, text: str, kind: str = "ui") -> None: ...


class ReplayKeys:
    """The replay keys of the monitor ``host``."""

    def __init__(self, host: ReplayHost) -> None:
        self.host = host

    @property
    def player(self) -> Player:
        """The host's player (these keys are enabled only in replay mode, where there is one)."""
        player = self.host.player
        if player is None:
            raise RuntimeError("no recording is being replayed")
        return player

    def _replay(self, call: Callable[[], object], text: Callable[[Mapping[str, Any]], str]) -> None:
        """Run a player control, pull the frame at the new position at once, and log ``text(status["replay"])``."""
        try:
            call()
        except Exception as exc:  # the player reads a file: report, keep the UI alive
            self.host.log_line(f"replay control failed: {type(exc).__name__}: {exc}", "error")
            return
        self.host.tick()
        self.host.log_line(text(self._replay_status()))

    def _replay_status(self) -> Mapping[str, Any]:
        """``status["replay"]`` of the newest frame ({} before the first)."""
        frame = self.host.frame
        return (frame.status or {}).get("replay", {}) if frame else {}

    def pause(self) -> None:
        """Play / pause; at the end of the recording: play it again from the start."""
        self.host.tick()  # where the player is now (it may have reached the end since the last frame)
        rp = self._replay_status()
        if rp.get("ended"):
            def restart() -> None:
                self.player.seek_start()
                if rp.get("paused"):
                    self.player.toggle_pause()

            self._replay(restart, lambda rp: f"replay restarted from {fmt_position(rp.get('position', 0))}")
            return

        def text(rp: Mapping[str, Any]) -> str:
            at = fmt_position(rp.get("position", 0))
            return f"replay paused at {at}" if rp.get("paused") else f"replay playing from {at}"

        self._replay(lambda: self.player.toggle_pause(), text)

    def step(self, frames: int) -> None:
        """``frames`` frames forward (negative: back); the player pauses."""
        self._replay(lambda: self.player.step(frames),
                     lambda rp: f"step {frames:+d} → {fmt_position(rp.get('position', 0))}")

    def seek(self, direction: int) -> None:
        """``SEEK_STEP_S`` seconds of the recording forward (``direction`` > 0) or back."""
        self._replay(lambda: self.player.seek(direction * SEEK_STEP_S),
                     lambda rp: f"seek → {fmt_position(rp.get('position', 0))}")

    def start(self) -> None:
        """To the first frame."""
        self._replay(lambda: self.player.seek_start(),
                     lambda rp: f"seek → {fmt_position(rp.get('position', 0))} (start)")

    def end(self) -> None:
        """To the last frame."""
        self._replay(lambda: self.player.seek_end(), lambda rp: f"seek → {fmt_position(rp.get('position', 0))} (end)")

    def speed(self, direction: int) -> None:
        """Twice as fast (``direction`` > 0) or half as fast."""
        speed = self.player.speed * (2.0 if direction > 0 else 0.5)
        self._replay(lambda: self.player.set_speed(speed),
                     lambda rp: f"speed {fmt_speed(rp.get('speed', self.player.speed))}")
