"""The monitor's replay keys (only with a player): play / pause, step, seek, start / end, speed.

In replay the live controls are hidden and their keys drive the player instead (:data:`controls.BINDINGS`);
each key pulls the frame at the new position at once and says in the event log where the playback is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from kvtui.core.panels import FrameStatus, ReplayStatus
from kvtui.tui.bindings import SEEK_STEP_S
from kvtui.tui.fmt import fmt_position, fmt_speed

if TYPE_CHECKING:
    from kvtui.metrics.frame import Frame
    from kvtui.tui.protocols import Player

__all__ = ["ReplayActions"]


class ReplayActions:
    """Mixin of :class:`kvtui.tui.app.KvtuiApp`: the ``action_replay_*`` of the replay bindings. Uses the
    app's ``player`` (a :class:`kvtui.tui.protocols.Player`), ``frame``, ``tick()`` and ``log_line()``."""

    player: Player | None
    frame: Frame | None

    if TYPE_CHECKING:

        def log_line(self, text: str, kind: str = "ui") -> None: ...

        def tick(self) -> None: ...

    @property
    def _player(self) -> Player:
        assert self.player is not None  # (the replay keys are enabled only with a player)
        return self.player

    def _replay(self, call: Callable[[], object], text: Callable[[ReplayStatus], str]) -> None:
        """Run a player control, pull the frame at the new position at once, and log ``text(status["replay"])``."""
        try:
            call()
        except Exception as exc:  # the player reads a file: report, keep the UI alive
            self.log_line(f"replay control failed: {type(exc).__name__}: {exc}", "error")
            return
        self.tick()
        self.log_line(text(self._replay_status()))

    def _replay_status(self) -> ReplayStatus:
        """``status["replay"]`` of the newest frame ({} before the first)."""
        return (self.frame.status or FrameStatus()).get("replay", ReplayStatus()) if self.frame else ReplayStatus()

    def action_replay_pause(self) -> None:
        """Play / pause; at the end of the recording: play it again from the start."""
        self.tick()  # where the player is now (it may have reached the end since the last frame)
        rp = self._replay_status()
        if rp.get("ended"):
            def restart() -> None:
                self._player.seek_start()
                if rp.get("paused"):
                    self._player.toggle_pause()

            self._replay(restart, lambda rp: f"replay restarted from {fmt_position(rp.get('position', 0))}")
            return

        def text(rp: ReplayStatus) -> str:
            at = fmt_position(rp.get("position", 0))
            return f"replay paused at {at}" if rp.get("paused") else f"replay playing from {at}"

        self._replay(self._player.toggle_pause, text)

    def action_replay_step(self, frames: int) -> None:
        self._replay(lambda: self._player.step(frames),
                     lambda rp: f"step {frames:+d} → {fmt_position(rp.get('position', 0))}")

    def action_replay_seek(self, direction: int) -> None:
        self._replay(lambda: self._player.seek(direction * SEEK_STEP_S),
                     lambda rp: f"seek → {fmt_position(rp.get('position', 0))}")

    def action_replay_start(self) -> None:
        self._replay(self._player.seek_start, lambda rp: f"seek → {fmt_position(rp.get('position', 0))} (start)")

    def action_replay_end(self) -> None:
        self._replay(self._player.seek_end, lambda rp: f"seek → {fmt_position(rp.get('position', 0))} (end)")

    def action_replay_speed(self, direction: int) -> None:
        speed = self._player.speed * (2.0 if direction > 0 else 0.5)
        self._replay(lambda: self._player.set_speed(speed),
                     lambda rp: f"speed {fmt_speed(rp.get('speed', self._player.speed))}")
