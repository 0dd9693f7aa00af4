"""``lower_thread_priority``: the monitor's thread gets nicer, the engine's threads keep their priority;
``pin_calling_thread``: a worker's calling thread moves to one CPU, other threads stay where they were."""

from __future__ import annotations

import os
import threading

import pytest

from kvtui.core.sched import _START_CPUS, lower_thread_priority, pin_calling_thread


def _nice(tid: int) -> int:
    return os.getpriority(os.PRIO_PROCESS, tid)


def test_only_the_calling_thread_and_its_later_threads_get_nicer():
    seen: dict[str, int] = {}
    started = threading.Event()
    release = threading.Event()

    def engine_thread() -> None:  # started before the change, like the driver's feeder and collector
        seen["engine_tid"] = threading.get_native_id()
        started.set()
        release.wait(10)

    def ui_thread() -> None:
        before = _nice(threading.get_native_id())
        restore = lower_thread_priority(5)
        seen["ui_before"], seen["ui_after"] = before, _nice(threading.get_native_id())
        child = threading.Thread(target=lambda: seen.__setitem__("child", _nice(threading.get_native_id())))
        child.start()
        child.join()
        seen["engine_during"] = _nice(seen["engine_tid"])
        restore()
        seen["ui_restored"] = _nice(threading.get_native_id())

    base = _nice(threading.get_native_id())
    engine = threading.Thread(target=engine_thread)
    engine.start()
    started.wait(10)
    ui = threading.Thread(target=ui_thread)
    ui.start()
    ui.join()
    release.set()
    engine.join()
    assert seen["ui_after"] == min(19, seen["ui_before"] + 5)
    assert seen["child"] == seen["ui_after"]  # Textual's own threads follow the UI thread
    assert seen["engine_during"] == base  # the engine's threads are untouched
    assert _nice(threading.get_native_id()) == base
    # putting it back needs CAP_SYS_NICE: either it is back, or it stayed where it was, never anything else
    assert seen["ui_restored"] in (seen["ui_before"], seen["ui_after"])
    if _can_renice():
        assert seen["ui_restored"] == seen["ui_before"]


def _can_renice() -> bool:
    """CAP_SYS_NICE (bit 23) in the effective set: root in a container may lack it."""
    try:
        for line in open("/proc/self/status"):
            if line.startswith("CapEff:"):
                return bool(int(line.split()[1], 16) >> 23 & 1)
    except OSError:
        pass
    return False


def test_calls_do_not_stack():
    seen = {}

    def ui_thread() -> None:
        tid = threading.get_native_id()
        lower_thread_priority(5)  # not restored, as without CAP_SYS_NICE
        seen["first"] = _nice(tid)
        restore = lower_thread_priority(5)  # a second monitor on the same thread (bench rounds)
        seen["second"] = _nice(tid)
        restore()
        seen["after"] = _nice(tid)

    t = threading.Thread(target=ui_thread)
    t.start()
    t.join()
    assert seen["first"] == seen["second"] == seen["after"]


def test_zero_changes_nothing():
    tid = threading.get_native_id()
    before = _nice(tid)
    lower_thread_priority(0)()
    assert _nice(tid) == before


@pytest.mark.skipif(len(_START_CPUS) < 2, reason="pinning needs at least 2 CPUs")
def test_pin_calling_thread_moves_only_this_thread_and_its_later_threads():
    seen = {}

    def worker_thread() -> None:
        seen["pinned"] = pin_calling_thread(True)
        seen["cpus"] = os.sched_getaffinity(0)
        child = threading.Thread(target=lambda: seen.__setitem__("child", os.sched_getaffinity(0)))
        child.start()
        child.join()
        seen["unpinned"] = pin_calling_thread(False)
        seen["cpus_after"] = os.sched_getaffinity(0)

    t = threading.Thread(target=worker_thread)
    t.start()
    t.join()
    assert seen["pinned"] is True and seen["cpus"] == {max(_START_CPUS)} and seen["child"] == seen["cpus"]
    assert seen["unpinned"] is False and seen["cpus_after"] == set(_START_CPUS)
    assert os.sched_getaffinity(0) == set(_START_CPUS)  # this thread was never touched
