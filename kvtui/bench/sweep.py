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

A point of a DRAM × disk sweep (its size has ``disk_bytes``) runs on a cluster whose store has a disk tier of
that size (``ClusterOptions.disk_bytes``: Mooncake's ``offload_on_evict``). Its hits are split by where they
were read: each result's ``pages_hit_disk`` counted here as the replay goes. At its end the master's
``/metrics`` gives the objects with a disk replica and the disk tier's bytes. Its offline figures are the
two-tier model's (:func:`workload.tiers.two_tier_hits`) and Belady's MIN at DRAM + disk.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, TypedDict

from kvtui.core.sweep import PointRun, PointSize, SweepPoint, SweepResult

if TYPE_CHECKING:
    from kvtui.bench.engines import StartStack
    from kvtui.core.events import RequestResult
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
    ``keys`` the store held; ``repeat``: which replay of the point (0 first); ``done``: that replay has ended;
    ``disk``: of ``real``, the part read from the disk tier (0..1, when the replay ended)."""

    repeat: int
    done: bool
    disk: float


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
    ``dummy``); ``disk_path``: where the disk tiers of the pairs write (None: the temporary folder)."""

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
    disk_path: str | None = None


@dataclass(frozen=True)
class Offline:
    """The offline figures of a plan's points (0..1 token hit rates, one per point of ``plan.sizes``): ``lru``
    at the DRAM capacity, ``best`` Belady's MIN at DRAM + disk, ``model`` the two-tier model's ``(DRAM, disk,
    total)``; ``ideal``: the unbounded cache's; ``input_tokens``: the rows' prompt tokens."""

    lru: list[float]
    best: list[float]
    model: list[tuple[float, float, float]]
    ideal: float
    input_tokens: int


def offline_figures(plan: SweepPlan) -> Offline:
    """The plan's :class:`Offline` figures: :func:`workload.stats.hit_rate_curve` and
    :func:`workload.stats.optimal_hit_rate_curve` at each DRAM capacity (the ``kvtui trace-stats --capacity``
    computation), and for a pair with a disk :func:`workload.tiers.two_tier_hits` (``trace-stats --capacity C
    --disk D``), whose MIN is at DRAM + disk. A DRAM-only point's model is LRU (DRAM, 0, LRU)."""
    from workload.stats import hit_rate_curve, optimal_hit_rate_curve
    from workload.tiers import two_tier_hits

    caps = sorted({s.capacity_tokens for s in plan.sizes})
    curve = hit_rate_curve(plan.rows, [*caps, None], plan.block_tokens)
    lru = {cap: rate for cap, rate in curve[:-1]}
    best = dict(optimal_hit_rate_curve(plan.rows, caps, plan.block_tokens))
    out = Offline([], [], [], curve[-1][1], sum(r.input_length for r in plan.rows))
    for s in plan.sizes:
        out.lru.append(lru[s.capacity_tokens])
        if s.disk_tokens:
            t = two_tier_hits(plan.rows, s.capacity_tokens, s.disk_tokens, plan.block_tokens)
            out.best.append(t.optimal_rate)
            out.model.append((t.memory_rate, t.disk_rate, t.hit_rate))
        else:
            out.best.append(best[s.capacity_tokens])
            out.model.append((lru[s.capacity_tokens], 0.0, lru[s.capacity_tokens]))
    return out


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

    off = offline_figures(plan)
    points: list[SweepPoint] = []
    interrupted: BaseException | None = None
    copts = ClusterOptions(lease_ttl_ms=int(round(plan.lease_ttl_s * 1000)), log_dir=plan.log_dir,
                           isolation=plan.isolation, worker_client=plan.worker_client)
    for i, size in enumerate(plan.sizes):
        opts = EngineOptions(layout=plan.layout, model=plan.model, store_bytes=size.segment_bytes, concurrency=1,
                             read_streams=1)
        tier = replace(copts, disk_bytes=size.disk_bytes, disk_path=plan.disk_path if size.disk_bytes else None)
        runs: list[PointRun] = []
        try:
            for repeat in range(max(1, plan.repeats)):
                runs.append(_run_point(plan, size, start(opts, tier), i, repeat, progress))
        except (KeyboardInterrupt, StoreError) as exc:
            interrupted = exc
        if runs:
            points.append(SweepPoint.of_runs(size, off.lru[i], runs, off.best[i], off.model[i]))
        if interrupted is not None:
            break
    result = SweepResult(
        trace=plan.label, rows=len(plan.rows), block_tokens=plan.block_tokens, input_tokens=off.input_tokens,
        ideal_token_hit_rate=off.ideal, layout=plan.layout.as_dict(), points=tuple(points), sizing=dict(plan.sizing),
        store={"lease_ttl_s": plan.lease_ttl_s, "fresh_cluster_per_point": True, "speed": "max", "concurrency": 1,
               "eviction_high_watermark": copts.eviction_high_watermark, "eviction_ratio": copts.eviction_ratio,
               "repeats": max(1, plan.repeats), "worker_client": plan.worker_client},
        versions={"kvtui": __version__, "mooncake": mooncake_version()},
        bad_rows_skipped=plan.bad_rows_skipped, synthesis=dict(plan.synthesis or {}),
        interrupted=interrupted is not None)
    return result, interrupted


class DiskHits:
    """The hits a replay read from the disk tier, counted from its results (a results subscriber): ``pages``,
    ``tokens`` and ``read_ms`` (summed). Written only by the session's collector thread; read once the
    session has stopped."""

    def __init__(self) -> None:
        self.pages = 0
        self.tokens = 0
        self.read_ms = 0.0

    def count(self, result: RequestResult) -> None:
        """Add one ``RequestResult``'s disk hits."""
        self.pages += result.pages_hit_disk
        self.tokens += result.pages_hit_disk * result.page_tokens
        self.read_ms += result.disk_read_ms


def disk_at_end(metrics_url: str | None) -> tuple[int | None, int | None]:
    """``(objects with a disk replica, the disk tier's bytes)`` in the master's ``/metrics`` now
    (``file_cache_nums_``, ``master_allocated_file_size_bytes``); None for one it does not give or when it
    does not answer (one scrape, which grants no lease)."""
    from kvtui.mooncake.net import http_get, parse_metrics

    if not metrics_url:
        return None, None
    code, text = http_get(metrics_url.rstrip("/") + "/metrics")
    if code != 200:
        return None, None
    m = parse_metrics(text)
    keys, used = m.value("file_cache_nums_"), m.value("master_allocated_file_size_bytes")
    return (None if keys is None else int(keys)), (None if used is None else int(used))


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
    disk = DiskHits()
    session.subscribe_results(disk.count)
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
        on_disk = disk_at_end(stack.cluster.endpoints.metrics_url) if size.disk_bytes else (None, None)
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
                for reason, f in misses.items()} if (misses := s.get("misses")) else None,
        pages_hit_disk=disk.pages, tokens_hit_disk=disk.tokens,
        real_disk_token_hit_rate=disk.tokens / s["tokens_input"] if s.get("tokens_input") else 0.0,
        disk_read_ms=disk.read_ms, disk_keys_at_end=on_disk[0], disk_used_bytes_at_end=on_disk[1])
    if progress is not None:
        progress(index, len(plan.rows), {"real": run.real_token_hit_rate, "keys": keys_max, "repeat": repeat,
                                         "disk": run.real_disk_token_hit_rate, "done": True})
    return run
