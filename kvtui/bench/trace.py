"""``kvtui bench --trace``: the replay rate of a FAST'25 trace through the engine against a bare loop of the
same store calls (:mod:`kvtui.bench.bare`) on the same cluster, one request at a time, and against the
same calls split over two processes (the two-process loop: what handing each request from decode's process
to prefill's costs by itself, without kvtui's work).

The three sides alternate ``rounds`` times (ABC, then CBA), each replay from an empty store; a round's
ratio is bare-loop seconds / engine seconds of its replays back to back, and the ratio judged is the median
of the rounds' ratios (a slow spell of the machine hits both sides of a ratio). ``engine_vs_two_process_loop``
(two-process seconds / engine seconds) and ``two_process_loop_vs_bare_loop`` (bare / two-process) split that
ratio into kvtui's own work and the hand-off between two processes; their product is the ratio of a round.

Each replay also counts the CPU it cost, per process, in ms per request (user + system time, psutil's
``cpu_times``): on the engine side the parent (hashing, routing, results into metrics), the decode and
prefill workers and the cluster's processes; on the bare loop's side the loop's own process (its timed loop
alone) and the same cluster processes; on the two-process loop's, its reader's timed loop, its writer from
its start-up's end to the loop's end, and the cluster processes. The README's figures show a 2-core machine's replay bound by that CPU.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
import uuid
from dataclasses import replace
from pathlib import Path

from kvtui.bench.bare import bare_replay
from kvtui.bench.engines import BenchEngines, say
from kvtui.core.units import median


SIDES = ("engine", "bare loop", "two-process loop")
"""The sides of ``bench --trace``, in a round's order (odd rounds reverse it)."""
_DOING = {"engine": "through the engine, one request at a time…",
          "bare loop": "with a bare loop of the same store calls…",
          "two-process loop": "with the same calls split over two processes (the hand-off alone)…"}


def cpu_seconds(pids: dict[str, int]) -> dict[str, float]:
    """User + system CPU seconds so far of each process ``{name: pid}`` (a process that is gone is left
    out); the difference of two readings is what a replay cost."""
    import psutil

    out = {}
    for name, pid in pids.items():
        try:
            t = psutil.Process(pid).cpu_times()
        except psutil.Error:
            continue
        out[name] = t.user + t.system
    return out


def cpu_ms_per_request(before: dict[str, float], after: dict[str, float], requests: int) -> dict[str, float]:
    """ms of CPU per request of each process read both times (``before``/``after``: :func:`cpu_seconds`)."""
    return {name: (after[name] - before[name]) * 1e3 / max(1, requests) for name in after if name in before}


def _median_per_process(rounds: list[dict[str, float]]) -> dict[str, float]:
    names = [n for n in rounds[0] if all(n in r for r in rounds)] if rounds else []
    return {n: median([r[n] for r in rounds]) for n in names}


