"""Waiting on a condition instead of sleeping a fixed time: the one helper every test uses
(``from waits import wait_for``; pytest puts ``tests/`` on ``sys.path`` for its conftest).

A fixed sleep before an assertion is both slow (it always costs its full length) and flaky (on a loaded
machine the thing it waits for may take longer). :func:`wait_for` returns as soon as the condition holds
and fails with a message naming what did not happen. A sleep that *is* the thing under test (a
measurement window, "nothing happens for 0.3 s", the pacing of a sampler) stays a sleep, with a comment.
"""

from __future__ import annotations

import time
from typing import Callable, TypeVar

T = TypeVar("T")


def wait_for(cond: Callable[[], T], timeout_s: float, what: str, *, interval_s: float = 0.05,
             detail: Callable[[], object] | None = None) -> T:
    """Call ``cond()`` every ``interval_s`` until it returns something true, and return that value.
    ``AssertionError`` "no <what> within <timeout_s> s" (followed by ``detail()``, e.g. a process's output,
    when given) once ``timeout_s`` has passed. ``cond`` may itself assert (e.g. that a process it watches is
    still running) to fail at once instead of at the deadline."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = cond()
        if value:
            return value
        if time.monotonic() >= deadline:
            more = f":\n{detail()}" if detail is not None else ""
            raise AssertionError(f"no {what} within {timeout_s:g} s{more}")
        time.sleep(interval_s)


async def pilot_wait_for(pilot, cond: Callable[[], T], timeout_s: float, what: str, *, interval_s: float = 0.05,
                         detail: Callable[[], object] | None = None) -> T:
    """:func:`wait_for` inside a Textual Pilot scenario: the app runs (``await pilot.pause(interval_s)``)
    between two calls of ``cond``."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = cond()
        if value:
            return value
        if time.monotonic() >= deadline:
            more = f":\n{detail()}" if detail is not None else ""
            raise AssertionError(f"no {what} within {timeout_s:g} s{more}")
        await pilot.pause(interval_s)
