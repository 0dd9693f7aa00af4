"""``kvtui sweep``: the hit rate of a trace through the real Mooncake store at several store capacities, beside
the offline LRU model and Belady's optimal cache at the same capacities and the unbounded ideal
(:mod:`workload.stats`).

Each point runs on a **fresh embedded cluster** whose segment is sized for that capacity
(:func:`kvtui.core.sweep.point_size`), so every point starts from an empty store (a segment's size is fixed
when its node mounts it, so clearing one store between points could not change its capacity). The trace is
replayed as ``kvtui run --trace … --speed max --concurrency 1`` does (:class:`kvtui.live.LiveSession`: the
same engine, driver and aggregator); a point's hit rate is the summary's token hit rate, hit tokens ÷ the
rows' input tokens, the denominator of the offline figures, and its miss reasons the summary's ``misses``.
At the end of each point one scrape of the master's ``/metrics`` (which grants no lease) gives the objects
held, the bytes allocated, so the measured per-object overhead, and the evicted keys. With ``repeats`` > 1
each point is replayed that many times, each on a fresh cluster, one after the other
(:class:`~kvtui.core.sweep.SweepPoint`: the median repeat's figures, every repeat kept).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypedDict

from kvtui.core.sweep import PointRun, PointSize, SweepPoint, SweepResult

if TYPE_CHECKING:
    from kvtui.bench.engines import StartStack
    from kvtui.core.layout import PageLayout
    from kvtui.launch import Stack
    from kvtui.mooncake.ops import MooncakeCluster
    from workload import TraceRow

POLL_S = 0.25  # how often the progress callback is called while a point runs


class _PointStatus(TypedDict):
    """What every progress call says (see :class:`PointStatus`)."""

    real: float
    keys: int


class PointStatus(_PointStatus, total=False):
    """A point's progress (:func:`run_sweep`'s ``progress``): the ``real`` token hit rate so far (0..1), the most
    ``keys`` the store held; ``repeat``: which replay of the point (0 first); ``done``: that replay has ended."""

    repeat: int
    done: bool


Progress = Callable[[int, int, PointStatus], None]
"""``progress(point index, rows done in that point, status)``."""


@dataclass(frozen=True)
class SweepPlan:
    """What to sweep: ``rows`` (``workload.TraceRow``, the good rows of the trace), ``label`` (the trace as
    the user named it), ``block_tokens``, the page ``layout``, one :class:`~kvtui.core.sweep.PointSize` per
    capacity (ascending), the page keys' ``model``, the embedded master's read lease ``lease_ttl_s``
    (seconds), native logs' ``log_dir`` (None: a new folder per cluster), the network ``isolation`` line
    (:func:`kvtui.commands.common.isolate`), ``sizing`` (the result's ``sizing`` dict),
    ``bad_rows_skipped``, ``synthesis`` (the trace synthesis applied to ``rows``, ``Synthesis.as_dict()``,
    or None), ``repeats`` (replays of each point, each on a fresh cluster) and the workers' store client,
    ``worker_client`` (``kvtui.mooncake.cluster.WORKER_CLIENTS``: run's default for one store node is
    ``dummy``)."""

    rows: list[TraceRow]
    label: str
    block_tokens: int
    layout: PageLayout
    sizes: tuple[PointSize, ...]
    model: str
    lease_ttl_s: float
    log_dir: str | None
    isolation: str | None
    sizing: dict[str, Any]
    bad_rows_skipped: int = 0
    synthesis: dict[str, Any] | None = None
    repeats: int = 1
    worker_client: str = "real"


def offline_curve(plan: SweepPlan) -> tuple[list[float], list[float], float, int]:
    """``(LRU token hit rate per point, Belady MIN token hit rate per point, unbounded ideal, input tokens)`` of
    the plan's rows (0..1 rates; :func:`workload.stats.hit_rate_curve` and
    :func:`workload.stats.optimal_hit_rate_curve` at each point's capacity, the ``kvtui trace-stats --capacity``
    computation)."""
    from workload.stats import hit_rate_curve, optimal_hit_rate_curve

    caps = [s.capacity_tokens for s in plan.sizes]
    curve = hit_rate_curve(plan.rows, [*caps, None], plan.block_tokens)
    best = optimal_hit_rate_curve(plan.rows, caps, plan.block_tokens)
    input_tokens = sum(r.input_length for r in plan.rows)
    return [rate for _cap, rate in curve[:-1]], [rate for _cap, rate in best], curve[-1][1], input_tokens


def run_sweep(plan: SweepPlan, start: StartStack, progress: Progress | None = None
              ) -> tuple[SweepResult, BaseException | None]:
    """Run every point of ``plan``; returns the result and what stopped it early, if anything: the
    ``KeyboardInterrupt`` of a Ctrl-C or SIGTERM, or the ``StoreError`` of a point whose store broke (its
    master or store node stopped answering: a run would wait for ever, and the point's hit rate would be
    void). The result then holds the points that finished, ``interrupted`` True; the caller writes it, then
    re-raises or says it; a point cut short keeps the repeats that finished (none: it is left out).
    ``start(options, cluster_options) -> Stack`` starts a cluster and an engine over it (the command's, so that
    start-up failures are one line); ``progress(point index, rows done in that replay, status)`` is called every
    :data:`POLL_S` s and when a replay ends (``status``: ``repeat`` index, ``real`` token hit rate so far,
    ``keys``; ``done`` at the end of a replay).
    ``RuntimeError`` (one line) if a point's driver fails."""
    from kvtui import __version__
    from kvtui.engine.options import EngineOptions
    from kvtui.mooncake.client import StoreError
    from kvtui.mooncake.cluster import ClusterOptions
    from kvtui.session.writer import mooncake_version

    lru, best, ideal, input_tokens = offline_curve(plan)
    points: list[SweepPoint] = []
    interrupted: BaseException | None = None
    copts = ClusterOptions(lease_ttl_ms=int(round(plan.lease_ttl_s * 1000)), log_dir=plan.log_dir,
                           isolation=plan.isolation, worker_client=plan.worker_client)
    for i, size in enumerate(plan.sizes):
        opts = EngineOptions(layout=plan.layout, model=plan.model, store_bytes=size.segment_bytes, concurrency=1,
                             read_streams=1)
        runs: list[PointRun] = []
        try:
            for repeat in range(max(1, plan.repeats)):
                runs.append(_run_point(plan, size, start(opts, copts), i, repeat, progress))
        except (KeyboardInterrupt, StoreError) as exc:
            interrupted = exc
        if runs:
            points.append(SweepPoint.of_runs(size, lru[i], runs, best[i]))
        if interrupted is not None:
            break
    result = SweepResult(
        trace=plan.label, rows=len(plan.rows), block_tokens=plan.block_tokens, input_tokens=input_tokens,
        ideal_token_hit_rate=ideal, layout=plan.layout.as_dict(), points=tuple(points), sizing=dict(plan.sizing),
        store={"lease_ttl_s": plan.lease_ttl_s, "fresh_cluster_per_point": True, "speed": "max", "concurrency": 1,
               "eviction_high_watermark": copts.eviction_high_watermark, "eviction_ratio": copts.eviction_ratio,
               "repeats": max(1, plan.repeats), "worker_client": plan.worker_client},
        versions={"kvtui": __version__, "mooncake": mooncake_version()},
        bad_rows_skipped=plan.bad_rows_skipped, synthesis=dict(plan.synthesis or {}),
        interrupted=interrupted is not None)
    return result, interrupted


