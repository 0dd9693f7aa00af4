"""Keys of the monitor: one binding list per mode, the help built from them, and the key names as people write them.

The monitor runs in one of three modes (:data:`MODES`), chosen from its first frame (:mod:`kvtui.tui.app`):

- ``live``: a synthetic workload (or an observed master): its knobs, pause, the store, recording;
- ``trace``: a live trace replay: its speed (``-`` / ``+``), pause, the store, recording; the synthetic
  knobs' keys only say why they do nothing there;
- ``replay``: a recording played back: the player's keys.

Each mode's main screen (:mod:`kvtui.tui.screens.monitor`) holds that mode's list, so within a mode every key
is bound once (``tests/tui/test_tui_keys.py``) and its help lists exactly its keys. Their actions are the
app's (``app.`` names them): the app enables them (``check_action``) from the frames. The app itself binds
only ``ctrl+c`` (:data:`APP_BINDINGS`, a priority key: it quits from any screen).

The knob keys are generated from :data:`kvtui.core.knobs.KNOBS` and :data:`~kvtui.core.knobs.SCENARIO`: each
knob's down and up keys (``knob('overlap', 1)``), with its help text. A binding's ``description`` is its name
in the key bar, its ``tooltip`` what the help says (``{screenshot_dir}`` and ``{running}`` filled in).
"""

from __future__ import annotations

from typing import Protocol

from textual.actions import parse
from textual.binding import Binding
from textual.keys import format_key

from kvtui.core.knobs import KNOBS, SCENARIO, Knob

__all__ = ["MODES", "APP_BINDINGS", "PALETTE_TEXT", "SEEK_STEP_S", "TRACE_KEYS_TEXT", "action_of", "key_help",
           "keys_of", "readme_key"]

SEEK_STEP_S = 10.0  # one ← / → in replay (seconds of the recording)
TRACE_KEYS_TEXT = "- + speed, p pause"  # the trace's own keys, as the synthetic knobs' keys say them there


def action_of(binding: Binding) -> tuple[str, tuple]:
    """``(action, parameters)`` of ``binding`` without its namespace: ``("knob", ("pool", -1))``."""
    _, name, params = parse(binding.action)
    return name, params


def _keys(chars: tuple[str, ...]) -> str:
    """A binding's key string of ``chars`` (``","`` is ``comma`` there: the comma separates keys)."""
    return ",".join("comma" if c == "," else c for c in chars)


def _knob_bindings(knob: Knob) -> list[Binding]:
    """The down and up keys of ``knob``: a compact group (``[] overlap`` in the key bar)."""
    group = Binding.Group(knob.name, compact=True)
    return [Binding(_keys(knob.key_chars(up)), f"app.knob({knob.name!r}, {1 if up else -1})",
                    f"{knob.name} {'up' if up else 'down'}", key_display=knob.keys[int(up)], group=group,
                    tooltip=knob.key_help(up)) for up in (False, True)]


def _key_name(char: str) -> str:
    """Textual's name of the key of ``char`` (``[`` → ``left_square_bracket``)."""
    return next(iter(Binding.make_bindings([Binding(_keys((char,)), "")]))).key


def _not_for_a_trace(taken: set[str], others: tuple[Binding, ...]) -> list[Binding]:
    """The keys of the synthetic knobs (and of ``others``: the settings dialog) that a trace's own keys
    (``taken``, Textual's names) leave free, hidden in the key bar: each says why it does nothing there."""
    out = []
    named = [*((k.name, (*k.key_chars(False), *k.key_chars(True))) for k in KNOBS.values()),
             (SCENARIO.name, (SCENARIO.key,)), *((action_of(b)[0], tuple(b.key.split(","))) for b in others)]
    for name, chars in named:
        free = tuple(c for c in chars if _key_name(c) not in taken)
        if free:
            out.append(Binding(_keys(free), f"app.not_for_a_trace({name!r})", name, show=False,
                               tooltip="knobs of the synthetic scenarios: a trace replays its rows as recorded"))
    return out


def _knobs_text() -> str:
    """``overlap %, pool, rate``: the knobs the settings dialog takes, as the help says them."""
    return ", ".join(f"{k.name} %" if k.unit == "%" else k.name for k in KNOBS.values())


HELP = Binding("question_mark", "app.help", "help", key_display="?", tooltip="this help")
QUIT = Binding("q", "app.quit", "quit", tooltip="quit")
# Ctrl-C ends the monitor (Textual would only say "press ctrl+q"); priority: also from a dialog or an input
QUIT_NOW = Binding("ctrl+c", "quit", "quit", show=False, priority=True, tooltip="quit")
FREEZE = Binding("f", "app.freeze", "freeze", tooltip="freeze the view ({running} keeps running)")
WINDOW = Binding("w", "app.window", "window", tooltip="latency: last N seconds ↔ whole session")
SHOT = Binding("ctrl+s,S", "app.screenshot", "shot", key_display="S",
               tooltip="save an SVG screenshot into {screenshot_dir}/")
PAUSE = Binding("p,space", "app.toggle_pause", "pause", key_display="p", tooltip="pause / resume the workload")
CLEAR = Binding("c", "app.clear_store", "clear", tooltip="clear the store (asks first)")
REC = Binding("ctrl+r", "app.toggle_recording", "rec",
              tooltip="start / stop recording to a session file (play it: kvtui replay FILE)")
RESTART = Binding("M", "app.restart_master", "restart master", key_display="M",
                  tooltip="restart the master kvtui started (offered while it is down)")
