"""Keys, knob steps and command-palette entries of the monitor (the app's actions live in app.py)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from textual.app import SystemCommand
from textual.binding import Binding

if TYPE_CHECKING:
    from kvtui.tui.app import KvtuiApp

SCENARIOS: tuple[str, ...] = ("shared-system-prompt", "few-shot", "multi-turn", "random")
"""Same as ``workload.synthetic.SCENARIOS`` (kept here so the UI imports no workload code)."""
OVERLAP_STEP = 0.05
RATE_STEPS: tuple[float, ...] = (0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000)
WORKLOAD_ACTIONS = frozenset({"overlap", "pool", "rate", "scenario", "settings"})  # synthetic + live + controller
ENGINE_ACTIONS = frozenset({"toggle_pause", "clear_store", "toggle_recording"})  # live + controller
REPLAY_ACTIONS = frozenset({"replay_pause", "replay_step", "replay_seek", "replay_start", "replay_end",
                            "replay_speed"})  # replay (a player): these take over the keys of the live controls
SEEK_STEP_S = 10.0


def next_rate(current: float, up: bool, measured: float = 0.0) -> float:
    """The rate knob one step ``up`` or down. 0 (closed loop) sits above the top step; stepping down from it
    goes to the highest step not above the ``measured`` request rate (the lowest step, 0.5 req/s, while
    nothing has been measured yet, e.g. before the first frame), so the open loop starts near the rate the
    closed loop reached. At either end the result equals ``current`` (R in closed loop, r at 0.5 req/s):
    the app then does not call the controller and logs why nothing changed."""
    if current <= 0:
        if up:
            return 0.0
        below = [s for s in RATE_STEPS if s <= measured]
        return float(below[-1] if below else RATE_STEPS[0])
    if up:
        higher = [s for s in RATE_STEPS if s > current + 1e-9]
        return float(higher[0]) if higher else 0.0
    lower = [s for s in RATE_STEPS if s < current - 1e-9]
    return float(lower[-1] if lower else RATE_STEPS[0])


# Compact groups show their keys side by side ("rR rate"); app.tcss spaces a group's label from the next key.
_OVERLAP = Binding.Group("overlap", compact=True)
_POOL = Binding.Group("pool", compact=True)
_RATE = Binding.Group("rate", compact=True)
_STEP = Binding.Group("step", compact=True)
_SEEK = Binding.Group("seek", compact=True)
_SPEED = Binding.Group("speed", compact=True)

BINDINGS: list[Binding] = [
    Binding("question_mark", "help", "help", key_display="?"),
    Binding("q", "quit", "quit"),
    # Ctrl-C ends the monitor (Textual would only say "press ctrl+q"); priority: also from a modal or an input
    Binding("ctrl+c", "quit", "quit", show=False, priority=True),
    Binding("p,space", "toggle_pause", "pause", key_display="p"),
    # replay only (shown instead of the live controls when the app has a player; same keys, other meaning)
    Binding("space,p", "replay_pause", "play/pause", key_display="space"),
    Binding("comma", "replay_step(-1)", "step -1", key_display=",", group=_STEP),
    Binding("full_stop", "replay_step(1)", "step +1", key_display=".", group=_STEP),
    Binding("left", "replay_seek(-1)", "-10 s", key_display="←", group=_SEEK),
    Binding("right", "replay_seek(1)", "+10 s", key_display="→", group=_SEEK),
    Binding("home", "replay_start", "first"),
    Binding("end", "replay_end", "last"),
    Binding("minus,less_than_sign", "replay_speed(-1)", "slower", key_display="-", group=_SPEED),
    Binding("plus,equals_sign,greater_than_sign", "replay_speed(1)", "faster", key_display="+", group=_SPEED),
    # live
    Binding("left_square_bracket,minus", "overlap(-1)", "overlap -5 %", key_display="[", group=_OVERLAP),
    Binding("right_square_bracket,plus,equals_sign", "overlap(1)", "overlap +5 %", key_display="]", group=_OVERLAP),
    Binding("comma,less_than_sign", "pool(-1)", "pool -1", key_display="<", group=_POOL),
    Binding("full_stop,greater_than_sign", "pool(1)", "pool +1", key_display=">", group=_POOL),
    Binding("r", "rate(-1)", "rate down", key_display="r", group=_RATE),
    Binding("R", "rate(1)", "rate up", key_display="R", group=_RATE),
    Binding("s", "scenario", "scenario"),
    Binding("f", "freeze", "freeze"),
    Binding("w", "window", "window"),
    # priority: the dialog opens before the app routes the next key, so a value typed right after e reaches it
    Binding("e", "settings", "set…", priority=True),
    Binding("c", "clear_store", "clear"),
    Binding("ctrl+r", "toggle_recording", "rec"),
    Binding("M", "restart_master", "restart master", key_display="M"),  # only during an outage, embedded
    Binding("ctrl+s,S", "screenshot", "shot", key_display="S"),
]


def key_help(app: "KvtuiApp") -> list[tuple[str, str]]:
    """(keys, description) for every binding of :data:`BINDINGS` that the current mode shows (live or replay:
    bindings hidden by ``app.check_action`` are left out; disabled ones are listed). Bindings of the same
    action share one entry (``q ^c`` → quit)."""
    running = "playback" if getattr(app, "player", None) is not None else "workload"
    names = {"toggle_pause": "pause / resume the workload", "freeze": f"freeze the view ({running} keeps running)",
             "window": "latency: last N seconds ↔ whole session", "clear_store": "clear the store (asks first)",
             "screenshot": f"save an SVG screenshot into {app.screenshot_dir}/", "help": "this help",
             "quit": "quit", "scenario": "next scenario", "settings": "type overlap %, rate, pool (layout presets: ^p)",
             "overlap(1)": "prefix overlap +5 %", "overlap(-1)": "prefix overlap −5 %",
             "pool(1)": "pool size +1", "pool(-1)": "pool size −1", "rate(1)": "request rate up a step",
             "rate(-1)": "request rate down a step (from closed loop: the highest step not above the "
                         "measured rate)",
             "toggle_recording": "start / stop recording to a session file (play it: kvtui replay FILE)",
             "replay_pause": "replay: play / pause (at the end: play again from the start)", "replay_step(1)": "replay: one frame forward (pauses)",
             "replay_step(-1)": "replay: one frame back (pauses)",
             "replay_seek(1)": f"replay: forward {SEEK_STEP_S:g} s",
             "replay_seek(-1)": f"replay: back {SEEK_STEP_S:g} s",
             "replay_start": "replay: go to the start", "replay_end": "replay: go to the end",
             "replay_speed(1)": "replay: twice as fast (up to ×64)",
             "replay_speed(-1)": "replay: half as fast (down to ×⅛)",
             "restart_master": "restart the master kvtui started (offered while it is down)"}
    out: dict[str, tuple[str, str]] = {}
    for b in BINDINGS:
        action, params = _split_action(b.action)
        live_only_key = action == "restart_master" and getattr(app, "player", None) is None
        if app.check_action(action, params) is False and not live_only_key:
            continue
        keys = " ".join(app.get_key_display(Binding(k, b.action)) for k in b.key.split(","))
        if b.action in out:
            keys = f"{out[b.action][0]} {keys}"
        out[b.action] = (keys, names.get(b.action, b.description))
    return list(out.values())


def _split_action(action: str) -> tuple[str, tuple]:
    """``"pool(-1)"`` → ``("pool", (-1,))`` (the form ``check_action`` receives)."""
    from textual.actions import parse

    _, name, params = parse(action)
    return name, params


def system_commands(app: "KvtuiApp") -> Iterable[SystemCommand]:
    """Command-palette entries: typed knob values, every scenario and page layout preset, recording, replay, and
    the view commands."""
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
