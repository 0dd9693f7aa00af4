"""The monitor's command-palette entries (ctrl+p) of its mode: typed knob values (one per knob of
:data:`kvtui.core.knobs.KNOBS`), scenarios and page layout presets (live), recording (live and a trace),
the player's (replay), and the view commands."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol

from textual.app import SystemCommand

from kvtui.core.knobs import KNOBS, SCENARIO

__all__ = ["PaletteHost", "system_commands"]


class PaletteHost(Protocol):
    """What the entries call: the actions of :class:`kvtui.tui.app.KvtuiApp`; ``monitor_mode``: ``live``,
    ``trace`` or ``replay`` (:data:`kvtui.tui.bindings.MODES`)."""

    layouts: dict[str, str]
    screenshot_dir: str
    monitor_mode: str

    @property
    def scenarios(self) -> Sequence[str]: ...

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None: ...
    def action_settings(self, focus: str | None = None) -> None: ...
    def set_knob(self, name: str, value: float | str) -> None: ...
    def set_layout(self, name: str) -> None: ...
    def action_toggle_recording(self) -> None: ...
    def action_replay_pause(self) -> None: ...
    def action_replay_start(self) -> None: ...
    def action_replay_end(self) -> None: ...
    def action_window(self) -> None: ...
    def action_freeze(self) -> None: ...
    def action_screenshot(self) -> str | None: ...
    def action_kill_leader(self) -> None: ...
    def action_failovers(self) -> None: ...


def system_commands(app: PaletteHost) -> Iterable[SystemCommand]:
    """Command-palette entries of the app's mode (a knob's only while ``app.check_action`` enables the knobs):
    typed knob values, every scenario and page layout preset, recording, replay, and the view commands."""
    live = app.monitor_mode != "replay"
    if app.monitor_mode == "live" and app.check_action("knob", (next(iter(KNOBS)), 1)):
        # (not "settings": that priority key is off while the palette is open)
        for knob in KNOBS.values():
            yield SystemCommand(f"Set {knob.label}" + (" %" if knob.unit == "%" else ""),
                                knob.help[:1].upper() + knob.help[1:], lambda name=knob.name: app.action_settings(name))
        for name in app.scenarios:
            yield SystemCommand(f"Scenario: {name}", "Switch the synthetic scenario",
                                lambda name=name: app.set_knob(SCENARIO.name, name))
        for name, summary in app.layouts.items():
            yield SystemCommand(f"Layout: {name}", f"Page layout {summary} (after the requests under way)",
                                lambda name=name: app.set_layout(name))
    if live and app.check_action("kill_leader", ()):
        yield SystemCommand("Kill the leader (HA)", "SIGKILL the serving master; watch the failover (K)",
                            app.action_kill_leader)
    if live and app.check_action("failovers", ()):
        yield SystemCommand("Failover reports (HA)", "Every failover's whole report (F)", app.action_failovers)
    if live and app.check_action("toggle_recording", ()):
        yield SystemCommand("Start / stop recording", "Record the session to a file (ctrl+r)",
                            app.action_toggle_recording)
    if app.monitor_mode == "replay":
        yield SystemCommand("Replay: play / pause", "Pause or resume the playback", app.action_replay_pause)
        yield SystemCommand("Replay: go to start", "Seek to the first frame", app.action_replay_start)
        yield SystemCommand("Replay: go to end", "Seek to the last frame", app.action_replay_end)
    yield SystemCommand("Toggle latency window", "Last N seconds ↔ whole session", app.action_window)
    yield SystemCommand("Freeze / unfreeze view", "Stop applying frames", app.action_freeze)
    yield SystemCommand("Save SVG screenshot", f"Into {app.screenshot_dir}/", app.action_screenshot)
