"""The monitor against the real store: the figures on screen are the run's own counters; quitting stops
every worker; `kvtui watch --headless` runs the whole app without a terminal."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
import uuid

import psutil
import pytest

from kvtui.engine.runner import Engine, EngineOptions
from kvtui.layout import PRESETS
from kvtui.live import LiveSession, synthetic_description
from kvtui.tui.app import KvtuiApp
from kvtui.tui.fmt import fmt_count, fmt_int, fmt_pct, format_bytes
from kvtui.tui.widgets import Kpis
from workload import SyntheticWorkload, WorkloadSpec

pytestmark = pytest.mark.integration


def test_figures_on_screen_are_the_runs_counters_and_quit_stops_workers(cluster):
    layout = PRESETS["tiny"]
    engine = Engine(EngineOptions(layout=layout, model=f"ui-{uuid.uuid4().hex[:6]}"), endpoints=cluster.endpoints)
    engine.start()
    pids = [engine.prefill.pid, engine.decode.pid]
    spec = WorkloadSpec(scenario="shared-system-prompt", pool=3, prompt_tokens=96, page_tokens=8)
    desc = synthetic_description(spec)
    session = LiveSession(engine, SyntheticWorkload(spec), desc, layout_text=layout.describe())
    app = KvtuiApp(session, session, refresh_hz=10)  # the waits below allow for 10 frames a second

    async def go():
        async with app.run_test(size=(120, 40)) as pilot:
            session.start()
            await pilot.pause(2.0)
            await pilot.press("p")  # pause the workload
            deadline = time.monotonic() + 10
            while session.driver.completed < session.driver.issued and time.monotonic() < deadline:
                await pilot.pause(0.1)
            await pilot.pause(0.5)  # let the timer apply a frame taken after the last request
            totals = session.agg.totals()
            assert totals["requests"] == session.driver.completed > 10
            kpis = app.query_one(Kpis).plain
            assert f"requests {fmt_int(totals['requests'])}" in kpis
            assert (f"prefill skipped {fmt_count(totals['tokens_hit'])}/{fmt_count(totals['tokens_input'])} tok "
                    f"({fmt_pct(totals['token_hit_rate'])})") in kpis
            assert f"page hits {fmt_pct(totals['page_hit_rate'])}" in kpis
            assert f"reused {format_bytes(totals['bytes_loaded'])}" in kpis
            assert f"verified {fmt_int(totals['verified_pages'])} pages" in kpis
            assert totals["verified_pages"] == totals["pages_hit"] > 0 and totals["mismatches"] == 0
            await pilot.press("q")
        return True

    try:
        assert asyncio.run(go())
        gone, alive = psutil.wait_procs([psutil.Process(p) for p in pids if psutil.pid_exists(p)], timeout=10)
        assert alive == [], "workers still running after q"
    finally:
        session.stop()


def test_watch_headless_writes_a_screenshot(tmp_path):
    shot = tmp_path / "w.svg"
    r = subprocess.run([sys.executable, "-m", "kvtui.cli", "watch", "--headless", "--duration", "4", "--layout",
                        "tiny", "--store-size", "32MiB", "--screenshot", str(shot)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-800:]
    svg = shot.read_text().replace("&#160;", " ")
    assert svg.startswith("<svg") and "requests" in svg and "Page grid" in svg
