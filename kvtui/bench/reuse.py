"""The demo card's reuse figures (``kvtui bench``), with same-run baselines.

Steps: the prefill worker publishes a prompt (:data:`PUBLISH_RUNS` times, the store emptied between
runs, so the publish figure is a median too); the decode worker reloads a second request sharing its
first ``shared_tokens`` tokens ``iterations`` times, each reload followed by a plain ``batch_get_into`` of
the same keys (no connector) from the same decode process, so the two sides alternate (ABAB) and a slow
spell of the machine hits both; the reload is repeated for 2..N concurrent read streams; the PR example's
``tiny`` case (3 of 4 pages shared) runs on the same store; then the reload is repeated with the segment
co-located with decode (each reload followed by an in-process memcpy of the same bytes, ABAB, the
baseline of ``reload_vs_memcpy``), and on the TCP path (a store node and real clients, ``--worker-client real``; the
first steps run on the default same-host path: dummy clients of ``mooncake_client``). Baselines: one loopback TCP
stream, an in-process memcpy of the same bytes, and page-content fill and verify against memcpy, interleaved. MB/s are
10^6 bytes per second; every p50 is a median.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypedDict

import numpy as np

from kvtui.bench.baselines import ContentFigures, Memcpy, MemoryBus, content_vs_memcpy, loopback_tcp_mbps, memory_bus
from kvtui.bench.engines import BenchEngines, BenchInputs, Environment, environment, first_workers, say
from kvtui.bench.rate import RequestRate
from kvtui.core.units import median
from kvtui.engine.protocol import BenchRawGet, BenchReload, Keys, Publish, Reload, RemoveAll, SetReadStreams
from kvtui.metrics.summary import TtftInputs, TtftSaved

if TYPE_CHECKING:
    from kvtui.core.layout import PageLayout
    from kvtui.engine.connector import PublishResult, ReloadResult
    from kvtui.engine.protocol import RawGetRun
    from kvtui.engine.workers import WorkerHandle
    from kvtui.metrics.ttft import TtftEstimator
    from kvtui.mooncake.client import ClusterEndpoints

PUBLISH_RUNS = 5
"""Timed publishes of the prompt (the store is emptied between them): the rate of one publish alone varies
too much between back-to-back runs to stand for the machine, so the figure is their median."""

class DemoCard(TypedDict):
    """:data:`DEMO_CARD`'s figures (its MiB/s as its keys say) and the ``machine`` it ran on."""

    tokens_skipped: int
    tokens_requested: int
    pages_hit: int
    pages_total: int
    reload_ms_p50: float
    reuse_read_MiBps_p50: float
    publish_write_MiBps: float
    machine: str
    page_bytes: int


DEMO_CARD: DemoCard = {"tokens_skipped": 1792, "tokens_requested": 2048, "pages_hit": 7, "pages_total": 8,
             "reload_ms_p50": 22.8, "reuse_read_MiBps_p50": 4293.0, "publish_write_MiBps": 332.0,
             "machine": "a laptop (LAPTOP-JHMCRIFR), TCP, no RDMA", "page_bytes": 14 << 20}
"""The figures of the demo card of the Ollama connector (Mooncake PR #2800), printed beside kvtui's: same
layout (14 MiB pages) and prompt (2,048 tokens, 1,792 shared), another machine. The card's "MB/s" are
MiB/s (its 98 MB are 7 × 14 MiB; 4,293 "MB/s" × 22.8 ms ≈ 98 MiB), hence the keys; kvtui's MB/s are
10^6 B/s, and the table converts the card's figures to them."""


@dataclass(frozen=True)
class ReuseCase:
    """What ``kvtui bench`` measures: a prompt of ``prompt_tokens`` tokens, a second request sharing its first
    ``shared_tokens`` (tokens), ``iterations`` timed reloads, reloads split across 1..``max_streams`` streams."""

    prompt_tokens: int = 2048
    shared_tokens: int = 1792
    iterations: int = 20
    max_streams: int = 4


class Stats(TypedDict):
    """``min``, ``p50``, ``mean`` and ``max`` of a set of values (:func:`_stats`; their unit)."""

    min: float
    p50: float
    mean: float
    max: float


