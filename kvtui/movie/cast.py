"""asciinema v2 casts (the format asciinema-player and asciinema.org play; spec:
https://docs.asciinema.org/manual/asciicast/v2/): a header line (JSON object with ``version`` 2, ``width``,
``height``, ``timestamp``, ``env``), then one ``[t, "o", data]`` line per frame, ``t`` in seconds from the
start of the cast.

The first frame clears the terminal, hides the cursor and draws every row; each later frame redraws only the
rows that changed, each at its place (``ESC [ row ; 1 H`` then the row's cells), so a player that applies the
events in order shows exactly the monitor's screen at every frame.
"""

from __future__ import annotations

import json
from typing import TextIO

from kvtui.movie.frames import ScreenFrame

CLEAR = "\x1b[?25l\x1b[2J"  # hide the cursor, clear the screen


def move_to(row: int) -> str:
    """Cursor to the start of terminal row ``row`` (0-based)."""
    return f"\x1b[{row + 1};1H"


def cast_header(width: int, height: int, timestamp: int, title: str | None = None) -> dict:
    """The header of a cast ``width`` × ``height`` cells recorded at Unix time ``timestamp``."""
    header = {"version": 2, "width": width, "height": height, "timestamp": int(timestamp),
              "env": {"TERM": "xterm-256color", "SHELL": "/bin/sh"}}
    if title:
        header["title"] = title
    return header


class CastWriter:
    """Writes a cast to ``fp`` (text, UTF-8) frame by frame: :meth:`add` per :class:`ScreenFrame` (all of
    one size), :meth:`close` at the end (flushes; the caller owns the file). Holds only the previous frame's
    rows."""

    def __init__(self, fp: TextIO, width: int, height: int, timestamp: int, title: str | None = None):
        self.fp = fp
        self.width, self.height = width, height
        self._prev: list[str] | None = None
        self.frames = 0
        fp.write(json.dumps(cast_header(width, height, timestamp, title), ensure_ascii=False) + "\n")

    def add(self, frame: ScreenFrame) -> None:
        """Append one frame at its film time ``frame.t``. ``ValueError`` if its size is not the cast's."""
        if frame.width != self.width or frame.height != self.height:
            raise ValueError(f"frame {frame.width}×{frame.height} in a {self.width}×{self.height} cast")
        lines = frame.ansi_lines()
        if self._prev is None:
            data = CLEAR + "".join(move_to(y) + line for y, line in enumerate(lines))
        else:
            data = "".join(move_to(y) + line for y, (line, old) in enumerate(zip(lines, self._prev)) if line != old)
        self._prev = lines
        self.fp.write(json.dumps([round(frame.t, 6), "o", data], ensure_ascii=False) + "\n")
        self.frames += 1

    def close(self) -> None:
        self.fp.flush()
