"""``kvtui bench --trace``: the replay rate of a FAST'25 trace through the engine against a bare loop of the
same store calls (:mod:`kvtui.bench.bare`) on the same cluster, one request at a time.

The two sides alternate ``rounds`` times in ABBA order, each replay from an empty store; a round's ratio
is bare-loop seconds / engine seconds of its two replays back to back, and the ratio judged is the median
of the rounds' ratios (a slow spell of the machine hits both sides of a ratio).
"""

from __future__ import annotations

import shutil
import tempfile
import time
import uuid
from dataclasses import replace
from pathlib import Path

from kvtui.bench.bare import bare_replay
from kvtui.bench.engines import BenchEngines, say
from kvtui.core.units import median


def measure_trace(engines: BenchEngines, layout, trace: str, rows: list, block_tokens: int, rounds: int,
                  bad_rows: int = 0, label: str | None = None) -> dict:
    """Replay ``rows`` (the good rows of the file ``trace``, ``block_tokens`` tokens per hash id) ``rounds``
    times through each side; returns the fields of ``kvtui bench --trace --json``: per-round seconds, hits and
    ratios, each side's best run (seconds, requests/s, page hits) and the ratios (median of the rounds, and of
    the best runs). ``bad_rows``: how many rows the reader skipped (reported, not replayed); ``label``: the
    trace as the user named it (``synthetic``), reported as ``trace`` (default: the file). The bare loop
    reads ``rows`` themselves from a temporary copy (synthesized rows included), not the file."""
    from kvtui.engine.driver import Driver
    from kvtui.metrics.aggregate import Aggregator
    from workload import TraceWorkload
    from workload.synthesis import rows_to_jsonl

    engines = replace(engines, model=f"{engines.model}-engine-{uuid.uuid4().hex[:6]}")
    say(f"starting embedded cluster and workers ({layout.describe()})…")
    engine = engines.engine(layout)
    done: list[dict] = []
    folder = Path(tempfile.mkdtemp(prefix="kvtui-bench-trace-"))
    bare_trace = folder / "rows.jsonl"  # the very rows the engine replays (--prefix-scale & co. applied)
    try:
        bare_trace.write_text(rows_to_jsonl(rows), encoding="utf-8")
        for r in range(rounds):
            times = {}
            for side in ("engine", "bare loop")[:: 1 if r % 2 == 0 else -1]:  # ABBA: warm-up favours neither
                engine.clear_store()
                say(f"round {r + 1}/{rounds}: replaying {len(rows)} rows "
                    + ("through the engine, one request at a time…" if side == "engine"
                       else "with a bare loop of the same store calls…"))
                if side == "engine":
                    # built before the clock starts, as the bare loop builds its own
                    requests = list(TraceWorkload(rows, block_tokens=block_tokens, speed=None))
                    agg = Aggregator()
                    t0 = time.perf_counter()
                    Driver(engine, requests, agg.add, concurrency=1).run()
                    times[side] = time.perf_counter() - t0
                    del requests
                else:
                    n, times[side], bare_hits = bare_replay(engine.endpoints.as_dict(), layout.as_dict(),
                                                            f"bare-{uuid.uuid4().hex[:6]}", str(bare_trace),
                                                            block_tokens)
            engine_s, bare_s = times["engine"], times["bare loop"]
            s = agg.summary()
            done.append({"engine_s": engine_s, "bare_loop_s": bare_s, "ratio": bare_s / engine_s,
                         "pages_hit": s["pages_hit"], "tokens_hit": s["tokens_hit"],
                         "token_hit_rate": s["token_hit_rate"], "mismatches": s["mismatches"],
                         "bare_loop_pages_hit": bare_hits})
            say(f"round {r + 1}/{rounds}: engine {engine_s:.1f} s, bare loop {bare_s:.1f} s → ratio "
                f"{bare_s / engine_s:.2f}")
    finally:
        engine.stop()
        shutil.rmtree(folder, ignore_errors=True)
    engine_s = min(x["engine_s"] for x in done)
    bare_s = min(x["bare_loop_s"] for x in done)
    last = done[-1]
    return {"trace": label or trace, "rows": len(rows), "bad_rows_skipped": bad_rows, "layout": layout.as_dict(),
            "rounds": done,
            "engine": {"seconds": engine_s, "requests_per_s": len(rows) / engine_s, "pages_hit": last["pages_hit"],
                       "tokens_hit": last["tokens_hit"], "token_hit_rate": last["token_hit_rate"],
                       "mismatches": sum(x["mismatches"] for x in done)},
            "bare_loop": {"seconds": bare_s, "requests_per_s": n / bare_s, "pages_hit": last["bare_loop_pages_hit"]},
            "ratios": {"engine_vs_bare_loop": median([x["ratio"] for x in done]),
                       "engine_vs_bare_loop_best_of": bare_s / engine_s}}
