"""The monitor's workload keys: knob steps, typed values, scenario and layout, pause, and a trace's speed.

Each change goes through the controller as a typed control (:mod:`kvtui.core.controls`); which requests are
sent and shown is :mod:`kvtui.tui.knob_state`. During a trace replay the synthetic-scenario keys (overlap,
pool, rate, scenario, the settings dialog) do nothing: the first press of one says why in the status line
(and once in the event log), and ``-`` / ``+`` step the trace's speed instead (:data:`kvtui.core.knobs.
TRACE_SPEEDS`, up to as fast as possible).
"""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING, Any, Callable

from kvtui.core.controls import Control, SetLayout, SetOverlap, SetPool, SetRate, SetScenario, SetTraceSpeed
from kvtui.core.knobs import OVERLAP, POOL, RATE, TRACE_SPEEDS, next_rate, next_trace_speed, trace_speed_text
from kvtui.tui.fmt import fmt_rps_knob
from kvtui.tui.knob_state import TRACE_SPEED, same

if TYPE_CHECKING:
    from textual.app import App

    from kvtui.metrics.frame import Frame
    from kvtui.tui.knob_state import KnobState
    from kvtui.tui.protocols import Controller

    _AppHost = App[int]  # the mixin's host, for the type checker
else:
    _AppHost = object

__all__ = ["KnobActions", "CONTROL_ECHO_S", "TRACE_KEYS_TEXT"]

CONTROL_ECHO_S = 0.05  # an extra frame pull this long after a control change
TRACE_KEYS_TEXT = "- + speed, p pause"
_SCENARIO_ONLY = {"overlap": "overlap", "pool": "pool", "rate": "rate", "scenario": "the scenario",
                  "settings": "overlap, rate and pool"}


