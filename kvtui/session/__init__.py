"""Recorded sessions: a versioned SQLite file of frames and events that replays through the same app.

:mod:`kvtui.session.codec` turns frames into compact deltas and back; :mod:`kvtui.session.writer` records;
:mod:`kvtui.session.reader` opens, validates, seeks and plays back.
"""

import os

FORMAT_VERSION = 1
APPLICATION_ID = 0x6B767475  # "kvtu": SQLite's application_id header field marks a kvtui session


class SessionError(Exception):
    """A file is not a kvtui session, is from a newer format, or is damaged beyond its last complete frame."""


def is_session_file(path: str | os.PathLike[str]) -> bool:
    """True when ``path`` is a kvtui session: an SQLite file (its 16-byte header string) whose application_id
    (4 bytes, big-endian, at offset 68 of the header; sqlite.org "Database File Format" §1.3) is
    :data:`APPLICATION_ID`. Reads the first 72 bytes only; False for anything unreadable."""
    try:
        with open(path, "rb") as f:
            head = f.read(72)
    except OSError:
        return False
    return (len(head) == 72 and head[:16] == b"SQLite format 3\x00"
            and int.from_bytes(head[68:72], "big") == APPLICATION_ID)
