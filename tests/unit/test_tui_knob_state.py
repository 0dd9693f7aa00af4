"""The monitor's knob bookkeeping (kvtui.tui.knob_state), without Textual: which requests are sent, which frame
values are adopted, and what the header shows while a request is on its way."""

from __future__ import annotations

import subprocess
import sys

import pytest

from kvtui.core.knobs import WORKLOAD_KNOBS
from kvtui.tui.knob_state import ASKED_SHOWN_S, PENDING_MAX, KnobState, same, seen_in


class Sender:
    """A ``send`` callable that counts its calls and can be told to fail."""

    def __init__(self, fail: bool = False):
        self.calls, self.fail = 0, fail

    def __call__(self) -> None:
        self.calls += 1
        if self.fail:
            raise RuntimeError("engine gone")


def frame_with(state: KnobState, **workload) -> None:
    """Hand ``state`` a frame whose workload shows ``workload``."""
    state.adopt(seen_in({"kind": "synthetic", **workload}, {"paused": False}))


def test_the_module_does_not_load_textual():
    code = "import sys, kvtui.tui.knob_state; print('textual' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_same_compares_numbers_to_a_tolerance():
    assert same(0.1 + 0.2, 0.3) and same(0.05 * 11, 0.55) and same(5, 5.0)
    assert not same(0.3, 0.31) and not same(0.3, 0.3 + 1e-6)
    assert same(True, True) and not same(True, False) and not same(True, 1.0 + 1e-12)  # bools by ==
    assert same("few-shot", "few-shot") and not same("few-shot", "random") and same(None, None)


def test_seen_in_reads_the_knobs_of_a_frame():
    seen = seen_in({"overlap": 0.5, "pool": 4, "rate": 10.0, "scenario": "random", "prompt_tokens": 9},
                   {"paused": True, "mode": "live"})
    knobs = (*WORKLOAD_KNOBS, "layout", "paused")  # every workload knob of kvtui.core.knobs, and two more
    assert seen == {**dict.fromkeys(knobs), "overlap": 0.5, "pool": 4, "rate": 10.0, "scenario": "random",
                    "paused": True}
    assert seen_in(None, None) == dict.fromkeys(knobs)


def test_a_request_that_changes_nothing_does_not_send():
    state = KnobState()
    frame_with(state, rate=10.0)
    send = Sender()
    assert state.request("rate", 10.0, send, now=0.0) is False  # the knob has that value already
    assert send.calls == 0 and state.pending == {}
    assert state.request("rate", 20.0, send, now=1.0) is True
    assert send.calls == 1 and state.values["rate"] == 20.0 and state.pending["rate"] == [20.0]
    assert state.asked_at["rate"] == 1.0
    assert state.request("rate", 20.0 + 1e-12, send, now=2.0) is False and send.calls == 1


def test_a_request_the_controller_fails_is_not_recorded():
    state = KnobState()
    frame_with(state, pool=4)
    with pytest.raises(RuntimeError, match="engine gone"):
        state.request("pool", 5, Sender(fail=True), now=0.0)
    assert state.values["pool"] == 4 and not state.pending.get("pool") and "pool" not in state.asked_at


def test_an_echo_of_an_older_request_does_not_override_the_newer_one():
    """R R from 20 req/s asks for 50 then 100; the frame showing 50 leaves the knob at 100."""
    state = KnobState()
    frame_with(state, rate=20.0)
    for rps in (50.0, 100.0):
        state.request("rate", rps, Sender(), now=0.0)
    frame_with(state, rate=50.0)  # the first request arrives at the engine
    assert state.values["rate"] == 100.0 and state.pending["rate"] == [100.0]
    frame_with(state, rate=50.0)  # the same frame values again change nothing
    assert state.values["rate"] == 100.0
    frame_with(state, rate=100.0)  # the newest request arrives
    assert state.values["rate"] == 100.0 and state.pending["rate"] == []


def test_a_value_nobody_here_asked_for_is_adopted():
    state = KnobState()
    frame_with(state, overlap=0.5)
    assert state.values["overlap"] == 0.5  # the first frame
    state.request("overlap", 0.55, Sender(), now=0.0)
    frame_with(state, overlap=0.2)  # someone else (the CLI), or the engine refused ours
    assert state.values["overlap"] == 0.2 and state.pending["overlap"] == []
    frame_with(state, overlap=0.3)  # changed again, nothing pending
    assert state.values["overlap"] == 0.3


def test_pending_requests_are_bounded():
    state = KnobState()
    for n in range(1, 3 * PENDING_MAX):
        state.request("pool", n, Sender(), now=0.0)
    assert state.pending["pool"] == list(range(2 * PENDING_MAX, 3 * PENDING_MAX))


def test_the_header_shows_a_request_until_the_engine_does_or_for_asked_shown_s():
    state = KnobState()
    workload, status = {"kind": "synthetic", "rate": 10.0, "pool": 4}, {"paused": False, "mode": "live"}
    state.adopt(seen_in(workload, status))
    assert state.overlay(workload, status, now=0.0) is None  # nothing asked for: the frame as it is
    state.request("rate", 20.0, Sender(), now=100.0)
    state.request("paused", True, Sender(), now=100.0)
    shown_w, shown_st = state.overlay(workload, status, now=100.0 + ASKED_SHOWN_S / 2)
    assert shown_w == {**workload, "rate": 20.0} and shown_st == {**status, "paused": True}
    assert workload["rate"] == 10.0 and status["paused"] is False  # the frame's own dicts are left alone
    assert state.overlay(workload, status, now=100.0 + ASKED_SHOWN_S) is None  # refused: the engine's value
    state.request("pool", 5, Sender(), now=200.0)
    state.adopt(seen_in({**workload, "pool": 5}, status))  # the engine shows it: nothing left to overlay
    assert "pool" not in state.asked(now=200.0)


def test_a_trace_workload_shows_no_asked_knobs_but_the_pause():
    state = KnobState()
    workload = {"kind": "trace", "done": 1, "total": 9}
    state.values.update(rate=1.0, paused=False)
    state.request("rate", 2.0, Sender(), now=0.0)
    assert state.overlay(workload, {}, now=0.0)[0] is workload
    state.request("paused", True, Sender(), now=0.0)
    assert state.overlay(workload, {}, now=0.0) == (workload, {"paused": True})


def test_shown_s_is_per_state():
    state = KnobState(shown_s=0.0)
    state.request("rate", 5.0, Sender(), now=0.0)
    assert state.asked(now=0.0) == {} and state.pending["rate"] == [5.0]


def test_a_request_the_engine_refused_gives_way_to_the_engines_value():
    """``>`` past what the store kvtui sized holds: the engine refuses pool 48 and the frames keep showing 47;
    once the request is ``ASKED_SHOWN_S`` old the knob holds 47 again, so ``<`` asks for 46, not 47."""
    state = KnobState()
    state.adopt(seen_in({"kind": "synthetic", "pool": 47}, {}), now=0.0)
    state.request("pool", 48, Sender(), now=1.0)
    state.adopt(seen_in({"kind": "synthetic", "pool": 47}, {}), now=1.5)
    assert state.values["pool"] == 48  # (still on its way, as far as anyone can tell)
    state.adopt(seen_in({"kind": "synthetic", "pool": 47}, {}), now=1.0 + ASKED_SHOWN_S)
    assert state.values["pool"] == 47 and not state.pending["pool"]
    send = Sender()
    assert state.request("pool", state.values["pool"] - 1, send, now=5.0) and send.calls == 1
