"""Store capacity against a workload's working set: how big the embedded segment must be, what to tell the
user before a run starts, and what a burst of refused puts means.

The working set in pages comes from :mod:`workload.working_set`. A Mooncake master starts evicting once
the allocated bytes pass ``eviction_high_watermark_ratio`` of the capacity (kvtui's embedded master runs
with 0.9, :class:`kvtui.mooncake.cluster.ClusterOptions`; upstream ``mooncake-store/src/master_service.cpp``
evicts unleased objects, oldest first), so a segment keeps ``floor(segment · watermark / page_bytes)``
pages without evicting any. The segment's offset allocator adds no per-object overhead:
``master_allocated_bytes`` is exactly the objects' bytes (:data:`kvtui.core.sweep.OBJECT_OVERHEAD_BYTES`).

Eviction starts only once a put has taken the store past the watermark, and runs in the background; a put
that does not fit the space free at that moment is refused at once (``NO_AVAILABLE_HANDLE``, not retried).
So the part of the segment above the watermark must hold one publish of the requests in flight
(``WorkingSet.burst_pages``) as well: a 1 GiB segment has 102 MiB there, less than one 8-page prompt of
14 MiB, and refused a few such puts a minute at overlap 0 whatever the read lease (1 s or 10 s); 1,200 MiB
refused none.

Sizes are bytes; every text is one line that names flags, never internal names.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kvtui.core.defaults import MIN_SEGMENT_BYTES
from kvtui.core.text import plural
from kvtui.core.units import format_bytes

if TYPE_CHECKING:
    from workload.working_set import WorkingSet

MEMORY_SHARE = 0.5
"""A store sized by kvtui (no ``--store-size``) takes at most this share of the machine's available memory
(psutil ``available``): the workers' page buffers and everything else on the machine need the rest."""

_MIB, _GIB = 1 << 20, 1 << 30


def _pct(fraction: float) -> str:
    return f"{fraction * 100:g} %"


