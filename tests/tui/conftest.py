"""Fixtures of the TUI tests (helpers live in tui_helpers.py)."""

from __future__ import annotations

import pytest
from tui_helpers import AggSource, result

from kvtui.core.pages import PageState as S
from kvtui.testing.demo import DemoController, DemoSource, StaticSource, fixture_frame, trace_fixture_frame

SESSION_FRAMES, SESSION_TICK_S = 60, 0.5


@pytest.fixture
def mixed_results():
    return [
        result(1, [S.PUBLISHED] * 6 + [S.PARTIAL]),
        result(2, [S.HIT] * 4 + [S.PUBLISHED, S.PRESENT, S.PARTIAL]),
        result(3, [S.HIT] * 2 + [S.EVICTED, S.PUBLISHED, S.COMPUTED], codes={-704: 1}),
        result(4, [S.HIT, S.MISMATCH, S.FAILED, S.FAILED], codes={-10002: 1, -200: 2}),
    ]


@pytest.fixture
def agg_source(mixed_results):
    return AggSource(mixed_results)


@pytest.fixture(scope="session")
def demo_frame():
    return fixture_frame()


@pytest.fixture(scope="session")
def trace_frame():
    """A seeded trace demo's frame (~2–3 s to build: once per session)."""
    return trace_fixture_frame()


@pytest.fixture
def static_source(demo_frame):
    return StaticSource(demo_frame)


@pytest.fixture(scope="session")
def session_file(tmp_path_factory):
    """A real session file: 60 frames (t = 0.5 … 30 s) of a seeded DemoSource, recorded through
    DemoController.toggle_recording (a SessionWriter), so its frames also say ``status["recording"]``."""
    src = DemoSource(5, tick_s=SESSION_TICK_S)
    ctl = DemoController(src, record_dir=str(tmp_path_factory.mktemp("sessions")))
    on, path = ctl.toggle_recording()
    assert on
    for _ in range(SESSION_FRAMES):
        src.frame()
    assert ctl.toggle_recording() == (False, path)
    return path
