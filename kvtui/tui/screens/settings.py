"""A small dialog to type the workload knobs (overlap %, pool size, request rate…): one field per knob of
:data:`kvtui.core.knobs.KNOBS`, in its order.

Each field's label, unit, range and parsing are its knob's, the same as the command line's flags.

The screen is built once (the app installs it at start) and shown again on each ``e``, over an opaque
background: a translucent one makes Textual paint a tinted copy of the whole dashboard under it, in Python,
on every opening and every repaint behind it, which under load (the monitor's thread runs at nice +10) delays
the dialog by seconds; built once and opaque, an opening costs a few ms of CPU.
"""

from __future__ import annotations

from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid, Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label

from kvtui.core.knobs import KNOBS, Knob
from kvtui.tui.knob_state import same


def field_label(knob: Knob) -> str:
    """``"prefix overlap (%)"``, ``"request rate (req/s, 0 = closed loop)"``, ``"pool size"``."""
    extra = ", ".join(part for part in (knob.unit, knob.zero_text and f"0 = {knob.zero_text}") if part)
    return f"{knob.label} ({extra})" if extra else knob.label


FIELDS: tuple[tuple[Knob, str], ...] = tuple((k, field_label(k)) for k in KNOBS.values())
"""(knob, label) of each field, in the dialog's order."""


def parse(values: dict[str, str]) -> tuple[dict, list[str]]:
    """Parse typed ``values`` (by knob name, in the user's unit: overlap in %) with :meth:`Knob.parse`;
    returns (parsed values in the engine's units, error messages such as
    ``"prefix overlap (%): must be within 0-100 %, got 150"``). Empty fields are left out."""
    out, errors = {}, []
    for knob, label in FIELDS:
        raw = values.get(knob.name, "").strip()
        if raw == "":
            continue
        try:
            out[knob.name] = knob.parse(raw)
        except ValueError as exc:
            errors.append(f"{label}: {str(exc).removeprefix(knob.name + ' ')}")
    return out, errors


class OrderedInput(Input):
    """An :class:`Input` that runs its own key bindings (Ctrl+U, Backspace, Enter, arrows…) in the order the
    keys arrived. Textual runs a widget's bindings only after the key has bubbled up to the app, so in a burst
    of keys (a paste, ``tmux send-keys C-u 61 Enter``, a fast typist on a busy machine) a plain ``Input`` would
    insert ``6`` and ``1`` before the earlier Ctrl+U ran, which would then erase them. Tab / Shift+Tab move
    the focus in order too, among the fields of its dialog, and keys the app had already routed to this field
    after such a Tab go on to the field now focused."""

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
            fields = list(self.parent.query(OrderedInput)) if self.parent is not None else [self]
            step = 1 if event.key == "tab" else -1
            self.screen.set_focus(fields[(fields.index(self) + step) % len(fields)])
            return
        bindings = self._bindings.key_to_bindings.get(event.key)
        if bindings and not event.is_printable:
            event.stop()
            event.prevent_default()
            await self.run_action(bindings[0].action)
            return
        await super()._on_key(event)


class SettingsScreen(ModalScreen[dict | None]):
    """Dismisses with knob → value in the engine's units (``{"overlap": 0..1, "pool": n, "rate": req/s}``; fields
    left as they were are omitted),
    or ``None`` when cancelled. Built once; :meth:`show` puts ``current`` (the knobs now) into the fields and
    says which field (``focus``) starts with the focus, before each push."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, current: dict | None = None, focus: str | None = None) -> None:
        super().__init__()
        self.current = dict(current or {})
        self.start = focus or FIELDS[0][0].name

    def _initial(self, key: Knob) -> str:
        """The field's text at first: the knob now, in the user's unit (overlap 0.75 → ``75``)."""
        v = self.current.get(key.name)
        return "" if v is None else f"{key.user(v):g}"

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label("Workload settings — Enter applies, Esc cancels", id="settings-title")
            with Grid(id="settings-grid"):
                for knob, label in FIELDS:
                    yield Label(label)
                    # free text: a bad value gets a message
                    yield OrderedInput(self._initial(knob), id=f"set-{knob.name}")
            yield Label("", id="settings-error")

    def show(self, current: dict, focus: str | None = None) -> None:
        """Fill the fields with ``current`` and focus ``focus`` (None: the first field; call before pushing the
        screen again)."""
        self.current, self.start = dict(current), focus or FIELDS[0][0].name
        if self.is_mounted:
            for knob, _ in FIELDS:
                field = self.query_one(f"#set-{knob.name}", Input)
                field.value = self._initial(knob)
                field.cursor_position = len(field.value)
            self.query_one("#settings-error", Label).update("")
            self.set_focus(self.query_one(f"#set-{self.start}", Input))

    def on_mount(self) -> None:
        self.query_one(f"#set-{self.start}", Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        values = {knob.name: self.query_one(f"#set-{knob.name}", Input).value for knob, _ in FIELDS}
        parsed, errors = parse(values)
        if errors:
            self.query_one("#settings-error", Label).update("\n".join(errors))
            return
        changed = {k: v for k, v in parsed.items() if not same(v, self.current.get(k))}
        self.dismiss(changed)

    def action_cancel(self) -> None:
        self.dismiss(None)
