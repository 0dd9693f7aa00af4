"""Recorded sessions: a versioned SQLite file of frames and events that replays through the same app.

:mod:`kvtui.session.codec` turns frames into compact deltas and back; :mod:`kvtui.session.writer` records;
:mod:`kvtui.session.reader` opens, validates, seeks and plays back.
"""

FORMAT_VERSION = 1
APPLICATION_ID = 0x6B767475  # "kvtu": SQLite's application_id header field marks a kvtui session


class SessionError(Exception):
    """A file is not a kvtui session, is from a newer format, or is damaged beyond its last complete frame."""
