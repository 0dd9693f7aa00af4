"""Event log: the engine's bounded event log (``frame.events``) merged with the UI's own lines (control
changes, screenshots, clear-store results), newest at the bottom; ``frame.errors`` counts in the subtitle.
Identical consecutive lines coalesce into one with a count (``rate is already closed loop ×15``), stamped with
the time of the newest."""

from __future__ import annotations

import re
from collections import deque
from typing import ClassVar

from rich.cells import cell_len
from rich.text import Text
from textual.widget import Widget

from kvtui.core.events import EngineEvent
from kvtui.core.text import plural
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


def errors_text(errors: dict, width: int) -> str:
    """``errors: NO_AVAILABLE_HANDLE ×36, OBJECT_NOT_FOUND ×3`` (most frequent first) in at most ``width``
    cells: whole names only, then ``+N more``, never a name cut short."""
    top = sorted(errors.items(), key=lambda kv: -kv[1])
    if not top:
        return ""
    shown: list[str] = []
    for i, (k, v) in enumerate(top):
        more = len(top) - i - 1
        text = "errors: " + ", ".join([*shown, f"{k} ×{fmt_int(v)}"]) + (f" +{more} more" if more else "")
        if len(text) > width and shown:
            break
        shown.append(f"{k} ×{fmt_int(v)}")
    rest = len(top) - len(shown)
    text = "errors: " + ", ".join(shown) + (f" +{rest} more" if rest else "")
    if len(text) > width:  # not even one name fits: the total
        text = f"errors ×{fmt_int(sum(errors.values()))} ({plural(len(top), 'code')})"
    if len(text) > width:
        text = f"errors ×{fmt_int(sum(errors.values()))}"
    return text


def repeats(e: EngineEvent) -> int:
    """How many identical lines ``e`` stands for (1 unless coalesced)."""
    return int((e.data or {}).get("repeat", 1))


def shown_text(e: EngineEvent) -> str:
    """The line as the log shows it: its text, and ``×N`` when it stands for N identical lines."""
    n = repeats(e)
    return f"{e.text} ×{n}" if n > 1 else e.text


def coalesce(events: list[EngineEvent]) -> list[EngineEvent]:
    """``events`` with each run of identical consecutive lines (same kind and text) as one, stamped with the
    run's newest time, its count in ``data["repeat"]``."""
    out: list[EngineEvent] = []
    for e in events:
        last = out[-1] if out else None
        if last is not None and last.kind == e.kind and last.text == e.text:
            out[-1] = EngineEvent(e.kind, e.t, e.text, {**(e.data or {}), "repeat": repeats(last) + repeats(e)})
        else:
            out.append(e)
    return out


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
        """Add one local line stamped ``t`` (seconds of the run, i.e. the latest frame's ``t``); the same line
        as the newest local one only counts one more of it."""
        last = self.local[-1] if self.local else None
        if last is not None and last.kind == kind and last.text == text:
            self.local[-1] = EngineEvent(kind, t, text, {"repeat": repeats(last) + 1})
        else:
            self.local.append(EngineEvent(kind, t, text))
        self.refresh()

    def update_frame(self, frame) -> None:
        if frame.events is not self.engine_events and tuple(frame.events) != self.engine_events:
            self.engine_events = tuple(frame.events)
            self.refresh()
        errors = dict(frame.errors or {})
        if errors != self.errors:
            self.errors = errors
            self.border_subtitle = errors_text(errors, max(8, self.size.width))

    def on_resize(self) -> None:
        self.border_subtitle = errors_text(self.errors, max(8, self.size.width))

    def entries(self) -> list[EngineEvent]:
        """Engine and UI events in time order (stable), at most ``keep``, identical consecutive ones coalesced
        (the count in ``data["repeat"]``, :func:`repeats`). A local control line that the engine has echoed
        with the same text (it applied the change) is shown once, as the engine's."""
        echoed = {e.text for e in self.engine_events if e.kind == "control"}
        local = [e for e in self.local if not (e.kind == "control" and e.text in echoed)]
        merged = [*self.engine_events, *local] if self.ui_last else sorted([*self.engine_events, *local],
                                                                            key=lambda e: e.t)
        return coalesce(merged)[-self.keep:]

    @property
    def texts(self) -> list[str]:
        """Plain text of every entry as shown (for tests): ``'rate is already closed loop ×15'``."""
        return [shown_text(e) for e in self.entries()]

    def wrapped(self, width: int, height: int) -> list[Text]:
        """The last ``height`` lines of the entries wrapped to ``width`` cells (continuation lines indented;
        words are kept whole, see :func:`wrap_words`)."""
        time_s = self.get_component_rich_style("event-log--time", partial=True)
        out: list[Text] = []
        for e in reversed(self.entries()):
            stamp = f"{fmt_elapsed(e.t):>5} "
            body_w = max(8, width - len(stamp))
            style = self.get_component_rich_style(KIND_CLASS.get(e.kind, "event-log--info"), partial=True)
            chunks = wrap_words(shown_text(e), body_w)
            pad = len(stamp) - len(stamp.lstrip())  # (in a span of their own: SVG renderers drop leading spaces)
            lines = [(Text(" " * pad) + Text(stamp.lstrip(), time_s) if i == 0 else Text(" " * len(stamp)))
                     + Text(c, style) for i, c in enumerate(chunks)]
            out = lines + out
            if len(out) >= height:
                break
        return out[-height:]

    def render(self) -> Text:
        subtitle = errors_text(self.errors, max(8, self.size.width))
        if subtitle != self.border_subtitle:  # (fitted to the width the panel has now)
            self.border_subtitle = subtitle
        lines = self.wrapped(self.size.width, max(1, self.size.height))
        if not lines:
            return Text("no events yet", self.get_component_rich_style("event-log--time", partial=True))
        return Text("\n").join(lines)
