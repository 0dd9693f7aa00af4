"""The request-rate step of ``kvtui bench``: a closed-loop run's request rate against the rate it would reach
if only its store calls took time.

``kvtui watch``'s default workload (the first scenario, the knobs' defaults, prompts of the default length)
runs closed loop at concurrency 1 on the bench's layout for ``seconds`` after ``RATE_WARM_S`` of start-up.
Over the requests that finished in that window: ``requests_per_s`` = count ÷ seconds; ``store_ms_mean`` =
the mean over them of the store calls' time (reload probe + read, publish probe + put: the
``RequestResult`` fields ``probe_ms``, ``read_ms``, ``publish_probe_ms``, ``put_ms``); ``store_bound_rps`` =
1000 ÷ ``store_ms_mean``; ``ratios.request_rate_vs_store_bound`` = ``requests_per_s`` ÷ ``store_bound_rps``,
the share of the run's time that its store calls took. What is left is kvtui's own work per request: page
fill and verify, key hashing, the pipes between the processes.
"""

from __future__ import annotations

import threading
import time

from kvtui.bench.engines import BenchEngines, say
from kvtui.core.defaults import DEFAULT_PROMPT_PAGES
from kvtui.core.knobs import DEFAULT_SCENARIO, OVERLAP, POOL

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
    return {"requests": len(results), "seconds": seconds, "requests_per_s": rps, "store_ms_mean": mean_store,
            "verify_and_fill_ms_mean": sum(own) / len(own), "wall_ms_per_request": 1000.0 / rps,
            "store_bound_rps": bound, "request_rate_vs_store_bound": rps / bound}


def measure_rate(engines: BenchEngines, layout, seconds: float = 8.0) -> dict:
    """Run the step on a fresh embedded cluster of ``layout`` (segment on the store node); returns
    :func:`rate_figures` plus the workload's ``scenario``, ``prompt_tokens`` and the window's ``mismatches``
    (the target is ``kvtui.commands.bench.TARGETS``)."""
    from kvtui.live import LiveSession, synthetic_description
    from workload import SyntheticWorkload, WorkloadSpec

    spec = WorkloadSpec(scenario=DEFAULT_SCENARIO, overlap=OVERLAP.default, pool=POOL.default,
                        prompt_tokens=DEFAULT_PROMPT_PAGES * layout.page_tokens, page_tokens=layout.page_tokens, seed=0)
    say(f"request rate: {seconds:g} s of {spec.scenario} closed loop after {RATE_WARM_S:g} s, store-call time "
        "per request from the same requests…")
    engine = engines.engine(layout)
    session = LiveSession(engine, SyntheticWorkload(spec), synthetic_description(spec),
                          layout_text=layout.describe())
    window: list = []
    lock = threading.Lock()
    span = {}

    class _Window:  # a session sink: keeps the results that finish inside the window
        def add(self, r):
            t = engine.now()
            with lock:
                if "t0" in span and t <= span["t0"] + seconds:
                    window.append(r)

    session.sinks.append(_Window())
    try:
        session.start()
        time.sleep(RATE_WARM_S)  # (a measurement window, not a wait on a condition)
        with lock:
            span["t0"] = engine.now()
        time.sleep(seconds)
    finally:
        session.stop()
    with lock:
        results = list(window)
    out = rate_figures(results, seconds)
    out.update(scenario=spec.scenario, prompt_tokens=spec.prompt_tokens,
               mismatches=sum(r.mismatches for r in results))
    return out
