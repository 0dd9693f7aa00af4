"""The monitor's command-palette entries (ctrl+p): typed knob values, scenarios, page layout presets,
recording, replay and the view commands."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol

from textual.app import SystemCommand

__all__ = ["PaletteHost", "system_commands"]


class PaletteHost(Protocol):
    """What the entries call: the actions of :class:`kvtui.tui.app.KvtuiApp`."""

    layouts: dict[str, str]
    screenshot_dir: str

    @property
    def scenarios(self) -> Sequence[str]: ...

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None: ...
    def action_settings(self, focus: str = "overlap") -> None: ...
    def set_scenario(self, name: str) -> None: ...
    def set_layout(self, name: str) -> None: ...
    def action_toggle_recording(self) -> None: ...
    def action_replay_pause(self) -> None: ...
    def action_replay_start(self) -> None: ...
    def action_replay_end(self) -> None: ...
    def action_window(self) -> None: ...
    def action_freeze(self) -> None: ...
    def action_screenshot(self) -> str | None: ...
    def action_kill_leader(self) -> None: ...


def system_commands(app: PaletteHost) -> Iterable[SystemCommand]:
    """Command-palette entries of the current mode (entries whose action ``app.check_action`` turns off are
    left out): typed knob values, every scenario and page layout preset, recording, replay, and the view
    commands."""
    if app.check_action("overlap", ()):  # not "settings": that priority key is off while the palette is open
        yield SystemCommand("Set prefix overlap %", "Type the shared-prefix fraction",
                            lambda: app.action_settings("overlap"))
        yield SystemCommand("Set request rate", "Type req/s (0 = closed loop)", lambda: app.action_settings("rate"))
        yield SystemCommand("Set pool size", "Type the number of shared prefixes",
                            lambda: app.action_settings("pool"))
        for name in app.scenarios:
            yield SystemCommand(f"Scenario: {name}", "Switch the synthetic scenario",
                                lambda name=name: app.set_scenario(name))
        for name, summary in app.layouts.items():
            yield SystemCommand(f"Layout: {name}", f"Page layout {summary} (after the requests under way)",
                                lambda name=name: app.set_layout(name))
    if app.check_action("kill_leader", ()):
        yield SystemCommand("Kill the leader (HA)", "SIGKILL the serving master; watch the failover (K)",
                            app.action_kill_leader)
    if app.check_action("toggle_recording", ()):
        yield SystemCommand("Start / stop recording", "Record the session to a file (ctrl+r)",
                            app.action_toggle_recording)
    if app.check_action("replay_pause", ()):
        yield SystemCommand("Replay: play / pause", "Pause or resume the playback", app.action_replay_pause)
        yield SystemCommand("Replay: go to start", "Seek to the first frame", app.action_replay_start)
        yield SystemCommand("Replay: go to end", "Seek to the last frame", app.action_replay_end)
    yield SystemCommand("Toggle latency window", "Last N seconds ↔ whole session", app.action_window)
    yield SystemCommand("Freeze / unfreeze view", "Stop applying frames", app.action_freeze)
    yield SystemCommand("Save SVG screenshot", f"Into {app.screenshot_dir}/", app.action_screenshot)
