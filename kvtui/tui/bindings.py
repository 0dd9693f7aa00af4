"""Keys of the monitor: its bindings, which mode each action belongs to, and the help built from them.

The knobs' steps and the rate steps come from :mod:`kvtui.core.knobs`; the app's actions live in app.py (live
controls), replay.py (the player's keys) and palette.py (command-palette entries).
"""

from __future__ import annotations

from typing import Protocol

from textual.binding import Binding

from kvtui.core.knobs import OVERLAP, POOL, RATE, SCENARIO_KEY

WORKLOAD_ACTIONS = frozenset({"overlap", "pool", "rate", "scenario", "settings"})  # synthetic + live + controller
ENGINE_ACTIONS = frozenset({"toggle_pause", "clear_store", "toggle_recording"})  # live + controller
REPLAY_ACTIONS = frozenset({"replay_pause", "replay_step", "replay_seek", "replay_start", "replay_end",
                            "replay_speed"})  # replay (a player): these take over the keys of the live controls
TRACE_ACTIONS = frozenset({"trace_speed"})  # a live trace replay: - / + take over from the overlap keys
SEEK_STEP_S = 10.0  # one ← / → in replay (seconds of the recording)
_OVERLAP_STEP, _POOL_STEP = OVERLAP.step_text(), POOL.step_text()  # "5 %", "1"


# Compact groups show their keys side by side ("rR rate"); app.tcss spaces a group's label from the next key.
_OVERLAP = Binding.Group("overlap", compact=True)
_POOL = Binding.Group("pool", compact=True)
_RATE = Binding.Group("rate", compact=True)
_STEP = Binding.Group("step", compact=True)
_SEEK = Binding.Group("seek", compact=True)
_SPEED = Binding.Group("speed", compact=True)
_TRACE_SPEED = Binding.Group("speed", compact=True)

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
    # live, a trace replay: its speed (before the overlap bindings, which share - and +)
    Binding("minus", "trace_speed(-1)", "slower", key_display="-", group=_TRACE_SPEED),
    Binding("plus,equals_sign", "trace_speed(1)", "faster", key_display="+", group=_TRACE_SPEED),
    # live
    # (the knobs' keys as shown are kvtui.core.knobs' Knob.keys)
    Binding("left_square_bracket,minus", "overlap(-1)", f"overlap -{_OVERLAP_STEP}", key_display=OVERLAP.keys[0],
            group=_OVERLAP),
    Binding("right_square_bracket,plus,equals_sign", "overlap(1)", f"overlap +{_OVERLAP_STEP}",
            key_display=OVERLAP.keys[1], group=_OVERLAP),
    Binding("comma,less_than_sign", "pool(-1)", f"pool -{_POOL_STEP}", key_display=POOL.keys[0], group=_POOL),
    Binding("full_stop,greater_than_sign", "pool(1)", f"pool +{_POOL_STEP}", key_display=POOL.keys[1],
            group=_POOL),
    Binding(RATE.keys[0], "rate(-1)", "rate down", key_display=RATE.keys[0], group=_RATE),
    Binding(RATE.keys[1], "rate(1)", "rate up", key_display=RATE.keys[1], group=_RATE),
    Binding(SCENARIO_KEY, "scenario", "scenario"),
    Binding("f", "freeze", "freeze"),
    Binding("w", "window", "window"),
    # priority: the dialog opens before the app routes the next key, so a value typed right after e reaches it
    Binding("e", "settings", "set…", priority=True),
    Binding("c", "clear_store", "clear"),
    Binding("ctrl+r", "toggle_recording", "rec"),
    Binding("M", "restart_master", "restart master", key_display="M"),  # only during an outage, embedded
    Binding("K", "kill_leader", "kill leader", key_display="K"),  # only with kvtui's HA cluster, a leader serving
    Binding("ctrl+s,S", "screenshot", "shot", key_display="S"),
]


class HelpHost(Protocol):
    """What :func:`key_help` reads of the app."""

    screenshot_dir: str

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None: ...

    def get_key_display(self, binding: Binding) -> str: ...


def key_help(app: HelpHost) -> list[tuple[str, str]]:
    """(keys, description) for every binding of :data:`BINDINGS` that the current mode shows (live or replay:
    bindings hidden by ``app.check_action`` are left out; disabled ones are listed). Bindings of the same
    action share one entry (``q ^c`` → quit)."""
    running = "playback" if getattr(app, "player", None) is not None else "workload"
    names = {"toggle_pause": "pause / resume the workload", "freeze": f"freeze the view ({running} keeps running)",
             "window": "latency: last N seconds ↔ whole session", "clear_store": "clear the store (asks first)",
             "screenshot": f"save an SVG screenshot into {app.screenshot_dir}/", "help": "this help",
             "quit": "quit", "scenario": "next scenario", "settings": "type overlap %, rate, pool (layout presets: ^p)",
             "overlap(1)": f"prefix overlap +{_OVERLAP_STEP}", "overlap(-1)": f"prefix overlap −{_OVERLAP_STEP}",
             "pool(1)": f"pool size +{_POOL_STEP}", "pool(-1)": f"pool size −{_POOL_STEP}",
             "rate(1)": "request rate up a step",
             "rate(-1)": "request rate down a step (from closed loop: the highest step not above the "
                         "measured rate)",
             "toggle_recording": "start / stop recording to a session file (play it: kvtui replay FILE)",
             "replay_pause": "replay: play / pause (at the end: play again from the start)",
             "replay_step(1)": "replay: one frame forward (pauses)",
             "replay_step(-1)": "replay: one frame back (pauses)",
             "replay_seek(1)": f"replay: forward {SEEK_STEP_S:g} s",
             "replay_seek(-1)": f"replay: back {SEEK_STEP_S:g} s",
             "replay_start": "replay: go to the start", "replay_end": "replay: go to the end",
             "replay_speed(1)": "replay: twice as fast (up to ×64)",
             "replay_speed(-1)": "replay: half as fast (down to ×⅛)",
             "restart_master": "restart the master kvtui started (offered while it is down)",
             "kill_leader": "--ha: SIGKILL the serving master; a standby takes over and the failover is measured",
             "trace_speed(1)": "trace: twice as fast (×0.5 … ×64, then as fast as possible)",
             "trace_speed(-1)": "trace: half as fast (from as fast as possible: ×64)"}
    out: dict[str, tuple[str, str]] = {}
    for b in BINDINGS:
        action, params = _split_action(b.action)
        live_only_key = action in ("restart_master", "kill_leader") and getattr(app, "player", None) is None
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
