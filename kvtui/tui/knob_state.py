"""The monitor's view of the workload knobs: the values asked for, and which of them the engine has shown yet.

Pure logic, no Textual: :class:`KvtuiApp` keeps one :class:`KnobState`, asks it before calling the controller
and hands it each frame's knob values.

- A request that changes nothing (the knob already has that value, e.g. a step key at either end of the
  range) is not sent: :meth:`KnobState.request` neither calls ``send`` nor records it, and the app logs
  nothing.
- The engine applies a change before its next request, so frames show a request a little later. Until then
  the header shows the requested value (:meth:`KnobState.overlay`), for at most ``ASKED_SHOWN_S``: a change
  the engine refused gives way to the engine's value.
- Values the engine echoes of older requests do not override a newer request: ``R R`` from 20 req/s asks
  for 50 then 100; the frame that shows 50 leaves the knob at 100, so the next ``R`` asks for 200, not 100
  again. A value nobody here asked for (changed by someone else, or refused) is adopted.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import cast

from kvtui.core.knobs import WORKLOAD_KNOBS
from kvtui.core.panels import FrameStatus, WorkloadPanel

__all__ = ["ASKED_SHOWN_S", "KNOBS", "PENDING_MAX", "TRACE_SPEED", "KnobState", "same", "seen_in"]

ASKED_SHOWN_S = 3.0  # the header shows a requested knob value this long (s) before the engine's value wins
PENDING_MAX = 8  # requests per knob remembered as on their way (only the last few can still be)
KNOBS = (*WORKLOAD_KNOBS, "layout")  # the knobs of frame.workload; "paused" is a status
TRACE_SPEED = "trace_speed"  # a trace's speed (frame.workload["speed"]), held as math.inf for as fast as possible


def same(a, b) -> bool:
    """Knob values equal: numbers to 1e-9 (overlap steps are sums of 0.05), anything else (booleans too) by ``==``."""
    if a == b:
        return True
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool) \
            and not isinstance(b, bool):
        return abs(float(a) - float(b)) < 1e-9
    return a == b


def seen_in(workload: Mapping | None, status: Mapping | None) -> dict:
    """The knob values a frame shows: every workload knob (:data:`kvtui.core.knobs.WORKLOAD_KNOBS`) and
    ``layout`` from ``frame.workload``, and ``"paused"`` from ``frame.status`` (None where the frame has none)."""
    w, st = workload or {}, status or {}
    seen = {k: w.get(k) for k in KNOBS}
    seen["paused"] = st.get("paused")
    if w.get("kind") == "trace" and "speed" in w:
        seen[TRACE_SPEED] = math.inf if w["speed"] is None else float(w["speed"])
    return seen


class KnobState:
    """The knobs as the monitor holds them. ``values``: knob → newest value (asked for here, or adopted from
    the frames); ``pending``: knob → values asked for that the frames have not shown yet (oldest first);
    ``asked_at``: knob → the time of its newest request (the ``now`` passed in, seconds, e.g.
    :func:`time.monotonic`); ``shown_s``: how long :meth:`overlay` shows a request."""

    def __init__(self, shown_s: float = ASKED_SHOWN_S) -> None:
        self.values: dict = {}
        self.pending: dict[str, list] = {}
        self.asked_at: dict[str, float] = {}
        self.shown_s = shown_s
        self._seen: dict = {}

    def unchanged(self, knob: str, value) -> bool:
        """Whether ``knob`` already has ``value`` (so asking for it would change nothing)."""
        return knob in self.values and same(self.values[knob], value)

    def request(self, knob: str, value, send: Callable[[], object], now: float) -> bool:
        """Ask for ``knob`` = ``value`` through ``send()``. Returns False without calling ``send`` when the
        knob already has that value; True once ``send`` returned, the value now held and pending. An
        exception from ``send`` propagates and nothing is recorded (the knob keeps its value)."""
        if self.unchanged(knob, value):
            return False
        send()
        self.values[knob] = value
        pending = self.pending.setdefault(knob, [])
        pending.append(value)
        del pending[:-PENDING_MAX]
        self.asked_at[knob] = now
        return True

    def adopt(self, seen: Mapping, now: float | None = None) -> None:
        """Take the knob values a frame shows (:func:`seen_in`) where the engine changed them, so key
        presses between frames add up. A change that only shows one of our own earlier requests while a newer
        one is still on its way is not taken: the knob keeps the newest request. With ``now`` (the clock of
        :meth:`request`), a request the frames still do not show ``shown_s`` after it was asked for gives way
        to the engine's value (the engine refused it, e.g. a pool the store kvtui sized cannot hold), so the
        next key press steps from what runs."""
        if now is not None:
            for k, asked in self.pending.items():
                v = seen.get(k)
                if asked and v is not None and now - self.asked_at.get(k, now) >= self.shown_s \
                        and not same(v, self.values.get(k)):
                    self.values[k] = v
                    asked.clear()
        for k, v in seen.items():
            pending = self.pending.get(k)
            if v is not None and pending and same(v, self.values.get(k)):
                pending.clear()  # the engine shows the newest request
            elif v is not None and v != self._seen.get(k):
                echoed = next((i for i, p in enumerate(pending or ()) if same(p, v)), None)
                if echoed is None:  # changed by someone else (or refused): the engine's value wins
                    self.values[k] = v
                    if pending:
                        pending.clear()
                else:  # an earlier request of ours arriving: keep the newer one the knob already holds
                    assert pending is not None  # (echoed: found in it)
                    del pending[:echoed + 1]
        self._seen = dict(seen)

    def asked(self, now: float) -> dict:
        """Knob → requested value for every request the frames have not shown yet and asked for less than
        ``shown_s`` before ``now``."""
        return {k: self.values[k] for k, pending in self.pending.items()
                if pending and k in self.values and now - self.asked_at.get(k, 0.0) < self.shown_s}

    def overlay(self, workload: WorkloadPanel, status: FrameStatus,
                now: float) -> tuple[WorkloadPanel, FrameStatus] | None:
        """``(workload, status)`` of a frame with the values :meth:`asked` put in (``paused`` into the status;
        the other knobs into the workload only when it is ``synthetic``, the one kind with knobs), or None
        when nothing is asked for (the frame shows the knobs as they are)."""
        asked = self.asked(now)
        if not asked:
            return None
        paused = {"paused": asked.pop("paused")} if "paused" in asked else {}
        speed = asked.pop(TRACE_SPEED, None)
        if speed is not None and workload and workload.get("kind") == "trace":
            workload = {**workload, "speed": None if math.isinf(speed) else speed}
        if asked and workload and workload.get("kind") == "synthetic":
            workload = cast(WorkloadPanel, {**workload, **asked})  # (asked: knobs of the synthetic workload)
        return workload, cast(FrameStatus, {**(status or {}), **paused})
