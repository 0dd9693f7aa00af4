"""Recording a session into SQLite (WAL journal): each frame is committed as it is written, so a process
killed mid-run leaves a file that reads back up to its last complete frame."""

from __future__ import annotations

import datetime as _dt
import json
import sqlite3
import threading
import zlib
from pathlib import Path
from typing import Any

from kvtui import __version__
from kvtui.core.text import plural
from kvtui.metrics.frame import Frame
from kvtui.session import APPLICATION_ID, FORMAT_VERSION, SessionError
from kvtui.session.codec import FrameEncoder

CHECKPOINT_FRAMES = 50
SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE frames (seq INTEGER PRIMARY KEY, t REAL NOT NULL, record BLOB NOT NULL);
CREATE TABLE requests (seq INTEGER PRIMARY KEY, rows BLOB NOT NULL);
"""
# ``requests``: the per-request rows (kvtui.export.request_log) recorded since the previous frame, one
# zlib-compressed JSON list of rows per frame (each row a list in the order of meta "request_columns").
# A file without the table (recorded before it existed) simply has no request rows.


def mooncake_version() -> str:
    """The installed Mooncake wheel's name and version (no import of the native library)."""
    import importlib.metadata as md

    for name in ("mooncake-transfer-engine-non-cuda", "mooncake-transfer-engine"):
        try:
            return f"{name} {md.version(name)}"
        except md.PackageNotFoundError:
            continue
    return "unknown"


class SessionWriter:
    """Writes one session file. ``header``: layout, workload spec and seed, cluster mode (plain data).

    Raises :class:`SessionError` (one line) if ``path`` exists already (nothing is overwritten) or cannot
    be created. Thread-safe ``write``.
    """

    def __init__(self, path: str | Path, header: dict[str, Any]) -> None:
        self.path = Path(path)
        if self.path.exists():
            raise SessionError(f"{self.path} exists already; choose another name (kvtui never overwrites a file)")
        db: sqlite3.Connection | None = None
        try:
            db = sqlite3.connect(str(self.path), check_same_thread=False, isolation_level=None)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute(f"PRAGMA application_id={APPLICATION_ID}")
            db.executescript(SCHEMA)
            meta = {"format": "kvtui-session", "format_version": str(FORMAT_VERSION), "kvtui_version": __version__,
                    "mooncake_version": mooncake_version(),
                    "started_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
                    "header": json.dumps(header, default=str)}
            db.executemany("INSERT INTO meta VALUES (?, ?)", meta.items())
        except (sqlite3.Error, OSError) as exc:
            self._remove_unfinished(db)  # (it did not exist: a retry with the same name must not be refused)
            raise SessionError(f"cannot record to {self.path}: {exc}") from None
        self.db = db
        self._enc = FrameEncoder()
        self._lock = threading.Lock()
        self._seq = 0
        self._requests: list[list[Any]] = []  # request rows not yet written (they go with the next frame)
        self._request_columns: tuple[str, ...] | None = None
        self.closed = False
        self.error: str | None = None  # why recording stopped early (a full disk); the run itself goes on

    def _remove_unfinished(self, db: sqlite3.Connection | None) -> None:
        if db is not None:
            try:
                db.close()
            except sqlite3.Error:
                pass
        for suffix in ("", "-wal", "-shm", "-journal"):
            Path(f"{self.path}{suffix}").unlink(missing_ok=True)

    def write(self, frame: Frame) -> None:
        """Append one frame (committed at once). A write that fails (disk full) stops the recording there,
        with :attr:`error` saying so, instead of the run: the frames before it stay committed and readable."""
        with self._lock:
            if self.closed or self.error:
                return
            try:
                self.db.execute("INSERT INTO frames VALUES (?, ?, ?)", (self._seq, frame.t, self._enc.encode(frame)))
                self._flush_requests()
                self._seq += 1
                if self._seq % CHECKPOINT_FRAMES == 0:  # keep the main file itself current, not only its -wal
                    self.db.execute("PRAGMA wal_checkpoint(PASSIVE)")
            except sqlite3.Error as exc:
                self.error = f"recording to {self.path} stopped after {plural(self._seq, 'frame')}: {exc}"

    def add_request(self, row: dict[str, Any]) -> None:
        """Queue one request row (a dict of plain values: :func:`kvtui.export.request_log.request_row`); rows
        are written with the next frame, in one row of the ``requests`` table."""
        with self._lock:
            if self.closed or self.error:
                return
            if self._request_columns is None:
                self._request_columns = tuple(row)
                self.db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)",
                                ("request_columns", json.dumps(self._request_columns)))
            self._requests.append([row.get(c) for c in self._request_columns])

    def _flush_requests(self) -> None:
        if self._requests:
            blob = zlib.compress(json.dumps(self._requests, separators=(",", ":"), default=str).encode(), 6)
            self.db.execute("INSERT INTO requests VALUES (?, ?)", (self._seq, blob))
            self._requests = []

    def close(self) -> None:
        """Checkpoint the WAL into the file, leave WAL mode and close (safe to call twice)."""
        with self._lock:
            if self.closed:
                return
            self.closed = True
            try:
                self._flush_requests()  # rows that came after the last frame
            except sqlite3.Error:
                pass
            try:
                self.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                self.db.execute("PRAGMA journal_mode=DELETE")  # one self-contained file: readers add no -wal/-shm
            except sqlite3.OperationalError:
                # another process (e.g. ``kvtui report`` on the live file) holds a read lock: every frame is
                # committed already, so the file stays readable; it just keeps its -wal beside it until the
                # next open checkpoints it
                pass
            finally:
                self.db.close()