class ReloadFigures(TypedDict):
    """:func:`reload_figures`: ``reload_ms`` (probe + read, ms), ``MBps_p50``, ``probe_ms_p50``,
    ``read_MBps_p50``, ``verify_ms_p50`` and whether every page ``verified``."""

    reload_ms: Stats
    MBps_p50: float
    probe_ms_p50: float
    read_MBps_p50: float
    verify_ms_p50: float
    verified: bool


class TinyCase(TypedDict):
    """The PR example's ``tiny`` case (:func:`_tiny_case`): its pages, the hit ones, the tokens they skip,
    ``verified`` and the tiny layout's ``page_bytes``."""

    pages_total: int
    pages_hit: int
    tokens_skipped: int
    verified: bool
    page_bytes: int


class StreamFigures(TypedDict):
    """A reload split across N read streams: p50 reload time (ms) and p50 per-reload MB/s."""

    reload_ms_p50: float
    MBps_p50: float


class ColocatedFigures(TypedDict):
    """The reload with the segment co-located with the decode worker (the best stream count of 1 and N)."""

    reload_ms: Stats
    reuse_read_MBps_p50: float


class TcpPathFigures(TypedDict):
    """The reload on the TCP path (a store node and real clients) and a raw ``batch_get_into`` of the same keys."""

    reload_ms: Stats
    reuse_read_MBps_p50: float
    raw_get_MBps_p50: float
    verified: bool


class ReuseBaselines(TypedDict):
    """The same-run baselines: a raw ``batch_get_into`` of the same keys (MB/s and ms), one loopback TCP stream,
    memcpy, the co-located reload, page content fill and verify (None with no page hit), the memory bus (None
    likewise)."""

    raw_get_MBps_p50: float
    raw_get_ms_p50: float
    loopback_tcp_MBps: float
    memcpy_MBps: float
    colocated_reload_MBps_p50: float
    content: ContentFigures | None
    memory_bus: MemoryBus | None


class _ReuseRatios(TypedDict):
    """The ratios every reuse bench has (see :class:`ReuseRatios`)."""

    connector_vs_raw: float
    best_streams_vs_raw: float
    reload_vs_loopback_tcp: float
    reload_vs_memcpy: float
    tcp_reload_vs_loopback_tcp: float
    tcp_connector_vs_raw: float
    request_rate_vs_store_bound: float
    request_rate_vs_passes_bound: float
    sampled_request_rate_vs_store_bound: float


class ReuseRatios(_ReuseRatios, total=False):
    """The reuse bench's ratios (:data:`kvtui.metrics.figures.RATIOS`; targets :data:`~kvtui.bench.targets.TARGETS`);
    ``verify_vs_memcpy`` and ``fill_vs_memcpy`` where a page was hit (the content baseline)."""

    verify_vs_memcpy: float
    fill_vs_memcpy: float


class _Reuse(TypedDict):
    """The figures every reuse bench has (see :class:`ReuseFigures`)."""

    layout: dict[str, int]
    page_bytes: int
    iterations: int
    tokens_requested: int
    tokens_skipped: int
    pages_total: int
    pages_hit: int
    hit_rate: float
    pages_published: int
    publish_ms: float
    publish_runs: int
    publish_write_MBps_runs: Stats
    reload_ms: Stats
    reload_read_streams: int
    reuse_read_MBps_p50: float
    publish_write_MBps: float
    bytes_reloaded: int
    verify_ms_p50: float
    verified: bool
    probe_ms_p50: float
    read_only_MBps_p50: float
    best_read_streams: int
    best_reload_ms: Stats
    best_reuse_read_MBps_p50: float
    read_streams: dict[str, StreamFigures]
    colocated: ColocatedFigures
    tiny: TinyCase
    request_rate: RequestRate
    worker_client: str
    tcp_path: TcpPathFigures
    baselines: ReuseBaselines
    ratios: ReuseRatios
    environment: Environment
    demo_card: DemoCard


class ReuseFigures(_Reuse, BenchInputs, total=False):
    """Every figure of the reuse bench (``kvtui bench --json``, :func:`measure_reuse`): the case (``layout``,
    ``page_bytes``, ``iterations``, tokens and pages), the publish, the 1-stream reload and its parts, the best
    stream count, each stream count (``read_streams``, by count), the co-located and TCP path reloads, the tiny
    case, the request-rate step, the ``baselines``, the ``ratios``, the ``environment`` and the ``demo_card``;
    with an estimator also the recompute estimate (:class:`~kvtui.metrics.ttft.ReloadEstimate`'s keys)."""

    ttft_estimate: TtftInputs
    recompute_ms: float | None
    ttft_saved_ms: TtftSaved | None
    prefill_gpu_s_saved: float | None
    reload_vs_recompute: float | None


