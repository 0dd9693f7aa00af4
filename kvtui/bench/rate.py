"""The request-rate step of ``kvtui bench``: a closed-loop run's request rate against the rate it would reach
if only its store calls took time.

``kvtui watch``'s default workload (the first scenario, the knobs' defaults, prompts of the default length)
runs closed loop at concurrency 1 on the bench's layout for ``seconds`` after ``RATE_WARM_S`` of start-up.
Over the requests that finished in that window: ``requests_per_s`` = count ÷ seconds; ``store_ms_mean`` =
the mean over them of the store calls' time (reload probe + read, publish probe + put: the
``RequestResult`` fields ``probe_ms``, ``read_ms``, ``publish_probe_ms``, ``put_ms``); ``store_bound_rps`` =
1000 ÷ ``store_ms_mean``; ``ratios.request_rate_vs_store_bound`` = ``requests_per_s`` ÷ ``store_bound_rps``,
the share of the run's time that its store calls took. What is left is kvtui's own work per request: page
fill and verify, key hashing, the pipes between the processes. ``verify_MBps`` = Σ ``bytes_loaded`` ÷ Σ
``verify_ms`` and ``fill_MBps`` = Σ ``bytes_written`` ÷ Σ ``compute_ms`` over the same requests (10^6 B/s;
``None`` when nothing was verified or computed) say how fast those two passes over memory ran in the run.
``passes_ceiling`` = ``store_ms_mean`` ÷ (``store_ms_mean`` + ``verify_and_fill_ms_mean``): the ratio the run
would reach if those two passes were kvtui's only work per request (no hashing, pipes or Python). Every
byte of a loaded page must be read to be checked and every byte of a computed one written, and the bench's
``baselines.memory_bus`` (:func:`kvtui.bench.baselines.memory_bus`) says whether a pass could hide beside a
store call's copy on another core.
"""

from __future__ import annotations

import time

from kvtui.bench.engines import BenchEngines, BrokenStoreWatch, default_workload, say

RATE_WARM_S = 2.0  # requests that finish before this (start-up, the first publishes) are not counted


def store_ms(r) -> float:
    """The store calls' time of one ``RequestResult`` (ms): reload probe + read, publish probe + put."""
    return r.probe_ms + r.read_ms + r.publish_probe_ms + r.put_ms


def rate_figures(results: list, seconds: float) -> dict:
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
            "store_bound_rps": bound, "request_rate_vs_store_bound": rps / bound,
            "passes_ceiling": mean_store / (mean_store + sum(own) / len(own)) if mean_store > 0 else 1.0,
            "verify_MBps": sum(r.bytes_loaded for r in results) / verify_s / 1e6 if verify_s > 0 else None,
            "fill_MBps": sum(r.bytes_written for r in results) / fill_s / 1e6 if fill_s > 0 else None}


def measure_rate(engines: BenchEngines, layout, seconds: float = 8.0) -> dict:
    """Run the step on a fresh embedded cluster of ``layout`` (segment on the store node); returns
    :func:`rate_figures` plus the workload's ``scenario``, ``prompt_tokens`` and the window's ``mismatches``
    (the target is ``kvtui.bench.targets.TARGETS``). ``StoreError`` when the store broke meanwhile
    (:class:`~kvtui.bench.engines.BrokenStoreWatch`)."""
    from kvtui.config.workload import synthetic_description
    from kvtui.live import LiveSession
    from workload import SyntheticWorkload

    spec = default_workload(layout)
    say(f"request rate: {seconds:g} s of {spec.scenario} closed loop after {RATE_WARM_S:g} s, store-call time "
        "per request from the same requests…")
    engine = engines.engine(layout)
    session = LiveSession(engine, SyntheticWorkload(spec), synthetic_description(spec),
                          layout_text=layout.describe())
    finished: list = []  # (engine seconds, result) of every request, appended by the session's thread
    broken = BrokenStoreWatch()  # (a run waits an outage out: the window would count it as store-call time)
    session.subscribe_results(lambda r: finished.append((engine.now(), r)))
    session.subscribe_results(broken.count)
    try:
        session.start()
        time.sleep(RATE_WARM_S)  # (a measurement window, not a wait on a condition)
        t0 = engine.now()
        time.sleep(seconds)
        t1 = t0 + seconds
    finally:
        session.stop()
    broken.check("the request-rate step")
    results = [r for t, r in finished if t0 < t <= t1]
    out = rate_figures(results, seconds)
    out.update(scenario=spec.scenario, prompt_tokens=spec.prompt_tokens,
               mismatches=sum(r.mismatches for r in results))
    return out
