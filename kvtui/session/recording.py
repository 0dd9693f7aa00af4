"""Recording a live or observed session (``--record``, ``Ctrl+R``): a :class:`Recording` that the session owns.

The frames come from the session's :class:`~kvtui.metrics.producer.FrameProducer`: while recording, the
recording asks it for :data:`RECORD_HZ` frames a second and takes each frame it builds (the same frames the
monitor and a Prometheus scrape read); a thread of its own writes them into the
:class:`~kvtui.session.writer.SessionWriter`, so a slow disk never delays the next frame.

Each finished request's row (:func:`kvtui.export.request_log.request_row`) is kept too, with the page size it
ran at (``page_tokens``) and its page ids (``page_ids``, :func:`workload.trace_writer.page_ids`: equal ids for
equal page keys), so that ``kvtui export SESSION --trace FILE`` can write the recording as a trace; both are
None for a request drawn before the recording started.
"""

from __future__ import annotations

import os
import queue
import threading
import time
from collections.abc import Callable
from typing import Any

from kvtui.metrics.frame import Frame
from kvtui.metrics.producer import FrameProducer
from kvtui.session.writer import SessionWriter
from workload.trace_writer import page_ids

RECORD_HZ = 10.0
"""Frames a second a recording keeps (at most: when frames come faster, the ones in between are left out)."""

QUEUE_FRAMES = 64
"""Frames waiting to be written; beyond it the oldest waiting ones are left out (a disk stalled for seconds)."""


def next_recording_path(folder: str = ".") -> str:
    """``kvtui-YYYYmmdd-HHMMSS.kvtui`` in ``folder`` (``-1``, ``-2``, … appended if the name is taken)."""
    stem = time.strftime("kvtui-%Y%m%d-%H%M%S")
    stem = stem if folder == "." else os.path.join(folder, stem)
    path, n = f"{stem}.kvtui", 1
    while os.path.exists(path):
        path, n = f"{stem}-{n}.kvtui", n + 1
    return path


class _FrameWriter:
    """A thread that writes the frames handed to :meth:`put` into ``writer``, at most one per ``1/hz`` s of
    frame time, each frame once."""

    def __init__(self, writer: SessionWriter, hz: float = RECORD_HZ) -> None:
        self.writer = writer
        self._min_dt = 1.0 / hz - 1e-3  # (a frame due at exactly 1/hz is kept despite clock jitter)
        self._queue: queue.Queue[Frame | None] = queue.Queue(maxsize=QUEUE_FRAMES)
        self._last: Frame | None = None
        self._thread = threading.Thread(target=self._loop, name="kvtui-recorder", daemon=True)
        self._thread.start()

    def put(self, frame: Frame) -> None:
        """Queue ``frame`` (called on the producer's thread: never blocks)."""
        try:
            self._queue.put_nowait(frame)
        except queue.Full:
            try:
                self._queue.get_nowait()  # the oldest waiting frame makes room
            except queue.Empty:
                pass
            try:
                self._queue.put_nowait(frame)
            except queue.Full:
                pass

    def _write(self, frame: Frame) -> None:
        last = self._last
        if last is not None and (frame is last or frame.t - last.t < self._min_dt):
            return
        self.writer.write(frame)
        self._last = frame

    def _loop(self) -> None:
        while (frame := self._queue.get()) is not None:
            self._write(frame)

    def close(self, final: Frame | None) -> None:
        """Write what is queued, then ``final`` (always, unless it was written already), and close the file."""
        self._queue.put(None)
        self._thread.join(5)
        if final is not None and final is not self._last:
            self.writer.write(final)
            self._last = final
        self.writer.close()


class Recording:
    """Start, stop and toggle the recording of one session.

    ``producer``: the session's frames; ``header()``: the file's header (what the session runs at that
    moment); ``begin_span()``: marks the start of what the recording's report covers
    (:meth:`kvtui.metrics.aggregate.Aggregator.begin_span`); ``log(kind, text)``: the session's event log.
    :attr:`error` says why the last recording stopped early (a full disk), else None.
    """

    def __init__(self, producer: FrameProducer, header: Callable[[], dict[str, Any]],
                 begin_span: Callable[[], None], log: Callable[[str, str], None]) -> None:
        self._producer = producer
        self._header, self._begin_span, self._log = header, begin_span, log
        self._lock = threading.Lock()
        self._writer: _FrameWriter | None = None
        self._pages_lock = threading.Lock()  # _pages: written by the feeder thread (drawn), read and emptied by
        self._pages: dict[int, tuple[int, list[int]]] = {}  # the collector (add_request) and stop()
        self.error: str | None = None

    @property
    def path(self) -> str | None:
        """The file being recorded, None when not recording."""
        w = self._writer
        return str(w.writer.path) if w is not None else None

    def start(self, path: str) -> str:
        """Record frames and events into a new session file at ``path`` (``SessionError`` if it cannot be
        created); the file's report covers what happens from now on (``Frame.span``). Returns the path being
        recorded (the current one when already recording)."""
        with self._lock:
            if self._writer is not None:
                return str(self._writer.writer.path)
            writer = SessionWriter(path, self._header())
            self._begin_span()
            self._writer = _FrameWriter(writer)
            self._producer.subscribe(self._writer.put)
            self._producer.want("recorder", RECORD_HZ)
        self._log("control", f"recording → {path}")
        self._producer.poke()  # the file's first frame now, not a tick later
        return path

    def stop(self, final: Frame | None = None) -> str | None:
        """Stop recording, ``final`` (a frame) written as the last frame when given; returns the file's path
        (None when not recording)."""
        with self._lock:
            w, self._writer = self._writer, None
            if w is None:
                return None
            self._producer.unwant("recorder")
            self._producer.unsubscribe(w.put)
        with self._pages_lock:
            self._pages.clear()
        self._log("control", f"recording stopped: {w.writer.path}")
        w.close(final)
        if w.writer.error:
            self.error = w.writer.error
            self._log("error", w.writer.error)
        return str(w.writer.path)

    def toggle(self) -> tuple[bool, str | None]:
        """Ctrl+R: start recording into :func:`next_recording_path` (current folder) or stop; returns
        ``(recording now, path)``."""
        if self._writer is not None:
            return False, self.stop()
        return True, self.start(next_recording_path())

    def drawn(self, req: Any, page_tokens: int) -> None:
        """A ``workload.Request`` the driver drew (its feeder thread), to run on pages of ``page_tokens``: while
        recording, its page ids are kept for its row."""
        if self._writer is None or not req.tokens.shape[0]:
            return
        ids = page_ids(req, page_tokens)
        with self._pages_lock:
            self._pages[req.req_id] = (page_tokens, ids)

    def add_request(self, row: dict[str, Any]) -> None:
        """One finished request's row (:func:`kvtui.export.request_log.request_row`), written with the next
        frame with its ``page_tokens`` and ``page_ids`` (None when it was drawn before recording started);
        nothing when not recording."""
        w = self._writer
        if w is None:
            return
        with self._pages_lock:
            page_tokens, ids = self._pages.pop(row.get("id"), (None, None))  # type: ignore[arg-type]
        w.writer.add_request({**row, "page_tokens": page_tokens, "page_ids": ids})
