"""Scheduling of the calling thread (Linux): its nice value and its CPUs.

Both belong to each thread on Linux (setpriority(2) with a thread id, sched_setaffinity(2) with pid 0), so the
monitor can run its own thread nicer while the engine's threads keep their priority, and a worker can pin the
one thread that calls the store. Nothing here imports the store or the UI.
"""

from __future__ import annotations

import os
from typing import Callable

_BASE_NICE = os.getpriority(os.PRIO_PROCESS, os.getpid()) if hasattr(os, "getpriority") else 0  # at start-up


def lower_thread_priority(nice: int) -> Callable[[], None]:
    """Make the calling thread ``nice`` nicer than kvtui started (capped at 19) and return a function that
    puts it back.

    On Linux the nice value belongs to each thread (setpriority(2), ``PRIO_PROCESS`` with a thread id), so
    only this thread and the threads it starts afterwards run at the lower priority. Putting it back needs
    CAP_SYS_NICE (or RLIMIT_NICE); without it the restore function does nothing, and a later call on the
    same thread changes nothing either (the target is relative to the start-up value, so calls never stack).
    Never raises: a system that refuses leaves the priority as it was.
    """
    import threading

    if nice <= 0 or not hasattr(os, "setpriority"):
        return lambda: None
    tid = threading.get_native_id()
    try:
        old = os.getpriority(os.PRIO_PROCESS, tid)
        target = min(19, _BASE_NICE + int(nice))
        if old >= target:
            return lambda: None
        os.setpriority(os.PRIO_PROCESS, tid, target)
    except OSError:
        return lambda: None

    def restore() -> None:
        try:
            os.setpriority(os.PRIO_PROCESS, tid, old)
        except OSError:  # lowering a nice value again is a privilege
            pass

    return restore


_START_CPUS: frozenset[int] = frozenset(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else frozenset()


def pin_calling_thread(pinned: bool) -> bool:
    """Run the calling thread on one CPU (``pinned``), the highest one this process was allowed at start-up,
    or on all of those again; returns whether it is pinned now.

    Linux affinity belongs to each thread (sched_setaffinity(2) with pid 0), so threads started earlier keep
    theirs, and threads started later by this one inherit it. Every process of kvtui starts with the same set,
    so the two workers pick the same CPU: their calling threads take turns on it at concurrency 1, and the
    store's transfer threads keep the other CPUs (``kvtui bench --trace`` measures the effect). Never raises:
    with one CPU, no affinity support, a refusal, or ``KVTUI_PIN=0`` in the environment (several kvtui at
    once would all pick the same CPU), nothing changes and the result is False.
    """
    if len(_START_CPUS) < 2 or os.environ.get("KVTUI_PIN") == "0":
        return False
    try:
        os.sched_setaffinity(0, {max(_START_CPUS)} if pinned else set(_START_CPUS))
    except OSError:
        return False
    return pinned