# priority: the dialog opens before the app routes the next key, so a value typed right after e reaches it
SETTINGS = Binding("e", "app.settings", "set…", priority=True, tooltip=f"type {_knobs_text()} (layout presets: ^p)")
KILL = Binding("K", "app.kill_leader", "kill leader", key_display="K",
               tooltip="--ha: SIGKILL the serving master; a standby takes over and the failover is measured (with "
                       "an HA cluster kvtui attached to, it says why it does not)")
FAILOVERS = Binding("F", "app.failovers", "failovers", key_display="F",
                    tooltip="--ha: every failover's whole report (before the first one, it says there is none yet)")

LIVE: list[Binding] = [
    HELP, QUIT, PAUSE,
    *(b for knob in KNOBS.values() for b in _knob_bindings(knob)),
    Binding(SCENARIO.key, "app.scenario", "scenario", tooltip="next scenario"),
    FREEZE, WINDOW,
    SETTINGS, CLEAR, REC, RESTART, KILL, FAILOVERS, SHOT,
]

_SPEED = Binding.Group("speed", compact=True)
TRACE: list[Binding] = [
    HELP, QUIT, PAUSE,
    Binding("minus", "app.trace_speed(-1)", "slower", key_display="-", group=_SPEED,
            tooltip="trace: half as fast (from as fast as possible: ×64)"),
    Binding("plus,equals_sign", "app.trace_speed(1)", "faster", key_display="+", group=_SPEED,
            tooltip="trace: twice as fast (×0.5 … ×64, then as fast as possible)"),
    FREEZE, WINDOW, CLEAR, REC, RESTART, KILL, FAILOVERS, SHOT,
]
TRACE += _not_for_a_trace({b.key for b in Binding.make_bindings(TRACE)}, (SETTINGS,))

_STEP = Binding.Group("step", compact=True)
_SEEK = Binding.Group("seek", compact=True)
REPLAY: list[Binding] = [
    HELP, QUIT,
    Binding("space,p", "app.replay_pause", "play/pause", key_display="space",
            tooltip="replay: play / pause (at the end: play again from the start)"),
    Binding("comma", "app.replay_step(-1)", "step -1", key_display=",", group=_STEP,
            tooltip="replay: one frame back (pauses)"),
    Binding("full_stop", "app.replay_step(1)", "step +1", key_display=".", group=_STEP,
            tooltip="replay: one frame forward (pauses)"),
    Binding("left", "app.replay_seek(-1)", f"-{SEEK_STEP_S:g} s", key_display="←", group=_SEEK,
            tooltip=f"replay: back {SEEK_STEP_S:g} s"),
    Binding("right", "app.replay_seek(1)", f"+{SEEK_STEP_S:g} s", key_display="→", group=_SEEK,
            tooltip=f"replay: forward {SEEK_STEP_S:g} s"),
    Binding("home", "app.replay_start", "first", tooltip="replay: go to the start"),
    Binding("end", "app.replay_end", "last", tooltip="replay: go to the end"),
    Binding("minus,less_than_sign", "app.replay_speed(-1)", "slower", key_display="-", group=_SPEED,
            tooltip="replay: half as fast (down to ×⅛)"),
    Binding("plus,equals_sign,greater_than_sign", "app.replay_speed(1)", "faster", key_display="+", group=_SPEED,
            tooltip="replay: twice as fast (up to ×64)"),
    FREEZE, WINDOW, SHOT,
]

MODES: dict[str, list[Binding]] = {"live": LIVE, "trace": TRACE, "replay": REPLAY}
"""Each mode's keys, in the order the key bar and the help list them (the app's :data:`APP_BINDINGS` too)."""
APP_BINDINGS: list[Binding] = [QUIT_NOW]
"""The keys of every mode, bound on the app itself."""
PALETTE_TEXT = {"live": f"set {_knobs_text()} by value; page layout presets", "trace": "recording, view commands",
                "replay": "replay controls, view commands"}
"""What the help says the command palette (ctrl+p) offers in each mode."""


def keys_of(mode: str) -> list[str]:
    """Every key bound in ``mode`` (Textual's key names, e.g. ``left_square_bracket``), in binding order, once per
    binding that binds it (a key bound twice appears twice)."""
    return [b.key for b in Binding.make_bindings([*MODES[mode], *APP_BINDINGS])]


def readme_key(key: str) -> str:
    """A Textual key name as the README writes it: ``[``, ``Ctrl+R``, ``space``, ``←``, ``Home``."""
    if key.startswith("ctrl+"):
        return "Ctrl+" + readme_key(key.removeprefix("ctrl+")).upper()
    named = {"home": "Home", "end": "End", "enter": "Enter"}
    return named.get(key) or format_key(key)


class HelpHost(Protocol):
    """What :func:`key_help` reads of the app."""

    screenshot_dir: str

    def get_key_display(self, binding: Binding) -> str: ...


def key_help(app: HelpHost, mode: str) -> list[tuple[str, str]]:
    """(keys, description) of every key of ``mode`` (:data:`MODES`, then :data:`APP_BINDINGS`), disabled ones
    too: bindings that the help describes alike share one entry (``q ^c`` → quit)."""
    running = "playback" if mode == "replay" else "workload"
    out: dict[str, str] = {}
    for b in [*MODES[mode], *APP_BINDINGS]:
        text = (b.tooltip or b.description).format(running=running, screenshot_dir=app.screenshot_dir)
        keys = " ".join(app.get_key_display(one.with_key(one.key)) for one in Binding.make_bindings([b]))
        out[text] = f"{out[text]} {keys}" if text in out else keys
    return [(keys, text) for text, keys in out.items()]
