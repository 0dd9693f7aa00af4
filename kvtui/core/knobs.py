"""The workload knobs a user turns while a run goes on, each defined once: name, unit, range, default, step,
keys, help.

Everything that offers a knob is generated from this table: the command line (``--overlap`` …), the monitor's
keys, its help, key bar, settings dialog, command palette and header, the typed control
(:class:`kvtui.core.controls.SetKnob`) and its checks in the live session, and the docs' "Workload knobs"
reference (:func:`markdown_table`; ``tests/unit/test_knobs.py`` checks the docs' table against it). Adding a
knob is a :class:`Knob` in :data:`KNOBS` and the ``workload.WorkloadSpec`` field of the same name.

Values are held in the engine's units (overlap as a fraction 0–1); :attr:`Knob.scale` converts to the unit
the user types and reads (overlap in %). The scenario (:data:`SCENARIO`) is a :class:`Choice`, a knob of
names. The scenario list and the pool's upper bound come from :mod:`workload.synthetic`, where the scenarios
are implemented and a spec is validated.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

from workload.synthetic import MAX_POOL, SCENARIOS, WorkloadSpec

__all__ = ["Knob", "Choice", "OVERLAP", "POOL", "RATE", "KNOBS", "SCENARIO", "SCENARIOS", "DEFAULT_SCENARIO",
           "WORKLOAD_KNOBS", "knob_named", "check_knob", "RATE_STEPS", "TRACE_SPEEDS", "next_trace_speed",
           "trace_speed_text"]


def _num(x: float) -> str:
    """``x`` as the user reads it: ``1048576``, ``75``, ``0.5`` (whole numbers never in e-notation)."""
    return str(int(x)) if float(x).is_integer() and abs(x) < 1e15 else f"{x:g}"


@dataclass(frozen=True)
class Knob:
    """One numeric knob of a synthetic workload.

    ``name``: the ``workload.WorkloadSpec`` field and the ``frame.workload`` key; ``label``: what the UI
    calls it. ``low``/``high``/``default``/``step`` are in the engine's units; the user types and reads
    ``value · scale`` in ``unit``. ``step``: one key press; 0 when the knob steps along ``steps`` instead
    (a ladder: the rate's). ``integer``: whole numbers only. ``keys``: the monitor's down and up keys as shown
    (one character each); ``more_keys``: further characters for down and up (``"+="``: ``+`` and ``=``).
    ``zero_text``: how 0 reads when it has a meaning of its own (rate 0 = closed loop), and ``zero_help``
    what it does; on a ladder, 0 then sits above the top step, and stepping down from it goes to the
    highest step not above the value measured in ``frame.rates[measured]``. ``chip``: the header's label,
    long and short (None: ``name``; ``""``: none, the unit says it). ``scenario_notes``: ``(scenario, header
    prefix, what the knob means there)`` where it means something narrower than ``help`` says.
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
    more_keys: tuple[str, str] = ("", "")
    zero_text: str = ""
    zero_help: str = ""
    measured: str = ""
    chip: tuple[str, str] | None = None
    scenario_notes: tuple[tuple[str, str, str], ...] = ()
    metavar: str = "N"
    help: str = ""

    @property
    def flag(self) -> str:
        """The command-line flag, e.g. ``--overlap`` (``--length-spread`` for ``length_spread``)."""
        return "--" + self.name.replace("_", "-")

    def user(self, value: float) -> float:
        """``value`` (engine units) in the unit the user types (e.g. 0.75 → 75 for overlap)."""
        return value * self.scale

    def text(self, value: float) -> str:
        """``value`` (engine units) as the user reads it: ``60 %``, ``8``, ``20 req/s``, ``closed loop``."""
        if value == 0 and self.zero_text:
            return self.zero_text
        return _num(self.user(value)) + (f" {self.unit}" if self.unit else "")

    def change_text(self, value: float) -> str:
        """The event-log line of a change to ``value``: ``overlap → 60 %``."""
        return f"{self.name} → {self.text(value)}"

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
        """The command-line help of :attr:`flag` (what it means in a scenario where that is narrower; range
        and default in the user's unit)."""
        notes = "".join(f"; in {scenario}: {means}" for scenario, _, means in self.scenario_notes)
        return f"{self.help}{notes} ({self.range_text()}; default {self.default_text()})"

    def key_help(self, up: bool) -> str:
        """What the monitor's help says of the ``up`` (or down) key: ``prefix overlap +5 %``, ``request rate
        down a step (from closed loop: the highest step not above the measured rate)``."""
        if not self.steps:
            return f"{self.label} {'+' if up else '−'}{self.step_text()}"
        text = f"{self.label} {'up' if up else 'down'} a step"
        if not up and self.zero_text and self.measured:
            text += f" (from {self.zero_text}: the highest step not above the measured {self.name})"
        return text

    def key_chars(self, up: bool) -> tuple[str, ...]:
        """Every character that steps the knob ``up`` (or down): the shown key, then :attr:`more_keys`."""
        i = int(up)
        return (self.keys[i], *self.more_keys[i]) if self.keys[i] else ()

    def keys_text(self) -> str:
        """The keys as the docs list them: ``` `[` `]` ``` (and ``` (or `-` `+` `=`) ``` for further keys)."""
        shown = " ".join(f"`{k}`" for k in self.keys if k)
        more = " ".join(f"`{k}`" for k in (*self.more_keys[0], *self.more_keys[1]))
        return f"{shown} (or {more})" if more else shown

    def chip_label(self, scenario: str | None, short: bool) -> str:
        """The header's label of the knob in ``scenario``: ``overlap``, ``ovl``, ``1st-turn overlap``, or
        ``""`` (the value says it: ``20 req/s``)."""
        label = (self.name, self.name) if self.chip is None else self.chip
        text = label[1 if short else 0]
        prefix = next((p for s, p, _ in self.scenario_notes if s == scenario), "")
        return f"{prefix} {text}" if prefix and text else text

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

    def snap(self, value: float) -> float:
        """What the monitor asks for when ``value`` is typed or stepped to: :meth:`clamp` ed, and in whole
        units of the user's when a key step is a whole number of them (overlap in whole percent)."""
        value = self.clamp(value)
        if self.step and not self.integer and self.user(self.step).is_integer():
            value = self.clamp(round(self.user(value)) / self.scale)
        return value

    def stepped(self, current: float, up: bool, measured: float = 0.0) -> float:
        """The value one key press ``up`` (or down) asks for from ``current``, through :meth:`snap`: onto the
        step's grid (a typed 61 % steps to 65 %), or along the ladder :attr:`steps`. A ladder's 0 (when it
        has a :attr:`zero_text`) sits above its top step, and down from 0 goes to the highest step not above
        ``measured`` (the lowest step while nothing was measured), so the open loop starts near the rate the
        closed loop reached. At either end the result equals ``current``."""
        if not self.steps:
            return self.snap(round(current / self.step + (1 if up else -1)) * self.step)
        ladder = self.steps
        if current <= 0 and self.zero_text:
            if up:
                return self.clamp(0.0)
            below = [s for s in ladder if s <= measured]
            return self.clamp(below[-1] if below else ladder[0])
        if up:
            higher = [s for s in ladder if s > current + 1e-9]
            return self.clamp(higher[0] if higher else (0.0 if self.zero_text else current))
        lower = [s for s in ladder if s < current - 1e-9]
        return self.clamp(lower[-1] if lower else ladder[0])

    def end_text(self, current: float, up: bool) -> str:
        """Why a key press ``up`` (or down) on a ladder changes nothing at ``current`` (a ladder's ends are not
        visible on the knob): ``rate is already closed loop (the next request as soon as one finishes)``,
        ``rate is already at its lowest step (0.5 req/s)``."""
        if current == 0 and self.zero_text:
            return f"{self.name} is already {self.zero_text}" + (f" ({self.zero_help})" if self.zero_help else "")
        return f"{self.name} is already at its {'highest' if up else 'lowest'} step ({self.text(current)})"


@dataclass(frozen=True)
class Choice:
    """A knob that takes one of ``choices`` by name (the scenario). ``key``: the monitor's key for the next
    one (wrapping around)."""

    name: str
    label: str
    choices: tuple[str, ...]
    default: str
    key: str
    help: str = ""

    @property
    def flag(self) -> str:
        """The command-line flag, e.g. ``--scenario``."""
        return "--" + self.name.replace("_", "-")

    def check(self, value: object) -> str:
        """``value`` if it is one of :attr:`choices`; ``ValueError`` (one line) otherwise."""
        if not isinstance(value, str) or value not in self.choices:
            raise ValueError(f"unknown {self.name} {value!r} (choose from {', '.join(self.choices)})")
        return value

    def text(self, value: object) -> str:
        """``value`` as the user reads it (its name)."""
        return str(value)

    def change_text(self, value: object) -> str:
        """The event-log line of a change to ``value``: ``scenario → few-shot``."""
        return f"{self.name} → {self.text(value)}"

    def next(self, current: object, order: tuple[str, ...] | None = None) -> str:
        """The choice after ``current`` in ``order`` (default :attr:`choices`), wrapping around; the first
        when ``current`` is not in it."""
        order = order or self.choices
        i = order.index(current) + 1 if isinstance(current, str) and current in order else 0
        return order[i % len(order)]


RATE_STEPS: tuple[float, ...] = (0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000)
"""The rate knob's steps in req/s (``r`` / ``R`` in the monitor); 0 (closed loop) sits above the top step."""

_SPEC = WorkloadSpec()  # the workload's own defaults: each knob's default is that field's
OVERLAP = Knob("overlap", "prefix overlap", "%", 0.0, 1.0, _SPEC.overlap, 0.05, scale=100.0, keys=("[", "]"),
               more_keys=("-", "+="), chip=("overlap", "ovl"), metavar="PERCENT",
               scenario_notes=(("multi-turn", "1st-turn",
                                "the shared part of a conversation's first turn only; every later turn shares the "
                                "whole previous turn, so hits exceed it"),),
               help="share of each prompt that is a shared prefix, page-aligned")
POOL = Knob("pool", "pool size", "", 1, MAX_POOL, _SPEC.pool, 1, integer=True, keys=("<", ">"), more_keys=(",", "."),
            help="system prompts / templates / conversations")
RATE = Knob("rate", "request rate", "req/s", 0.0, math.inf, _SPEC.rate, 0.0, steps=RATE_STEPS, keys=("r", "R"),
            zero_text="closed loop", zero_help="the next request as soon as one finishes", measured="rps",
            chip=("", ""), metavar="REQ_PER_S",
            help="Poisson arrival rate in requests/s; 0 = closed loop, next request when a slot frees")
KNOBS: dict[str, Knob] = {k.name: k for k in (OVERLAP, POOL, RATE)}
"""The numeric knobs, in the order every view lists them."""
SCENARIO = Choice("scenario", "scenario", SCENARIOS, SCENARIOS[0], "s", help="synthetic scenario")
DEFAULT_SCENARIO = SCENARIO.default
WORKLOAD_KNOBS: dict[str, Knob | Choice] = {SCENARIO.name: SCENARIO, **KNOBS}
"""Every knob a :class:`kvtui.core.controls.SetKnob` may set, by name."""


def knob_named(name: str) -> Knob | Choice:
    """The knob called ``name``; ``ValueError`` (one line) for an unknown one."""
    try:
        return WORKLOAD_KNOBS[name]
    except KeyError:
        raise ValueError(f"unknown knob {name!r} (knobs: {', '.join(WORKLOAD_KNOBS)})") from None


def check_knob(name: str, value: object) -> float | str:
    """``value`` for knob ``name`` checked against its spec (:meth:`Knob.check`, :meth:`Choice.check`); a
    fraction rounded to 9 decimals (0.6, not the 0.6000000000000001 of twelve 0.05 steps). ``ValueError`` (one
    line) when out of range or the knob is unknown."""
    knob = knob_named(name)
    if isinstance(knob, Choice):
        return knob.check(value)
    checked = knob.check(value)  # type: ignore[arg-type]
    return checked if knob.integer else round(checked, 9)


def markdown_table() -> str:
    """The Markdown table of the workload knobs (:data:`KNOBS` and the scenario) for the docs' reference."""
    rows = ["| knob | flag | unit | range | default | step | key in the monitor |", "|---|---|---|---|---|---|---|"]
    for k in KNOBS.values():
        rows.append(f"| {k.label} | `{k.flag}` | {k.unit or '—'} | {k.span_text()} | {k.default_text()} | "
                    f"{k.step_text()} | {k.keys_text()} |")
    rows.append(f"| {SCENARIO.label} | `{SCENARIO.flag}` | — | {', '.join(SCENARIO.choices)} | {SCENARIO.default} "
                f"| the next one | `{SCENARIO.key}` |")
    return "\n".join(rows)


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
