"""The monitor's workload keys: knob steps, typed values, scenario and layout, pause, and a trace's speed.

:class:`KnobKeys` is a part the app owns (``app.knob_keys``); the app's ``action_*`` methods of these keys
call it, and it reaches the app only through :class:`KnobHost`. Every knob of :mod:`kvtui.core.knobs` goes
through the same two calls: :meth:`KnobKeys.step` (a key press) and :meth:`KnobKeys.set` (a typed value, a
palette entry), each sending one :class:`~kvtui.core.controls.SetKnob` through the controller; which
requests are sent and shown is :mod:`kvtui.tui.knob_state`. During a trace replay the synthetic knobs' keys
only say why they do nothing (:meth:`KnobKeys.not_for_a_trace`: in the status line, and once in the event
log), and ``-`` / ``+`` step the trace's speed (:data:`kvtui.core.knobs.TRACE_SPEEDS`, up to as fast as
possible).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import Callable, Protocol

from kvtui.core.controls import Control, SetKnob, SetLayout, SetTraceSpeed
from kvtui.core.knobs import KNOBS, SCENARIO, TRACE_SPEEDS, Knob, knob_named, next_trace_speed, trace_speed_text
from kvtui.metrics.frame import Frame
from kvtui.tui.bindings import TRACE_KEYS_TEXT
from kvtui.tui.knob_state import TRACE_SPEED, KnobState, same
from kvtui.tui.protocols import Controller

__all__ = ["KnobHost", "KnobKeys", "CONTROL_ECHO_S"]

CONTROL_ECHO_S = 0.05  # an extra frame pull this long after a control change


def _scenario_only(name: str) -> str:
    """What a synthetic-scenario key sets, as the trace's explanation names it: ``overlap``, ``the scenario``,
    ``overlap, pool and rate`` (the settings dialog)."""
    if name == "settings":
        names = list(KNOBS)
        return ", ".join(names[:-1]) + f" and {names[-1]}" if len(names) > 1 else names[0]
    return f"the {name}" if name == SCENARIO.name else name


class KnobHost(Protocol):
    """What :class:`KnobKeys` uses of the monitor: its ``controller`` (None: no workload to control), the
    newest ``frame`` pulled, its event log (``log_line``) and status line (``flash``), and
    ``knob_changed()``: a knob was just asked for (show it in the header now, pull a frame soon)."""

    @property
    def controller(self) -> Controller | None: ...
    @property
    def frame(self) -> Frame | None: ...
    def log_line(self, text: str, kind: str = "ui") -> None: ...
    def flash(self, text: str) -> None: ...
    def knob_changed(self) -> None: ...


class KnobKeys:
    """The workload keys of the monitor ``host``. ``state``: the knobs asked for here and adopted from the
    frames (the app's :class:`KnobState`); ``scenarios``: the order ``s`` cycles through."""

    def __init__(self, host: KnobHost, state: KnobState, scenarios: Sequence[str]) -> None:
        self.host, self.state, self.scenarios = host, state, tuple(scenarios)
        self._said_not_for_trace: set[str] = set()  # scenario keys already explained in the event log

    @property
    def knobs(self) -> dict:
        """Knob → the newest value asked for here or shown by the engine."""
        return self.state.values

    def _control(self, knob: str, value, call: Callable[[], object], text: str) -> bool:
        """Set ``knob`` to ``value`` through ``call`` and log ``text``; nothing at all when the knob already
        has that value (:meth:`KnobState.request`). Returns whether the controller was called successfully."""
        try:
            if not self.state.request(knob, value, call, time.monotonic()):
                return False
        except Exception as exc:  # the controller is another component: report, keep the old value
            self.host.log_line(f"{text} failed: {type(exc).__name__}: {exc}", "error")
            return False
        self.host.log_line(text, "control")
        self.host.knob_changed()
        return True

    def _send(self, knob: str, value, control: Control, text: str) -> bool:
        """:meth:`_control` with ``controller.send(control)``."""
        return self._control(knob, value, lambda: self._controller().send(control), text)

    def _controller(self) -> Controller:
        """The host's controller (the app enables these keys only when it has one)."""
        controller = self.host.controller
        if controller is None:
            raise RuntimeError("no workload to control here")
        return controller

    # -- a trace replay ------------------------------------------------------------------------------------
    def not_for_a_trace(self, name: str) -> None:
        """During a trace replay, a key of the synthetic knob ``name`` (or ``settings``): say why it does nothing
        (status line; event log once per knob)."""
        text = (f"{_scenario_only(name)}: a knob of the synthetic scenarios; a trace replays its rows as "
                f"recorded (trace keys: {TRACE_KEYS_TEXT})")
        if name not in self._said_not_for_trace:
            self._said_not_for_trace.add(name)
            self.host.log_line(text)
        self.host.flash(text)

    def trace_speed(self, direction: int) -> None:
        """The trace's speed one step up or down (``-`` / ``+``); at either end say so."""
        held = self.knobs.get(TRACE_SPEED)  # math.inf: as fast as possible
        current = None if held is None or math.isinf(held) else float(held)
        frame = self.host.frame
        if held is None:
            current = (frame.workload or {}).get("speed", 1.0) if frame is not None else 1.0
        speed = next_trace_speed(current, direction > 0)
        if speed == current:
            now = "as fast as possible" if speed is None else trace_speed_text(speed)
            self.host.flash(f"trace speed is already {now} (speeds {trace_speed_text(TRACE_SPEEDS[0])} … "
                            f"{trace_speed_text(TRACE_SPEEDS[-1])}, max)")
            return
        self._send(TRACE_SPEED, math.inf if speed is None else speed, SetTraceSpeed(speed),
                   f"trace speed → {trace_speed_text(speed)}")

    # -- knobs ---------------------------------------------------------------------------------------------
    def set(self, name: str, value: float | str) -> None:
        """Ask for knob ``name`` (:data:`kvtui.core.knobs.WORKLOAD_KNOBS`) = ``value`` in the engine's units; a
        number through :meth:`Knob.snap <kvtui.core.knobs.Knob.snap>` (into range; overlap in whole percent)."""
        knob = knob_named(name)
        if isinstance(knob, Knob):
            number = knob.snap(float(value))
            self._send(name, number, SetKnob(name, number), knob.change_text(number))
        else:
            self._send(name, value, SetKnob(name, value), knob.change_text(value))

    def step(self, name: str, direction: int) -> None:
        """Knob ``name`` one key press up (``direction`` > 0) or down (:meth:`Knob.stepped
        <kvtui.core.knobs.Knob.stepped>`: onto the step's grid, or along a ladder, where down from closed loop goes
        to the highest step not above the measured rate). A ladder's ends are not visible on the knob: a press
        there says why nothing changes; another knob's end stays quiet."""
        knob = KNOBS[name]
        frame = self.host.frame
        measured = float(frame.rates.get(knob.measured, 0.0)) if frame is not None and knob.measured else 0.0
        current = float(self.knobs.get(name, knob.default))
        value = knob.stepped(current, direction > 0, measured)
        if knob.steps and same(value, current):
            self.host.log_line(knob.end_text(current, direction > 0))
            return
        self.set(name, value)

    def scenario(self) -> None:
        """The next scenario of :attr:`scenarios` (wrapping around)."""
        self.set(SCENARIO.name, SCENARIO.next(self.knobs.get(SCENARIO.name), self.scenarios))

    def set_layout(self, name: str) -> None:
        """Ask for page layout preset ``name`` (the engine switches once the requests under way are done)."""
        self._send("layout", name, SetLayout(name), f"layout {name} asked for (after the requests under way)")

    def toggle_pause(self) -> None:
        """Pause the workload, or resume it."""
        if self.knobs.get("paused"):
            self._control("paused", False, lambda: self._controller().resume(), "workload resumed")
        else:
            self._control("paused", True, lambda: self._controller().pause(), "workload paused")

    def apply_settings(self, changed: dict | None) -> None:
        """The values typed in the settings dialog (``None``: cancelled)."""
        for name, value in (changed or {}).items():
            self.set(name, value)
