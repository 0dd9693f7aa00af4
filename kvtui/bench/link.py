"""``kvtui bench --link RATE``: reload throughput across an emulated link (:mod:`kvtui.mooncake.hosts`)
against the link's rate.

The engine runs on emulated hosts (``--hosts auto``): the store node's segment on one host, the decode worker
on another, every host's link shaped to ``RATE`` with ``tc``'s tbf. A prompt is published once, then a request
sharing its prefix is reloaded ``iterations`` times, each reload followed by a plain ``batch_get_into`` of the
same keys (ABAB, as the default bench). ``ratios.reload_vs_link`` = the median per-reload throughput
(probe + read, MB/s, the figure "reload throughput (p50 per reload)") ÷ the link's rate in MB/s
(``rate_bps / 8 / 10^6``); ``ratios.raw_vs_link`` the same for the raw reads. The target (≥ 0.9) is for links
slow enough that this machine's cores are not the limit (1 gbit, say: one TCP stream over a veth carries
several GB/s).
"""

from __future__ import annotations

from statistics import median
from typing import TYPE_CHECKING, TypedDict

import numpy as np

from kvtui.bench.engines import BenchEngines, BenchInputs, Environment, environment, first_workers, say
from kvtui.bench.reuse import ReloadFigures, _interleaved, _publish_mbps, reload_figures
from kvtui.bench.targets import TARGETS

if TYPE_CHECKING:
    from kvtui.core.layout import PageLayout
    from kvtui.mooncake.hosts import LinkSpec

TARGET = TARGETS["reload_vs_link"]


class LinkShape(TypedDict):
    """The emulated link: its ``text`` (``1gbit``), ``rate_bps`` (bit/s), one-way ``delay_s`` and the rate in
    MB/s (``rate_MBps``, 10^6 B/s)."""

    text: str
    rate_bps: int
    delay_s: float
    rate_MBps: float


class LinkPublish(TypedDict):
    """The prompt's one publish across the prefill host's link: ``pages`` stored, ``put_ms``, ``MBps``."""

    pages: int
    put_ms: float
    MBps: float


class LinkRatios(TypedDict):
    """``reload_vs_link`` (the reload's p50 MB/s ÷ the link's rate) and ``raw_vs_link`` (the raw reads')."""

    reload_vs_link: float
    raw_vs_link: float


class LinkTargets(TypedDict):
    """The target of ``reload_vs_link`` and whether it was ``met``."""

    reload_vs_link: float
    met: bool


class LinkFigures(BenchInputs):
    """Every figure of ``kvtui bench --link --json`` (:func:`measure_link`)."""

    layout: dict[str, int]
    page_bytes: int
    iterations: int
    link: LinkShape
    pages_reloaded: int
    bytes_reloaded: int
    publish: LinkPublish
    reload: ReloadFigures
    raw_MBps_p50: float
    ratios: LinkRatios
    targets: LinkTargets
    verified: bool
    environment: Environment


def measure_link(engines: BenchEngines, layout: PageLayout, link: LinkSpec, prompt_tokens: int, shared_tokens: int,
                 iterations: int) -> LinkFigures:
    """Run the link bench; returns every figure of ``kvtui bench --link --json``: ``link`` (its text and
    ``rate_MBps``), ``reload`` (:func:`~kvtui.bench.reuse.reload_figures`), ``raw_MBps_p50``, ``ratios``,
    ``targets``, ``verified`` and ``environment``. ``link``: a :class:`~kvtui.mooncake.hosts.LinkSpec`."""
    from kvtui.engine.protocol import Publish
    from kvtui.mooncake.cluster import ClusterOptions

    prompt = np.arange(prompt_tokens, dtype=np.uint32) + 3000
    second = prompt.copy()
    second[shared_tokens:] += 1_000_000
    say(f"starting the cluster on emulated hosts, every link shaped to {link.text()}…")
    stack = engines.engine(layout, cluster=ClusterOptions(hosts=True, link=link))
    try:
        prefill, decode = first_workers(stack.engine)
        say(f"publishing a {prompt_tokens}-token prompt across the prefill host's link…")
        pub = prefill.call(Publish(prompt))
        say(f"reloading the shared prefix {iterations}× across the store host's link, each followed by a raw "
            "batch_get_into of the same keys…")
        runs, raw = _interleaved(decode, second, iterations)
        env = environment(stack.engine.endpoints)
    finally:
        stack.stop()
    fig = reload_figures(runs)
    hit = runs[0].pages_hit
    raw_ms = median([r.wall_ms for r in raw])
    raw_mbps = hit * layout.page_bytes / (raw_ms / 1e3) / 1e6 if raw_ms > 0 else 0.0
    rate = link.rate_bytes_per_s / 1e6
    ratios: LinkRatios = {"reload_vs_link": fig["MBps_p50"] / rate, "raw_vs_link": raw_mbps / rate}
    return {"layout": layout.as_dict(), "page_bytes": layout.page_bytes, "iterations": iterations,
            "link": {"text": link.text(), "rate_bps": link.rate_bps, "delay_s": link.delay_s, "rate_MBps": rate},
            "pages_reloaded": hit, "bytes_reloaded": hit * layout.page_bytes,
            "publish": {"pages": pub.stored, "put_ms": pub.put_ms, "MBps": _publish_mbps(pub)}, "reload": fig,
            "raw_MBps_p50": raw_mbps, "ratios": ratios,
            "targets": {"reload_vs_link": TARGET, "met": ratios["reload_vs_link"] >= TARGET},
            "verified": fig["verified"], "environment": env}


def format_link(out: LinkFigures) -> str:
    """The human table of :func:`measure_link`'s figures, at most :data:`~kvtui.core.text.WIDTH` columns."""
    from kvtui.bench.targets import LEGEND, ratio_section
    from kvtui.core.text import legend, rows, wrap
    from kvtui.metrics import figures as fig

    r = out["reload"]
    link = out["link"]
    lines = rows([
        ("link", f"{link['text']} each way = {fig.number(link['rate_MBps'], 'MB/s', 1)} MB/s (tc tbf on every "
                 "emulated host's veth)"),
        ("reload", f"{out['pages_reloaded']:,} pages, {fig.number(out['bytes_reloaded'] / 1e6, 'MB', 1)} MB: "
                   f"{fig.RELOAD_LATENCY.name} p50 {fig.show(fig.RELOAD_LATENCY, r['reload_ms']['p50'])}, "
                   f"{fig.RELOAD_P50.label} {fig.number(r['MBps_p50'], 'MB/s', 1)} MB/s (p50 per reload; "
                   f"{out['iterations']:,} reloads)"),
        (fig.RAW_GET_P50.label.removeprefix("baseline "), f"{fig.number(out['raw_MBps_p50'], 'MB/s', 1)} MB/s (p50, "
                                                           "the same keys, interleaved)"),
        ("publish", f"{out['publish']['pages']:,} pages at {fig.number(out['publish']['MBps'], 'MB/s', 1)} MB/s "
                    "(one run)"),
        ("verified", "every reloaded page byte-exact" if out["verified"] else "MISMATCHES"),
    ], 20, indent="")
    lines += ratio_section(out["ratios"], ("reload_vs_link", "raw_vs_link"))
    if not out["targets"]["met"] and out["ratios"]["raw_vs_link"] < out["targets"]["reload_vs_link"]:
        lines += wrap("the raw reads are as far below the link: this machine, not the link, is the limit here",
                      first="  ", rest="  ")
    lines += legend([LEGEND])
    return "\n".join(lines)
