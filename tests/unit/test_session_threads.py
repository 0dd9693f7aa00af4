"""A live session's threads racing, as they will without the GIL's cover (free-threaded Python): with the
interpreter switching threads every microsecond, many short sessions over the shared fakes run the frame
producer (and a reader building frames of its own), the collector (results, a worker rebuild), the feeder (knob
changes and layout switches) and failover watches, started and ended while the session stops. Every invariant
holds in every cycle: no thread raises, every frame shows one layout (its name, its text and the prompt length
in its pages, never half of a switch), every watch handed out is stopped or finished by the time ``stop()``
returns, and its report is in ``failovers`` once, numbered once."""

from __future__ import annotations

import queue
import sys
import threading

import pytest
from waits import wait_for

from kvtui.config.workload import synthetic_description
from kvtui.core.controls import SetKnob, SetLayout
from kvtui.core.layout import PRESETS
from kvtui.live import LiveSession
from kvtui.metrics.frame import Frame
from kvtui.testing.fake_engine import FakeCluster, FakeEngine, FakeFailoverWatch
from workload import SyntheticWorkload, WorkloadSpec

CYCLES = 12
PROMPT_PAGES = 4  # prompts of this many pages of whichever layout runs
LAYOUTS = ("seed", "tiny")  # switched between, back and forth
WATCHES_BEFORE_STOP = 6  # watches a cycle starts before it stops the session (one more races the stop)
WAIT_S = 20.0  # a cycle's condition holds within ms; this only bounds a broken run


@pytest.fixture
def thread_errors(monkeypatch) -> list[str]:
    """Every exception a thread ends with (instead of pytest's warning, which a test cannot assert on)."""
    errors: list[str] = []

    def hook(args: threading.ExceptHookArgs) -> None:
        name = args.thread.name if args.thread is not None else "?"
        errors.append(f"{name}: {args.exc_type.__name__}: {args.exc_value}")

    monkeypatch.setattr(threading, "excepthook", hook)
    return errors


@pytest.fixture
def fast_switching():
    """Switch threads every microsecond (CPython's default is every 5 ms), then put it back."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(old)


def _frame_problems(frame: Frame) -> list[str]:
    """What is inconsistent in ``frame``: its layout's name, text and the prompt length it implies."""
    w, status = frame.workload, frame.status
    layout = PRESETS.get(w.get("layout", ""))
    if layout is None:
        return [f"unknown layout {w.get('layout')!r}"]
    problems = []
    if status.get("layout") != layout.describe():
        problems.append(f"layout {w['layout']} shown as {status.get('layout')!r}")
    if w.get("prompt_tokens") != PROMPT_PAGES * layout.page_tokens:
        problems.append(f"layout {w['layout']} with prompts of {w.get('prompt_tokens')} tokens")
    return problems


def _session() -> tuple[LiveSession, FakeEngine, FakeCluster]:
    tiny = PRESETS["tiny"]
    engine, cluster = FakeEngine(tiny), FakeCluster()
    spec = WorkloadSpec(scenario="shared-system-prompt", pool=3, prompt_tokens=PROMPT_PAGES * tiny.page_tokens,
                        page_tokens=tiny.page_tokens, rate=0.0)  # (closed loop: results as fast as they come)
    session = LiveSession(engine, SyntheticWorkload(spec), synthetic_description(spec), cluster=cluster,
                          layout_text=tiny.describe(), layout_name="tiny", prompt_pages=PROMPT_PAGES)
    return session, engine, cluster


def _cycle(errors: list[str]) -> None:
    session, engine, cluster = _session()
    stopping = threading.Event()  # set just before stop(): the next watch races it
    done = threading.Event()  # stop() returned
    handed: queue.Queue[FakeFailoverWatch | None] = queue.Queue()
    frames = [0]

    def watcher() -> None:  # (a fault injector: the monitor's K, the soak)
        while True:
            try:
                watch = session.watch_failover("leader-kill")
            except RuntimeError:  # the session stops: no more watches
                break
            assert isinstance(watch, FakeFailoverWatch)
            handed.put(watch)
            if len(cluster.watches) >= WATCHES_BEFORE_STOP:
                stopping.wait()
        handed.put(None)

    def finisher() -> None:  # every other watch ends by itself, on its own thread, while others start and stop
        while (watch := handed.get()) is not None:
            if watch.report.n % 2 == 0:
                watch.finish(new_leader="master-1", serving_s=0.1)

    def reader() -> None:  # frames built besides the producer's, each checked
        while not done.is_set():
            frame = session.producer.tick()
            frames[0] += 1
            errors.extend(_frame_problems(frame))
            d = session.description
            if d.get("prompt_tokens") != PROMPT_PAGES * PRESETS[d["layout"]].page_tokens:
                errors.append(f"description: layout {d['layout']} with prompts of {d.get('prompt_tokens')} tokens")

    threads = [threading.Thread(target=fn, name=f"test-{fn.__name__}", daemon=True)
               for fn in (watcher, finisher, reader)]
    session.want("test", 50)
    session.start()
    for t in threads:
        t.start()
    for i in range(4):
        session.send(SetKnob("overlap", i / 4))
        session.send(SetLayout(LAYOUTS[i % 2]))
        session.send(SetKnob("pool", 2 + i))
    session.pause()
    session.resume()
    engine.replace_workers()  # (published from this thread, as the collector does)
    wait_for(lambda: len(engine.layouts_set) >= 4 and session.driver.completed >= 20
             and len(cluster.watches) >= WATCHES_BEFORE_STOP, WAIT_S,
             "4 layout switches, 20 results and the watches", interval_s=0.001,
             detail=lambda: (engine.layouts_set, session.driver.completed, len(cluster.watches), errors))
    stopping.set()
    session.stop()
    watches = list(cluster.watches)  # (final: stop() let no watch start after it)
    unstopped = [w.report.n for w in watches if not (w.stopped or w.done.is_set())]
    reported = session.failovers
    done.set()
    for t in threads:
        t.join(WAIT_S)
        assert not t.is_alive(), f"{t.name} did not end"

    assert errors == []
    assert session.error is None and engine.stopped
    assert unstopped == [], "a watch escaped stop()"
    assert all(w.done.is_set() for w in watches)
    assert sorted(id(r) for r in reported) == sorted(id(w.report) for w in watches), "a report is missing"
    assert sorted(r.n for r in reported) == list(range(1, len(watches) + 1))
    assert len(session._results) == 0, "a watch is still fed results"  # (every subscription undone)
    assert frames[0] > 0 and _frame_problems(session.frame()) == []
    with pytest.raises(RuntimeError):
        session.watch_failover("leader-kill")


def test_a_live_sessions_threads_race_without_breaking_an_invariant(thread_errors, fast_switching):
    for _ in range(CYCLES):
        _cycle(thread_errors)
