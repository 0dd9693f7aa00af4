"""What HA masters wrote in their logs, read by Mooncake's own codes: the errors they logged (``err=-1401``,
``Standby restore failed: INVALID_PARAMS``), the keys those lines name, and their role changes.

A master (glog, ``--logtostderr``; kvtui's cluster writes ``LOG_DIR/NAME.log``) prefixes each line with
``LMMDD HH:MM:SS.micro THREAD FILE:LINE]`` (L: ``I`` ``W`` ``E`` ``F``). An HA master logs at INFO
(``--minloglevel=0``): its role changes (``Master runtime state -> serving, role=leader``) are INFO lines.
Codes are Mooncake's ``ErrorCode`` values, named from :data:`kvtui.core.codes.ERROR_CODES`.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Sequence

from kvtui.core.codes import ERROR_CODES, code_name

__all__ = ["LogEntry", "OPLOG_FAILED", "RESTORE_FAILED", "log_sizes", "parse_line", "read_entries"]

OPLOG_FAILED = "OpLog queue failed"
"""What a leader logs for a put it acknowledged but could not append to its OpLog (``PutEnd: OpLog queue failed
for key=K, err=-1401``, TASK_PENDING_LIMIT_EXCEEDED: the queue was full): no standby learns of that object."""
RESTORE_FAILED = "Standby restore failed"
"""What a promoted master logs (``Standby restore failed: INVALID_PARAMS``) when it could not restore the state
it replicated as a standby: it serves anyway, with no objects."""

_HEAD = re.compile(r"^([IWEF])(\d\d)(\d\d) (\d\d):(\d\d):(\d\d)\.(\d+)\s+\d+\s+([\w.]+):\d+\]\s?(.*)$")
_CODE = re.compile(r"\berr(?:or)?(?:_code)?[=:]\s*(-\d+)\b")
_NAMED = re.compile(r"\bfailed: ([A-Z][A-Z0-9_]+)\b")
_KEY = re.compile(r"\bkey=([^\s,]+)")
_ROLE = re.compile(r"Master runtime state -> (\w+), role=(\w+)")
_BY_NAME = {name: value for value, name in ERROR_CODES.items()}


@dataclass(frozen=True)
class LogEntry:
    """One line of a master's log that names a Mooncake code or a role change: ``t`` (epoch seconds, the
    master's clock), ``level`` (``I`` ``W`` ``E`` ``F``), ``source`` (its C++ file), ``text`` (the message),
    ``code`` (the ``ErrorCode`` value it names, None for a role change), ``key`` (the object key it names, if
    any), ``state`` (a role change's new ``ha_state``, else "")."""

    t: float
    level: str
    source: str
    text: str
    code: int | None = None
    key: str | None = None
    state: str = ""

    @property
    def name(self) -> str:
        """The code's name (``TASK_PENDING_LIMIT_EXCEEDED``), "" for a role change."""
        return code_name(self.code) if self.code is not None else ""

    @property
    def what(self) -> str:
        """The message with its key left out (the same for every line of a kind)."""
        return _KEY.sub("key=…", self.text)


def _epoch(month: int, day: int, hh: int, mm: int, ss: int, micro: str, now: float) -> float:
    """The local time of a glog prefix (which has no year) in epoch seconds: this year's, or last year's when
    this year's would lie more than a day ahead of ``now``."""
    year = datetime.fromtimestamp(now).year
    frac = float(f"0.{micro}")
    for y in (year, year - 1):
        try:
            t = datetime(y, month, day, hh, mm, ss).timestamp() + frac
        except ValueError:  # (29 February of a year without one)
            continue
        if t <= now + 86400:
            return t
    return now


def parse_line(line: str, now: float | None = None) -> LogEntry | None:
    """The :class:`LogEntry` of one log line, None when the line names no code and no role change (or is not
    a glog line). ``now``: epoch seconds to place the year by (default: now)."""
    m = _HEAD.match(line)
    if m is None:
        return None
    level, mon, day, hh, mi, ss, micro, source, text = m.groups()
    state = ""
    code: int | None = None
    if (c := _CODE.search(text)) is not None:
        code = int(c.group(1))
    elif (n := _NAMED.search(text)) is not None and n.group(1) in _BY_NAME:
        code = _BY_NAME[n.group(1)]
    elif (r := _ROLE.search(text)) is not None:
        state = r.group(1)
    else:
        return None
    key = k.group(1) if (k := _KEY.search(text)) is not None else None
    t = _epoch(int(mon), int(day), int(hh), int(mi), int(ss), micro, time.time() if now is None else now)
    return LogEntry(t, level, source, text.strip(), code, key, state)


def read_entries(log_dir: str, name: str, since: int) -> tuple[list[LogEntry], int]:
    """``(the entries of master name's log after byte since, the byte its reading ended at)``; ``([], since)``
    when there is no log to read. A line cut at the end of the file is left for the next read."""
    try:
        with open(Path(log_dir) / f"{name}.log", "rb") as f:
            f.seek(since)
            data = f.read()
    except OSError:
        return [], since
    end = data.rfind(b"\n") + 1
    now = time.time()
    out = [e for line in data[:end].decode("utf-8", "replace").splitlines() if (e := parse_line(line, now))]
    return out, since + end


def log_sizes(log_dir: str, names: Sequence[str]) -> dict[str, int]:
    """The size in bytes of each master's log (``LOG_DIR/NAME.log``, appended to across restarts) now; a log
    that does not exist counts 0."""
    out = {}
    for name in names:
        try:
            out[name] = (Path(log_dir) / f"{name}.log").stat().st_size
        except OSError:
            out[name] = 0
    return out
