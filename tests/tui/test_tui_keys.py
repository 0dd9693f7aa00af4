"""The monitor's keys by mode (kvtui.tui.bindings): no key is bound twice within a mode, each mode runs on its own
screen with exactly its keys (the help lists those), and the README's keys agree with the bindings."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from textual.binding import Binding
from tui_helpers import AggSource, RecordingController, pilot_test

from kvtui.session.reader import ReplayPlayer, SessionReader
from kvtui.tui.app import KvtuiApp
from kvtui.tui.bindings import APP_BINDINGS, MODES, action_of, keys_of, readme_key
from kvtui.tui.screens import SCREENS, HelpScreen
from kvtui.tui.widgets import PageGrid

README = Path(__file__).resolve().parents[2] / "README.md"
README_EXTRAS = {"Enter", "Ctrl+P"}  # the page grid's key and Textual's command palette (not kvtui's bindings)


@pytest.mark.parametrize("mode", list(MODES))
def test_no_key_is_bound_twice_within_a_mode(mode):
    keys = keys_of(mode)
    twice = sorted({k for k in keys if keys.count(k) > 1})
    assert not twice, f"{mode} mode binds {twice} more than once"
    grid = {b.key for b in Binding.make_bindings(PageGrid.BINDINGS)}  # the focused widget's keys come first
    assert not grid & set(keys), f"{mode} mode binds the page grid's {sorted(grid & set(keys))}"


def _app(mode: str, session_file: str) -> KvtuiApp:
    if mode == "replay":
        return KvtuiApp(None, None, player=ReplayPlayer(SessionReader(session_file), clock=lambda: 0.0))
    workload = {"kind": "trace", "name": "t", "done": 1, "total": 10} if mode == "trace" else None
    return KvtuiApp(AggSource(workload=workload), RecordingController(), refresh_hz=10)


@pytest.mark.parametrize("mode", list(MODES))
def test_each_mode_has_its_screen_its_keys_and_their_help(mode, session_file):
    app = _app(mode, session_file)

    async def scenario(pilot):
        assert app.monitor_mode == mode and type(app.main_screen) is SCREENS[mode]
        active = app.screen.active_bindings
        mine = {b.key: action_of(b) for b in Binding.make_bindings([*MODES[mode], *APP_BINDINGS])}
        for key, action in mine.items():
            if app.check_action(*action) is not False:  # (M and K are offered only at their moments)
                assert key in active and action_of(active[key].binding) == action, (mode, key)
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        helped = {k for keys, _ in app.screen.keys for k in keys.split()}
        assert helped == {app.get_key_display(b.with_key(b.key)) for b in Binding.make_bindings(
            [*MODES[mode], *APP_BINDINGS])}  # exactly the mode's keys

    pilot_test(app, scenario)


def _readme_keys() -> dict[str, set[str]]:
    """The keys the README's "Keys of the monitor" names for each mode: its table and the paragraph after it
    (live), the paragraph on a trace replay, the one on a recording."""
    text = README.read_text()
    section = text[text.index("## Keys of the monitor"):]
    section = section[:section.index("\n## ", 1)]
    live, rest = section.split("\nLive, a trace replay", 1)
    trace, replay = rest.split("\nA recording", 1)

    def keys(part: str) -> set[str]:
        tokens = re.findall(r"`([^`]+)`", part)
        return {t for t in tokens if len(t) == 1 or t.startswith("Ctrl+") or t in ("space", "Home", "End", "Enter")}

    return {"live": keys(live), "trace": keys(trace), "replay": keys(replay)}


@pytest.mark.parametrize("mode", list(MODES))
def test_the_readme_names_each_modes_keys(mode):
    named = _readme_keys()[mode] - README_EXTRAS
    bound = {readme_key(k) for k in keys_of(mode)}
    assert named == bound, f"README, {mode} mode: not bound {sorted(named - bound)}, not named {sorted(bound - named)}"
