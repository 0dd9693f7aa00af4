"""SVG snapshots (pytest-textual-snapshot) of the monitor on a fixed fixture frame, and of replay mode on a
recorded session (a paused player on a fake clock).

The frame comes from a seeded DemoSource on a simulated clock (a real Aggregator fed with hand-made
RequestResults), and the app shows no wall-clock time, so the output is identical on every run.
Update with ``pytest tests/tui --snapshot-update`` after a deliberate change, and look at the report.
"""

from __future__ import annotations

import pytest

from kvtui.session.reader import ReplayPlayer, SessionReader
from kvtui.testing.demo import DemoController, DemoSource, StaticSource, fixture_frame
from kvtui.tui.app import KvtuiApp


def monitor(controller: bool = True) -> KvtuiApp:
    frame = fixture_frame()
    src = StaticSource(frame)
    ctl = DemoController(DemoSource()) if controller else None
    return KvtuiApp(src, ctl, clock=lambda: 0.0)


@pytest.mark.parametrize("size", [(80, 24), (120, 40), (60, 20)], ids=["80x24", "120x40", "60x20"])
def test_dashboard(snap_compare, size):
    assert snap_compare(monitor(), terminal_size=size)


def test_no_controller_120x40(snap_compare):
    """No controller: workload keys are shown disabled in the footer."""
    assert snap_compare(monitor(controller=False), terminal_size=(120, 40))


def test_help_screen(snap_compare):
    assert snap_compare(monitor(), press=["question_mark"], terminal_size=(100, 36))


def test_too_small(snap_compare):
    assert snap_compare(monitor(), terminal_size=(50, 12))


def test_replay_120x40(snap_compare, session_file):
    """Replay: REPLAY badge, replay keys in the footer, the recorded frame at 0:20.5 (paused, ×2)."""
    player = ReplayPlayer(SessionReader(session_file), clock=lambda: 0.0)
    player.toggle_pause()
    player.seek(20.0)
    player.set_speed(2.0)
    assert snap_compare(KvtuiApp(None, None, player=player, clock=lambda: 0.0), terminal_size=(120, 40))


def test_replay_help_screen(snap_compare, session_file):
    player = ReplayPlayer(SessionReader(session_file), clock=lambda: 0.0)
    player.toggle_pause()
    assert snap_compare(KvtuiApp(None, None, player=player), press=["question_mark"], terminal_size=(100, 36))
