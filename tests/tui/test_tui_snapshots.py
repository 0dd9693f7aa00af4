"""SVG snapshots (pytest-textual-snapshot) of the monitor: live, a trace replay and replay mode, each at 80×24,
120×40 and 200×60, and its dialogs.

Live: a fixed fixture frame of a seeded DemoSource on a simulated clock (a real Aggregator fed with hand-made
RequestResults). Trace: a seeded trace demo (the shipped synthetic trace against a simulated LRU store holding
a quarter of its blocks: the ideal hit rate above the achieved one). Replay: a recorded session, a paused
player on a fake clock. The app shows no wall-clock time, so the output is identical on every run. Update with
``pytest tests/tui --snapshot-update`` after a deliberate change, and look at the report.
"""

from __future__ import annotations

import pytest

from kvtui.session.reader import ReplayPlayer, SessionReader
from kvtui.testing.demo import DEMO_DISK_BYTES, DemoController, DemoSource, StaticSource, fixture_frame
from kvtui.tui.app import KvtuiApp

SIZES = [(80, 24), (120, 40), (200, 60)]
IDS = ["80x24", "120x40", "200x60"]


def monitor(controller: bool = True, frame=None) -> KvtuiApp:
    src = StaticSource(frame if frame is not None else fixture_frame())
    ctl = DemoController(DemoSource()) if controller else None
    return KvtuiApp(src, ctl, clock=lambda: 0.0)


def replay_app(session_file) -> KvtuiApp:
    player = ReplayPlayer(SessionReader(session_file), clock=lambda: 0.0)
    player.toggle_pause()
    player.seek(20.0)
    player.set_speed(2.0)
    return KvtuiApp(None, None, player=player, clock=lambda: 0.0)


@pytest.mark.parametrize("size", SIZES, ids=IDS)
def test_live(snap_compare, size):
    assert snap_compare(monitor(), terminal_size=size)


@pytest.mark.parametrize("size", SIZES, ids=IDS)
def test_trace(snap_compare, size, trace_frame):
    """A live trace replay: position, speed and ETA, the ideal beside the achieved hit rate, speed keys."""
    assert snap_compare(monitor(frame=trace_frame), terminal_size=size)


@pytest.mark.parametrize("size", SIZES, ids=IDS)
def test_replay(snap_compare, size, session_file):
    """Replay: REPLAY badge, replay keys in the footer, the recorded frame at 0:20.5 (paused, ×2)."""
    assert snap_compare(replay_app(session_file), terminal_size=size)


def test_live_disk_tier_120x40(snap_compare):
    """A store with a disk tier: ▆ disk hits in the grid and its legend, the hits from memory and from disk in
    the header, the reload's memory and disk parts in the Latency panel, the disk's use, offloads and disk
    evictions in the Store panel."""
    assert snap_compare(monitor(frame=fixture_frame(disk_bytes=DEMO_DISK_BYTES)), terminal_size=(120, 40))


@pytest.mark.parametrize("size", [(120, 40), (80, 24)], ids=["120x40", "80x24"])
def test_live_hot_replicas(snap_compare, size):
    """A store that replicates hot keys: the hits with a hot replica and the master's copies in the Store panel (at
    80×24 on one line, in place of the bar's byte line)."""
    assert snap_compare(monitor(frame=fixture_frame(replicate_hot=True)), terminal_size=size)


def test_live_60x20(snap_compare):
    assert snap_compare(monitor(), terminal_size=(60, 20))


def test_no_controller_120x40(snap_compare):
    """No controller: workload keys are shown disabled in the footer."""
    assert snap_compare(monitor(controller=False), terminal_size=(120, 40))


def test_row_detail(snap_compare):
    """Enter on the grid: the newest row's details."""
    assert snap_compare(monitor(), press=["down", "down", "enter"], terminal_size=(120, 40))


def test_settings_dialog(snap_compare):
    assert snap_compare(monitor(), press=["e"], terminal_size=(120, 40))


def test_help_screen(snap_compare):
    assert snap_compare(monitor(), press=["question_mark"], terminal_size=(100, 36))


def test_too_small(snap_compare):
    assert snap_compare(monitor(), terminal_size=(50, 12))


def test_replay_help_screen(snap_compare, session_file):
    player = ReplayPlayer(SessionReader(session_file), clock=lambda: 0.0)
    player.toggle_pause()
    assert snap_compare(KvtuiApp(None, None, player=player), press=["question_mark"], terminal_size=(100, 36))