class KnobActions(_AppHost):
    """Mixin of :class:`kvtui.tui.app.KvtuiApp`. Uses the app's ``controller``, ``knob_state``, ``knobs``,
    ``frame``, ``shown``, ``frozen``, ``scenarios``, ``log_line``, ``flash``, ``tick`` and ``_show_kpis``."""

    controller: Controller | None
    knob_state: KnobState
    knobs: dict[str, Any]
    frame: Frame | None
    shown: Frame | None
    frozen: bool
    scenarios: tuple[str, ...]

    if TYPE_CHECKING:

        def log_line(self, text: str, kind: str = "ui") -> None: ...

        def flash(self, text: str) -> None: ...

        def tick(self) -> None: ...

        def _show_kpis(self, frame: Frame) -> None: ...

    def _control(self, knob: str, value, call: Callable[[], object], text: str) -> bool:
        """Set ``knob`` to ``value`` through ``call`` and log ``text``; nothing at all when the knob already
        has that value (:meth:`KnobState.request`). Returns whether the controller was called successfully."""
        try:
            if not self.knob_state.request(knob, value, call, time.monotonic()):
                return False
        except Exception as exc:  # the controller is another component: report, keep the old value
            self.log_line(f"{text} failed: {type(exc).__name__}: {exc}", "error")
            return False
        self.log_line(text, "control")
        if self.shown is not None and not self.frozen:
            self._show_kpis(self.shown)
        if self.is_running:  # the engine applies a change before its next request: show it then, not a
            self.set_timer(CONTROL_ECHO_S, self.tick, name="control-echo")  # whole refresh period later
        return True

    def _send(self, knob: str, value, control: Control, text: str) -> bool:
        """:meth:`_control` with ``controller.send(control)``."""

        def call() -> None:
            assert self.controller is not None  # (the knob keys are enabled only with a controller)
            self.controller.send(control)

        return self._control(knob, value, call, text)

    # -- a trace replay ------------------------------------------------------------------------------------
    @property
    def trace_mode(self) -> bool:
        """The newest frame is of a trace replay (live)."""
        return bool(self.frame is not None and (self.frame.workload or {}).get("kind") == "trace")

    def _not_for_a_trace(self, action: str) -> bool:
        """During a trace replay: say (status line; event log once per key) why a scenario key does nothing,
        and return True; else False."""
        if not self.trace_mode:
            return False
        text = (f"{_SCENARIO_ONLY[action]}: a knob of the synthetic scenarios; a trace replays its rows as "
                f"recorded (trace keys: {TRACE_KEYS_TEXT})")
        said = self.__dict__.setdefault("_said_not_for_trace", set())
        if action not in said:
            said.add(action)
            self.log_line(text)
        self.flash(text)
        return True

    def action_trace_speed(self, direction: int) -> None:
        """The trace's speed one step up or down (``-`` / ``+``); at either end say so."""
        held = self.knobs.get(TRACE_SPEED)  # math.inf: as fast as possible
        current = None if held is None or math.isinf(held) else float(held)
        if held is None:
            current = (self.frame.workload or {}).get("speed", 1.0) if self.frame is not None else 1.0
        speed = next_trace_speed(current, direction > 0)
        if speed == current:
            self.flash(f"trace speed is already {'as fast as possible' if speed is None else trace_speed_text(speed)}"
                       f" (speeds {trace_speed_text(TRACE_SPEEDS[0])} … {trace_speed_text(TRACE_SPEEDS[-1])}, max)")
            return
        self._send(TRACE_SPEED, math.inf if speed is None else speed, SetTraceSpeed(speed),
                   f"trace speed → {trace_speed_text(speed)}")

    # -- knobs ---------------------------------------------------------------------------------------------
    def set_overlap(self, fraction: float) -> None:
        """Ask for prefix overlap ``fraction`` (0–1; clamped, to whole percent)."""
        value = round(OVERLAP.user(OVERLAP.clamp(fraction))) / OVERLAP.scale
        self._send("overlap", value, SetOverlap(value), f"overlap → {OVERLAP.text(value)}")

    def set_pool(self, n: int) -> None:
        """Ask for pool size ``n`` (clamped into the pool's range)."""
        n = int(POOL.clamp(int(n)))
        self._send("pool", n, SetPool(n), f"pool → {n}")

    def set_rate(self, rps: float) -> None:
        """Ask for request rate ``rps`` (req/s, 0 = closed loop; negative → 0)."""
        rps = float(RATE.clamp(float(rps)))
        self._send("rate", rps, SetRate(rps), f"rate → {fmt_rps_knob(rps)}")

    def action_overlap(self, steps: int) -> None:
        if self._not_for_a_trace("overlap"):
            return
        current = float(self.knobs.get("overlap", 0.5))  # steps land on the step's grid (a typed 61 % → 65 %)
        self.set_overlap(round(current / OVERLAP.step + steps) * OVERLAP.step)

    def action_pool(self, delta: int) -> None:
        if self._not_for_a_trace("pool"):
            return
        self.set_pool(int(self.knobs.get("pool", 1)) + delta * int(POOL.step))

    def action_rate(self, direction: int) -> None:
        """One step up or down (:func:`kvtui.core.knobs.next_rate`: down from closed loop goes to the highest
        step not above the measured request rate, 0.5 req/s before anything was measured)."""
        if self._not_for_a_trace("rate"):
            return
        measured = self.frame.rates.get("rps", 0.0) if self.frame else 0.0
        current = float(self.knobs.get("rate", 0.0))
        rate = next_rate(current, direction > 0, measured)
        if same(rate, current):  # at either end: say why nothing changes
            self.log_line("rate is already closed loop (the next request as soon as one finishes)" if current <= 0
                          else f"rate is already at its lowest step ({fmt_rps_knob(current)})")
            return
        self.set_rate(rate)

    def set_scenario(self, name: str) -> None:
        self._send("scenario", name, SetScenario(name), f"scenario → {name}")

    def set_layout(self, name: str) -> None:
        """Ask for page layout preset ``name`` (the engine switches once the requests under way are done)."""
        self._send("layout", name, SetLayout(name), f"layout {name} asked for (after the requests under way)")

    def action_scenario(self) -> None:
        if self._not_for_a_trace("scenario"):
            return
        current = self.knobs.get("scenario")
        i = self.scenarios.index(current) + 1 if current in self.scenarios else 0
        self.set_scenario(self.scenarios[i % len(self.scenarios)])

    def action_toggle_pause(self) -> None:
        assert self.controller is not None  # (enabled only with a controller)
        if self.knobs.get("paused"):
            self._control("paused", False, self.controller.resume, "workload resumed")
        else:
            self._control("paused", True, self.controller.pause, "workload paused")

    def apply_settings(self, changed: dict | None) -> None:
        """The values typed in the settings dialog (``None``: cancelled)."""
        for key, value in (changed or {}).items():
            {"overlap": self.set_overlap, "rate": self.set_rate, "pool": self.set_pool}[key](value)
