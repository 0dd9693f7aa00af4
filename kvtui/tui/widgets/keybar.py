"""The key bar at the bottom (the monitor's footer) and its status line.

One line: the keys the mode offers (``? help  q quit  p pause  [] overlap …``), in the order of the mode's
binding list, ``^p palette`` at the right end. When they do not fit, the least important keys (:data:`RANK`)
are left out, whole: a key and its name are never cut. Keys of a compact group share one name (``[] overlap``,
``rR rate``). A disabled key shows dim. :meth:`KeyBar.flash` puts a one-line message (why a key does nothing
here) in place of the keys for a few seconds.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rich.text import Text
from textual.actions import parse
from textual.timer import Timer
from textual.widget import Widget

from kvtui.tui.widgets.styled import CachedStyles

RANK = {"help": 0, "quit": 1, "restart_master": 2, "kill_leader": 2, "failovers": 2, "toggle_pause": 3,
        "replay_pause": 3, "trace_speed": 4,
        "settings": 4, "replay_seek": 4, "overlap": 5, "replay_speed": 5, "rate": 6, "pool": 7, "replay_step": 7,
        "scenario": 8, "freeze": 9, "window": 10, "replay_start": 11, "replay_end": 11, "clear_store": 12,
        "toggle_recording": 13, "screenshot": 14}
"""Importance of each action in the key bar (lower stays longer when the width is short); a knob's key
(``knob('overlap', 1)``) ranks by the knob's name, an action not listed last."""
FLASH_S = 5.0
PALETTE = ("^p", "palette")


def _rank(action: str) -> int:
    """The :data:`RANK` of ``action`` (``app.knob('overlap', 1)`` → that of ``overlap``)."""
    _, name, params = parse(action)
    return RANK.get(str(params[0]) if name == "knob" and params else name, 20)


class KeyBar(CachedStyles, Widget):
    """The footer line. ``order``: the actions of the mode's bindings, in the order the bar shows them."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {"keybar--key", "keybar--name", "keybar--disabled", "keybar--flash"}
    DEFAULT_CSS = """
    KeyBar { height: 1; dock: bottom; }
    """

    def __init__(self, order: Sequence[str] = (), *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.order = {action: i for i, action in reversed(list(enumerate(order)))}
        self.message: str | None = None
        self._timer: Timer | None = None

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, lambda _screen: self.refresh())

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def flash(self, text: str, seconds: float = FLASH_S) -> None:
        """Show ``text`` instead of the keys for ``seconds``."""
        self.message = text
        if self._timer is not None:
            self._timer.stop()
        self._timer = self.set_timer(seconds, self._unflash, name="keybar-flash")
        self.refresh()

    def _unflash(self) -> None:
        self.message, self._timer = None, None
        self.refresh()

    def items(self) -> list[tuple[str, str, bool, int]]:
        """``(keys, name, enabled, rank)`` of every key on offer, in binding order (one per action or group)."""
        out: dict[str, list] = {}
        app = self.app
        actives = sorted(self.screen.active_bindings.values(), key=lambda a: self.order.get(a.binding.action, 999))
        for active in actives:
            b = active.binding
            if not b.show:
                continue
            group = b.group.description if b.group is not None and b.group.compact else None
            slot = f"group:{group}" if group else b.action
            key = b.key_display or app.get_key_display(b)
            if slot in out:
                if key not in out[slot][0]:
                    out[slot][0] += key
                out[slot][2] = out[slot][2] or active.enabled
                continue
            out[slot] = [key, group or b.description, active.enabled, _rank(b.action)]
        return [tuple(v) for v in out.values()]

    def fit(self, width: int) -> tuple[list[tuple[str, str, bool, int]], int]:
        """:meth:`items` that fit ``width`` cells with the palette key, and the spaces between them: two when
        all fit so, else one, leaving out the least important first."""
        items = self.items()
        room = width - (len(PALETTE[0]) + 1 + len(PALETTE[1]) + 2)

        def need(sep: int) -> int:
            return sum(len(k) + 1 + len(n) + sep for k, n, _, _ in items) - sep

        if need(2) <= room:
            return items, 2
        while items and need(1) > room:
            worst = max(range(len(items)), key=lambda i: (items[i][3], i))
            items.pop(worst)
        return items, 1

    @property
    def plain(self) -> str:
        """The line as shown, as plain text (for tests)."""
        return self.render().plain

    def render(self) -> Text:
        width = self.size.width or 80
        out = Text(no_wrap=True, overflow="crop")
        if self.message:
            out.append(self.message, self._s("keybar--flash"))
            out.truncate(width, overflow="ellipsis")
            return out
        key_s, name_s, dim = self._s("keybar--key"), self._s("keybar--name"), self._s("keybar--disabled")
        items, sep = self.fit(width)
        for i, (keys, name, enabled, _) in enumerate(items):
            if i:
                out.append(" " * sep)
            out.append(keys + " ", key_s if enabled else dim)  # (no span starts with a space: SVG renderers
            out.append(name, name_s if enabled else dim)  # drop those)
        if getattr(self.app, "ENABLE_COMMAND_PALETTE", False):
            tail = Text(PALETTE[0] + " ", key_s) + Text(PALETTE[1], name_s)
            out.pad_right(max(1, width - out.cell_len - tail.cell_len))
            out.append_text(tail)
        return out

    def _s(self, name: str):
        return self.style_of(name)
