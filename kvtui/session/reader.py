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

from kvtui.core.text import plural
from kvtui.metrics.frame import Frame
from kvtui.metrics.producer import BuiltOnRead
from kvtui.session import APPLICATION_ID, FORMAT_VERSION, SessionError
from kvtui.session.codec import FrameDecoder, decode_record

CHECKPOINT_EVERY = 100


WAL_MISSING = "the -wal file beside it holds the last frames: copy it too"


def declared_bytes(head: bytes) -> int | None:
    """The size an SQLite file's 100-byte header says the file has: page size (bytes 16-17, 1 = 65,536) ×
    pages (bytes 28-31), None when the page count is not valid (0, or a change counter, bytes 24-27, other
    than bytes 92-95: written by an SQLite before 3.7.0), sqlite.org "Database File Format" §1.3."""
    if len(head) < 100:
        return None
    page = int.from_bytes(head[16:18], "big")
    pages = int.from_bytes(head[28:32], "big")
    if pages == 0 or head[24:28] != head[92:96]:
        return None
    return (65536 if page == 1 else page) * pages


def _connect(uri: str, cut_short: bool) -> sqlite3.Connection:
    """A read-only connection to a session file. SQLite refuses a file shorter than its header says ("database
    disk image is malformed", before reading anything); with writable_schema on it reads the pages that are
    there instead, and a read that reaches past the end raises that error then, where the cut is."""
    db = sqlite3.connect(uri, uri=True)
    if cut_short:
        db.execute("PRAGMA writable_schema=ON")  # (read-only: nothing is written)
    return db


class SessionReader:
    """Opens a session file. Raises :class:`SessionError` (one line) for a missing file, a file that is not
    a kvtui session, a newer format version, or no complete frame. A file whose tail is damaged (e.g. the
    recorder was killed mid-write) is read up to its last complete frame; ``damaged`` says so.

    A recording still in SQLite's WAL mode was not closed (its writer runs, or was killed): its newest
    frames are in ``FILE-wal`` until a checkpoint copies them into the file. Without that file beside it (a
    copy of the file alone), the file is read as it is (``wal_missing``; it holds the frames up to the last
    checkpoint, every 50 frames) or, before the first checkpoint, refused with :data:`WAL_MISSING`.

    A file shorter than its header says (``cut_short``: a copy that stopped, a disk that filled) is read up
    to the first frame that reaches past the cut; frames are deltas, so none after a missing one is read."""

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
        self.size, self.declared = self.path.stat().st_size, declared_bytes(head)
        wal_in_use = self.not_closed and not self.wal_missing  # (then the -wal holds the newest header and size)
        self.cut_short = self.declared is not None and self.size < self.declared and not wal_in_use
        cut = f"{self.path} is cut short ({self.size:,} of {self.declared or 0:,} bytes)"
        not_closed = (f"{self.path} is a recording that was not closed (its recorder still runs or was killed) "
                      f"and has no {self.path.name}-wal here: {WAL_MISSING}")
        # immutable: nothing to recover, so SQLite creates no -wal/-shm beside the copy
        uri = self.path.resolve().as_uri() + "?mode=ro" + ("&immutable=1" if self.wal_missing else "")
        try:
            db = _connect(uri, self.cut_short)
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
                if self.cut_short:
                    raise SessionError(f"{cut} before its first complete frame") from None
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
                for seq, t, blob in db.execute("SELECT seq, t, record FROM frames ORDER BY seq"):
                    if seq != len(self.records) or not isinstance(blob, bytes):  # (a cell of a page past a cut)
                        raise ValueError(f"frame {seq} where frame {len(self.records)} belongs")
                    decode_record(blob)  # complete and intact, or stop here
                    self.times.append(float(t))
                    self.records.append(blob)
            except (sqlite3.DatabaseError, zlib.error, ValueError, TypeError):
                self.damaged = True
            self.damaged = self.damaged or self.cut_short
        except sqlite3.DatabaseError as exc:
            if self.wal_missing:
                raise SessionError(not_closed) from None
            if self.cut_short:
                raise SessionError(f"{cut} before its first complete frame") from None
            raise SessionError(f"{self.path} is not a readable kvtui session ({exc})") from None
        finally:
            try:
                db.close()
            except UnboundLocalError:
                pass
        if not self.records:
            raise SessionError(not_closed if self.wal_missing else f"{cut} before its first complete frame"
                               if self.cut_short else f"{self.path} holds no complete frame")
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
        db = _connect(self._uri, self.cut_short)
        try:
            cur = db.execute("SELECT seq, rows FROM requests ORDER BY seq")
            last = -1
            while True:
                try:
                    item = cur.fetchone()
                except sqlite3.DatabaseError:
                    return
                if item is None or not isinstance(item[0], int) or item[0] <= last:  # (a cell past a cut)
                    return
                last = item[0]
                try:
                    batch = json.loads(zlib.decompress(item[1]))
                except (zlib.error, ValueError, TypeError):
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
                    f"{WAL_MISSING}; {doing} its first {plural(len(self), 'frame')}")
        if self.cut_short:
            return (f"{self.path} is cut short ({self.size:,} of {self.declared:,} bytes): {doing} its first "
                    f"{plural(len(self), 'frame')}, those before the cut")
        if self.damaged:
            return f"{self.path} is damaged after frame {len(self)}; {doing} up to there"
        if self.not_closed:
            return (f"{self.path} was not closed (its recorder still runs, or was killed): {doing} its "
                    f"{plural(len(self), 'frame')} so far")
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
