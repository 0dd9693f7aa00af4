"""The request-rate step of ``kvtui bench``: a closed-loop run's request rate against the rate it would reach
if only its store calls took time, under ``--verify full`` and ``--verify sampled`` alternately.

``kvtui watch``'s default workload (the first scenario, the knobs' defaults, prompts of the default length)
runs closed loop at concurrency 1 on the bench's layout on one engine. After ``RATE_WARM_S`` of start-up the
decode worker checks its pages in each mode of :data:`RATE_ORDER` in turn (full, sampled, sampled, full:
ABBA, so a slow spell of the machine hits both modes alike) for ``seconds / 2`` each; a request that
finishes within ``RATE_SETTLE_S`` of a switch is not counted (the one under way at the switch began in the
other mode). Each mode's figures are those of the requests that finished in its two windows:
``requests_per_s`` = count ÷ seconds; ``store_ms_mean`` = the mean over them of the store calls' time (reload
probe + read, publish probe + put: the ``RequestResult`` fields ``probe_ms``, ``read_ms``,
``publish_probe_ms``, ``put_ms``); ``store_bound_rps`` = 1000 ÷ ``store_ms_mean``;
``request_rate_vs_store_bound`` = ``requests_per_s`` ÷ ``store_bound_rps``, the share of the run's time that
its store calls took. What is left is kvtui's own work per request: page fill and verify, key hashing, the
pipes between the processes. ``verify_ms_mean`` and ``fill_ms_mean`` are the two passes over memory per
request, ``verify_and_fill_ms_mean`` their sum; ``verify_MBps`` = Σ ``bytes_loaded`` ÷ Σ ``verify_ms`` and
``fill_MBps`` = Σ ``bytes_written`` ÷ Σ ``compute_ms`` over the same requests (10^6 B/s; ``None`` when nothing
was verified or computed). ``passes_ceiling`` = ``store_ms_mean`` ÷ (``store_ms_mean`` +
``verify_and_fill_ms_mean``): the ratio the run would reach if those two passes were kvtui's only work per
request (no hashing, pipes or Python); ``passes_bound_rps`` = 1000 ÷ (``store_ms_mean`` +
``verify_and_fill_ms_mean``), and ``request_rate_vs_passes_bound`` = ``requests_per_s`` ÷ it (=
``request_rate_vs_store_bound`` ÷ ``passes_ceiling``): how close the run comes to that ceiling. A full
check must read every byte of a loaded page and a fill must write every byte of a computed one; a sampled
check reads a few KiB per page (:mod:`kvtui.core.verify`), so under it the fill is the pass that is left.
The bench's ``baselines.memory_bus`` (:func:`kvtui.bench.baselines.memory_bus`) says whether a pass could
hide beside a store call's copy on another core.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, TypedDict

from kvtui.bench.engines import BenchEngines, BrokenStoreWatch, default_workload, say

if TYPE_CHECKING:
    from kvtui.core.events import RequestResult
    from kvtui.core.layout import PageLayout

RATE_WARM_S = 2.0  # requests that finish before this (start-up, the first publishes) are not counted
RATE_SETTLE_S = 0.25  # after a switch of --verify mode: the request under way finishes in the old one
RATE_ORDER = ("full", "sampled", "sampled", "full")
"""The modes of the step's windows, in order (ABBA)."""


class RateFigures(TypedDict):
    """:func:`rate_figures`: the figures of the module's note (rates per second, times in ms, MB/s = 10^6 B/s;
    ``verify_MBps`` / ``fill_MBps`` None when nothing was verified / computed)."""

    requests: int
    seconds: float
    requests_per_s: float
    store_ms_mean: float
    verify_and_fill_ms_mean: float
    wall_ms_per_request: float
    verify_ms_mean: float
    fill_ms_mean: float
    store_bound_rps: float
    request_rate_vs_store_bound: float
    passes_ceiling: float
    passes_bound_rps: float
    request_rate_vs_passes_bound: float
    verify_MBps: float | None
    fill_MBps: float | None


class RateMode(RateFigures):
    """One ``--verify`` mode's figures in :func:`measure_rate`: :class:`RateFigures`, the mode (``verify``) and
    the pages that failed verification in its windows (``mismatches``)."""

    verify: str
    mismatches: int


class RateWindow(TypedDict):
    """One window of :func:`measure_rate`: its mode (``verify``), the ``requests`` counted, their rate."""

    verify: str
    requests: int
    requests_per_s: float


class RequestRate(RateMode):
    """:func:`measure_rate`'s figures (``kvtui bench --json``'s ``request_rate``): ``--verify full``'s
    :class:`RateMode` at the top, ``sampled``'s under ``sampled``; the workload's ``scenario`` and
    ``prompt_tokens``; ``window_s`` and ``settle_s`` (s); each window in order (``windows``); ``mismatches``: over
    every window."""

    sampled: RateMode
    scenario: str
    prompt_tokens: int
    window_s: float
    settle_s: float
    windows: list[RateWindow]


