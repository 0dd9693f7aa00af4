"""A small modal to type workload knobs: overlap %, request rate (0 = closed loop), pool size."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid, Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label

FIELDS = (  # (key, label, parse → value or ValueError)
    ("overlap", "prefix overlap %", lambda s: max(0.0, min(100.0, float(s))) / 100.0),
    ("rate", "request rate (req/s, 0 = closed loop)", lambda s: max(0.0, float(s))),
    ("pool", "pool size", lambda s: max(1, int(s))),
)


def parse(values: dict[str, str]) -> tuple[dict, list[str]]:
    """Parse typed ``values`` (by field key); returns (parsed values, error messages)."""
    out, errors = {}, []
    for key, label, conv in FIELDS:
        raw = values.get(key, "").strip()
        if raw == "":
            continue
        try:
            out[key] = conv(raw)
        except ValueError:
            errors.append(f"{label}: not a number: {raw!r}")
    return out, errors


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
                    yield Input(self._initial(key), id=f"set-{key}", type="number")
            yield Label("", id="settings-error")

    def on_mount(self) -> None:
        self.query_one(f"#set-{self.start}", Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        values = {key: self.query_one(f"#set-{key}", Input).value for key, _, _ in FIELDS}
        parsed, errors = parse(values)
        if errors:
            self.query_one("#settings-error", Label).update("; ".join(errors))
            return
        changed = {k: v for k, v in parsed.items() if v != self.current.get(k)}
        self.dismiss(changed)

    def action_cancel(self) -> None:
        self.dismiss(None)
