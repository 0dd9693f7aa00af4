"""An ordered list of callbacks that several parties subscribe to, instead of one callback attribute that the
last party to assign it owns.

Each subscriber is called in the order it subscribed, on the thread that publishes, with the published
arguments; an exception a subscriber raises reaches the publisher (the subscribers after it are not called).
Subscribing and unsubscribing are thread-safe and may happen while a publish is under way (that publish
calls the subscribers of the moment it began).
"""

from __future__ import annotations

import threading
from typing import Callable, Generic, ParamSpec

__all__ = ["Subscribers", "Unsubscribe"]

P = ParamSpec("P")

Unsubscribe = Callable[[], None]
"""Returned by :meth:`Subscribers.subscribe`: removes that subscription (calling it again does nothing)."""


class Subscribers(Generic[P]):
    """Callbacks taking the arguments ``P``: ``subscribe(fn)`` adds one (the returned function removes it),
    calling the list publishes to every subscriber in order."""

    def __init__(self) -> None:
        self._fns: list[Callable[P, None]] = []
        self._lock = threading.Lock()

    def subscribe(self, fn: Callable[P, None]) -> Unsubscribe:
        """Call ``fn`` on every publish from now on, after the earlier subscribers; returns the function that
        ends this subscription (the same ``fn`` subscribed twice is called twice, each removed on its own)."""
        entry = _Entry(fn)
        with self._lock:
            self._fns = [*self._fns, entry]

        def unsubscribe() -> None:
            with self._lock:
                self._fns = [f for f in self._fns if f is not entry]

        return unsubscribe

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> None:
        """Publish: call every subscriber, in the order subscribed."""
        with self._lock:
            fns = self._fns
        for fn in fns:
            fn(*args, **kwargs)

    def __len__(self) -> int:
        return len(self._fns)


class _Entry(Generic[P]):
    """One subscription (its own object, so that unsubscribing removes exactly it)."""

    __slots__ = ("fn",)

    def __init__(self, fn: Callable[P, None]) -> None:
        self.fn = fn

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> None:
        self.fn(*args, **kwargs)
