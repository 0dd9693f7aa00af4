"""Each workload knob is defined once (kvtui/core/knobs.py): its checks, the command line built from it,
the workload's own defaults, and the docs' knob table all agree with it."""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import pytest

from kvtui.config.workload import add_workload_arguments, workload_from_args
from kvtui.core.errors import KvtuiError
from kvtui.core.knobs import DEFAULT_SCENARIO, KNOBS, OVERLAP, POOL, RATE, SCENARIO, SCENARIOS, check_knob
from kvtui.core.layout import PRESETS
from workload import WorkloadSpec

REFERENCE = Path(__file__).resolve().parents[2] / "docs" / "reference" / "knobs.md"


def _readme_knob_table() -> dict[str, list[str]]:
    """The rows of the docs' knob table (its header starts with ``| knob | flag |``), by first cell."""
    lines = REFERENCE.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.replace(" ", "").startswith("|knob|flag|"))
    header = [c.strip() for c in lines[start].strip().strip("|").split("|")]
    assert header == ["knob", "flag", "unit", "range", "default", "step", "key in the monitor"]
    rows = {}
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        rows[cells[0]] = cells
    return rows


def test_readme_knob_table_agrees_with_the_knob_specs():
    rows = _readme_knob_table()
    for knob in KNOBS.values():
        assert rows[knob.label] == [knob.label, f"`{knob.flag}`", knob.unit or "—", knob.span_text(),
                                    knob.default_text(), knob.step_text(), knob.keys_text()]
    scenario = rows["scenario"]
    assert scenario[1] == "`--scenario`" and scenario[3] == ", ".join(SCENARIOS)
    assert scenario[4] == DEFAULT_SCENARIO and scenario[6] == f"`{SCENARIO.key}`"
    assert set(rows) == {k.label for k in KNOBS.values()} | {"scenario"}


def test_workload_spec_defaults_are_the_knob_defaults():
    """workload/ imports nothing of kvtui, so its dataclass defaults are a second copy: keep them equal."""
    spec = WorkloadSpec()
    assert (spec.scenario, spec.overlap, spec.pool, spec.rate) == (DEFAULT_SCENARIO, OVERLAP.default, POOL.default,
                                                                   RATE.default)


def test_command_line_defaults_help_and_checks_come_from_the_knobs():
    p = argparse.ArgumentParser()
    add_workload_arguments(p)
    args = p.parse_args([])
    assert (args.scenario, args.overlap, args.pool, args.rate) == (DEFAULT_SCENARIO, 75.0, 8, 0.0)
    assert {a.dest: a.choices for a in p._actions}["scenario"] == SCENARIOS
    text = p.format_help()
    for knob in KNOBS.values():
        assert knob.range_text() in " ".join(text.split())
    layout = PRESETS["tiny"]
    plan = workload_from_args(p.parse_args(["--overlap", "40", "--pool", "3", "--rate", "5"]), layout)
    spec = plan.build().spec
    assert (spec.overlap, spec.pool, spec.rate) == (0.4, 3, 5.0) and plan.description["overlap"] == 0.4
    for argv, message in ((["--overlap", "120"], "--overlap must be within 0-100 %, got 120"),
                          (["--pool", "0"], "--pool must be within 1-1048576, got 0"),
                          (["--rate", "-2"], "--rate must be at least 0 req/s, got -2")):
        with pytest.raises(KvtuiError, match=message):
            workload_from_args(p.parse_args(argv), layout)


@pytest.mark.parametrize("knob,value,ok", [
    (OVERLAP, 0.0, 0.0), (OVERLAP, 1, 1.0), (OVERLAP, 1.0001, None), (OVERLAP, -0.01, None),
    (OVERLAP, math.nan, None), (OVERLAP, True, None), (OVERLAP, "0.5", None),
    (POOL, 1, 1), (POOL, 3.0, 3), (POOL, 2.5, None), (POOL, 0, None), (POOL, POOL.high + 1, None),
    (RATE, 0, 0.0), (RATE, 1e6, 1e6), (RATE, -0.1, None), (RATE, math.inf, None),
])
def test_check_accepts_the_range_and_refuses_the_rest(knob, value, ok):
    if ok is None:
        with pytest.raises(ValueError, match=f"^{knob.name} must be"):
            knob.check(value)
    else:
        got = knob.check(value)
        assert got == ok and type(got) is (int if knob.integer else float)


def test_parse_reads_the_users_unit():
    assert OVERLAP.parse("61") == 0.61 and OVERLAP.parse(" 100 ") == 1.0 and POOL.parse("12") == 12
    assert RATE.parse("0") == 0.0
    for knob, text, message in ((OVERLAP, "150", "overlap must be within 0-100 %, got 150"),
                                (RATE, "-5", "rate must be at least 0 req/s, got -5"),
                                (POOL, "2.5", "pool must be a whole number, got 2.5"),
                                (POOL, "abc", "not a number: 'abc'"), (RATE, "inf", "must be a finite number")):
        with pytest.raises(ValueError, match=message):
            knob.parse(text)


def test_text_and_clamp():
    assert OVERLAP.text(0.6) == "60 %" and POOL.text(8) == "8" and RATE.text(20) == "20 req/s"
    assert RATE.text(0) == "closed loop" and OVERLAP.text(0) == "0 %"
    assert OVERLAP.clamp(1.2) == 1.0 and POOL.clamp(0) == 1 and RATE.clamp(-1) == 0.0
    assert POOL.range_text() == "within 1-1048576"  # whole numbers are never written as 1.04858e+06


def test_the_monitor_keys_in_the_table_are_the_live_monitors_bindings():
    from textual.binding import Binding
    from textual.keys import format_key

    from kvtui.tui.bindings import MODES, action_of

    def bound(name: str, *params) -> set[str]:
        """The characters of the live bindings of ``name(*params)``."""
        return {format_key(one.key) for b in MODES["live"] if action_of(b) == (name, params)
                for one in Binding.make_bindings([b])}

    for knob in KNOBS.values():
        for up in (False, True):
            assert bound("knob", knob.name, 1 if up else -1) == set(knob.key_chars(up)), (knob.name, up)
    assert bound("scenario") == {SCENARIO.key}


def test_a_knob_control_is_checked_against_its_entry():
    assert check_knob("overlap", 0.05 * 12) == 0.6 and check_knob("pool", 3.0) == 3 and check_knob("rate", 0) == 0.0
    assert check_knob("scenario", "few-shot") == "few-shot"
    for name, value, message in (("overlap", 1.5, "overlap must be within 0-100 %, got 150"),
                                 ("scenario", "chat", "unknown scenario 'chat'"), ("speed", 1, "unknown knob 'speed'")):
        with pytest.raises(ValueError, match=message):
            check_knob(name, value)


def test_multi_turn_says_which_turns_the_overlap_is_of():
    """In multi-turn the overlap sets a conversation's first turn only (later turns share the whole previous turn):
    the header and the flag's help say so (issue 43)."""
    assert OVERLAP.chip_label("multi-turn", False) == "1st-turn overlap"
    assert OVERLAP.chip_label("few-shot", False) == "overlap" and OVERLAP.chip_label("few-shot", True) == "ovl"
    assert "in multi-turn: the shared part of a conversation's first turn only" in OVERLAP.help_text()
