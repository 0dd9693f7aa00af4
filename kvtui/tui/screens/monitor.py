"""The monitor's main screen, one class per mode: each holds its mode's keys (:data:`kvtui.tui.bindings.MODES`).

The app builds the one of its mode as its default screen (``App.get_default_screen``) and composes the
dashboard into it; Textual then looks a key up in that screen's bindings (and the app's ``ctrl+c``), so a key
means one thing in a mode. Dialogs pushed on top have bindings of their own (these are not active there).
"""

from __future__ import annotations

from typing import ClassVar

from textual.binding import BindingType
from textual.screen import Screen

from kvtui.tui.bindings import MODES

__all__ = ["MonitorScreen", "LiveScreen", "TraceScreen", "ReplayScreen", "SCREENS"]


class MonitorScreen(Screen[None]):
    """The dashboard of one mode (:attr:`MODE`)."""

    MODE: ClassVar[str] = ""


class LiveScreen(MonitorScreen):
    """A live synthetic workload (or an observed master): its knobs, pause, the store, recording."""

    MODE = "live"
    BINDINGS: ClassVar[list[BindingType]] = [*MODES["live"]]


class TraceScreen(MonitorScreen):
    """A live trace replay: its speed, pause, the store, recording."""

    MODE = "trace"
    BINDINGS: ClassVar[list[BindingType]] = [*MODES["trace"]]


class ReplayScreen(MonitorScreen):
    """A recording played back: the player's keys."""

    MODE = "replay"
    BINDINGS: ClassVar[list[BindingType]] = [*MODES["replay"]]


SCREENS: dict[str, type[MonitorScreen]] = {s.MODE: s for s in (LiveScreen, TraceScreen, ReplayScreen)}
"""The main screen of each mode."""
