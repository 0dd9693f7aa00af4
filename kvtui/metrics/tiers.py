"""Where a request's reload time and its recompute estimate go when its pages came from two tiers: the one
rule the aggregator's latency histograms, the TTFT estimate and the request log share.

A reload reads the pages the store holds in memory first, then those only its disk tier holds
(:class:`~kvtui.core.events.RequestResult`: ``pages_hit_disk`` of ``pages_hit``, ``disk_read_ms`` of
``read_ms``). **Time**: the disk tier's part of a reload is its reads of disk pages (``disk_read_ms``); the
memory tier's is the rest (probe, the query of where each page is, the memory reads); a reload whose pages all
came from one tier is that tier's whole. The parts add up to the reload latency (probe + read).
**Recompute**: the tokens of a page at prompt position ``[a, b)`` cost ``R(b) − R(a)`` to recompute, where ``R``
is :meth:`~kvtui.metrics.ttft.TtftEstimator.recompute_ms` (a later token attends to more tokens, so it costs
more); a tier's share is the sum over its pages (the HIT_DISK cells say which), and the shares add up to
``R(tokens_hit)``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kvtui.core.pages import TIERS, PageState

if TYPE_CHECKING:
    from kvtui.core.events import RequestResult
    from kvtui.metrics.ttft import TtftEstimator

MEMORY, DISK = TIERS


def pages_by_tier(r: RequestResult) -> dict[str, int]:
    """Pages ``r`` reloaded from each tier (both tiers, 0 included)."""
    return {MEMORY: r.pages_hit - r.pages_hit_disk, DISK: r.pages_hit_disk}


def reload_by_tier(r: RequestResult) -> dict[str, float]:
    """``r``'s reload time (ms) in each tier it reloaded a page from (module docstring); empty when it reloaded
    none."""
    pages = pages_by_tier(r)
    if not r.pages_hit:
        return {}
    if not pages[DISK]:
        return {MEMORY: r.reload_ms}
    if not pages[MEMORY]:
        return {DISK: r.reload_ms}
    return {MEMORY: max(0.0, r.reload_ms - r.disk_read_ms), DISK: r.disk_read_ms}


def disk_pages(r: RequestResult) -> list[int]:
    """The indexes of the pages ``r`` reloaded from disk: its HIT_DISK cells, or, for a result whose cells do
    not say (a hand-made one), the last ``pages_hit_disk`` pages of its reloaded run."""
    cells = [i for i, s in enumerate(r.states[: r.pages_hit]) if s == PageState.HIT_DISK]
    if len(cells) == r.pages_hit_disk:
        return cells
    return list(range(r.pages_hit - r.pages_hit_disk, r.pages_hit))


def recompute_by_tier(r: RequestResult, est: TtftEstimator) -> dict[str, float]:
    """The estimated recompute time (ms) of the tokens ``r`` reloaded from each tier it reloaded a page from
    (module docstring: by their positions in the prompt); empty when it reloaded none. ``est`` must be active."""
    if not r.pages_hit:
        return {}
    total = est.recompute_ms(r.tokens_hit)
    if not r.pages_hit_disk:
        return {MEMORY: total}
    pt, disk = r.page_tokens, 0.0
    runs: list[list[int]] = []  # runs of consecutive disk pages: [first, end)
    for i in disk_pages(r):
        if runs and runs[-1][1] == i:
            runs[-1][1] = i + 1
        else:
            runs.append([i, i + 1])
    for a, b in runs:
        disk += est.recompute_ms(b * pt) - est.recompute_ms(a * pt)
    if r.pages_hit_disk == r.pages_hit:
        return {DISK: total}
    return {MEMORY: max(0.0, total - disk), DISK: disk}
