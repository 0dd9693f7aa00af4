"""The workload knobs a user turns while a run goes on, each defined once: name, unit, range, default, step.

The command line (``--overlap`` …), the settings dialog, the monitor's keys, the engine's control handler and
the README's knob table all read these specs, so a range or a default cannot differ between them. Values are
held in the engine's units (overlap as a fraction 0–1); :attr:`Knob.scale` converts to the unit the user
types (overlap in %). The scenario list and the pool's upper bound come from :mod:`workload.synthetic`,
where the scenarios are implemented.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from workload.synthetic import MAX_POOL, SCENARIOS

__all__ = ["Knob", "OVERLAP", "POOL", "RATE", "KNOBS", "SCENARIOS", "DEFAULT_SCENARIO", "RATE_STEPS", "next_rate"]


@dataclass(frozen=True)
class Knob:
    """One numeric knob. ``low``/``high``/``default``/``step`` are in the engine's units; the user types and
    reads ``value · scale`` in ``unit``. ``integer``: whole numbers only. ``flag``: the command-line flag."""

    name: str
    label: str
    unit: str
    low: float
    high: float
    default: float
    step: float
    scale: float = 1.0
    integer: bool = False
    help: str = ""

    @property
    def flag(self) -> str:
        """The command-line flag, e.g. ``--overlap``."""
        return f"--{self.name}"

    def user(self, value: float) -> float:
        """``value`` (engine units) in the unit the user types (e.g. 0.75 → 75 for overlap)."""
        return value * self.scale

    def range_text(self) -> str:
        """``0-100 %``, ``at least 1`` …: the range in the user's unit."""
        unit = f" {self.unit}" if self.unit else ""
        low, high = self.user(self.low), self.user(self.high)
        return f"at least {low:g}{unit}" if math.isinf(high) else f"within {low:g}-{high:g}{unit}"

    def check(self, value: float) -> float:
        """``value`` (engine units) if it is a finite number in range (and whole when ``integer``);
        ``ValueError`` with a one-line message in the user's unit otherwise (e.g. ``overlap must be within
        0-100 %, got 150``)."""
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise ValueError(f"{self.name} must be a finite number, got {value!r}")
        if self.integer and value != int(value):
            raise ValueError(f"{self.name} must be a whole number, got {self.user(value):g}")
        if not (self.low <= value <= self.high):
            raise ValueError(f"{self.name} must be {self.range_text()}, got {self.user(value):g}")
        return int(value) if self.integer else float(value)

    def parse(self, text: str) -> float:
        """A value typed in the user's unit (``"75"`` → 0.75 for overlap); ``ValueError`` (one line) if it
        is not a number or out of range."""
        try:
            raw = float(str(text).strip())
        except ValueError:
            raise ValueError(f"not a number: {text!r}") from None
        if not math.isfinite(raw):
            raise ValueError(f"must be a finite number, got {text}")
        value = raw / self.scale
        if self.scale != 1.0:
            value = round(value, 6)
        return self.check(value)

    def clamp(self, value: float) -> float:
        """``value`` moved into range (for step keys at either end)."""
        v = min(self.high, max(self.low, value))
        return int(v) if self.integer else float(v)


OVERLAP = Knob("overlap", "prefix overlap", "%", 0.0, 1.0, 0.75, 0.05, scale=100.0,
               help="share of each prompt that is a shared prefix (page-aligned)")
POOL = Knob("pool", "pool size", "", 1, MAX_POOL, 8, 1, integer=True,
            help="system prompts / templates / conversations")
RATE = Knob("rate", "request rate", "req/s", 0.0, math.inf, 0.0, 0.0,
            help="Poisson arrival rate; 0 = closed loop, next request when a slot frees")
KNOBS: dict[str, Knob] = {k.name: k for k in (OVERLAP, POOL, RATE)}
DEFAULT_SCENARIO = SCENARIOS[0]

RATE_STEPS: tuple[float, ...] = (0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000)
"""The rate knob's steps in req/s (``r`` / ``R`` in the monitor); 0 (closed loop) sits above the top step."""


def next_rate(current: float, up: bool, measured: float = 0.0) -> float:
    """The rate knob one step ``up`` or down (req/s). 0 (closed loop) sits above the top step; stepping down
    from it goes to the highest step not above the ``measured`` request rate (the lowest step, 0.5 req/s,
    while nothing has been measured yet), so the open loop starts near the rate the closed loop reached. At
    either end the result equals ``current`` (up in closed loop, down at 0.5 req/s)."""
    if current <= 0:
        if up:
            return 0.0
        below = [s for s in RATE_STEPS if s <= measured]
        return float(below[-1] if below else RATE_STEPS[0])
    if up:
        higher = [s for s in RATE_STEPS if s > current + 1e-9]
        return float(higher[0]) if higher else 0.0
    lower = [s for s in RATE_STEPS if s < current - 1e-9]
    return float(lower[-1] if lower else RATE_STEPS[0])
