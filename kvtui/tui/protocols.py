"""What the monitor talks to: a frame source, a controller (the one control channel back), a replay player.

:class:`kvtui.live.LiveSession` is the live source and controller; :class:`kvtui.testing.demo.DemoSource` /
:class:`~kvtui.testing.demo.DemoController` the store-less ones; :class:`kvtui.session.reader.ReplayPlayer`
the player (and frame source) of a recorded session.
"""

from __future__ import annotations

from typing import Protocol

from kvtui.core.controls import Control
from kvtui.metrics.frame import Frame

__all__ = ["FrameSource", "Controller", "Player"]


class FrameSource(Protocol):
    """Where the monitor's frames come from. A live source builds them on one producer thread at the rate its
    consumers want (:class:`kvtui.metrics.producer.FrameProducer`); a replay or a test source may build one
    per call."""

    def frame(self) -> Frame:
        """The newest frame (cheap: a live source only hands over the one its producer built)."""

    def want(self, consumer: str, hz: float) -> None:
        """``consumer`` (the monitor) needs ``hz`` frames a second from now on."""

    def unwant(self, consumer: str) -> None:
        """``consumer`` needs no more frames."""


class Controller(Protocol):
    """The workload's controls. Every method returns quickly except ``clear_store`` (the app runs it in a
    thread worker); ``restart_master()`` (optional: only a controller that started the master has it)
    and ``kill_leader()`` (optional: only a controller with its own HA cluster has it) likewise.
    ``toggle_recording`` is optional too: without it the app says recording is unavailable; so is
    ``failover_reports() -> list[list[str]]`` (every failover's report, its lines: the F screen)."""

    def send(self, control: Control) -> None:
        """Ask for a knob change (:mod:`kvtui.core.controls`: SetKnob, SetLayout, SetTraceSpeed); the engine
        applies it before its next request and reports a change it refuses in the event log (the frames then
        keep showing the old value)."""

    def pause(self) -> None: ...
    def resume(self) -> None: ...

    def clear_store(self) -> int:
        """Remove every key from the store; returns how many were removed."""

    def stop(self) -> None: ...

    def toggle_recording(self) -> tuple[bool, str | None]:
        """Start recording the session to a file, or stop; returns (recording now, the file's path)."""


class Player(FrameSource, Protocol):
    """Replay controls (:class:`kvtui.session.reader.ReplayPlayer`); ``frame()`` carries ``status["replay"]``."""

    speed: float

    def toggle_pause(self) -> bool: ...
    def step(self, frames: int = 1) -> None: ...
    def seek(self, seconds: float) -> None: ...
    def seek_start(self) -> None: ...
    def seek_end(self) -> None: ...
    def set_speed(self, speed: float) -> None: ...
