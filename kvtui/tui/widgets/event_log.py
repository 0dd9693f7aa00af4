"""Event log: the engine's bounded event log (``frame.events``) merged with the UI's own lines (control
changes, screenshots, clear-store results), newest at the bottom; ``frame.errors`` counts in the subtitle."""

from __future__ import annotations

import re
from collections import deque
from typing import ClassVar

from rich.cells import cell_len
from rich.text import Text
from textual.widget import Widget

from kvtui.core.events import EngineEvent
from kvtui.tui.fmt import fmt_elapsed, fmt_int


def wrap_words(text: str, width: int) -> list[str]:
    """``text`` wrapped to lines of at most ``width`` cells. A word never breaks when it fits on a line of its
    own (it moves to the next line whole); only a word longer than a line is broken: it starts a new line and
    breaks after a "/" where it can (so a file name stays whole), then after a "-", else at the line width."""
    width = max(1, width)
    lines: list[str] = []
    line = ""
    for word in text.split():
        if cell_len(word) <= width:
            if line and cell_len(line) + 1 + cell_len(word) > width:
                lines.append(line)
                line = word
            else:
                line = f"{line} {word}" if line else word
            continue
        if line:
            lines.append(line)
        line = ""
        for piece in _pieces(word, width):  # each fits on a line
            if line and cell_len(line) + cell_len(piece) > width:
                lines.append(line)
                line = piece
            else:
                line += piece
    if line or not lines:
        lines.append(line)
    return lines


def _pieces(word: str, width: int, seps: str = "/-") -> list[str]:
    """``word`` cut after each ``seps[0]``; a piece still longer than ``width`` is cut after the next separator,
    and in the end at ``width`` cells."""
    if cell_len(word) <= width:
        return [word]
    if not seps:
        out, cur = [], ""
        for ch in word:
            if cur and cell_len(cur + ch) > width:
                out.append(cur)
                cur = ""
            cur += ch
        return [*out, cur] if cur else out
    parts = re.findall(rf"[^{re.escape(seps[0])}]*{re.escape(seps[0])}|[^{re.escape(seps[0])}]+", word)
    return [q for part in parts for q in _pieces(part, width, seps[1:])]


KIND_CLASS = {"error": "event-log--error", "outage": "event-log--outage", "control": "event-log--control",
              "ui": "event-log--ui", "info": "event-log--info"}


class EventLog(Widget):
    """Shows the newest events that fit; :meth:`add_line` adds a UI line (kind ``ui``), bounded to ``keep``."""

    COMPONENT_CLASSES: ClassVar[set[str]] = set(KIND_CLASS.values()) | {"event-log--time"}

    DEFAULT_CSS = """
    EventLog { height: 1fr; }
    """

    def __init__(self, keep: int = 200, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.engine_events: tuple = ()
        self.local: deque[EngineEvent] = deque(maxlen=keep)
        self.keep = keep
        self.errors: dict = {}
        self.border_title = "Events"
        self.ui_last = False
        """Replay: UI lines (the replay controls) follow the recorded events in the order they were added,
        since their time stamps (the replay position) jump back and forth."""

    def add_line(self, t: float, text: str, kind: str = "ui") -> None:
        """Add one local line stamped ``t`` (seconds of the run, i.e. the latest frame's ``t``)."""
        self.local.append(EngineEvent(kind, t, text))
        self.refresh()

    def update_frame(self, frame) -> None:
        if frame.events is not self.engine_events and tuple(frame.events) != self.engine_events:
            self.engine_events = tuple(frame.events)
            self.refresh()
        errors = dict(frame.errors or {})
        if errors != self.errors:
            self.errors = errors
            top = sorted(errors.items(), key=lambda kv: -kv[1])[:3]
            self.border_subtitle = ("errors: " + ", ".join(f"{k} ×{fmt_int(v)}" for k, v in top)) if top else ""

    def entries(self) -> list[EngineEvent]:
        """Engine and UI events in time order (stable), at most ``keep``. A local control line that the
        engine has echoed with the same text (it applied the change) is shown once, as the engine's."""
        echoed = {e.text for e in self.engine_events if e.kind == "control"}
        local = [e for e in self.local if not (e.kind == "control" and e.text in echoed)]
        merged = [*self.engine_events, *local] if self.ui_last else sorted([*self.engine_events, *local],
                                                                            key=lambda e: e.t)
        return merged[-self.keep:]

    @property
    def texts(self) -> list[str]:
        """Plain text of every entry (for tests)."""
        return [e.text for e in self.entries()]

    def wrapped(self, width: int, height: int) -> list[Text]:
        """The last ``height`` lines of the entries wrapped to ``width`` cells (continuation lines indented;
        words are kept whole, see :func:`wrap_words`)."""
        time_s = self.get_component_rich_style("event-log--time", partial=True)
        out: list[Text] = []
        for e in reversed(self.entries()):
            stamp = f"{fmt_elapsed(e.t):>5} "
            body_w = max(8, width - len(stamp))
            style = self.get_component_rich_style(KIND_CLASS.get(e.kind, "event-log--info"), partial=True)
            chunks = wrap_words(e.text, body_w)
            lines = [Text(stamp if i == 0 else " " * len(stamp), time_s) + Text(c, style)
                     for i, c in enumerate(chunks)]
            out = lines + out
            if len(out) >= height:
                break
        return out[-height:]

    def render(self) -> Text:
        lines = self.wrapped(self.size.width, max(1, self.size.height))
        if not lines:
            return Text("no events yet", self.get_component_rich_style("event-log--time", partial=True))
        return Text("\n").join(lines)
