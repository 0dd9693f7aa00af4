"""The one channel back from the views to the engine: typed control messages, plain data (no closures).

The monitor (through its ``Controller.send``) and the commands send these to
:meth:`kvtui.live.LiveSession.send`, which queues them on its :class:`~kvtui.engine.driver.Driver`. The
driver's feeder thread hands each one to the session's control handler before it draws the next request
(so a knob change takes effect from the next request); the handler checks the value against
:mod:`kvtui.core.knobs`, applies it, and logs one event-log line (``overlap → 60 %``, or ``control refused:
…`` when the value is out of range or the workload cannot take it). Values are in the engine's units.

Every workload knob goes through one message, :class:`SetKnob`, named by its :mod:`kvtui.core.knobs` entry.
A layout switch and a trace's speed have messages of their own: neither is a field of the workload's spec
(a layout restarts the workers' pages all or nothing; a trace's speed has "as fast as possible" as None).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["SetKnob", "SetLayout", "SetTraceSpeed", "Control", "CONTROLS"]


@dataclass(frozen=True)
class SetKnob:
    """Workload knob ``name`` (a key of :data:`kvtui.core.knobs.WORKLOAD_KNOBS`: ``overlap``, ``pool``,
    ``rate``, ``scenario``) to ``value`` in the engine's units (overlap as a fraction 0–1; the scenario by
    name)."""

    name: str
    value: float | str


@dataclass(frozen=True)
class SetLayout:
    """Page layout preset by name (:data:`kvtui.core.layout.PRESETS`): all-or-nothing, after the requests
    under way finish."""

    name: str


@dataclass(frozen=True)
class SetTraceSpeed:
    """A trace replay's speed (× trace time; None = as fast as possible) for the rows not yet issued
    (:data:`kvtui.core.knobs.TRACE_SPEEDS`)."""

    speed: float | None


Control = SetKnob | SetLayout | SetTraceSpeed
"""A control the driver's feeder thread applies before the next request (pause, resume and clearing the
store act at once and are methods of the controller instead). ``isinstance(x, Control)`` works."""
CONTROLS: tuple[type, ...] = (SetKnob, SetLayout, SetTraceSpeed)
"""Every control message type, in the order above."""
