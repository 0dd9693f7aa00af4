"""Recording control shared by the live and the observe sessions (``Ctrl+R``, ``--record``)."""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kvtui.metrics.aggregate import Aggregator
    from kvtui.metrics.frame import Frame
    from kvtui.session.writer import RecordingThread


def next_recording_path(folder: str = ".") -> str:
    """``kvtui-YYYYmmdd-HHMMSS.kvtui`` in ``folder`` (``-1``, ``-2``, … appended if the name is taken)."""
    stem = time.strftime("kvtui-%Y%m%d-%H%M%S")
    stem = stem if folder == "." else os.path.join(folder, stem)
    path, n = f"{stem}.kvtui", 1
    while os.path.exists(path):
        path, n = f"{stem}-{n}.kvtui", n + 1
    return path


class RecordingControl:
    """Start, stop and toggle recording of a session's frames and events.

    The session provides ``agg`` (an :class:`~kvtui.metrics.aggregate.Aggregator`), ``log(kind, text)``,
    the attribute ``recorder`` (``None`` when not recording), ``frame()`` and ``frame_events()`` (what
    :class:`~kvtui.session.writer.RecordingThread` reads), and :meth:`recording_header` (the file's header).
    """

    agg: Aggregator
    recorder: RecordingThread | None = None
    recording_error: str | None = None  # why the last recording stopped early (a full disk), else None

    if TYPE_CHECKING:  # provided by the session

        def _log(self, kind: str, text: str) -> None: ...

        def frame(self) -> Frame: ...

    def recording_header(self) -> dict[str, Any]:
        """The header of a file recorded from now (what the session runs at this moment)."""
        raise NotImplementedError

    def start_recording(self, path: str) -> str:
        """Record frames and events into a session file at ``path`` (``SessionError`` if it cannot); the
        file's report covers what happens from now on (``Frame.span``). Returns the path being recorded."""
        from kvtui.session.writer import RecordingThread, SessionWriter

        if self.recorder is not None:
            return str(self.recorder.writer.path)
        writer = SessionWriter(path, self.recording_header())
        self.agg.begin_span()
        self.recorder = RecordingThread(self, writer).start()
        self.log("control", f"recording → {path}")
        return path

    def stop_recording(self, final: Frame | None = None) -> str | None:
        """Stop recording (writing ``final``, a Frame, as the last frame when given); returns the file path."""
        rec, self.recorder = self.recorder, None
        if rec is None:
            return None
        self.log("control", f"recording stopped: {rec.writer.path}")
        rec.stop(final)
        if rec.writer.error:
            self.recording_error = rec.writer.error
            self.log("error", rec.writer.error)
        return str(rec.writer.path)

    def toggle_recording(self) -> tuple[bool, str | None]:
        """Ctrl+R: start recording into :func:`next_recording_path` (current folder) or stop; returns
        ``(recording now, path)``."""
        if self.recorder is not None:
            return False, self.stop_recording()
        return True, self.start_recording(next_recording_path())
