"""The monitor's workload keys: knob steps, typed values, scenario and layout, pause, and a trace's speed.

:class:`KnobKeys` is a part the app owns (``app.knob_keys``); the app's ``action_*`` methods of these keys
call it, and it reaches the app only through :class:`KnobHost`. Each change goes through the controller as a
typed control (:mod:`kvtui.core.controls`); which requests are sent and shown is :mod:`kvtui.tui.knob_state`.
During a trace replay the synthetic-scenario keys (overlap, pool, rate, scenario, the settings dialog) do
nothing: the first press of one says why in the status line (and once in the event log), and ``-`` / ``+``
step the trace's speed instead (:data:`kvtui.core.knobs.TRACE_SPEEDS`, up to as fast as possible).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import Callable, Protocol

from kvtui.core.controls import Control, SetLayout, SetOverlap, SetPool, SetRate, SetScenario, SetTraceSpeed
from kvtui.core.knobs import OVERLAP, POOL, RATE, TRACE_SPEEDS, next_rate, next_trace_speed, trace_speed_text
from kvtui.metrics.frame import Frame
from kvtui.tui.fmt import fmt_rps_knob
from kvtui.tui.knob_state import TRACE_SPEED, KnobState, same
from kvtui.tui.protocols import Controller

__all__ = ["KnobHost", "KnobKeys", "CONTROL_ECHO_S", "TRACE_KEYS_TEXT"]

CONTROL_ECHO_S = 0.05  # an extra frame pull this long after a control change
TRACE_KEYS_TEXT = "- + speed, p pause"
_SCENARIO_ONLY = {"overlap": "overlap", "pool": "pool", "rate": "rate", "scenario": "the scenario",
                  "settings": "overlap, rate and pool"}


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
    @property
    def trace_mode(self) -> bool:
        """The newest frame is of a trace replay (live)."""
        frame = self.host.frame
        return bool(frame is not None and (frame.workload or {}).get("kind") == "trace")

    def not_for_a_trace(self, action: str) -> bool:
        """During a trace replay: say (status line; event log once per key) why a scenario key does nothing,
        and return True; else False."""
        if not self.trace_mode:
            return False
        text = (f"{_SCENARIO_ONLY[action]}: a knob of the synthetic scenarios; a trace replays its rows as "
                f"recorded (trace keys: {TRACE_KEYS_TEXT})")
        if action not in self._said_not_for_trace:
            self._said_not_for_trace.add(action)
            self.host.log_line(text)
        self.host.flash(text)
        return True

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

    def overlap(self, steps: int) -> None:
        """Prefix overlap ``steps`` steps up (negative: down), onto the step's grid."""
        if self.not_for_a_trace("overlap"):
            return
        current = float(self.knobs.get("overlap", 0.5))  # steps land on the step's grid (a typed 61 % → 65 %)
        self.set_overlap(round(current / OVERLAP.step + steps) * OVERLAP.step)

    def pool(self, delta: int) -> None:
        """Pool size ``delta`` steps up (negative: down)."""
        if self.not_for_a_trace("pool"):
            return
        self.set_pool(int(self.knobs.get("pool", 1)) + delta * int(POOL.step))

    def rate(self, direction: int) -> None:
        """Request rate one step up or down (:func:`kvtui.core.knobs.next_rate`: down from closed loop goes to
        the highest step not above the measured request rate, 0.5 req/s before anything was measured)."""
        if self.not_for_a_trace("rate"):
            return
        frame = self.host.frame
        measured = frame.rates.get("rps", 0.0) if frame else 0.0
        current = float(self.knobs.get("rate", 0.0))
        rate = next_rate(current, direction > 0, measured)
        if same(rate, current):  # at either end: say why nothing changes
            self.host.log_line("rate is already closed loop (the next request as soon as one finishes)" if current <= 0
                               else f"rate is already at its lowest step ({fmt_rps_knob(current)})")
            return
        self.set_rate(rate)

    def set_scenario(self, name: str) -> None:
        """Ask for scenario ``name``."""
        self._send("scenario", name, SetScenario(name), f"scenario → {name}")

    def set_layout(self, name: str) -> None:
        """Ask for page layout preset ``name`` (the engine switches once the requests under way are done)."""
        self._send("layout", name, SetLayout(name), f"layout {name} asked for (after the requests under way)")

    def scenario(self) -> None:
        """The next scenario of :attr:`scenarios`."""
        if self.not_for_a_trace("scenario"):
            return
        current = self.knobs.get("scenario")
        i = self.scenarios.index(current) + 1 if current in self.scenarios else 0
        self.set_scenario(self.scenarios[i % len(self.scenarios)])

    def toggle_pause(self) -> None:
        """Pause the workload, or resume it."""
        if self.knobs.get("paused"):
            self._control("paused", False, lambda: self._controller().resume(), "workload resumed")
        else:
            self._control("paused", True, lambda: self._controller().pause(), "workload paused")

    def apply_settings(self, changed: dict | None) -> None:
        """The values typed in the settings dialog (``None``: cancelled)."""
        for key, value in (changed or {}).items():
            {"overlap": self.set_overlap, "rate": self.set_rate, "pool": self.set_pool}[key](value)
