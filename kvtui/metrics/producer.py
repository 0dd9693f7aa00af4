"""One frame per tick, built by one producer: every view of a live session reads the same frames.

Building a frame advances the aggregator's rate and series history (:meth:`kvtui.metrics.aggregate.Aggregator.frame`),
so it must happen in one place: a :class:`FrameProducer` thread calls ``build`` at the highest rate any consumer
asked for (:meth:`FrameProducer.want`) and publishes the newest immutable frame. The monitor reads
:meth:`~FrameProducer.latest`, the recorder subscribes (:meth:`~FrameProducer.subscribe`: called with each new
frame), a Prometheus scrape reads :meth:`~FrameProducer.latest`; none of them builds, so a scrape never changes
what the monitor or the recording show. With no consumer, nothing is built.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from kvtui.metrics.frame import Frame

MAX_HZ = 50.0
"""The highest frame rate a consumer may ask for (frames per second)."""


class FrameProducer:
    """Builds frames with ``build`` (a callable returning a new :class:`Frame`) on its own thread.

    ``want(name, hz)`` / ``unwant(name)``: consumers say how many frames per second they need; the thread
    builds at the highest rate wanted and sleeps while none is. :meth:`latest` is the newest frame (built once
    on the caller's thread if none was yet). :meth:`poke` asks for a frame now (a control change the monitor
    echoes). :meth:`finish` builds the last frame and freezes it: every later reader gets exactly that frame.
    Thread-safe; ``build`` is only ever called with the producer's build lock held, so two builds never
    interleave.
    """

    def __init__(self, build: Callable[[], Frame], name: str = "kvtui-frames"):
        self._build = build
        self._name = name
        self._build_lock = threading.Lock()  # held while building: one build at a time
        self._lock = threading.Lock()  # guards the fields below
        self._wake = threading.Condition(self._lock)
        self._wants: dict[str, float] = {}
        self._subscribers: list[Callable[[Frame], None]] = []
        self._latest: Frame | None = None
        self._poked = False
        self._final = False
        self._stopping = False
        self._thread: threading.Thread | None = None
        self.builds = 0  # frames built so far

    # -- consumers -------------------------------------------------------------------------------------------
    def want(self, consumer: str, hz: float) -> None:
        """``consumer`` needs at least ``hz`` frames per second (> 0, at most :data:`MAX_HZ`); starts the thread
        on first use. ``ValueError`` for a rate out of range."""
        if not 0 < hz <= MAX_HZ:
            raise ValueError(f"frame rate must be within (0, {MAX_HZ:g}] per second, got {hz!r}")
        with self._lock:
            self._wants[consumer] = float(hz)
            self._wake.notify_all()
            start = self._thread is None and not self._final and not self._stopping
            if start:
                self._thread = threading.Thread(target=self._loop, name=self._name, daemon=True)
        if start:
            assert self._thread is not None
            self._thread.start()

    def unwant(self, consumer: str) -> None:
        """``consumer`` needs no more frames."""
        with self._lock:
            self._wants.pop(consumer, None)
            self._wake.notify_all()

    def subscribe(self, fn: Callable[[Frame], None]) -> None:
        """Call ``fn(frame)`` with every frame built from now on, on the producer's thread (it must be quick
        and must not raise; an exception is swallowed so that it cannot stop the others)."""
        with self._lock:
            self._subscribers.append(fn)

    def unsubscribe(self, fn: Callable[[Frame], None]) -> None:
        """Stop calling ``fn``."""
        with self._lock:
            if fn in self._subscribers:
                self._subscribers.remove(fn)

    @property
    def rate_hz(self) -> float:
        """The frames per second built now (0: no consumer)."""
        with self._lock:
            return max(self._wants.values(), default=0.0)

    def latest(self) -> Frame:
        """The newest frame; built now, once, when none was built yet."""
        with self._lock:
            frame = self._latest
        return frame if frame is not None else self.tick()

    def poke(self) -> None:
        """Build a frame as soon as possible (only while a consumer wants frames)."""
        with self._lock:
            self._poked = True
            self._wake.notify_all()

    # -- building --------------------------------------------------------------------------------------------
    def tick(self) -> Frame:
        """Build one frame now, publish it and hand it to the subscribers; returns it. After :meth:`finish`,
        returns the final frame and builds nothing."""
        with self._build_lock:
            with self._lock:
                if self._final and self._latest is not None:
                    return self._latest
            frame = self._build()
            with self._lock:
                self._latest = frame
                self.builds += 1
                subscribers = list(self._subscribers)
        for fn in subscribers:
            try:
                fn(frame)
            except Exception:  # a consumer is another component: it must not stop the frames of the others
                pass
        return frame

    def _loop(self) -> None:
        while True:
            with self._lock:
                while not self._stopping and not self._final and not self._wants:
                    self._wake.wait()
                if self._stopping or self._final:
                    return
                interval = 1.0 / max(self._wants.values())
                if not self._poked:
                    self._wake.wait(interval)
                self._poked = False
                if self._stopping or self._final or not self._wants:
                    continue
            self.tick()

    def finish(self, build_last: bool = True) -> Frame | None:
        """Stop ticking and, with ``build_last``, build the last frame now (for a run's summary, its recording's
        end and every later scrape): from then on :meth:`latest` and :meth:`tick` return it. Returns the last
        frame (None when none was ever built and ``build_last`` is False)."""
        with self._lock:
            self._stopping = True
            self._wake.notify_all()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(5)
        frame = self.tick() if build_last else self._latest
        with self._lock:
            self._final = True
        return frame

    def stop(self) -> None:
        """Stop the thread (no last frame); safe to call twice."""
        self.finish(build_last=False)


class BuiltOnRead:
    """Base of a frame source whose every ``frame()`` makes the frame it returns (a replay player, a test's
    source): it has one reader, so it needs no producer, and what its readers want changes nothing."""

    def want(self, consumer: str, hz: float) -> None:
        """Nothing to start: frames are made when read."""

    def unwant(self, consumer: str) -> None:
        """Nothing to stop."""
