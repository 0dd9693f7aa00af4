"""The one channel back from the views to the engine: typed control messages, plain data (no closures).

The monitor (through its ``Controller``) and the commands send these; :class:`kvtui.live.LiveSession`
checks them against :mod:`kvtui.core.knobs` and hands them to the driver, whose feeder thread applies them
before the next request is drawn (so a knob change takes effect from the next request).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SetOverlap:
    """Shared-prefix fraction of each prompt, 0–1 (:data:`kvtui.core.knobs.OVERLAP`)."""

    fraction: float


@dataclass(frozen=True)
class SetPool:
    """Number of system prompts / templates / conversations, ≥ 1 (:data:`kvtui.core.knobs.POOL`)."""

    n: int


@dataclass(frozen=True)
class SetRate:
    """Poisson arrival rate in requests/s; 0 = closed loop (:data:`kvtui.core.knobs.RATE`)."""

    rps: float


@dataclass(frozen=True)
class SetScenario:
    """Synthetic scenario by name (:data:`kvtui.core.knobs.SCENARIOS`)."""

    name: str


@dataclass(frozen=True)
class SetLayout:
    """Page layout preset by name (:data:`kvtui.core.layout.PRESETS`): all-or-nothing, after the requests
    under way finish."""

    name: str


Control = SetOverlap | SetPool | SetRate | SetScenario | SetLayout
"""A control the driver's feeder thread applies before the next request (pause, resume and clearing the
store act at once and are methods of the controller instead)."""