def _lost_process(cluster: MooncakeCluster) -> str | None:
    """``its store node (exit code -9)`` when a process of the point's embedded cluster exited, else None."""
    proc = cluster.dead_process()
    return None if proc is None else f"its {proc.title.removeprefix('the ')} (exit code {proc.popen.returncode})"


def _run_point(plan: SweepPlan, size: PointSize, stack: Stack, index: int, repeat: int,
               progress: Progress | None) -> PointRun:
    """Replay the rows through ``stack`` (an engine started on a segment of ``size``, and its cluster) for
    repeat ``repeat`` of point ``index``; stops both before returning or raising; ``StoreError`` when the store
    broke under it
    (:class:`~kvtui.bench.engines.BrokenStoreWatch`) or a process of its cluster died."""
    from kvtui.bench.engines import BrokenStoreWatch
    from kvtui.live import LiveSession
    from kvtui.metrics.aggregate import summary_from_frame
    from kvtui.mooncake.client import StoreError
    from kvtui.runtime.procs import uninterrupted
    from workload import TraceWorkload

    desc = {"kind": "trace", "name": plan.label, "done": 0, "total": len(plan.rows), "complete": False}
    workload = TraceWorkload(plan.rows, block_tokens=plan.block_tokens, speed=None, name=plan.label)
    session = LiveSession(stack.engine, workload, desc, cluster=stack.cluster, concurrency=1,
                          layout_text=plan.layout.describe())
    broken = BrokenStoreWatch()
    session.subscribe_results(broken.count)
    keys_max = 0
    t0 = time.perf_counter()
    try:
        session.start()
        while not session.driver.done.wait(POLL_S):
            broken.check(f"the point of {size.capacity_tokens:,} tokens")
            if gone := _lost_process(stack.cluster):  # (a store call to a dead store node can wait long to fail)
                raise StoreError(f"the point of {size.capacity_tokens:,} tokens lost {gone}")
            keys_max = max(keys_max, int(session.panels.store.get("keys") or 0))
            if progress is not None:
                t = session.agg.totals()
                progress(index, session.driver.completed, {"real": t["token_hit_rate"], "keys": keys_max,
                                                          "repeat": repeat})
        elapsed = time.perf_counter() - t0
        scrape = session.panels.refresh_store()  # after the last put: nothing in flight
    except BaseException:
        with uninterrupted():
            session.stop()
        raise
    with uninterrupted():
        final = session.final_frame()
        session.stop(final)
    if session.driver.error is not None:
        raise RuntimeError(f"capacity {size.capacity_tokens:,} tokens: run stopped: {session.driver.error}")
    s = summary_from_frame(final)
    keys = scrape.get("keys")
    used = scrape.get("used_bytes")
    keys_max = max(keys_max, int(keys or 0))
    overhead = (used - keys * size.page_bytes) / keys if keys and used is not None else None
    run = PointRun(
        real_token_hit_rate=s["token_hit_rate"], pages_hit=s["pages_hit"], pages_total=s["pages_total"],
        tokens_hit=s["tokens_hit"], pages_published=s["pages_published"], pages_failed=s["pages_failed"],
        mismatches=s["mismatches"], evicted_keys=scrape.get("evicted_keys"), keys_at_end=keys, keys_max=keys_max,
        used_bytes_at_end=used, overhead_bytes_per_object=overhead, elapsed_s=elapsed, errors=dict(s["errors"]),
        misses={reason: {"pages": f["pages"], "tokens": f["tokens"], "share": f["share"]}
                for reason, f in misses.items()} if (misses := s.get("misses")) else None)
    if progress is not None:
        progress(index, len(plan.rows), {"real": run.real_token_hit_rate, "keys": keys_max, "repeat": repeat,
                                         "done": True})
    return run