def measure_trace(engines: BenchEngines, layout, trace: str, rows: list, block_tokens: int, rounds: int,
                  bad_rows: int = 0, label: str | None = None) -> dict:
    """Replay ``rows`` (the good rows of the file ``trace``, ``block_tokens`` tokens per hash id) ``rounds``
    times through each side (:data:`SIDES`); returns the fields of ``kvtui bench --trace --json``: per-round
    seconds, hits and ratios, each side's best run (seconds, requests/s, page hits) and the ratios (medians of
    the rounds, and engine/bare of the best runs), and ``cpu_ms_per_request``: each side's CPU per request by process, the median of the
    rounds (ms; the bare loop's ``loop`` is its timed loop alone, its cluster processes are counted over the
    loop process's whole life, start-up and close included, so they are if anything high). ``bad_rows``: how
    many rows the reader skipped (reported, not replayed); ``label``: the trace as the user named it (``synthetic``), reported as ``trace`` (default: the file). The bare loops
    read ``rows`` themselves from a temporary copy (synthesized rows included), not the file."""
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
            times, cpu, hits = {}, {}, {}
            for side in SIDES[:: 1 if r % 2 == 0 else -1]:  # ABC CBA: warm-up favours none
                engine.clear_store()
                say(f"round {r + 1}/{rounds}: replaying {len(rows)} rows " + _DOING[side])
                if side == "engine":
                    # built before the clock starts, as the bare loops build their own
                    requests = list(TraceWorkload(rows, block_tokens=block_tokens, speed=None))
                    agg = Aggregator()
                    pids = {"parent": os.getpid(), **engine.worker_pids()}
                    cpu0, t0 = cpu_seconds(pids), time.perf_counter()
                    Driver(engine, requests, agg.add, concurrency=1).run()
                    times[side] = time.perf_counter() - t0
                    cpu[side] = cpu_ms_per_request(cpu0, cpu_seconds(pids), len(rows))
                    del requests
                else:  # the cluster's processes serve the loop; the (idle) workers are left out
                    cluster = {name: pid for name, pid in engine.worker_pids().items()
                               if name not in ("prefill", "decode")}
                    cpu0 = cpu_seconds(cluster)
                    two = side == "two-process loop"
                    n, times[side], hits[side], loop_cpu, writer_cpu = bare_replay(
                        engine.endpoints.as_dict(), layout.as_dict(), f"bare-{uuid.uuid4().hex[:6]}",
                        str(bare_trace), block_tokens, two_process=two)
                    own = {"reader": loop_cpu, "writer": writer_cpu} if two else {"loop": loop_cpu}
                    cpu[side] = {**{k: v * 1e3 / max(1, n) for k, v in own.items()},
                                 **cpu_ms_per_request(cpu0, cpu_seconds(cluster), n)}
            engine_s, bare_s, two_s = times["engine"], times["bare loop"], times["two-process loop"]
            s = agg.summary()
            done.append({"engine_s": engine_s, "bare_loop_s": bare_s, "two_process_loop_s": two_s,
                         "ratio": bare_s / engine_s, "engine_vs_two_process_loop": two_s / engine_s,
                         "two_process_loop_vs_bare_loop": bare_s / two_s,
                         "pages_hit": s["pages_hit"], "tokens_hit": s["tokens_hit"],
                         "token_hit_rate": s["token_hit_rate"], "mismatches": s["mismatches"],
                         "bare_loop_pages_hit": hits["bare loop"], "two_process_loop_pages_hit": hits["two-process loop"],
                         "engine_cpu_ms_per_request": cpu["engine"],
                         "bare_loop_cpu_ms_per_request": cpu["bare loop"],
                         "two_process_loop_cpu_ms_per_request": cpu["two-process loop"]})
            say(f"round {r + 1}/{rounds}: engine {engine_s:.1f} s, bare loop {bare_s:.1f} s, two-process loop "
                f"{two_s:.1f} s → ratio {bare_s / engine_s:.2f} (engine/two-process {two_s / engine_s:.2f})")
    finally:
        engine.stop()
        shutil.rmtree(folder, ignore_errors=True)
    engine_s = min(x["engine_s"] for x in done)
    bare_s = min(x["bare_loop_s"] for x in done)
    two_s = min(x["two_process_loop_s"] for x in done)
    last = done[-1]
    return {"trace": label or trace, "rows": len(rows), "bad_rows_skipped": bad_rows, "layout": layout.as_dict(),
            "rounds": done,
            "engine": {"seconds": engine_s, "requests_per_s": len(rows) / engine_s, "pages_hit": last["pages_hit"],
                       "tokens_hit": last["tokens_hit"], "token_hit_rate": last["token_hit_rate"],
                       "mismatches": sum(x["mismatches"] for x in done)},
            "bare_loop": {"seconds": bare_s, "requests_per_s": n / bare_s, "pages_hit": last["bare_loop_pages_hit"]},
            "two_process_loop": {"seconds": two_s, "requests_per_s": n / two_s,
                                 "pages_hit": last["two_process_loop_pages_hit"]},
            "cpu_ms_per_request": {side: _median_per_process([x[f"{side}_cpu_ms_per_request"] for x in done])
                                   for side in ("engine", "bare_loop", "two_process_loop")},
            "ratios": {"engine_vs_bare_loop": median([x["ratio"] for x in done]),
                       "engine_vs_bare_loop_best_of": bare_s / engine_s,
                       "engine_vs_two_process_loop": median([x["engine_vs_two_process_loop"] for x in done]),
                       "two_process_loop_vs_bare_loop": median([x["two_process_loop_vs_bare_loop"] for x in done])}}
