"""``kvtui bench --link RATE --decode-workers M[,M…]``: aggregate reload throughput of M decode workers at
once, each on an emulated host of its own, against M × the link's rate (:mod:`kvtui.mooncake.hosts`).

For each M: a fresh embedded cluster on emulated hosts, every link shaped to ``RATE`` (tc tbf), M prefill
workers each contributing an equal share of the store's segment (``--segment-on prefill``: the store's bytes
live on M hosts, so M readers are not held to one host's link) and M decode workers. Prefill worker i
publishes prompt i (the M prompts share no page); then, ``iterations`` rounds: every decode worker i reloads
a request sharing the first ``shared_tokens`` of prompt i, all at the same moment (one thread each).

``aggregate MB/s`` of a round = Σ bytes the M workers reloaded ÷ the round's wall time (from the first
command sent to the last answer, in the parent: verification included); the figure is the median over
rounds. ``ratios.aggregate_vs_links[M]`` = that ÷
(M × the link's rate in MB/s, ``rate_bps / 8 / 10^6``). Each prefill worker publishes into its own segment
(kvtui's placement, ``kvtui.engine.worker._Chain``), so reader i reads only from host prefill-i and the M
transfers share no link.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import TYPE_CHECKING, TypedDict

import numpy as np

from kvtui.bench.engines import BenchEngines, BenchInputs, Environment, environment, say
from kvtui.bench.targets import TARGETS
from kvtui.core.text import plural
from kvtui.core.units import median

if TYPE_CHECKING:
    from kvtui.core.layout import PageLayout
    from kvtui.engine.connector import ReloadResult
    from kvtui.engine.engine import Engine
    from kvtui.mooncake.hosts import LinkSpec

TARGET = TARGETS["aggregate_vs_links"]


class AggregateRound(TypedDict):
    """One round of M reloads at once: the ``bytes`` they reloaded, its ``wall_ms`` and ``MBps`` (their ratio)."""

    bytes: int
    wall_ms: float
    MBps: float


class AggregateRun(TypedDict):
    """The figures of one M (:func:`measure_one`)."""

    decode_workers: int
    rounds: list[AggregateRound]
    aggregate_MBps_p50: float
    per_worker_MBps_p50: list[float]
    links_MBps: float
    pages_per_reload: int
    verified: bool
    environment: Environment


class AggregateLink(TypedDict):
    """The emulated link: its ``text``, ``rate_bps`` (bit/s) and ``rate_MBps`` (10^6 B/s)."""

    text: str
    rate_bps: int
    rate_MBps: float


class AggregateRatios(TypedDict):
    """By M (``"1"``, ``"2"``, …): ``aggregate_vs_links`` (aggregate ÷ M × the link's rate) and ``scaling``
    (aggregate ÷ the first M's)."""

    aggregate_vs_links: dict[str, float]
    scaling: dict[str, float]


class AggregateTargets(TypedDict):
    """The target of every ``aggregate_vs_links`` and whether each one ``met`` it."""

    aggregate_vs_links: float
    met: bool


class AggregateFigures(BenchInputs):
    """Every figure of ``kvtui bench --link RATE --decode-workers M,… --json`` (:func:`measure_aggregate`)."""

    layout: dict[str, int]
    page_bytes: int
    iterations: int
    link: AggregateLink
    runs: list[AggregateRun]
    ratios: AggregateRatios
    targets: AggregateTargets
    verified: bool
    environment: Environment


def _round(engine: Engine, seconds: list[np.ndarray], pool: ThreadPoolExecutor) -> tuple[list[ReloadResult], float]:
    """One round: every decode worker reloads its request at once; their ``ReloadResult`` s, in order, and
    the round's wall time in ms (from the first command sent to the last answer, in the parent)."""
    from kvtui.engine.protocol import BenchReload

    t0 = time.perf_counter()
    futures = [pool.submit(h.call, BenchReload(s, 1)) for h, s in zip(engine.decodes, seconds)]
    results = [f.result()[0].result for f in futures]
    return results, (time.perf_counter() - t0) * 1e3


def measure_one(engines: BenchEngines, layout: PageLayout, link: LinkSpec, m: int, prompt_tokens: int,
                shared_tokens: int, iterations: int) -> AggregateRun:
    """The figures of one M (see the module): ``decode_workers``, ``rounds`` (per round: ``MBps`` and the
    ``bytes``), ``aggregate_MBps_p50``, ``per_worker_MBps_p50`` (each worker's median reload rate),
    ``links_MBps`` (M × rate), ``verified``."""
    from kvtui.engine.protocol import Publish
    from kvtui.mooncake.cluster import ClusterOptions

    prompts = [np.arange(prompt_tokens, dtype=np.uint32) + 3000 + 10_000_000 * i for i in range(m)]
    seconds = []
    for p in prompts:
        s = p.copy()
        s[shared_tokens:] += 1_000_000
        seconds.append(s)
    opts = replace(engines.options(layout, "prefill"), store_bytes=engines.store_bytes * m, prefill_workers=m,
                   decode_workers=m)
    say(f"{plural(m, 'decode worker')}: starting {plural(2 * m, 'worker')} on emulated hosts, links {link.text()}…")
    stack = engines.start(opts, ClusterOptions(hosts=True, link=link))
    engine = stack.engine
    try:
        for h, p in zip(engine.prefills, prompts):
            h.call(Publish(p))
        say(f"{plural(m, 'decode worker')}: {plural(iterations, 'round')} of {plural(m, 'reload')} at once…")
        with ThreadPoolExecutor(m) as pool:
            timed = [_round(engine, seconds, pool) for _ in range(iterations)]
        rounds = [results for results, _ms in timed]
        env = environment(engine.endpoints)
    finally:
        stack.stop()
    rate = link.rate_bytes_per_s / 1e6
    per_round: list[AggregateRound] = []
    for results, wall_ms in timed:
        nbytes = sum(r.bytes_loaded for r in results)
        per_round.append({"bytes": nbytes, "wall_ms": wall_ms, "MBps": nbytes / (wall_ms / 1e3) / 1e6})
    per_worker = [median([rs[i].bytes_loaded / ((rs[i].probe_ms + rs[i].read_ms) / 1e3) / 1e6
                          for rs in rounds if rs[i].probe_ms + rs[i].read_ms > 0]) for i in range(m)]
    return {"decode_workers": m, "rounds": per_round, "aggregate_MBps_p50": median([r["MBps"] for r in per_round]),
            "per_worker_MBps_p50": per_worker, "links_MBps": m * rate,
            "pages_per_reload": rounds[0][0].pages_hit,
            "verified": all(r.verified == r.pages_hit > 0 and r.mismatches == 0 for rs in rounds for r in rs),
            "environment": env}


def measure_aggregate(engines: BenchEngines, layout: PageLayout, link: LinkSpec, counts: list[int], prompt_tokens: int,
                      shared_tokens: int, iterations: int) -> AggregateFigures:
    """Every M of ``counts`` (:func:`measure_one`), then ``ratios.aggregate_vs_links`` (``{M: ratio}``) and
    ``ratios.scaling`` (``{M: aggregate(M) ÷ aggregate(first M)}``), ``targets`` and ``verified``."""
    runs = [measure_one(engines, layout, link, m, prompt_tokens, shared_tokens, iterations) for m in counts]
    ratios = {str(r["decode_workers"]): r["aggregate_MBps_p50"] / r["links_MBps"] for r in runs}
    base = runs[0]["aggregate_MBps_p50"]
    return {"layout": layout.as_dict(), "page_bytes": layout.page_bytes, "iterations": iterations,
            "link": {"text": link.text(), "rate_bps": link.rate_bps, "rate_MBps": link.rate_bytes_per_s / 1e6},
            "runs": runs,
            "ratios": {"aggregate_vs_links": ratios,
                       "scaling": {str(r["decode_workers"]): (r["aggregate_MBps_p50"] / base if base else 0.0)
                                   for r in runs}},
            "targets": {"aggregate_vs_links": TARGET, "met": all(v >= TARGET for v in ratios.values())},
            "verified": all(r["verified"] for r in runs), "environment": runs[-1]["environment"]}


def format_aggregate(out: AggregateFigures) -> str:
    """The human table of :func:`measure_aggregate`'s figures, at most :data:`~kvtui.core.text.WIDTH` columns."""
    from kvtui.bench.targets import LEGEND, ratio_row
    from kvtui.core.text import legend, wrap
    from kvtui.metrics.figures import AGGREGATE_VS_LINKS, number

    rate = out["link"]["rate_MBps"]
    lines = wrap(f"link {out['link']['text']} each way = {number(rate, 'MB/s', 1)} MB/s per host (tc tbf on every "
                 "emulated host's veth); M decode workers reloading at once, each from its own prefill host (MB/s):")
    lines.append("  decode workers M   aggregate p50   M × link   per worker p50")
    for r in out["runs"]:
        per = ", ".join(number(v, "MB/s", 1) for v in r["per_worker_MBps_p50"])
        lines += wrap(per, first=f"  {r['decode_workers']:>16}   {number(r['aggregate_MBps_p50'], 'MB/s', 1):>13}   "
                                 f"{number(r['links_MBps'], 'MB/s', 1):>8}   ", rest=" " * 48)
    lines += ["", f"{'Ratios':<36} {'ratio':>8}   target   (see met / NOT met in the Legend)"]
    lines += [ratio_row(f"{AGGREGATE_VS_LINKS.name}, M = {m}", v, "aggregate_vs_links")
              for m, v in out["ratios"]["aggregate_vs_links"].items()]
    lines += ["", f"verified: {'every reloaded page byte-exact' if out['verified'] else 'MISMATCHES'}"]
    lines += legend([LEGEND])
    return "\n".join(lines)
