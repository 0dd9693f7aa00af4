"""``kvtui bench --ui``: what the live monitor costs the workload it shows.

Requests/s of the same scenario without and with the monitor (headless, at ``refresh_hz``), counted over
``seconds`` once ``UI_WARM_S`` have passed, alternated ``rounds`` times in ABBA order; then the monitor
process's CPU over 3 s with the workload paused. Every phase starts from an empty store.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, TypedDict

from kvtui.bench.engines import BenchEngines, BenchInputs, BrokenStoreWatch, default_workload, say
from kvtui.core.errors import KvtuiError
from kvtui.core.units import median

if TYPE_CHECKING:
    from kvtui.core.layout import PageLayout

UI_WARM_S = 1.5  # requests are counted from this long after a phase starts (the monitor's start-up)


class UiRatios(TypedDict):
    """``monitor_vs_headless`` (the median of the rounds' monitor ÷ headless) and ``monitor_vs_headless_best_of``
    (of each side's best run)."""

    monitor_vs_headless: float
    monitor_vs_headless_best_of: float


class UiFigures(BenchInputs):
    """Every figure of ``kvtui bench --ui --json`` (:func:`measure_ui`): the ``layout``, ``seconds`` counted per
    phase after ``warm_up_seconds``, the requests/s of each round by side (``rounds``: ``headless`` and
    ``monitor``), ``refresh_hz``, each side's best (``headless_rps``, ``monitor_rps``), the ``ratios`` and
    ``idle_paused_cpu_percent`` (% of one core)."""

    layout: dict[str, int]
    seconds: float
    warm_up_seconds: float
    rounds: dict[str, list[float]]
    refresh_hz: float
    headless_rps: float
    monitor_rps: float
    ratios: UiRatios
    idle_paused_cpu_percent: float


def measure_ui(engines: BenchEngines, layout: PageLayout, seconds: float, rounds: int, refresh_hz: float
               ) -> UiFigures:
    """Run the phases on one embedded cluster of ``layout``; returns the fields of ``kvtui bench --ui --json``:
    per-round rates (requests/s), each side's best, the ratios monitor/headless (median of the rounds' ratios,
    and of the best runs) and ``idle_paused_cpu_percent`` (% of one core). ``KvtuiError`` if a round without
    the monitor completed no request; ``StoreError`` when a round met a broken store (:class:`BrokenStoreWatch`)."""
    from concurrent.futures import ThreadPoolExecutor

    import psutil

    from kvtui.config.workload import synthetic_description
    from kvtui.core.engine_api import WorkerError
    from kvtui.live import LiveSession
    from kvtui.tui.app import run_app
    from workload import SyntheticWorkload

    spec = default_workload(layout)
    desc = synthetic_description(spec)
    say(f"starting embedded cluster and workers ({layout.describe()})…")
    stack = engines.engine(layout)
    engine = stack.engine
    me = psutil.Process()
    # Sessions are started from one thread made now: threads inherit the nice value of the thread that
    # starts them, and run_app leaves this thread nicer when it may not lower it again (no CAP_SYS_NICE),
    # so later rounds' feeder and collector would otherwise run nicer than kvtui watch's.
    launcher = ThreadPoolExecutor(1, thread_name_prefix="kvtui-bench-launcher")
    launcher.submit(lambda: None).result()
    try:
        runs: dict[str, list[float]] = {"headless": [], "monitor": []}
        for r in range(rounds):
            for phase in ("headless", "monitor")[:: 1 if r % 2 == 0 else -1]:  # ABBA: warm-up favours neither
                engine.clear_store()
                session = LiveSession(engine, SyntheticWorkload(spec), desc, cluster=stack.cluster,
                                      layout_text=layout.describe(), owns_engine=False)
                broken = BrokenStoreWatch()  # (a run would wait an outage out: a round would count its pause)
                session.subscribe_results(broken.count)
                say(f"round {r + 1}/{rounds}, {phase}: {seconds:g} s of {spec.scenario} after "
                    f"{UI_WARM_S:g} s of start-up…")
                counts: list[tuple[float, float]] = []

                def mark(session: LiveSession = session, counts: list[tuple[float, float]] = counts) -> None:
                    counts.append((time.monotonic(), session.agg.totals()["requests"]))

                timers = [threading.Timer(t, mark) for t in (UI_WARM_S, UI_WARM_S + seconds)]
                try:
                    launcher.submit(session.start).result()
                    for timer in timers:
                        timer.start()
                    if phase == "headless":
                        timers[1].join()
                    else:
                        run_app(session, None, headless=True, duration_s=UI_WARM_S + seconds + 0.3,
                                refresh_hz=refresh_hz)
                        timers[1].join()
                    broken.check(f"the {phase} side's round {r + 1}")
                    if session.error is not None:  # (a worker died: the round's rate would be void)
                        raise WorkerError(f"the {phase} side's round {r + 1}: {session.error}")
                    (t0, n0), (t1, n1) = counts
                    runs[phase].append((n1 - n0) / (t1 - t0))
                    say(f"round {r + 1}/{rounds}, {phase}: {runs[phase][-1]:.1f} req/s")
                finally:
                    for timer in timers:
                        timer.cancel()
                    session.stop()
        rates = {phase: max(v) for phase, v in runs.items()}
        if min(runs["headless"]) <= 0:
            raise KvtuiError("a round without the monitor completed no request: no ratio to report "
                             "(the per-round rates are above)")
        paired = median([m / h for m, h in zip(runs["monitor"], runs["headless"])])
        session = LiveSession(engine, SyntheticWorkload(spec), desc, cluster=stack.cluster,
                              layout_text=layout.describe(), owns_engine=False)
        try:
            launcher.submit(session.start).result()
            time.sleep(1.0)
            session.pause()
            session.driver.done.wait(0.5)
            say("monitor idle with the workload paused: CPU over 3 s, after 1.5 s of start-up…")
            marks: list[float] = []
            idle = [threading.Timer(t, lambda: marks.append(sum(me.cpu_times()[:2]))) for t in (1.5, 4.5)]
            for timer in idle:
                timer.start()
            run_app(session, None, headless=True, duration_s=5.0, refresh_hz=refresh_hz)
            idle_cpu = (marks[1] - marks[0]) / 3.0 * 100
        finally:
            session.stop()
    finally:
        launcher.shutdown()
        stack.stop()
    return {"layout": layout.as_dict(), "seconds": seconds, "warm_up_seconds": UI_WARM_S, "rounds": runs,
            "refresh_hz": refresh_hz,
            "headless_rps": rates["headless"], "monitor_rps": rates["monitor"],
            "ratios": {"monitor_vs_headless": paired,
                       "monitor_vs_headless_best_of": rates["monitor"] / rates["headless"]},
            "idle_paused_cpu_percent": idle_cpu}
