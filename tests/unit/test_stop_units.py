"""Stopping without a store: the driver abandons a run at once (stop, duration), the duration counts from
the moment given (the command's start), a teardown holds a second Ctrl-C / SIGTERM back until it ends, and the
engine's stop takes the chain lock even from a send stuck on a worker (never going on without it)."""

from __future__ import annotations

import signal
import threading
import time

import numpy as np
import pytest
from waits import wait_for

from kvtui.engine.driver import Driver
from kvtui.runtime.procs import uninterrupted
from kvtui.testing.fake_engine import FakeEngine
from workload import Request


def _requests():
    i = 0
    while True:
        yield Request(req_id=i, tokens=np.arange(8, dtype=np.uint32), arrival_s=None, cacheable_tokens=8, scenario="t")
        i += 1


def test_stop_abandons_the_requests_under_way_at_once():
    engine = FakeEngine(answer=False)  # requests under way for ever (big reloads and publishes)
    d = Driver(engine, _requests(), lambda r: None).start()
    wait_for(lambda: d.issued >= 9, 5, "9 requests submitted", interval_s=0.01)  # concurrency 1 + LOOKAHEAD 8
    assert d.issued == 9
    t0 = time.monotonic()
    d.stop()
    assert d.done.wait(1.0), "stop waited for the requests under way"
    assert time.monotonic() - t0 < 0.5
    assert d.abandoned == 9 and d.completed == 0 and d.error is None
    assert engine.holds[-1] is True and engine.drains == 1  # decode told to drop its queue: a drain while held


def test_duration_counts_from_the_moment_given_and_abandons():
    engine = FakeEngine(answer=False)  # requests under way for ever (big reloads and publishes)
    started = time.monotonic() - 0.8  # e.g. the command started 0.8 s before the driver
    d = Driver(engine, _requests(), lambda r: None, duration_s=1.0, duration_from=started)
    t0 = time.monotonic()
    d.start()
    assert d.done.wait(2.0)
    took = time.monotonic() - t0
    assert 0.1 <= took < 0.6, took  # 1.0 s from ``started``, not from the driver's start
    assert d.abandoned == d.issued > 0 and engine.holds[-1] is True


def test_drained_end_still_waits_for_every_request():
    """max_requests ends with a drain: the requests submitted finish (here: never, so done stays unset)."""
    engine = FakeEngine(answer=False)  # requests under way for ever (big reloads and publishes)
    d = Driver(engine, _requests(), lambda r: None, max_requests=3).start()
    assert not d.done.wait(0.5)
    assert engine.drains == 1 and engine.holds == []
    d.stop()
    assert d.done.wait(1.0) and d.abandoned == 3


def test_uninterrupted_holds_a_signal_back_until_the_block_ends():
    with pytest.raises(KeyboardInterrupt):
        with uninterrupted() as held:
            signal.raise_signal(signal.SIGINT)
            time.sleep(0.01)  # (the thing under test: a moment in which nothing is raised inside the block)
            assert held == [signal.SIGINT]
            reached = True
    assert reached
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_uninterrupted_does_not_stack_a_held_signal_on_an_exception():
    with pytest.raises(ValueError):
        with uninterrupted():
            signal.raise_signal(signal.SIGINT)
            raise ValueError("teardown failed")
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


@pytest.mark.parametrize("where", ["open_session", "plan_from_args"])
def test_ctrl_c_during_start_up_still_writes_the_json(tmp_path, monkeypatch, capsys, where):
    """Ctrl-C while the store and workers start (or while the plan is made) wrote no --json: it now says the run
    was interrupted during start-up, with no figures and what the plan knew (exit 130 as any interrupt)."""
    import json

    import kvtui.commands.run as run_command
    from kvtui.cli import main

    def interrupt(*_a, **_k):
        raise KeyboardInterrupt

    monkeypatch.setattr(run_command, where, interrupt)
    out = tmp_path / "run.json"
    assert main(["run", "--layout", "tiny", "--requests", "5", "--overlap", "40", "--json", str(out)]) == 130
    err = capsys.readouterr().err
    assert f"interrupted during start-up, before any request: {out} says so" in err and "Traceback" not in err
    summary = json.loads(out.read_text())
    assert summary["interrupted"] is True and summary["interrupted_during"] == "start-up"
    assert summary["requests"] == 0 and summary["pages_total"] == 0
    if where == "open_session":  # the plan was made: it says what the run would have been
        assert summary["workload"]["overlap"] == 0.4 and summary["context"]["max_requests"] == 5
    else:
        assert "workload" not in summary