def _stats(values: list[float]) -> Stats:
    """``{min, p50, mean, max}`` of ``values`` (same unit as the values)."""
    return {"min": min(values), "p50": median(values), "mean": statistics.fmean(values), "max": max(values)}


def _publish_runs(prefill: WorkerHandle, prompt: np.ndarray) -> list[PublishResult]:
    """Publish ``prompt`` on ``prefill`` :data:`PUBLISH_RUNS` times, emptying the store before each run after the
    first; the last run's pages stay for the reloads. Returns each run's ``PublishResult``."""
    pubs = []
    for k in range(PUBLISH_RUNS):
        if k:
            prefill.call(RemoveAll())
        pubs.append(prefill.call(Publish(prompt)))
    return pubs


def _interleaved(decode: WorkerHandle, second: np.ndarray, iterations: int
                 ) -> tuple[list[ReloadResult], list[RawGetRun]]:
    """``iterations`` rounds of one connector reload of ``second`` on ``decode`` then one plain ``batch_get_into``
    of the same keys (ABAB): the reloads' ``ReloadResult`` and the raw reads' ``RawGetRun``."""
    runs: list[ReloadResult] = []
    raw: list[RawGetRun] = []
    keys = None
    for _ in range(iterations):
        runs += [t.result for t in decode.call(BenchReload(second, 1))]
        if keys is None:
            keys = decode.call(Keys(second))[: runs[0].pages_hit]
        raw += decode.call(BenchRawGet(keys, 1))
    return runs, raw


def _publish_mbps(pub: PublishResult) -> float:
    return pub.bytes_written / (pub.put_ms / 1e3) / 1e6 if pub.put_ms > 0 else 0.0


def reload_figures(runs: list[ReloadResult]) -> ReloadFigures:
    """Reload time (probe + read, ms) stats, ``MBps_p50`` (the figure "reload throughput (p50 per reload)" of
    :mod:`kvtui.metrics.figures`: the median of the per-reload rates), p50 probe ms (the ``batch_is_exist``
    before the read, which a raw ``batch_get_into`` of known keys skips), ``read_MBps_p50`` (the same bytes
    over the read alone), p50 verify ms, all verified? ``runs``: the ``ReloadResult`` of each reload."""
    reload_ms = [r.probe_ms + r.read_ms for r in runs]
    nbytes = runs[0].bytes_loaded
    mbps = [nbytes / (ms / 1e3) / 1e6 for ms in reload_ms if ms > 0]
    return {"reload_ms": _stats(reload_ms), "MBps_p50": median(mbps),
            "probe_ms_p50": median([r.probe_ms for r in runs]),
            "read_MBps_p50": median([nbytes / (r.read_ms / 1e3) / 1e6 for r in runs if r.read_ms > 0]),
            "verify_ms_p50": median([r.verify_ms for r in runs]),
            "verified": all(r.verified == r.pages_hit and r.mismatches == 0 for r in runs)}


def _tiny_case(engines: BenchEngines, endpoints: ClusterEndpoints) -> TinyCase:
    """Publish 32 tokens with the tiny layout on the same store and reload a request sharing 24 (3/4 pages)."""
    from kvtui.core.layout import PRESETS

    tiny = PRESETS["tiny"]
    stack = engines.engine(tiny, endpoints=endpoints)
    try:
        prompt = np.arange(4 * tiny.page_tokens, dtype=np.uint32) + 7
        second = prompt.copy()
        second[3 * tiny.page_tokens:] += 5000
        prefill, decode = first_workers(stack.engine)
        prefill.call(Publish(prompt))
        r = decode.call(Reload(second))
    finally:
        stack.stop()
    return {"pages_total": r.pages_total, "pages_hit": r.pages_hit, "tokens_skipped": r.pages_hit * tiny.page_tokens,
            "verified": r.verified == r.pages_hit and r.mismatches == 0, "page_bytes": tiny.page_bytes}


