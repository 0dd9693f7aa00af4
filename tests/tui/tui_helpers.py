"""Helpers of the TUI tests: frames from a real Aggregator fed with hand-made RequestResults, a recording
controller, and a helper to run async Pilot scenarios from plain (sync) tests."""

from __future__ import annotations

import asyncio

from kvtui.core.events import EngineEvent, RequestResult
from kvtui.core.pages import PageState as S
from kvtui.metrics.aggregate import Aggregator
from kvtui.metrics.producer import BuiltOnRead

PT, PB = 256, 14 << 20


def result(req_id: int, states, *, n_tokens: int | None = None, reload_ms: float = 3.0, put_ms: float = 2.0,
           codes: dict | None = None) -> RequestResult:
    """A RequestResult whose counters agree with ``states`` (PageState values)."""
    states = bytes(states)
    full = sum(1 for s in states if s != S.PARTIAL)
    hits = states.count(S.HIT)
    pub = states.count(S.PUBLISHED)
    return RequestResult(
        req_id=req_id, scenario="shared-system-prompt", n_tokens=n_tokens or full * PT + 100,
        cacheable_tokens=full * PT, page_tokens=PT, page_bytes=PB, pages_total=full, pages_hit=hits,
        states=states, pages_published=pub, pages_already_present=states.count(S.PRESENT),
        pages_failed=states.count(S.FAILED), bytes_loaded=hits * PB, bytes_written=pub * PB,
        verified=hits + states.count(S.MISMATCH), mismatches=states.count(S.MISMATCH), probe_ms=0.4,
        read_ms=reload_ms, put_ms=put_ms, publish_probe_ms=0.3, codes=codes or {})


SYNTH = {"kind": "synthetic", "scenario": "shared-system-prompt", "overlap": 0.5, "pool": 4, "rate": 10.0,
         "prompt_tokens": 2048}
STATUS = {"store_mode": "embedded", "store_up": True, "paused": False, "layout": "tiny", "mode": "live"}
STORE = {"keys": 1234, "used_bytes": 3 << 30, "capacity_bytes": 8 << 30, "evicted_keys": 56, "alloc_failures": 2,
         "put_rps": 12.5, "get_rps": 40.0}
PROCS = ({"name": "prefill worker", "pid": 101, "cpu_percent": 55.5, "rss_bytes": 300 << 20},
         {"name": "decode worker", "pid": 102, "cpu_percent": 22.25, "rss_bytes": 200 << 20})


class AggSource(BuiltOnRead):
    """A frame source over a real Aggregator on a fake clock (0.1 s per frame); ``workload``/``status``
    may be edited between frames."""

    def __init__(self, results=(), workload=None, status=None):
        self.t = 0.0
        self.agg = Aggregator(rows=32, clock=lambda: self.t)
        for r in results:
            self.agg.add(r)
        self.agg.event(EngineEvent("info", 0.0, "store up"))
        self.workload = dict(SYNTH if workload is None else workload)
        self.status = dict(STATUS if status is None else status)
        self.calls = 0

    def frame(self):
        self.calls += 1
        self.t += 0.1
        return self.agg.frame(store=dict(STORE), procs=PROCS, workload=dict(self.workload), status=dict(self.status))


class RecordingController:
    """Records every call as ``(method, *args)`` (knob changes as ``("send", control)``); ``clear_store``
    returns 42; ``toggle_recording`` flips between recording to ``record_path`` and not. It has no other
    methods, so the app calling one the Controller protocol does not have fails the test."""

    def __init__(self, record_path: str = "sessions/kvtui-test.kvtui"):
        self.calls: list[tuple] = []
        self.recording, self.record_path = False, record_path

    def __getattr__(self, name):
        if name in ("pause", "resume", "stop", "restart_master"):
            return lambda *a: self.calls.append((name, *a))
        raise AttributeError(name)

    def send(self, control) -> None:
        self.calls.append(("send", control))

    def clear_store(self) -> int:
        self.calls.append(("clear_store",))
        return 42

    def toggle_recording(self) -> tuple[bool, str | None]:
        self.calls.append(("toggle_recording",))
        self.recording = not self.recording
        return self.recording, self.record_path

    def named(self, name: str) -> list[tuple]:
        return [c for c in self.calls if c[0] == name]

    def sent(self, kind: type) -> list:
        """The controls of type ``kind`` (e.g. ``SetLayout``) sent so far, oldest first."""
        return [c[1] for c in self.calls if c[0] == "send" and isinstance(c[1], kind)]

    def knob_sent(self, name: str) -> list:
        """The ``SetKnob`` controls of knob ``name`` sent so far, oldest first."""
        from kvtui.core.controls import SetKnob

        return [c for c in self.sent(SetKnob) if c.name == name]


class FakeClock:
    """A settable clock: ``clock()`` returns ``clock.t``."""

    def __init__(self, t: float = 0.0):
        self.t = t

    def __call__(self) -> float:
        return self.t


def run(coro):
    """Run an async Pilot scenario from a sync test."""
    return asyncio.run(coro)


def pilot_test(app, scenario, size=(120, 40)):
    """Run ``scenario(pilot)`` against ``app`` at ``size`` from a plain (sync) test; returns its result."""
    async def go():
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            return await scenario(pilot)

    return run(go())


def log_texts(app) -> list[str]:
    """Plain text of every event-log entry."""
    from kvtui.tui.widgets import EventLog

    return app.query_one(EventLog).texts


def screen_lines(app) -> list[str]:
    """The plain text of every line on the app's screen, as drawn (:func:`kvtui.movie.frames.screen_rows`)."""
    from kvtui.movie.frames import screen_rows

    return ["".join(seg.text for seg in row if not seg.control) for row in screen_rows(app)]


def settings_open(app) -> bool:
    """The settings dialog is the active screen."""
    from kvtui.tui.screens import SettingsScreen

    return isinstance(app.screen, SettingsScreen)