class _StuckHandle:
    """A worker handle whose pipe is full: the thread that holds the chain lock in a send to it is freed only
    when the worker dies (``kill``); what the stop does to it is noted in ``steps``."""

    remote = False

    def __init__(self, steps: list[str]) -> None:
        self.name, self.steps, self.killed = "decode", steps, threading.Event()

    def kill(self) -> None:
        self.steps.append("kill")
        self.killed.set()

    def ask_stop(self) -> None:
        self.steps.append("ask_stop")

    def finish_stop(self, timeout_s: float = 0.0) -> None:
        self.steps.append("finish_stop")

    def exit_code(self, wait_s: float = 1.0) -> int:
        return -9


def test_engine_stop_frees_a_send_stuck_on_a_worker_and_never_goes_on_without_the_chain_lock():
    from kvtui.core.layout import PRESETS
    from kvtui.engine.engine import EMBEDDED_STOP_GRACE_S, Engine, EngineOptions
    from kvtui.mooncake.client import ClusterEndpoints

    engine = Engine(EngineOptions(layout=PRESETS["tiny"]),
                    ClusterEndpoints("127.0.0.1:1", "http://127.0.0.1:1/metadata", None, embedded=True))
    steps: list[str] = []
    handle = _StuckHandle(steps)
    engine.decodes = [handle]
    locked = threading.Event()

    def feeder() -> None:  # a submit whose send blocks until the worker is gone
        with engine._chain_lock:
            locked.set()
            handle.killed.wait()
            steps.append("send failed")

    t = threading.Thread(target=feeder, daemon=True)
    t.start()
    locked.wait()
    t0 = time.monotonic()
    engine.stop()
    took = time.monotonic() - t0
    t.join(5)
    assert steps == ["kill", "send failed", "ask_stop", "finish_stop"]  # the chain changed only under the lock
    assert EMBEDDED_STOP_GRACE_S <= took < EMBEDDED_STOP_GRACE_S + 1.0
    assert engine.decodes == [] and engine.prefills == []


def test_spawn_holds_sigterm_back_in_kvtui_and_not_in_the_child(tmp_path, monkeypatch):
    """A SIGTERM that came while ``spawn`` forked ran kvtui's handler inside the fork's at-fork hooks, where its
    exception is only printed ("Exception ignored"): the SIGTERM was lost and the run went on. ``spawn`` holds it
    back (with the terminal's signals) until the child has started; the child gets SIGTERM unblocked (the
    metadata server and the store node are stopped by it) and the terminal's signals still blocked."""
    import json
    import subprocess
    import sys

    from kvtui.runtime.procs import TERMINAL_SIGNALS, spawn

    blocked_in_popen = []
    real_popen = subprocess.Popen

    def popen(*args, **kwargs):
        blocked_in_popen.append(signal.pthread_sigmask(signal.SIG_BLOCK, []))
        return real_popen(*args, **kwargs)

    monkeypatch.setattr(subprocess, "Popen", popen)
    script = ("import json, signal; "
              "print(json.dumps(sorted(int(s) for s in signal.pthread_sigmask(signal.SIG_BLOCK, []))))")
    proc = spawn("probe", [sys.executable, "-c", script], tmp_path / "probe.log")
    assert proc.popen.wait(30) == 0
    assert {signal.SIGTERM, *TERMINAL_SIGNALS} <= blocked_in_popen[0]
    assert signal.SIGTERM not in signal.pthread_sigmask(signal.SIG_BLOCK, [])  # (given back after)
    in_child = set(json.loads((tmp_path / "probe.log").read_text()))
    assert signal.SIGTERM not in in_child and {int(s) for s in TERMINAL_SIGNALS} <= in_child