def store_ms(r: RequestResult) -> float:
    """The store calls' time of one ``RequestResult`` (ms): reload probe + read, publish probe + put."""
    return r.probe_ms + r.read_ms + r.publish_probe_ms + r.put_ms


def rate_figures(results: list[RequestResult], seconds: float) -> RateFigures:
    """The figures of the module's note from the ``RequestResult`` s that finished in a ``seconds``-long
    window. ``ValueError`` when none did."""
    if not results:
        raise ValueError("no request finished in the measured window")
    rps = len(results) / seconds
    mean_store = sum(store_ms(r) for r in results) / len(results)
    own = [r.verify_ms + r.compute_ms for r in results]
    bound = 1000.0 / mean_store if mean_store > 0 else float("inf")
    verify_s = sum(r.verify_ms for r in results) / 1e3
    fill_s = sum(r.compute_ms for r in results) / 1e3
    return {"requests": len(results), "seconds": seconds, "requests_per_s": rps, "store_ms_mean": mean_store,
            "verify_and_fill_ms_mean": sum(own) / len(own), "wall_ms_per_request": 1000.0 / rps,
            "verify_ms_mean": verify_s * 1e3 / len(results), "fill_ms_mean": fill_s * 1e3 / len(results),
            "store_bound_rps": bound, "request_rate_vs_store_bound": rps / bound,
            "passes_ceiling": mean_store / (mean_store + sum(own) / len(own)) if mean_store > 0 else 1.0,
            "passes_bound_rps": 1000.0 / (mean_store + sum(own) / len(own)),
            "request_rate_vs_passes_bound": rps * (mean_store + sum(own) / len(own)) / 1000.0,
            "verify_MBps": sum(r.bytes_loaded for r in results) / verify_s / 1e6 if verify_s > 0 else None,
            "fill_MBps": sum(r.bytes_written for r in results) / fill_s / 1e6 if fill_s > 0 else None}


def measure_rate(engines: BenchEngines, layout: PageLayout, seconds: float = 8.0) -> RequestRate:
    """Run the step on a fresh embedded cluster of ``layout`` (segment on the store node), ``seconds`` counted
    per mode (in two windows each, :data:`RATE_ORDER`). Returns :func:`rate_figures` of ``--verify full``'s
    requests with ``verify`` = ``full`` and the window's ``mismatches``, and under ``sampled`` the same of
    ``--verify sampled``'s; ``windows``: each window's mode, requests and rate, in order; ``window_s``,
    ``settle_s``; the workload's ``scenario`` and ``prompt_tokens``; ``mismatches``: over every window (the
    targets are ``kvtui.bench.targets.TARGETS``). ``StoreError`` when the store broke meanwhile
    (:class:`~kvtui.bench.engines.BrokenStoreWatch`)."""
    from kvtui.config.workload import synthetic_description
    from kvtui.live import LiveSession
    from workload import SyntheticWorkload

    spec = default_workload(layout)
    window = seconds / RATE_ORDER.count("full")
    say(f"request rate: {spec.scenario} closed loop, after {RATE_WARM_S:g} s windows of {window:g} s with each "
        f"page checked {', '.join(RATE_ORDER)} (--verify), store-call time per request from the same requests…")
    stack = engines.engine(layout)
    engine = stack.engine
    session = LiveSession(engine, SyntheticWorkload(spec), synthetic_description(spec), cluster=stack.cluster,
                          layout_text=layout.describe())
    finished: list[tuple[float, RequestResult]] = []  # (engine seconds, result) of every request, appended by the
    # session's thread
    broken = BrokenStoreWatch()  # (a run waits an outage out: the window would count it as store-call time)
    session.subscribe_results(lambda r: finished.append((engine.now(), r)))
    session.subscribe_results(broken.count)
    spans: list[tuple[str, float, float]] = []  # (mode, start, end) of each window, engine seconds
    try:
        session.start()
        time.sleep(RATE_WARM_S)  # (a measurement window, not a wait on a condition)
        for mode in RATE_ORDER:
            engine.set_verify(mode)
            time.sleep(RATE_SETTLE_S)
            t0 = engine.now()
            time.sleep(window)
            spans.append((mode, t0, t0 + window))
    finally:
        session.stop()
    broken.check("the request-rate step")
    counted = [(m, [r for t, r in finished if a < t <= b]) for m, a, b in spans]
    modes: dict[str, RateMode] = {}
    for mode in dict.fromkeys(RATE_ORDER):
        results = [r for m, rs in counted if m == mode for r in rs]
        modes[mode] = {**rate_figures(results, window * RATE_ORDER.count(mode)), "verify": mode,
                       "mismatches": sum(r.mismatches for r in results)}
    return {**modes["full"], "sampled": modes["sampled"], "scenario": spec.scenario,
            "prompt_tokens": spec.prompt_tokens, "window_s": window, "settle_s": RATE_SETTLE_S,
            "windows": [{"verify": m, "requests": len(rs), "requests_per_s": len(rs) / window} for m, rs in counted],
            "mismatches": sum(f["mismatches"] for f in modes.values())}
