"""Reading a recorded session: validation with one-line errors, random access to frames, playback."""

from __future__ import annotations

import bisect
import copy
import json
import sqlite3
import time
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from kvtui.metrics.frame import Frame
from kvtui.metrics.producer import BuiltOnRead
from kvtui.session import APPLICATION_ID, FORMAT_VERSION, SessionError
from kvtui.session.codec import FrameDecoder, decode_record

CHECKPOINT_EVERY = 100


WAL_MISSING = "the -wal file beside it holds the last frames: copy it too"


class SessionReader:
    """Opens a session file. Raises :class:`SessionError` (one line) for a missing file, a file that is not
    a kvtui session, a newer format version, or no complete frame. A file whose tail is damaged (e.g. the
    recorder was killed mid-write) is read up to its last complete frame; ``damaged`` says so.

    A recording still in SQLite's WAL mode was not closed (its writer runs, or was killed): its newest
    frames are in ``FILE-wal`` until a checkpoint copies them into the file. Without that file beside it (a
    copy of the file alone), the file is read as it is (``wal_missing``; it holds the frames up to the last
    checkpoint, every 50 frames) or, before the first checkpoint, refused with :data:`WAL_MISSING`."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        if self.path.is_dir():
            raise SessionError(f"{self.path} is a folder, not a session file")
        if not self.path.is_file():
            raise SessionError(f"{self.path}: no such session file")
        with open(self.path, "rb") as f:
            head = f.read(100)
        if head[:16] != b"SQLite format 3\x00":
            raise SessionError(f"{self.path} is not a kvtui session (not an SQLite file)")
        # bytes 18-19 of the header are 2 in WAL mode (sqlite.org/fileformat2.html); the writer leaves it on close
        self.not_closed = head[18:20] == b"\x02\x02"  # its recorder still runs, or was killed or cut short
        self.wal_missing = self.not_closed and not Path(f"{self.path}-wal").exists()
        not_closed = (f"{self.path} is a recording that was not closed (its recorder still runs or was killed) "
                      f"and has no {self.path.name}-wal here: {WAL_MISSING}")
        # immutable: nothing to recover, so SQLite creates no -wal/-shm beside the copy
        uri = self.path.resolve().as_uri() + "?mode=ro" + ("&immutable=1" if self.wal_missing else "")
        try:
            db = sqlite3.connect(uri, uri=True)
            try:
                app_id = db.execute("PRAGMA application_id").fetchone()[0]
                if app_id != APPLICATION_ID:
                    if self.wal_missing:  # the header page with the id is still in the -wal
                        raise SessionError(not_closed)
                    raise SessionError(f"{self.path} is not a kvtui session (another SQLite database)")
                meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
            except sqlite3.DatabaseError as exc:
                if self.wal_missing:
                    raise SessionError(not_closed) from None
                raise SessionError(f"{self.path} is not a readable kvtui session ({exc})") from None
            if meta.get("format") != "kvtui-session":
                raise SessionError(f"{self.path} is not a kvtui session")
            version = int(meta.get("format_version", "0"))
            if version > FORMAT_VERSION:
                raise SessionError(f"{self.path} has session format version {version}, newer than this kvtui reads "
                                   f"({FORMAT_VERSION}); upgrade kvtui")
            self.records: list[bytes] = []
            self.times: list[float] = []
            self.damaged = False
            try:
                for t, blob in db.execute("SELECT t, record FROM frames ORDER BY seq"):
                    decode_record(blob)  # complete and intact, or stop here
                    self.times.append(float(t))
                    self.records.append(blob)
            except (sqlite3.DatabaseError, zlib.error, ValueError):
                self.damaged = True
        except sqlite3.DatabaseError as exc:
            if self.wal_missing:
                raise SessionError(not_closed) from None
            raise SessionError(f"{self.path} is not a readable kvtui session ({exc})") from None
        finally:
            try:
                db.close()
            except UnboundLocalError:
                pass
        if not self.records:
            raise SessionError(not_closed if self.wal_missing else f"{self.path} holds no complete frame")
        self.meta = meta
        self.header = json.loads(meta.get("header", "{}"))
        self._uri = uri
        self._checkpoints: dict[int, FrameDecoder] = {}
        self._cache: tuple[int, Frame] | None = None

    @property
    def request_columns(self) -> tuple[str, ...]:
        """The columns of the recorded request rows (empty: the file has none, e.g. from an older kvtui)."""
        return tuple(json.loads(self.meta.get("request_columns", "[]")))

    def request_rows(self) -> Iterator[dict[str, Any]]:
        """The recorded per-request rows, oldest first, one dict of :attr:`request_columns` at a time (read
        in batches: memory stays flat). Rows of a damaged tail are skipped; none for a file without them."""
        columns = self.request_columns
        if not columns:
            return
        db = sqlite3.connect(self._uri, uri=True)
        try:
            cur = db.execute("SELECT rows FROM requests ORDER BY seq")
            while True:
                try:
                    item = cur.fetchone()
                except sqlite3.DatabaseError:
                    return
                if item is None:
                    return
                try:
                    batch = json.loads(zlib.decompress(item[0]))
                except (zlib.error, ValueError):
                    return
                for values in batch:
                    yield dict(zip(columns, values))
        except sqlite3.DatabaseError:  # no requests table: recorded before it existed
            return
        finally:
            db.close()

    def warning(self, doing: str) -> str | None:
        """One line about a file read only in part, or not closed by its recorder (``doing``: what the
        command does, e.g. ``reporting``), or None when it was closed and read whole."""
        if self.wal_missing:
            return (f"{self.path} has no {self.path.name}-wal beside it (its recorder did not close it): "
                    f"{WAL_MISSING}; {doing} its first {len(self)} frames")
        if self.damaged:
            return f"{self.path} is damaged after frame {len(self)}; {doing} up to there"
        if self.not_closed:
            return (f"{self.path} was not closed (its recorder still runs, or was killed): {doing} its "
                    f"{len(self)} frames so far")
        return None

    def __len__(self) -> int:
        return len(self.records)

    @property
    def start(self) -> float:
        """Frame time ``t`` of the first recorded frame (a recording started with Ctrl+R begins mid-run)."""
        return self.times[0]

    @property
    def duration(self) -> float:
        """Seconds from the first to the last recorded frame."""
        return self.times[-1] - self.times[0]

    def index_at(self, offset: float) -> int:
        """Index of the last frame at or before ``offset`` seconds into the recording (clamped)."""
        return max(0, min(len(self.times) - 1, bisect.bisect_right(self.times, self.start + offset + 1e-9) - 1))

    def frame_at(self, index: int) -> Frame:
        """The full frame number ``index`` (rebuilt from the nearest checkpoint)."""
        index = max(0, min(len(self.records) - 1, index))
        if self._cache and self._cache[0] == index:
            return self._cache[1]
        # a checkpoint i holds the decoder state *before* record i, so at least one record is applied
        start = max((i for i in self._checkpoints if i <= index), default=0)
        dec = copy.deepcopy(self._checkpoints[start]) if start in self._checkpoints else FrameDecoder()
        for i in range(start, index + 1):
            if i % CHECKPOINT_EVERY == 0 and i not in self._checkpoints:
                self._checkpoints[i] = copy.deepcopy(dec)
            frame = dec.apply(decode_record(self.records[i]))
        self._cache = (index, frame)
        return frame

    def final_frame(self) -> Frame:
        """The last complete frame."""
        return self.frame_at(len(self.records) - 1)


class ReplayPlayer(BuiltOnRead):
    """Plays a session in (scaled) real time: the ``FrameSource`` of ``kvtui replay``.

    Controls: :meth:`toggle_pause`, :meth:`step` (±frames, pauses), :meth:`seek` (±seconds),
    :meth:`seek_start`, :meth:`seek_end`, :meth:`set_speed` (×0.125 .. ×64). Frames carry
    ``status["mode"] == "replay"`` and ``status["replay"] = {position, length, speed, paused, ended}``;
    positions are seconds into the recording (0 = its first frame).
    """

    def __init__(self, reader: SessionReader, speed: float = 1.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.reader = reader
        self.speed = float(speed)
        self._clock = clock
        self._pos = 0.0
        self._anchor = clock()
        self.paused = False

    @property
    def position(self) -> float:
        """Current playback position, in seconds into the recording."""
        if not self.paused:
            now = self._clock()
            self._pos = min(self.reader.duration, self._pos + (now - self._anchor) * self.speed)
            self._anchor = now
        return self._pos

    def frame(self) -> Frame:
        """The frame at the current position, marked as replay."""
        pos = self.position
        f = self.reader.frame_at(self.reader.index_at(pos))
        status = dict(f.status)
        status.update(mode="replay", replay={"position": pos, "length": self.reader.duration, "speed": self.speed,
                                             "paused": self.paused, "ended": pos >= self.reader.duration})
        return Frame(**{**f.__dict__, "status": status})

    def _set(self, pos: float) -> None:
        self._pos = max(0.0, min(self.reader.duration, pos))
        self._anchor = self._clock()

    def toggle_pause(self) -> bool:
        """Pause or resume; returns the new paused state."""
        self._set(self.position)
        self.paused = not self.paused
        return self.paused

    def step(self, frames: int = 1) -> None:
        """Pause and move ``frames`` frames forward (or back if negative)."""
        i = self.reader.index_at(self.position) + frames
        self.paused = True
        self._set(self.reader.times[max(0, min(len(self.reader) - 1, i))] - self.reader.start)

    def seek(self, seconds: float) -> None:
        """Move by ``seconds`` (negative = back)."""
        self._set(self.position + seconds)

    def seek_start(self) -> None:
        """Go to the first frame."""
        self._set(0.0)

    def seek_end(self) -> None:
        """Go to the last frame."""
        self._set(self.reader.duration)

    def set_speed(self, speed: float) -> None:
        """Playback speed factor, clamped to 0.125 .. 64."""
        self._set(self.position)
        self.speed = max(0.125, min(64.0, float(speed)))
