"""The monitor against the real store: the figures on screen are the run's own counters; quitting stops
every worker; `kvtui watch --headless` runs the whole app without a terminal."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import uuid

import psutil
import pytest
from waits import pilot_wait_for, wait_for

from kvtui.config.workload import synthetic_description
from kvtui.core.controls import SetLayout
from kvtui.core.layout import PRESETS
from kvtui.engine.engine import Engine, EngineOptions
from kvtui.live import LiveSession
from kvtui.mooncake.ops import MooncakeCluster
from kvtui.tui.app import KvtuiApp
from kvtui.tui.fmt import fmt_count, fmt_int, fmt_pct, format_bytes
from kvtui.tui.widgets import Kpis
from workload import SyntheticWorkload, WorkloadSpec

pytestmark = pytest.mark.integration


def test_figures_on_screen_are_the_runs_counters(cluster):
    layout = PRESETS["tiny"]
    engine = Engine(EngineOptions(layout=layout, model=f"ui-{uuid.uuid4().hex[:6]}"), endpoints=cluster.endpoints)
    engine.start()
    spec = WorkloadSpec(scenario="shared-system-prompt", pool=3, prompt_tokens=96, page_tokens=8)
    desc = synthetic_description(spec)
    session = LiveSession(engine, SyntheticWorkload(spec), desc, cluster=MooncakeCluster.attach(cluster.endpoints),
                          layout_text=layout.describe())
    app = KvtuiApp(session, session, refresh_hz=10)  # the waits below allow for 10 frames a second

    async def go():
        async with app.run_test(size=(120, 40)) as pilot:
            session.start()
            await pilot_wait_for(pilot, lambda: session.driver.completed > 10, 30, "more than 10 finished requests")
            await pilot.press("p")  # pause the workload
            drv = session.driver
            await pilot_wait_for(pilot, lambda: drv.paused and drv.completed == drv.issued, 10,
                                 "the paused workload's last requests", detail=lambda: (drv.completed, drv.issued))
            totals = session.agg.totals()
            assert totals["requests"] == session.driver.completed > 10
            # the timer applies a frame taken after the last request
            kpis = await pilot_wait_for(pilot, lambda: f"requests {fmt_int(totals['requests'])}" in (
                plain := app.query_one(Kpis).plain) and plain, 10, "the header with the final request count",
                detail=lambda: app.query_one(Kpis).plain)
            assert f"requests {fmt_int(totals['requests'])}" in kpis
            assert (f"prefill skipped {fmt_count(totals['tokens_hit'])}/{fmt_count(totals['tokens_input'])} tok "
                    f"({fmt_pct(totals['token_hit_rate'])})") in kpis
            assert f"page hits {fmt_pct(totals['page_hit_rate'])}" in kpis
            assert f"reused {format_bytes(totals['bytes_loaded'])}" in kpis
            assert f"verified {fmt_int(totals['verified_pages'])} pages" in kpis
            assert totals["verified_pages"] == totals["pages_hit"] > 0 and totals["mismatches"] == 0
            await pilot.press("q")
            assert app.return_code == 0
        return True

    try:
        assert asyncio.run(go())
    finally:
        session.stop()


def test_quit_stops_every_worker(cluster, monkeypatch):
    """q ends the app at once; run_app (what `kvtui watch` runs) then stops the session and its workers."""
    from kvtui.tui.app import run_app

    layout = PRESETS["tiny"]
    engine = Engine(EngineOptions(layout=layout, model=f"ui-{uuid.uuid4().hex[:6]}"), endpoints=cluster.endpoints)
    engine.start()
    pids = [engine.prefill.pid, engine.decode.pid]
    spec = WorkloadSpec(scenario="shared-system-prompt", pool=3, prompt_tokens=96, page_tokens=8)
    session = LiveSession(engine, SyntheticWorkload(spec), synthetic_description(spec),
                          cluster=MooncakeCluster.attach(cluster.endpoints), layout_text=layout.describe())
    mount = KvtuiApp.on_mount

    def on_mount(self):
        mount(self)
        self.set_timer(1.5, lambda: self.run_action("quit"))

    monkeypatch.setattr(KvtuiApp, "on_mount", on_mount)
    try:
        session.start()
        assert run_app(session, session, headless=True, duration_s=60) == 0
        assert session.driver.completed > 0
        gone, alive = psutil.wait_procs([psutil.Process(p) for p in pids if psutil.pid_exists(p)], timeout=10)
        assert alive == [], "workers still running after q"
    finally:
        session.stop()


def test_layout_switch_from_the_palette(fresh_cluster):
    """Layout presets switch while the workload runs: the requests under way finish on the old layout, later
    ones use the new page size (pages verified, prompts follow the page size); a switch that would give the
    stored pages' keys another size is refused."""
    seed, tiny = PRESETS["seed"], PRESETS["tiny"]
    engine = Engine(EngineOptions(layout=tiny, model=f"lay-{uuid.uuid4().hex[:6]}"), endpoints=fresh_cluster.endpoints)
    engine.start()  # an empty store of its own: 112 MiB seed prompts must not be evicted by earlier tests' pages
    spec = WorkloadSpec(scenario="shared-system-prompt", pool=1, prompt_tokens=8 * 8, page_tokens=8)
    results = []
    session = LiveSession(engine, SyntheticWorkload(spec), synthetic_description(spec), layout_text=tiny.describe(),
                          cluster=MooncakeCluster.attach(fresh_cluster.endpoints), layout_name="tiny", prompt_pages=8)
    session.subscribe_results(results.append)
    app = KvtuiApp(session, session, refresh_hz=10, layouts={"seed": seed.describe(), "tiny": tiny.describe()})

    async def go():
        async with app.run_test(size=(120, 40)) as pilot:
            session.start()
            await pilot_wait_for(pilot, lambda: len(results) >= 3, 30, "requests on the first layout")
            cmd = next(c for c in app.get_system_commands(app.screen) if c.title == "Layout: seed")
            cmd.callback()
            await pilot_wait_for(pilot, lambda: sum(r.page_bytes == seed.page_bytes for r in results) >= 3, 60,
                                 "3 requests on the seed layout", interval_s=0.2)
            await pilot_wait_for(pilot, lambda: seed.describe() in app.query_one(Kpis).plain
                                 and app.knobs["layout"] == "seed", 10, "the seed layout in the header",
                                 detail=lambda: (app.knobs["layout"], app.query_one(Kpis).plain))
            return [e.text for e in session.frame().events]

    try:
        texts = asyncio.run(go())
        session.driver.stop()
        session.driver.done.wait(30)
    finally:
        session.stop()
    sizes = [r.page_bytes for r in results]
    switch = sizes.index(seed.page_bytes)
    assert switch > 0 and set(sizes[:switch]) == {tiny.page_bytes} and set(sizes[switch:]) == {seed.page_bytes}
    after = results[switch:]
    assert all(r.page_tokens == 256 for r in after) and session.description["prompt_tokens"] == 8 * 256
    assert sum(r.mismatches for r in results) == 0 and sum(r.pages_hit for r in after) > 0
    assert f"layout → seed ({seed.describe()})" in texts


