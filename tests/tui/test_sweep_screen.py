"""Pilot test of a sweep result's screen (``kvtui report SWEEP.json`` in a terminal): its parts and q."""

from __future__ import annotations

from dataclasses import replace

from textual.widgets import Static
from tui_helpers import pilot_test

from kvtui.core.sweep import CURVES, SWEEP_BASE, SweepPoint, SweepResult
from kvtui.tui.screens.sweep import SweepScreen
from kvtui.tui.sweep_app import SweepApp
from kvtui.tui.widgets.sweep_curve import SweepCurve


def _sweep(points: int) -> SweepResult:
    caps = (1_000_000, 3_000_000)[:points]
    pts = tuple(SweepPoint(c, c // 512, c // 512, 20 << 20, 0.12 * (i + 1), real_token_hit_rate=0.1 * (i + 1))
                for i, c in enumerate(caps))
    return SweepResult("conversation-head", 1000, 512, 13_732_944, 0.2155,
                       replace(SWEEP_BASE, elem_bytes=8).as_dict(), pts, store={"lease_ttl_s": 10.0})


def test_the_sweep_screen_shows_curve_and_table_and_q_quits():
    app = SweepApp(_sweep(2))

    async def scenario(pilot):
        await pilot.pause()
        assert isinstance(app.screen, SweepScreen)
        curve = app.screen.query_one(SweepCurve)
        assert list(curve.series()) == list(CURVES) and curve.size.height >= 12
        head = str(app.screen.query_one("#sweep-head", Static).render())
        assert "conversation-head: 1,000 rows" in head and "read lease 10 s" in head
        await pilot.press("q")
        assert app.return_code == 0

    pilot_test(app, scenario)


def test_a_sweep_without_points_still_draws():
    app = SweepApp(_sweep(0))

    async def scenario(pilot):
        await pilot.pause()
        assert app.screen.query_one(SweepCurve).series()[CURVES[0]] == ([], [])
        await pilot.press("escape")

    pilot_test(app, scenario)


def _tiered() -> SweepResult:
    """Two DRAM sizes, each without and with a 10M disk tier."""
    from kvtui.core.sweep import PointRun, pair_sizes

    lay = replace(SWEEP_BASE, elem_bytes=4)
    sizes, _ = pair_sizes([2_000_000, 4_000_000], [0, 10_000_000], 512, lay, 0.9)
    pts = tuple(SweepPoint.of_runs(s, 0.2 + 0.1 * k, [PointRun(real_token_hit_rate=0.25 + 0.1 * k,
                                                               real_disk_token_hit_rate=0.1 if
                                                               s.disk_tokens else 0.0)],
                                   0.6, (0.2, 0.3, 0.5) if s.disk_tokens else (0.2 + 0.1 * k, 0.0, 0.2 + 0.1 * k))
                for k, s in enumerate(sizes))
    return SweepResult("synthetic", 3993, 512, 61_194_628, 0.6504, lay.as_dict(), pts, store={"lease_ttl_s": 2.0})


def test_a_dram_by_disk_sweep_shows_one_line_per_disk_size_and_the_tier_table():
    from kvtui.tui.screens.sweep import TIER_CAPTION

    app = SweepApp(_tiered())

    async def scenario(pilot):
        await pilot.pause()
        curve = app.screen.query_one(SweepCurve)
        names = list(curve.tier_series())
        assert "real · DRAM only" in names and "model · + 10M disk" in names and "MIN · + 10M disk" in names
        head = str(app.screen.query_one("#sweep-head", Static).render())
        assert TIER_CAPTION.split(";")[0] in head
        table = app.screen.query_one("#sweep-table", Static).content
        assert [c.header for c in table.columns][:3] == ["DRAM", "disk", "real"]  # a Rich Table of the tier rows
        assert table.row_count == 4
        await pilot.press("q")

    pilot_test(app, scenario)