def held_pages(segment_bytes: int, page_bytes: int, watermark: float) -> int:
    """Pages of ``page_bytes`` a segment of ``segment_bytes`` keeps below the eviction ``watermark`` (0–1)."""
    return int(segment_bytes * watermark // page_bytes)


def room_above(segment_bytes: int, watermark: float) -> int:
    """Bytes of a segment of ``segment_bytes`` above its eviction ``watermark`` (0–1)."""
    return segment_bytes - int(segment_bytes * watermark)


def segment_for(pages: int, page_bytes: int, watermark: float, burst_pages: int = 0) -> int:
    """Smallest segment (bytes, a whole number of MiB) that keeps ``pages`` pages below ``watermark`` and has
    room above it for a publish of ``burst_pages`` pages: ``ceil(max(pages · page_bytes / watermark,
    burst_pages · page_bytes / (1 − watermark)))``."""
    need = max(pages * page_bytes / watermark, burst_pages * page_bytes / (1.0 - watermark) if burst_pages else 0)
    return math.ceil(need / _MIB - 1e-9) * _MIB  # (1 − 0.9 is not exactly 0.1)


def need_bytes(ws: WorkingSet, page_bytes: int, watermark: float) -> int:
    """:func:`segment_for` of working set ``ws`` (its pages below the watermark, its burst above it)."""
    return segment_for(ws.pages, page_bytes, watermark, ws.burst_pages)


def burst_fits(ws: WorkingSet, page_bytes: int, segment_bytes: int, watermark: float) -> bool:
    """The segment has room above ``watermark`` for one publish of ``ws``'s requests in flight."""
    return ws.burst_pages * page_bytes <= room_above(segment_bytes, watermark)


def fits(ws: WorkingSet, page_bytes: int, segment_bytes: int, watermark: float) -> bool:
    """A segment of ``segment_bytes`` keeps ``ws`` below ``watermark`` and its burst above it."""
    return ws.pages <= held_pages(segment_bytes, page_bytes, watermark) and \
        burst_fits(ws, page_bytes, segment_bytes, watermark)


def size_flag(n: int) -> str:
    """``n`` bytes rounded up as ``--store-size`` takes it: ``448MiB``, ``3.3GiB`` (never below ``n``)."""
    if n >= _GIB:
        return f"{math.ceil(n * 10 / _GIB) / 10:g}GiB"
    return f"{math.ceil(n / _MIB)}MiB"


def working_set_text(ws: WorkingSet, page_bytes: int) -> str:
    """``~214 pages of 14.0 MiB = 2.9 GiB (6 shared + 8 conversations × 26 pages)`` for a
    :class:`workload.working_set.WorkingSet`."""
    return (f"~{plural(ws.pages, 'page')} of {format_bytes(page_bytes)} = {format_bytes(ws.pages * page_bytes)} "
            f"({ws.formula})")


def _named(ws: WorkingSet) -> str:
    """``the multi-turn working set``, or for a setting the monitor's keys reach: ``the working set of
    multi-turn at overlap 0 %, which the monitor's keys reach,``."""
    if ws.setting:
        return f"the working set of {ws.setting}, which the monitor's keys reach,"
    return f"the {ws.source} working set"


def burst_text(ws: WorkingSet, page_bytes: int) -> str:
    """``one publish of the requests in flight (8 pages of 14.0 MiB = 112.0 MiB)``."""
    return (f"one publish of the requests in flight ({plural(ws.burst_pages, 'page')} of {format_bytes(page_bytes)} = "
            f"{format_bytes(ws.burst_pages * page_bytes)})")


def outgrown_text(ws: WorkingSet, page_bytes: int, segment_bytes: int, watermark: float) -> str:
    """Why a segment of ``segment_bytes`` that kvtui sized cannot take working set ``ws`` (a knob setting the
    user asked for while the run goes on): one clause that names the size it would take, or ``""`` when it
    fits (:func:`fits`)."""
    seg, wm = format_bytes(segment_bytes), f"{_pct(watermark)} eviction watermark"
    start = f"start with --store-size {size_flag(max(need_bytes(ws, page_bytes, watermark), MIN_SEGMENT_BYTES))} for it"
    held = held_pages(segment_bytes, page_bytes, watermark)
    if ws.pages > held:
        return (f"make the {ws.source} working set {working_set_text(ws, page_bytes)}, more than the {seg} store "
                f"kvtui sized keeps below its {wm} ({plural(held, 'page')}); {start}")
    if not burst_fits(ws, page_bytes, segment_bytes, watermark):
        return (f"make {burst_text(ws, page_bytes)} more than the {format_bytes(room_above(segment_bytes, watermark))} "
                f"the {seg} store kvtui sized has above its {wm}; {start}")
    return ""


def remedy(ws: WorkingSet) -> str:
    """What else than a bigger store shrinks this working set, by flag (a trace's: fewer rows or fewer KV bytes
    per token, :func:`_layout_hint` names a layout that fits)."""
    return {"multi-turn": "lower --pool or --prompt-tokens", "shared-system-prompt": "lower --pool or --prompt-tokens",
            "few-shot": "lower --pool or --prompt-tokens", "random": "lower --concurrency or --prompt-tokens"}.get(
        ws.source, "replay fewer rows (--requests N) or use a layout with fewer KV bytes per token")


def _layout_hint(ws: WorkingSet, page_bytes: int, page_tokens: int | None, budget_bytes: int, watermark: float) -> str:
    """For a trace too big for ``budget_bytes``: the largest KV bytes per token that would fit, and ``--layout
    tiny`` only when it is that small."""
    from kvtui.core.layout import PRESETS

    if not page_tokens or ws.source != "trace" or not ws.pages:
        return remedy(ws)
    most = int(budget_bytes * watermark // (ws.pages * page_tokens))
    have, tiny = page_bytes // page_tokens, PRESETS["tiny"].bytes_per_token
    if most < 1 or most >= have:  # (no layout fits, or this one would: the rows are what is too many)
        return "replay fewer rows (--requests N)"
    return (f"a layout of at most {most:,} B/token fits (this one has {have:,}"
            + (f"; --layout tiny has {tiny:,})" if tiny <= most else "), or replay fewer rows (--requests N)"))


def _prompt_text(ws: WorkingSet, page_bytes: int) -> str:
    what = "the longest trace row" if ws.source == "trace" else "one prompt"
    return f"{what} ({plural(ws.prompt_pages, 'page')} of {format_bytes(page_bytes)} = " \
           f"{format_bytes(ws.prompt_pages * page_bytes)})"


def _prompt_remedy(ws: WorkingSet) -> str:
    return "use a smaller layout" if ws.source == "trace" else "lower --prompt-tokens, or use a smaller layout"


def tiered_line(ws: WorkingSet, page_bytes: int, watermark: float, segment_bytes: int, disk_bytes: int) -> str:
    """The start-up line for working set ``ws`` on a DRAM segment of ``segment_bytes`` with a disk tier of
    ``disk_bytes`` (``--disk-size``): ``""`` when DRAM keeps it (:func:`fits`); what goes to disk when the disk
    tier holds the rest (DRAM evicts to disk: reloads, not misses); a warning when even the disk cannot."""
    if fits(ws, page_bytes, segment_bytes, watermark):
        return ""
    held = held_pages(segment_bytes, page_bytes, watermark)
    seg, disk = format_bytes(segment_bytes), format_bytes(disk_bytes)
    wst = working_set_text(ws, page_bytes)
    if ws.pages * page_bytes <= disk_bytes:
        return (f"tiers: {_named(ws)} is {wst}; the {seg} DRAM keeps {plural(held, 'page')} below its "
                f"{_pct(watermark)} eviction watermark and offloads the rest to the {disk} disk tier as it evicts: "
                "expect hits from disk, and puts refused while DRAM waits for an offload")
    return (f"warning: {_named(ws)} is {wst}, more than the {seg} DRAM and the {disk} disk tier hold: expect "
            f"evictions from disk as well; --disk-size {size_flag(ws.pages * page_bytes)} would hold it")


@dataclass(frozen=True)
class StorePlan:
    """The embedded segment to start and what to say about it: ``segment_bytes``; ``line``: one line for
    stderr before the run starts, or ``""``; ``warning``: True when the line warns (the store is too small
    for the working set)."""

    segment_bytes: int
    line: str = ""
    warning: bool = False


def plan_store(ws: WorkingSet, page_bytes: int, watermark: float, *, given_bytes: int | None, given_text: str = "",
               available_bytes: int, default_bytes: int, page_tokens: int | None = None) -> StorePlan:
    """Size the embedded segment for working set ``ws`` (:class:`workload.working_set.WorkingSet`).

    ``given_bytes`` None (no ``--store-size``): the default (no line), or the size :func:`segment_for` the
    working set when that is larger, at most :data:`MEMORY_SHARE` of ``available_bytes``; the line says which
    and why.
    ``given_bytes`` (``--store-size given_text``): that size; the line warns if it does not keep the working
    set below the watermark, and says what would fit. ``ValueError`` (one line) when the segment cannot hold
    one prompt (the longest request's pages) — also when the machine's memory cannot. ``page_tokens``: lets a
    trace too big for the machine say which KV bytes per token would fit.
    """
    need = need_bytes(ws, page_bytes, watermark)
    prompt_bytes = ws.prompt_pages * page_bytes
    wm = f"{_pct(watermark)} eviction watermark"
    wst = working_set_text(ws, page_bytes)
    cap = int(available_bytes * MEMORY_SHARE) // _MIB * _MIB
    above = segment_for(0, page_bytes, watermark, ws.burst_pages) > segment_for(ws.pages, page_bytes, watermark)
    room = f", with room above it for {burst_text(ws, page_bytes)}" if above else ""  # (when that sets the size)
    if given_bytes is not None:
        if prompt_bytes > given_bytes:
            raise ValueError(f"--store-size {given_text} has room for {plural(given_bytes // page_bytes, 'page')} of "
                             f"{format_bytes(page_bytes)}, not {_prompt_text(ws, page_bytes)}: use --store-size "
                             f"{size_flag(prompt_bytes)} at least ({size_flag(need)} keeps the working set below the "
                             f"{wm}{room}), or {_prompt_remedy(ws)}")
        held = held_pages(given_bytes, page_bytes, watermark)
        if ws.pages <= held and given_bytes > available_bytes:
            enough = size_flag(max(need, MIN_SEGMENT_BYTES))
            return StorePlan(given_bytes, f"warning: --store-size {given_text} is more than this machine's free memory "
                                          f"({format_bytes(available_bytes)}): the store node can be killed as it "
                                          f"fills; {_named(ws)} needs {enough}", warning=True)
        if fits(ws, page_bytes, given_bytes, watermark):
            return StorePlan(given_bytes)
        if ws.pages <= held:  # only the publish does not fit above the watermark
            return StorePlan(given_bytes, f"warning: --store-size {given_text} has "
                                          f"{format_bytes(room_above(given_bytes, watermark))} above the {wm}, less "
                                          f"than {burst_text(ws, page_bytes)}, and eviction makes room only after a "
                                          f"put crossed it: expect refused puts; --store-size {size_flag(need)} would "
                                          f"fit", warning=True)
        fit = (f"--store-size {size_flag(need)} would fit, or {remedy(ws)}" if need <= cap else
               f"it needs --store-size {size_flag(need)}, more than this machine can give: "
               f"{_layout_hint(ws, page_bytes, page_tokens, max(cap, given_bytes), watermark)}")
        return StorePlan(given_bytes, f"warning: --store-size {given_text} keeps {plural(held, 'page')} below the "
                                      f"{wm}, but {_named(ws)} is {wst}: expect evictions and refused puts; {fit}",
                         warning=True)
    if need <= default_bytes:
        return StorePlan(default_bytes)  # the default holds it: nothing to say
    if need <= cap:
        return StorePlan(need, f"store {format_bytes(need)}: {_named(ws)} is {wst}, kept below the {wm}{room} "
                               "(--store-size overrides)")
    size = max(cap, default_bytes)  # need > both: as much as the machine allows, never below the default
    if size < prompt_bytes:
        raise ValueError(f"this machine's free memory ({format_bytes(available_bytes)}; a store may take "
                         f"{_pct(MEMORY_SHARE)}) cannot hold {_prompt_text(ws, page_bytes)}: {_prompt_remedy(ws)}")
    return StorePlan(size, f"warning: store {format_bytes(size)}, {_pct(MEMORY_SHARE)} of the "
                           f"{format_bytes(available_bytes)} of free memory, but {_named(ws)} is {wst}{room} "
                           f"and needs {size_flag(need)}: expect evictions and refused puts; "
                           f"{_layout_hint(ws, page_bytes, page_tokens, size, watermark)}",
                     warning=True)


def attached_plan_line(ws: WorkingSet, page_bytes: int, capacity_bytes: int, watermark: float) -> str:
    """Attach mode (kvtui sizes nothing): a one-line warning when the cluster's capacity (the sum of its
    segments, bytes) does not keep the working set below ``watermark``, else ``""``."""
    if fits(ws, page_bytes, capacity_bytes, watermark):
        return ""
    if ws.pages <= held_pages(capacity_bytes, page_bytes, watermark):
        return (f"warning: the attached cluster's {format_bytes(capacity_bytes)} have "
                f"{format_bytes(room_above(capacity_bytes, watermark))} above a {_pct(watermark)} eviction watermark, "
                f"less than {burst_text(ws, page_bytes)}: expect refused puts; it needs "
                f"{size_flag(need_bytes(ws, page_bytes, watermark))}")
    return (f"warning: the attached cluster's {format_bytes(capacity_bytes)} keep "
            f"{plural(held_pages(capacity_bytes, page_bytes, watermark), 'page')} below a {_pct(watermark)} eviction "
            f"watermark, but the {ws.source} working set is {working_set_text(ws, page_bytes)}: expect evictions "
            f"and refused puts; it needs {size_flag(need_bytes(ws, page_bytes, watermark))}, or {remedy(ws)}")


def store_full_text(failed: int, seconds: float, ws: WorkingSet | None, page_bytes: int, segment_bytes: int | None,
                    watermark: float, lease_ttl_s: float | None, dead_nodes: tuple[str, ...] = (),
                    disk_tier: bool = False) -> str:
    """The one event-log line of a burst of ``failed`` puts refused with ``NO_AVAILABLE_HANDLE`` within
    ``seconds``: the cause (the working set ``ws`` does not fit ``segment_bytes`` below ``watermark``, or it
    does and pages leased by recent reads fill the store, or the store nodes ``dead_nodes`` kvtui started
    are down and their segment with them, or a disk tier that frees DRAM only as fast as it offloads) and
    the remedy, by flag. ``ws`` None: unknown; ``segment_bytes`` None: an attached cluster of unknown size;
    ``disk_tier``: the store offloads DRAM's evictions to disk (Mooncake's ``offload_on_evict``)."""
    head = f"store full: {plural(failed, 'put')} failed with NO_AVAILABLE_HANDLE in {seconds:.1f} s — "
    if dead_nodes:
        many = len(dead_nodes) > 1
        named = "" if tuple(dead_nodes) == ("store",) else f" ({', '.join(dead_nodes)})"  # (the only one: no name)
        return head + (f"the store node{'s' if many else ''} kvtui started{named} "
                       f"{'are' if many else 'is'} down, and {'their segments' if many else 'its segment'} with "
                       f"{'them' if many else 'it'}; not a size or lease problem (restart kvtui)")
    if disk_tier:
        seg = f" ({format_bytes(segment_bytes)})" if segment_bytes is not None else ""
        return head + (f"the DRAM segment{seg} is full while the disk tier takes its evictions: Mooncake frees a "
                       "page's DRAM only once its owner has written it to disk (one offload round a second), and "
                       "refuses puts meanwhile; a larger --store-size gives the offload more room, a lower request "
                       "rate more time")
    if ws is None or segment_bytes is None:
        return head + ("every page in the store is leased or in use; raise --store-size"
                       if segment_bytes is not None else
                       "every page in the attached cluster is leased or in use; give it more segment memory")
    wsb, seg = format_bytes(ws.pages * page_bytes), format_bytes(segment_bytes)
    if ws.pages > held_pages(segment_bytes, page_bytes, watermark):
        return head + (f"the working set (~{wsb}) exceeds the segment ({seg}, evicting above {_pct(watermark)}); "
                       f"raise --store-size to {size_flag(need_bytes(ws, page_bytes, watermark))} or "
                       f"{remedy(ws)}")
    if not burst_fits(ws, page_bytes, segment_bytes, watermark):
        return head + (f"{burst_text(ws, page_bytes)} does not fit the "
                       f"{format_bytes(room_above(segment_bytes, watermark))} the segment ({seg}) has above its "
                       f"{_pct(watermark)} eviction watermark, and eviction makes room only after a put crossed it; "
                       f"raise --store-size to {size_flag(need_bytes(ws, page_bytes, watermark))}")
    ttl = f"{lease_ttl_s:g} s" if lease_ttl_s else "the lease TTL"
    return head + (f"the working set (~{wsb}) fits the segment ({seg}), but pages read within the last {ttl} are "
                   f"leased and cannot be evicted, or the background eviction fell behind the puts; lower "
                   f"--lease-ttl or raise --store-size")