def test_watch_headless_writes_a_screenshot(tmp_path):
    shot = tmp_path / "w.svg"
    r = subprocess.run([sys.executable, "-m", "kvtui.cli", "watch", "--headless", "--duration", "4", "--layout",
                        "tiny", "--store-size", "32MiB", "--screenshot", str(shot)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-800:]
    svg = shot.read_text().replace("&#160;", " ")
    assert svg.startswith("<svg") and "requests" in svg and "Page grid" in svg


def test_layout_switch_refused_when_keys_would_collide(cluster):
    """Same tokens per page, other page bytes (the new pages would take the stored pages' keys), an unknown
    preset, or prompts larger than the store segment: each switch is refused with one event-log line and
    nothing changes."""
    from dataclasses import replace

    custom = replace(PRESETS["tiny"], layers=1)  # 8 tokens/page like tiny, a quarter of its bytes
    engine = Engine(EngineOptions(layout=custom, model=f"lay-{uuid.uuid4().hex[:6]}", store_bytes=32 << 20),
                    endpoints=cluster.endpoints)
    engine.start()
    spec = WorkloadSpec(scenario="random", prompt_tokens=32, page_tokens=8)
    class AsIfEmbedded(MooncakeCluster):  # the 32 MiB segment above counts as kvtui's own: seed prompts do not fit
        store_bytes = 32 << 20

    session = LiveSession(engine, SyntheticWorkload(spec), synthetic_description(spec), layout_text=custom.describe(),
                          cluster=AsIfEmbedded.attach(cluster.endpoints), prompt_pages=4)
    session.want("test", 20)  # the frames the test reads
    try:
        session.start()
        session.send(SetLayout("tiny"))
        session.send(SetLayout("huge"))
        session.send(SetLayout("seed"))

        def event_texts() -> list[str]:
            return [e.text for e in session.frame().events]

        def three_refused() -> list[str] | None:
            texts = event_texts()
            return texts if sum("refused" in t for t in texts) >= 3 else None

        refused = wait_for(three_refused, 10, "3 refused layout switches in the event log", interval_s=0.1,
                           detail=event_texts)
        assert any("layout tiny has 8 tokens per page like the current one" in t for t in refused), refused
        assert any("unknown layout 'huge'" in t for t in refused), refused
        assert any("one seed prompt (4 pages of 14.0 MiB) is larger than the store segment (32 MiB)" in t
                   for t in refused), refused
        assert engine.options.layout == custom and session.description["layout"] == "custom"
        assert session.driver.error is None and session.driver.completed > 0
    finally:
        session.stop()