def measure_reuse(engines: BenchEngines, layout: PageLayout, case: ReuseCase, estimator: TtftEstimator | None = None
                  ) -> ReuseFigures:
    """Run every step on embedded clusters of ``layout`` and return every figure (the fields of
    ``kvtui bench --json``): ms, bytes, MB/s, hit rate, ``verified`` and the ratios to the baselines; with
    ``estimator`` (a :class:`~kvtui.metrics.ttft.TtftEstimator`) also the recompute estimate of the reloaded
    prefix against the measured 1-stream reloads (:func:`kvtui.metrics.ttft.reload_estimate`)."""
    prompt = np.arange(case.prompt_tokens, dtype=np.uint32) + 1000
    second = prompt.copy()
    second[case.shared_tokens:] += 1_000_000  # diverges after the shared prefix

    engine_client = "dummy"  # kvtui watch/run's default here: --worker-client auto (kvtui.commands.topology_args)
    say("starting embedded cluster (the segment on mooncake_client, the workers dummy clients of it)…")
    stack = engines.engine(layout, worker_client=engine_client)
    try:
        prefill, decode = first_workers(stack.engine)
        say(f"publishing a {case.prompt_tokens}-token prompt {PUBLISH_RUNS}× (store emptied between runs)…")
        pubs = _publish_runs(prefill, prompt)
        pub = pubs[-1]
        env = environment(stack.engine.endpoints)
        say(f"reloading the shared prefix {case.iterations}×, each followed by a raw batch_get_into of the same "
            "keys (no connector)…")
        decode.call(BenchReload(second, 1))  # first touch of the buffer (page faults): untimed
        runs, raw = _interleaved(decode, second, case.iterations)
        main = reload_figures(runs)
        hit = runs[0].pages_hit
        raw_ms_p50 = median([r.wall_ms for r in raw])
        raw_mbps = hit * layout.page_bytes / (raw_ms_p50 / 1e3) / 1e6
        streams = {1: main}  # so the best stream count is never below the 1-stream figure
        for n in range(2, case.max_streams + 1):
            say(f"reload split across {n} concurrent read streams…")
            decode.call(SetReadStreams(n))
            streams[n] = reload_figures([t.result for t in decode.call(BenchReload(second, case.iterations))])
        best_n = max(streams, key=lambda n: streams[n]["MBps_p50"])
        say("the PR example's tiny layout (3 of 4 pages shared)…")
        tiny = _tiny_case(engines, stack.cluster.endpoints)
    finally:
        stack.stop()

    say("again with the segment co-located with the decode worker, each reload followed by a memcpy of the "
        "same bytes…")
    nbytes = hit * layout.page_bytes
    copy, copies = Memcpy(max(1, nbytes)), []
    stack = engines.engine(layout, segment_on="decode")
    try:
        prefill, decode = first_workers(stack.engine)
        prefill.call(Publish(prompt))
        decode.call(BenchReload(second, 1))  # first touch of the reload buffer, untimed
        co_streams = {}
        for n in sorted({1, best_n}):
            decode.call(SetReadStreams(n))
            co_runs = []
            for _ in range(case.iterations):  # ABAB: a slow spell hits the reload and its memcpy baseline
                co_runs += [t.result for t in decode.call(BenchReload(second, 1))]
                copies.append(copy.once())
            co_streams[n] = reload_figures(co_runs)
    finally:
        stack.stop()
    del copy
    co = max(co_streams.values(), key=lambda f: f["MBps_p50"])

    from kvtui.bench.rate import measure_rate

    rate = measure_rate(engines, layout)

    say("again on the TCP path: a store node and real clients (--worker-client real)…")
    stack = engines.engine(layout, worker_client="real")
    try:
        prefill, decode = first_workers(stack.engine)
        prefill.call(Publish(prompt))
        decode.call(BenchReload(second, 1))  # first touch of the reload buffer, untimed
        tcp_runs, tcp_raw = _interleaved(decode, second, case.iterations)
    finally:
        stack.stop()
    tcp_path = reload_figures(tcp_runs)
    tcp_raw_mbps = nbytes / (median([r.wall_ms for r in tcp_raw]) / 1e3) / 1e6

    say("baselines: one loopback TCP stream, page-content fill and verify of the same bytes, one copy against "
        "two at once…")
    memcpy = nbytes / median(copies) / 1e6
    tcp = loopback_tcp_mbps(nbytes, case.iterations)
    content = content_vs_memcpy(layout.page_bytes, hit, case.iterations) if hit else None
    bus = memory_bus(nbytes, case.iterations) if hit else None
    best = streams[best_n]
    publish_runs = [_publish_mbps(p) for p in pubs]
    publish_mbps = median(publish_runs)
    verified = main["verified"] and all(s["verified"] for s in streams.values()) and tiny["verified"] \
        and co["verified"] and all(s["verified"] for s in co_streams.values()) and tcp_path["verified"] \
        and rate["mismatches"] == 0
    ratios: ReuseRatios = {
        "connector_vs_raw": main["MBps_p50"] / raw_mbps,
        "best_streams_vs_raw": best["MBps_p50"] / raw_mbps,
        "reload_vs_loopback_tcp": best["MBps_p50"] / tcp,
        "reload_vs_memcpy": co["MBps_p50"] / memcpy,
        "tcp_reload_vs_loopback_tcp": tcp_path["MBps_p50"] / tcp,
        "tcp_connector_vs_raw": tcp_path["MBps_p50"] / tcp_raw_mbps,
        "request_rate_vs_store_bound": rate["request_rate_vs_store_bound"],
        "request_rate_vs_passes_bound": rate["request_rate_vs_passes_bound"],
        "sampled_request_rate_vs_store_bound": rate["sampled"]["request_rate_vs_store_bound"]}
    if content is not None:
        ratios["verify_vs_memcpy"] = content["verify_vs_memcpy"]
        ratios["fill_vs_memcpy"] = content["fill_vs_memcpy"]
    out: ReuseFigures = {
        "layout": layout.as_dict(), "page_bytes": layout.page_bytes, "iterations": case.iterations,
        "tokens_requested": int(case.prompt_tokens), "tokens_skipped": hit * layout.page_tokens,
        "pages_total": runs[0].pages_total, "pages_hit": hit, "hit_rate": hit / runs[0].pages_total,
        "pages_published": pub.stored, "publish_ms": median([p.probe_ms + p.put_ms for p in pubs]),
        "publish_runs": len(pubs), "publish_write_MBps_runs": _stats(publish_runs),
        "reload_ms": main["reload_ms"], "reload_read_streams": 1,
        "reuse_read_MBps_p50": main["MBps_p50"], "publish_write_MBps": publish_mbps,
        "bytes_reloaded": nbytes, "verify_ms_p50": main["verify_ms_p50"], "verified": bool(verified),
        "probe_ms_p50": main["probe_ms_p50"], "read_only_MBps_p50": main["read_MBps_p50"],
        "best_read_streams": best_n, "best_reload_ms": best["reload_ms"], "best_reuse_read_MBps_p50": best["MBps_p50"],
        "read_streams": {str(n): {"reload_ms_p50": f["reload_ms"]["p50"], "MBps_p50": f["MBps_p50"]}
                         for n, f in streams.items()},
        "colocated": {"reload_ms": co["reload_ms"], "reuse_read_MBps_p50": co["MBps_p50"]},
        "tiny": tiny, "request_rate": rate, "worker_client": engine_client,
        "tcp_path": {"reload_ms": tcp_path["reload_ms"], "reuse_read_MBps_p50": tcp_path["MBps_p50"],
                     "raw_get_MBps_p50": tcp_raw_mbps, "verified": tcp_path["verified"]},
        "baselines": {"raw_get_MBps_p50": raw_mbps, "raw_get_ms_p50": raw_ms_p50,
                      "loopback_tcp_MBps": tcp, "memcpy_MBps": memcpy,
                      "colocated_reload_MBps_p50": co["MBps_p50"], "content": content, "memory_bus": bus},
        "ratios": ratios, "environment": env, "demo_card": DEMO_CARD, "verify": engines.verify,
    }
    if estimator is not None:
        from kvtui.metrics.ttft import reload_estimate

        est = reload_estimate(estimator, hit * layout.page_tokens, [r.probe_ms + r.read_ms for r in runs])
        out["ttft_estimate"] = est["ttft_estimate"]
        out["recompute_ms"] = est["recompute_ms"]
        out["ttft_saved_ms"] = est["ttft_saved_ms"]
        out["prefill_gpu_s_saved"] = est["prefill_gpu_s_saved"]
        out["reload_vs_recompute"] = est["reload_vs_recompute"]
    return out
