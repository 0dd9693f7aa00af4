"""The workload knobs a user turns while a run goes on, each defined once: name, unit, range, default, step.

The command line (``--overlap`` …), the settings dialog, the monitor's keys, the engine's control handler
(:class:`kvtui.live.LiveSession`) and the docs' "Workload knobs" reference (:func:`markdown_table`) all read
these specs, so a range or a default cannot differ between them (``tests/unit/test_knobs.py`` checks the docs'
table against them).
Values are held in the engine's units (overlap as a fraction 0–1); :attr:`Knob.scale` converts to the unit
the user types and reads (overlap in %). The scenario list and the pool's upper bound come from
:mod:`workload.synthetic`, where the scenarios are implemented and a spec is validated.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

from workload.synthetic import MAX_POOL, SCENARIOS, WorkloadSpec

__all__ = ["Knob", "OVERLAP", "POOL", "RATE", "KNOBS", "SCENARIOS", "DEFAULT_SCENARIO", "SCENARIO_KEY",
           "RATE_STEPS", "next_rate", "TRACE_SPEEDS", "next_trace_speed", "trace_speed_text"]


def _num(x: float) -> str:
    """``x`` as the user reads it: ``1048576``, ``75``, ``0.5`` (whole numbers never in e-notation)."""
    return str(int(x)) if float(x).is_integer() and abs(x) < 1e15 else f"{x:g}"


@dataclass(frozen=True)
class Knob:
    """One numeric knob of a synthetic workload.

    ``name``: the ``workload.WorkloadSpec`` field and the ``frame.workload`` key; ``label``: what the UI
    calls it. ``low``/``high``/``default``/``step`` are in the engine's units; the user types and reads
    ``value · scale`` in ``unit``. ``step``: one key press; 0 when the knob steps along ``steps`` instead
    (the rate's ladder). ``integer``: whole numbers only. ``keys``: the monitor's down and up keys as shown
    in its help. ``zero_text``: how 0 reads when it has a meaning of its own (rate 0 = closed loop).
    """

    name: str
    label: str
    unit: str
    low: float
    high: float
    default: float
    step: float
    scale: float = 1.0
    integer: bool = False
    steps: tuple[float, ...] = ()
    keys: tuple[str, str] = ("", "")
    zero_text: str = ""
    metavar: str = "N"
    help: str = ""

    @property
    def flag(self) -> str:
        """The command-line flag, e.g. ``--overlap``."""
        return f"--{self.name}"

    def user(self, value: float) -> float:
        """``value`` (engine units) in the unit the user types (e.g. 0.75 → 75 for overlap)."""
        return value * self.scale

    def text(self, value: float) -> str:
        """``value`` (engine units) as the user reads it: ``60 %``, ``8``, ``20 req/s``, ``closed loop``."""
        if value == 0 and self.zero_text:
            return self.zero_text
        return _num(self.user(value)) + (f" {self.unit}" if self.unit else "")

    def span_text(self) -> str:
        """The range in the user's unit without the unit: ``0-100``, ``1-1048576``, ``≥ 0``."""
        low, high = self.user(self.low), self.user(self.high)
        return f"≥ {_num(low)}" if math.isinf(high) else f"{_num(low)}-{_num(high)}"

    def range_text(self) -> str:
        """The range in the user's unit, as error messages say it: ``within 0-100 %``, ``at least 0 req/s``."""
        unit = f" {self.unit}" if self.unit else ""
        low, high = self.user(self.low), self.user(self.high)
        return f"at least {_num(low)}{unit}" if math.isinf(high) else f"within {_num(low)}-{_num(high)}{unit}"

    def default_text(self) -> str:
        """The default in the user's unit, no unit: ``75``, ``8``, ``0``."""
        return _num(self.user(self.default))

    def step_text(self) -> str:
        """One key press in the user's unit: ``5 %``, ``1``, or the ladder (``0.5, 1, 2 … 1000 req/s``)."""
        if self.steps:
            ladder = ", ".join(_num(self.user(s)) for s in self.steps)
            return ladder + (f" {self.unit}" if self.unit else "")
        return self.text(self.step)

    def help_text(self) -> str:
        """The command-line help of :attr:`flag` (range and default in the user's unit; argparse needs ``%``
        doubled)."""
        return f"{self.help} ({self.range_text()}; default {self.default_text()})"

    def check(self, value: float) -> float:
        """``value`` (engine units) if it is a finite number in range (and whole when ``integer``): an
        ``int`` for an integer knob, else a ``float``. ``ValueError`` otherwise, one line in the user's unit
        that starts with :attr:`name` (e.g. ``overlap must be within 0-100 %, got 150``)."""
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
            raise ValueError(f"{self.name} must be a finite number, got {value!r}")
        if self.integer and value != int(value):
            raise ValueError(f"{self.name} must be a whole number, got {_num(self.user(value))}")
        if not (self.low <= value <= self.high):
            raise ValueError(f"{self.name} must be {self.range_text()}, got {_num(self.user(value))}")
        return int(value) if self.integer else float(value)

    def parse(self, text: str) -> float:
        """A value typed in the user's unit (``"75"`` → 0.75 for overlap), through :meth:`check`;
        ``ValueError`` (one line) if it is not a number or out of range."""
        try:
            raw = float(str(text).strip())
        except ValueError:
            raise ValueError(f"not a number: {text!r}") from None
        if not math.isfinite(raw):
            raise ValueError(f"must be a finite number, got {text}")
        value = raw / self.scale
        if self.scale != 1.0:
            value = round(value, 6)  # 61 % → 0.61, not 0.6100000000000001
        return self.check(value)

    def clamp(self, value: float) -> float:
        """``value`` (engine units) moved into range (for step keys at either end)."""
        v = min(self.high, max(self.low, value))
        return int(v) if self.integer else float(v)


RATE_STEPS: tuple[float, ...] = (0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000)
"""The rate knob's steps in req/s (``r`` / ``R`` in the monitor); 0 (closed loop) sits above the top step."""

_SPEC = WorkloadSpec()  # the workload's own defaults: each knob's default is that field's
OVERLAP = Knob("overlap", "prefix overlap", "%", 0.0, 1.0, _SPEC.overlap, 0.05, scale=100.0, keys=("[", "]"),
               metavar="PERCENT", help="share of each prompt that is a shared prefix, page-aligned")
POOL = Knob("pool", "pool size", "", 1, MAX_POOL, _SPEC.pool, 1, integer=True, keys=("<", ">"),
            help="system prompts / templates / conversations")
RATE = Knob("rate", "request rate", "req/s", 0.0, math.inf, _SPEC.rate, 0.0, steps=RATE_STEPS, keys=("r", "R"),
            zero_text="closed loop", metavar="REQ_PER_S",
            help="Poisson arrival rate in requests/s; 0 = closed loop, next request when a slot frees")
KNOBS: dict[str, Knob] = {k.name: k for k in (OVERLAP, POOL, RATE)}
DEFAULT_SCENARIO = SCENARIOS[0]
SCENARIO_KEY = "s"
"""The monitor's key for the next scenario of :data:`SCENARIOS` (wrapping around)."""


def markdown_table() -> str:
    """The Markdown table of the workload knobs (:data:`KNOBS` and the scenario) for the docs' reference."""
    rows = ["| knob | flag | unit | range | default | step | key in the monitor |", "|---|---|---|---|---|---|---|"]
    for k in KNOBS.values():
        keys = " ".join(f"`{key}`" for key in k.keys)
        rows.append(f"| {k.label} | `{k.flag}` | {k.unit or '—'} | {k.span_text()} | {k.default_text()} | "
                    f"{k.step_text()} | {keys} |")
    rows.append(f"| scenario | `--scenario` | — | {', '.join(SCENARIOS)} | {DEFAULT_SCENARIO} | the next one | "
                f"`{SCENARIO_KEY}` |")
    return "\n".join(rows)


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


TRACE_SPEEDS: tuple[float, ...] = (0.5, 1, 2, 4, 8, 16, 32, 64)
"""A trace replay's speeds (× trace time; ``-`` / ``+`` in the monitor); as fast as possible (None, "max") sits
above the top one."""


def next_trace_speed(current: float | None, up: bool) -> float | None:
    """The trace speed one step ``up`` or down along :data:`TRACE_SPEEDS` (None = as fast as possible, above
    ×64; a speed between two steps goes to the next one in that direction). At either end the result equals
    ``current`` (up at max, down at ×0.5)."""
    if current is None:
        return None if up else float(TRACE_SPEEDS[-1])
    if up:
        higher = [s for s in TRACE_SPEEDS if s > current + 1e-9]
        return float(higher[0]) if higher else None
    lower = [s for s in TRACE_SPEEDS if s < current - 1e-9]
    return float(lower[-1]) if lower else float(current)


def trace_speed_text(speed: float | None) -> str:
    """``×4``, ``×0.5``, ``max`` (as fast as possible)."""
    return "max" if speed is None else f"×{float(speed):g}"
