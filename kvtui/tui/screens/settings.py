"""A small modal to type workload knobs: overlap %, request rate (0 = closed loop), pool size."""

from __future__ import annotations

import math

from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid, Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label


def _number(raw: str, low: float, high: float, unit: str = "") -> float:
    """``raw`` as a finite number within ``[low, high]``; ``ValueError`` with the message shown otherwise."""
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"not a number: {raw!r}") from None
    if not math.isfinite(value):
        raise ValueError(f"must be a finite number, got {raw}")
    if not (low <= value <= high):
        if high == float("inf"):
            raise ValueError(f"must be at least {low:g}{unit}, got {raw}")
        raise ValueError(f"must be within {low:g}-{high:g}{unit}, got {raw}")
    return value


def _pool(raw: str) -> int:
    value = _number(raw, 1, float("inf"))
    if value != int(value):
        raise ValueError(f"must be a whole number, got {raw}")
    return int(value)


FIELDS = (  # (key, label, parse → value or ValueError); the same ranges as the command line's flags
    ("overlap", "prefix overlap %", lambda s: _number(s, 0, 100, " %") / 100.0),
    ("rate", "request rate (req/s, 0 = closed loop)", lambda s: _number(s, 0, float("inf"), " req/s")),
    ("pool", "pool size", _pool),
)


def parse(values: dict[str, str]) -> tuple[dict, list[str]]:
    """Parse typed ``values`` (by field key); returns (parsed values, error messages such as
    ``"prefix overlap %: must be within 0-100 %, got 150"``)."""
    out, errors = {}, []
    for key, label, conv in FIELDS:
        raw = values.get(key, "").strip()
        if raw == "":
            continue
        try:
            out[key] = conv(raw)
        except ValueError as exc:
            errors.append(f"{label}: {exc}")
    return out, errors


class OrderedInput(Input):
    """An :class:`Input` that runs its own key bindings (Ctrl+U, Backspace, Enter, arrows…) in the order the
    keys arrived. Textual runs a widget's bindings only after the key has bubbled up to the app, so in a burst
    of keys (a paste, ``tmux send-keys C-u 61 Enter``, a fast typist on a busy machine) ``6`` and ``1`` were
    inserted before the earlier Ctrl+U ran, which then erased them. Tab / Shift+Tab move the focus in order
    too, and keys the app had already routed to this field after such a Tab go on to the field now focused."""

    async def _on_key(self, event: events.Key) -> None:
        focused = self.screen.focused
        if focused is not self and isinstance(focused, OrderedInput):
            # routed here before an earlier Tab (handled below, in order) moved the focus: pass it on
            event.stop()
            event.prevent_default()
            focused.post_message(events.Key(event.key, event.character))
            return
        if event.key in ("tab", "shift+tab"):  # focus moves in key order too, not after later keys
            event.stop()
            event.prevent_default()
            self.screen.focus_next() if event.key == "tab" else self.screen.focus_previous()
            return
        bindings = self._bindings.key_to_bindings.get(event.key)
        if bindings and not event.is_printable:
            event.stop()
            event.prevent_default()
            await self.run_action(bindings[0].action)
            return
        await super()._on_key(event)


class SettingsScreen(ModalScreen[dict | None]):
    """Dismisses with ``{"overlap": 0..1, "rate": req/s, "pool": n}`` (fields left as they were are omitted),
    or ``None`` when cancelled. ``current``: the knobs now; ``focus``: the field to start in."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, current: dict, focus: str = "overlap") -> None:
        super().__init__()
        self.current = current
        self.start = focus

    def _initial(self, key: str) -> str:
        v = self.current.get(key)
        if v is None:
            return ""
        return f"{round(100 * v)}" if key == "overlap" else f"{v:g}"

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label("Workload settings — Enter applies, Esc cancels", id="settings-title")
            with Grid(id="settings-grid"):
                for key, label, _ in FIELDS:
                    yield Label(label)
                    yield OrderedInput(self._initial(key), id=f"set-{key}")  # free text: a bad value gets a message
            yield Label("", id="settings-error")

    def on_mount(self) -> None:
        self.query_one(f"#set-{self.start}", Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        values = {key: self.query_one(f"#set-{key}", Input).value for key, _, _ in FIELDS}
        parsed, errors = parse(values)
        if errors:
            self.query_one("#settings-error", Label).update("\n".join(errors))
            return
        changed = {k: v for k, v in parsed.items() if v != self.current.get(k)}
        self.dismiss(changed)

    def action_cancel(self) -> None:
        self.dismiss(None)
