"""Capacity sweeps (``kvtui sweep``): how each point's store is sized, and the sweep result file's format.

**Sizing a point.** A capacity of ``C`` tokens is the offline LRU model's ``C // block_tokens`` trace blocks
(:func:`workload.stats.hit_rate_curve`), so the real store must keep as many blocks of pages:

* ``pages = (C // block_tokens) · (block_tokens // page_tokens)``;
* ``segment_bytes = ceil(pages · (page_bytes + overhead) / watermark)``: the master starts evicting once the
  allocated bytes pass ``eviction_high_watermark_ratio`` of the capacity (0.9 on kvtui's embedded master,
  ``kvtui.mooncake.cluster.ClusterOptions``), so a segment of this size holds exactly ``pages`` pages before
  the first eviction. ``overhead`` is Mooncake's per-object overhead in the segment,
  :data:`OBJECT_OVERHEAD_BYTES` = 0: ``master_allocated_bytes`` is exactly the objects' bytes, and every
  sweep point measures it again at its end (``overhead_bytes_per_object``).
  The segment is given to Mooncake to the byte (any size of at least 16 MiB is accepted as is);
* Mooncake refuses segments below :data:`~kvtui.core.defaults.MIN_SEGMENT_BYTES` (16 MiB). With the sweep's
  default page shape (:data:`SWEEP_BASE`: 1 layer × 1 KV head × 1 element × 512 tokens, one page per
  FAST'25 block) the element size is chosen per sweep (:func:`auto_elem_bytes`): the smallest power of two
  whose pages bring the smallest capacity's segment to 16 MiB (1M tokens = 1,953 pages → 8 bytes, 8 KiB
  pages, a 17.0 MiB segment). Page bytes change no hit: only the number of pages the store holds does. A
  layout the user gives is kept, and a capacity too small for it is refused, naming the smallest it can sweep.

What a sized store then holds is not the model's ``pages`` at every moment: past the watermark Mooncake
evicts a batch of ``ceil(objects · max(eviction_ratio, used − watermark + eviction_ratio))`` objects at
once (``eviction_ratio`` 0.05), so it holds 95–100 % of ``pages`` (upstream ``mooncake-store``,
``MasterService::BatchEvict``).

**A disk tier** (``kvtui sweep --disk``): a pair of a DRAM capacity ``C`` and a disk capacity ``D`` tokens
sizes the DRAM segment for ``C`` as above and gives the store a disk tier of ``D``'s pages
(:func:`disk_size`): ``disk_pages = (D // block_tokens) · (block_tokens // page_tokens)`` and ``disk_bytes =
disk_pages · page_bytes``, with no watermark: Mooncake's disk tier evicts whole buckets in write order once its
files pass its size (``kvtui.mooncake.tiers``), so it holds at most that many pages, the offline model's disk
(measured: 77–86 % of them at the end of the pairs of two ``synthetic`` sweeps, ``docs/guide/sweeps.md``).
A disk tier below the DRAM segment wedges the store, so a pair whose disk is smaller is left out
(:func:`pair_sizes`) and the smallest disk that would do is named. A disk of 0 is no tier: the DRAM-only
point. The offline figures of a pair are the two-tier model's (``workload.tiers.two_tier_hits``: LRU DRAM
demoting to LRU disk) and Belady's MIN at ``C + D``.

**Repeats.** The real store's rate is not a pure function of the trace and the capacity: the read lease is
wall-clock seconds (what a lease pins depends on how many requests the machine replays in it), and eviction
runs on the master's own thread. So a point may be replayed ``repeats`` times, each on a fresh cluster: the
point's figures are those of its median repeat (:func:`median_run`), its ``runs`` keep every repeat and
:meth:`SweepPoint.real_range` is the lowest and highest real rate.

Sizes are bytes, capacities tokens. Errors are ``ValueError`` with one line that names the flag.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

from kvtui.core.defaults import MIN_SEGMENT_BYTES
from kvtui.core.layout import PageLayout
from kvtui.core.misses import NAMES, REASONS
from kvtui.core.text import plural
from kvtui.core.units import format_bytes

SWEEP_KIND = "kvtui-sweep"
"""The ``kind`` field of a sweep result file (``kvtui report`` recognises a sweep by it)."""
SWEEP_FORMAT = 1
"""The format version of a sweep result file; a newer one is refused by name."""

OBJECT_OVERHEAD_BYTES = 0
"""Bytes Mooncake's segment allocator adds per object: 0 (module docstring)."""

SWEEP_BASE = PageLayout(layers=1, kv_heads=1, head_dim=1, page_tokens=512, elem_bytes=1)
"""The sweep's default page shape before :func:`auto_elem_bytes`: one page per 512-token FAST'25 block, 1 KiB
at one byte per element."""

CURVES = ("real Mooncake store", "offline LRU (trace-stats)", "offline optimal (Belady MIN)", "unbounded ideal")
"""The four curves of a sweep's plot and screen: hit rates measured through the real store, the offline LRU
model's and Belady's optimal cache's at the same capacities (``kvtui trace-stats --capacity``), and the unbounded
cache's (the trace's ideal). LRU to optimal is what the eviction policy costs, optimal to ideal what the
capacity costs. A sweep file written before the optimal curve existed has none (its points' rate is None)."""
X_LABEL = "store capacity (tokens, log scale)"
Y_LABEL = "token hit rate (%)"

DISK_RULE = ("disk pages = disk // block tokens × pages per block; disk bytes = disk pages × page bytes (no "
             "watermark), at least the DRAM segment; DRAM evictions go to it (offload_on_evict)")
"""How a pair's disk tier is sized (the ``disk_rule`` of a DRAM × disk sweep's ``sizing``; module docstring)."""

MAX_AUTO_ELEM_BYTES = 1 << 20
""":func:`auto_elem_bytes` never goes past this (1 GiB pages): a smaller capacity is refused."""


def _tokens(n: int) -> str:
    return f"{n:,} tokens"


@dataclass(frozen=True)
class PointSize:
    """The store of one sweep point. ``capacity_tokens``: as asked; ``blocks``: trace blocks it holds
    (the offline LRU model's capacity); ``pages``: KV pages of ``page_bytes`` the segment holds below the
    watermark; ``segment_bytes``: the embedded segment (bytes)."""

    capacity_tokens: int
    blocks: int
    pages: int
    page_bytes: int
    segment_bytes: int
    disk_tokens: int = 0
    disk_blocks: int = 0
    disk_pages: int = 0
    disk_bytes: int = 0

    @property
    def total_tokens(self) -> int:
        """DRAM and disk capacity together (tokens, as asked): where the pair's MIN is computed."""
        return self.capacity_tokens + self.disk_tokens

    def label(self) -> str:
        """``4M`` for a DRAM-only point, ``4M + 8M disk`` for a pair (:func:`format_tokens`)."""
        return format_tokens(self.capacity_tokens) + (f" + {format_tokens(self.disk_tokens)} disk"
                                                      if self.disk_tokens else "")


@dataclass(frozen=True)
class SkippedPair:
    """A (DRAM, disk) pair left out of a sweep: its disk tier (``disk_bytes``) would be smaller than its DRAM
    segment (``segment_bytes``); ``least_disk_tokens``: the smallest disk capacity that would do."""

    capacity_tokens: int
    disk_tokens: int
    disk_bytes: int
    segment_bytes: int
    least_disk_tokens: int

    def text(self) -> str:
        """One line: which pair, why, and what would do."""
        return (f"--capacity {format_tokens(self.capacity_tokens)} with --disk {format_tokens(self.disk_tokens)}: "
                f"its disk tier ({format_bytes(self.disk_bytes)}) would be smaller than its DRAM segment "
                f"({format_bytes(self.segment_bytes)}), which wedges Mooncake's store; a disk of at least "
                f"{format_tokens(self.least_disk_tokens)} tokens would do")


def pages_per_block(layout: PageLayout, block_tokens: int) -> int:
    """KV pages in one trace block; ``ValueError`` when ``layout.page_tokens`` does not divide it."""
    if block_tokens < 1 or block_tokens % layout.page_tokens:
        raise ValueError(f"--page-tokens {layout.page_tokens} does not divide the trace block of {block_tokens} "
                         "tokens: a KV page must not straddle two trace blocks")
    return block_tokens // layout.page_tokens


def segment_bytes_for(pages: int, page_bytes: int, watermark: float,
                      overhead: int = OBJECT_OVERHEAD_BYTES) -> int:
    """Smallest segment (bytes) whose allocated share stays at or below ``watermark`` (0–1) with ``pages``
    objects of ``page_bytes + overhead``: ``ceil(pages · (page_bytes + overhead) / watermark)``."""
    if not 0 < watermark <= 1:
        raise ValueError(f"eviction watermark must be within (0, 1], got {watermark}")
    need = pages * (page_bytes + overhead)
    seg = math.ceil(need / watermark)
    while seg > 1 and need / (seg - 1) <= watermark:  # float rounding: never one byte more than needed
        seg -= 1
    while need / seg > watermark:
        seg += 1
    return seg


def min_capacity_tokens(layout: PageLayout, block_tokens: int, watermark: float,
                        overhead: int = OBJECT_OVERHEAD_BYTES) -> int:
    """The smallest capacity (tokens, whole trace blocks) whose segment reaches Mooncake's 16 MiB minimum
    with ``layout``'s pages."""
    per_block = pages_per_block(layout, block_tokens)
    block_bytes = per_block * (layout.page_bytes + overhead)
    blocks = max(1, math.ceil(MIN_SEGMENT_BYTES * watermark / block_bytes))
    while segment_bytes_for(blocks * per_block, layout.page_bytes, watermark, overhead) < MIN_SEGMENT_BYTES:
        blocks += 1
    return blocks * block_tokens


def point_size(capacity_tokens: int, block_tokens: int, layout: PageLayout, watermark: float,
               overhead: int = OBJECT_OVERHEAD_BYTES) -> PointSize:
    """Size the store of one point (module docstring). ``ValueError`` (one line naming ``--capacity``) when
    the capacity is below one trace block, or its segment below Mooncake's 16 MiB minimum."""
    per_block = pages_per_block(layout, block_tokens)
    blocks = capacity_tokens // block_tokens
    if blocks < 1:
        raise ValueError(f"--capacity {capacity_tokens:,} is less than one trace block ({_tokens(block_tokens)})")
    pages = blocks * per_block
    seg = segment_bytes_for(pages, layout.page_bytes, watermark, overhead)
    if seg < MIN_SEGMENT_BYTES:
        least = min_capacity_tokens(layout, block_tokens, watermark, overhead)
        need_page = math.ceil(MIN_SEGMENT_BYTES * watermark / pages) - overhead
        raise ValueError(f"--capacity {capacity_tokens:,}: {pages:,} pages of {format_bytes(layout.page_bytes)} "
                         f"need a {format_bytes(seg)} segment, below Mooncake's smallest "
                         f"({MIN_SEGMENT_BYTES >> 20} MiB): sweep capacities of at least {least:,} tokens with "
                         f"this layout, or use pages of at least {need_page:,} bytes (e.g. a larger --elem-bytes)")
    return PointSize(capacity_tokens, blocks, pages, layout.page_bytes, seg)


def disk_size(size: PointSize, disk_tokens: int, block_tokens: int, layout: PageLayout) -> PointSize | SkippedPair:
    """``size`` with a disk tier of ``disk_tokens`` (module docstring; 0: ``size`` unchanged), or the
    :class:`SkippedPair` when that disk would be smaller than the DRAM segment. ``ValueError`` (one line naming
    ``--disk``) for a disk below one trace block."""
    if not disk_tokens:
        return size
    per_block = pages_per_block(layout, block_tokens)
    blocks = disk_tokens // block_tokens
    if blocks < 1:
        raise ValueError(f"--disk {disk_tokens:,} is less than one trace block ({_tokens(block_tokens)}); "
                         "0 is no disk tier")
    pages = blocks * per_block
    disk_bytes = pages * layout.page_bytes
    if disk_bytes < size.segment_bytes:
        least = math.ceil(size.segment_bytes / (per_block * layout.page_bytes)) * block_tokens
        return SkippedPair(size.capacity_tokens, disk_tokens, disk_bytes, size.segment_bytes, least)
    return replace(size, disk_tokens=disk_tokens, disk_blocks=blocks, disk_pages=pages, disk_bytes=disk_bytes)


def pair_sizes(capacities: list[int], disks: list[int], block_tokens: int, layout: PageLayout, watermark: float,
               overhead: int = OBJECT_OVERHEAD_BYTES) -> tuple[list[PointSize], list[SkippedPair]]:
    """Every (DRAM capacity, disk capacity) pair of the two lists (tokens; ``disks`` empty: DRAM only), in
    ascending DRAM then disk order: the sizes to sweep and the pairs left out (:func:`disk_size`). ``ValueError``
    (one line naming the flag) for a capacity or a disk the store cannot be sized for."""
    sizes: list[PointSize] = []
    skipped: list[SkippedPair] = []
    for cap in sorted(set(capacities)):
        dram = point_size(cap, block_tokens, layout, watermark, overhead)
        for disk in sorted(set(disks or [0])):
            got = disk_size(dram, disk, block_tokens, layout)
            if isinstance(got, SkippedPair):
                skipped.append(got)
            else:
                sizes.append(got)
    return sizes, skipped


def auto_elem_bytes(capacity_tokens: int, block_tokens: int, base: PageLayout, watermark: float,
                    overhead: int = OBJECT_OVERHEAD_BYTES) -> int:
    """The smallest power-of-two element size (bytes) with which ``base``'s pages bring the segment of
    ``capacity_tokens`` (the smallest of the sweep) to Mooncake's 16 MiB minimum; ``ValueError`` past
    :data:`MAX_AUTO_ELEM_BYTES`."""
    pages_per_block(base, block_tokens)  # (its own error first)
    if capacity_tokens < block_tokens:
        point_size(capacity_tokens, block_tokens, base, watermark, overhead)  # raises: below one block
    elem = 1
    while elem <= MAX_AUTO_ELEM_BYTES:
        try:
            point_size(capacity_tokens, block_tokens, replace(base, elem_bytes=elem), watermark, overhead)
            return elem
        except ValueError:
            elem *= 2
    raise ValueError(f"--capacity {capacity_tokens:,} is too small to size a store of at least "
                     f"{MIN_SEGMENT_BYTES >> 20} MiB with pages of at most {format_bytes(base.page_bytes * elem // 2)}")


# -- the result file ------------------------------------------------------------------------------------

@dataclass(frozen=True, kw_only=True)
class Measured:
    """What one replay of a point's capacity on a fresh cluster measured: the fields :class:`PointRun` and
    :class:`SweepPoint` share (see SweepPoint for each), and ``misses``: the run summary's miss reasons (per
    reason name, ``pages``, ``tokens`` and ``share`` of the prompt tokens; None when the run carried none).

    With a disk tier: ``pages_hit_disk`` / ``tokens_hit_disk``: of the hits, those read from the disk tier;
    ``real_disk_token_hit_rate``: their token hit rate (0..1; the real store's DRAM rate is
    ``real_token_hit_rate`` minus it); ``disk_read_ms``: the reads' time spent on them (ms, summed);
    ``disk_keys_at_end`` / ``disk_used_bytes_at_end``: objects with a disk replica and the disk tier's bytes at
    the end (the master's ``file_cache_nums_`` and ``master_allocated_file_size_bytes``; None without a tier)."""

    real_token_hit_rate: float
    pages_hit: int = 0
    pages_total: int = 0
    tokens_hit: int = 0
    pages_published: int = 0
    pages_failed: int = 0
    mismatches: int = 0
    evicted_keys: int | None = None
    keys_at_end: int | None = None
    keys_max: int | None = None
    used_bytes_at_end: int | None = None
    overhead_bytes_per_object: float | None = None
    elapsed_s: float = 0.0
    errors: dict[str, int] = field(default_factory=dict)
    misses: dict[str, dict[str, float]] | None = None
    real_disk_token_hit_rate: float = 0.0
    pages_hit_disk: int = 0
    tokens_hit_disk: int = 0
    disk_read_ms: float = 0.0
    disk_keys_at_end: int | None = None
    disk_used_bytes_at_end: int | None = None


@dataclass(frozen=True, kw_only=True)
class PointRun(Measured):
    """One replay of a point's capacity on a fresh cluster (a repeat): :class:`Measured`."""


RUN_FIELDS = tuple(f.name for f in fields(Measured))
"""What one replay of a point measured: the fields of :class:`Measured` (a point's: its median repeat's)."""


def median_run(runs: tuple[PointRun, ...] | list[PointRun]) -> PointRun:
    """The repeat whose real rate is the median (the lower of the two middle ones for an even count: a rate
    that was measured, with the figures measured with it); ``ValueError`` for none."""
    if not runs:
        raise ValueError("a sweep point needs at least one run")
    ranked = sorted(runs, key=lambda r: r.real_token_hit_rate)
    return ranked[(len(ranked) - 1) // 2]


@dataclass(frozen=True)
class SweepPoint(Measured):
    """One capacity of a sweep. Rates are 0..1 token hit rates (hit tokens ÷ input tokens of the rows).
    The measured fields (:data:`RUN_FIELDS`) are those of the median repeat; ``runs`` holds every repeat
    (:class:`PointRun`, in the order run; empty in a file written before repeats: the point is its one run).

    ``real_token_hit_rate``: measured through the real store; ``lru_token_hit_rate``: the offline LRU model at the
    same capacity (``kvtui trace-stats --capacity``); ``min_token_hit_rate``: Belady's optimal cache of the same
    capacity (``workload.stats.optimal_hit_rate_curve``; None in a file written without it); ``pages_hit`` /
    ``pages_total``: the real store's page hits over the full pages; ``pages_published`` / ``pages_failed``: puts
    that stored a page or were refused (``NO_AVAILABLE_HANDLE``: the rest of the segment leased or in use);
    ``evicted_keys``: the master's ``master_evicted_key_count`` at the end; ``keys_at_end`` / ``keys_max``: objects
    held (at the end / the most seen by the 1 Hz scrape); ``used_bytes_at_end``: ``master_allocated_bytes`` at the
    end; ``overhead_bytes_per_object``: ``(used_bytes_at_end − keys_at_end · page_bytes) / keys_at_end`` (None with
    no key); ``elapsed_s``: the replay's seconds; ``errors``: store codes by name and count; ``misses``: why the
    other pages missed (:class:`PointRun`).

    A point of a DRAM × disk sweep: ``disk_tokens`` / ``disk_blocks`` / ``disk_pages`` / ``disk_bytes``: its disk
    tier (0: none, a DRAM-only point); the disk fields of :class:`PointRun`; ``model_token_hit_rate``,
    ``model_memory_token_hit_rate``, ``model_disk_token_hit_rate``: the offline two-tier model's hit rate and its
    DRAM and disk shares (``workload.tiers.two_tier_hits``; with no disk, LRU: the DRAM share is
    ``lru_token_hit_rate``; None in a file written without them). ``min_token_hit_rate`` is Belady's MIN at
    DRAM + disk, ``lru_token_hit_rate`` the LRU model of the DRAM alone."""

    capacity_tokens: int
    blocks: int
    pages: int
    segment_bytes: int
    lru_token_hit_rate: float
    min_token_hit_rate: float | None = None
    runs: tuple[PointRun, ...] = ()
    disk_tokens: int = 0
    disk_blocks: int = 0
    disk_pages: int = 0
    disk_bytes: int = 0
    model_token_hit_rate: float | None = None
    model_memory_token_hit_rate: float | None = None
    model_disk_token_hit_rate: float | None = None

    @classmethod
    def of_runs(cls, size: PointSize, lru_token_hit_rate: float, runs: list[PointRun] | tuple[PointRun, ...],
                min_token_hit_rate: float | None = None, model: tuple[float, float, float] | None = None
                ) -> SweepPoint:
        """The point of ``size`` measured by ``runs`` (at least one): its figures the median run's; ``model``:
        the two-tier model's ``(DRAM, disk, total)`` token hit rates."""
        mid = median_run(runs)
        mem, disk, total = (None, None, None) if model is None else model
        return cls(capacity_tokens=size.capacity_tokens, blocks=size.blocks, pages=size.pages,
                   segment_bytes=size.segment_bytes, lru_token_hit_rate=lru_token_hit_rate,
                   min_token_hit_rate=min_token_hit_rate, runs=tuple(runs), disk_tokens=size.disk_tokens,
                   disk_blocks=size.disk_blocks, disk_pages=size.disk_pages, disk_bytes=size.disk_bytes,
                   model_memory_token_hit_rate=mem, model_disk_token_hit_rate=disk, model_token_hit_rate=total,
                   **{name: getattr(mid, name) for name in RUN_FIELDS})

    @property
    def real_memory_token_hit_rate(self) -> float:
        """The real store's hits read from DRAM, as a token hit rate (0..1)."""
        return max(0.0, self.real_token_hit_rate - self.real_disk_token_hit_rate)

    def label(self) -> str:
        """``4M`` or ``4M + 8M disk`` (:meth:`PointSize.label`)."""
        return PointSize(self.capacity_tokens, self.blocks, self.pages, 0, self.segment_bytes,
                         self.disk_tokens).label()

    def real_range(self) -> tuple[float, float]:
        """The lowest and highest real token hit rate of the repeats (both the point's rate with one)."""
        rates = [r.real_token_hit_rate for r in self.runs] or [self.real_token_hit_rate]
        return min(rates), max(rates)


@dataclass(frozen=True)
class SweepResult:
    """A sweep: where it ran and its points, in the order run (ascending capacity).

    ``trace``: the trace as named; ``rows``: rows replayed; ``block_tokens``: tokens per hash id;
    ``input_tokens``: the rows' prompt tokens; ``ideal_token_hit_rate``: the unbounded cache's rate (0..1);
    ``layout``: :meth:`PageLayout.as_dict`; ``sizing``: how the stores were sized (``rule``, words;
    ``eviction_high_watermark``, ``eviction_ratio``, ``object_overhead_bytes``, ``min_segment_bytes``,
    ``elem_bytes_auto``; a DRAM × disk sweep: ``disk_rule``, words, and ``skipped_pairs``, the pairs left out,
    :class:`SkippedPair` fields each); ``store``: how each point's store ran (``lease_ttl_s``,
    ``fresh_cluster_per_point``, ``speed``, ``concurrency``); ``versions``: kvtui's and Mooncake's;
    ``synthesis``: the trace synthesis applied to the rows (``--prefix-scale`` …,
    ``workload.synthesis.Synthesis`` fields; empty: none);
    ``interrupted``: the sweep was stopped before its last point."""

    trace: str
    rows: int
    block_tokens: int
    input_tokens: int
    ideal_token_hit_rate: float
    layout: dict[str, int]
    points: tuple[SweepPoint, ...]
    sizing: dict[str, Any] = field(default_factory=dict)
    store: dict[str, Any] = field(default_factory=dict)
    versions: dict[str, Any] = field(default_factory=dict)
    bad_rows_skipped: int = 0
    synthesis: dict[str, float] = field(default_factory=dict)
    interrupted: bool = False

    @property
    def page_bytes(self) -> int:
        """Bytes of one KV page of :attr:`layout`."""
        return PageLayout(**self.layout).page_bytes

    def to_dict(self) -> dict[str, Any]:
        """The JSON document (``kind`` :data:`SWEEP_KIND`, ``format`` :data:`SWEEP_FORMAT`)."""
        d = asdict(self)
        d["points"] = [asdict(p) for p in self.points]
        return {"kind": SWEEP_KIND, "format": SWEEP_FORMAT, "page_bytes": self.page_bytes, **d}


def is_sweep_document(data: object) -> bool:
    """True when ``data`` (parsed JSON) says it is a sweep result (its ``kind``)."""
    return isinstance(data, dict) and data.get("kind") == SWEEP_KIND


def sweep_from_dict(data: dict[str, Any], where: str = "sweep file") -> SweepResult:
    """The :class:`SweepResult` of a parsed sweep file; ``ValueError`` (one line naming ``where`` and the
    field) when it is not one, is of a newer format, or misses a field."""
    if not is_sweep_document(data):
        raise ValueError(f"{where} is not a kvtui sweep result (no \"kind\": \"{SWEEP_KIND}\")")
    fmt = data.get("format")
    if not isinstance(fmt, int) or fmt > SWEEP_FORMAT:
        raise ValueError(f"{where} is a sweep of format {fmt!r}; this kvtui reads format {SWEEP_FORMAT} "
                         "(upgrade kvtui)")
    names = {f for f in SweepResult.__dataclass_fields__}
    point_names = set(SweepPoint.__dataclass_fields__)
    run_names = set(PointRun.__dataclass_fields__)
    try:
        raw_points = data["points"]
        points = []
        for i, p in enumerate(raw_points):
            if not isinstance(p, dict):
                raise ValueError(f"{where}: point {i + 1} is not an object")
            fields = {k: v for k, v in p.items() if k in point_names}
            runs = fields.pop("runs", None) or []
            if not isinstance(runs, list) or not all(isinstance(r, dict) for r in runs):
                raise ValueError(f"{where}: point {i + 1}: runs must be a list of objects")
            fields["runs"] = tuple(PointRun(**{k: v for k, v in r.items() if k in run_names}) for r in runs)
            points.append(SweepPoint(**fields))
        kw = {k: v for k, v in data.items() if k in names and k != "points"}
        result = SweepResult(points=tuple(points), **kw)
        PageLayout(**result.layout)
    except KeyError as exc:
        raise ValueError(f"{where}: field {exc.args[0]!r} is missing") from None
    except TypeError as exc:
        missing = str(exc).split(": ", 1)[-1]
        raise ValueError(f"{where}: a field is missing or of the wrong type ({missing})") from None
    for i, p in enumerate(result.points):
        for name in ("real_token_hit_rate", "lru_token_hit_rate", "min_token_hit_rate", "real_disk_token_hit_rate",
                     "model_token_hit_rate", "model_memory_token_hit_rate", "model_disk_token_hit_rate"):
            v = getattr(p, name)
            if v is None and name not in ("real_token_hit_rate", "lru_token_hit_rate", "real_disk_token_hit_rate"):
                continue
            if not isinstance(v, (int, float)) or not 0 <= v <= 1:
                raise ValueError(f"{where}: point {i + 1}: {name} must be within 0..1, got {v!r}")
        for j, run in enumerate(p.runs):
            v = run.real_token_hit_rate
            if not isinstance(v, (int, float)) or not 0 <= v <= 1:
                raise ValueError(f"{where}: point {i + 1}, run {j + 1}: real_token_hit_rate must be within 0..1, "
                                 f"got {v!r}")
        if not isinstance(p.capacity_tokens, int) or p.capacity_tokens < 1:
            raise ValueError(f"{where}: point {i + 1}: capacity_tokens must be a positive integer")
        if not isinstance(p.disk_tokens, int) or p.disk_tokens < 0:
            raise ValueError(f"{where}: point {i + 1}: disk_tokens must be an integer of at least 0")
    return result


def format_tokens(n: int) -> str:
    """A capacity as the command line writes it: ``1M``, ``3M``, ``2.5M``, ``500k``, ``4096``."""
    for div, suffix in ((10**9, "G"), (10**6, "M"), (10**3, "k")):
        if n >= div:
            v = n / div
            return f"{v:.3g}{suffix}" if round(v, 2) != int(v) else f"{int(v)}{suffix}"
    return str(n)


TABLE_HEAD = ("capacity", "pages", "segment", "real store", "offline LRU", "optimal (MIN)", "real − LRU",
              "held at end", "evicted", "puts refused")
"""The columns of a sweep's table (``kvtui sweep``, ``kvtui report SWEEP.json`` and its screen)."""

MISSES_HEAD = ("capacity", "hit", "first use", "evicted", "never stored", "after a break", "in flight")
"""The columns of a sweep's miss-reason table: the real store's hit rate and each reason's share of the prompt
tokens (:mod:`kvtui.core.misses`), the median repeat's."""


TIER_HEAD = ("DRAM", "disk", "real", "of it\nDRAM", "of it\ndisk", "model", "of it\nDRAM", "of it\ndisk", "MIN", "gap",
             "refused")
"""The columns of a DRAM × disk sweep's hit-rate table (:func:`tier_rows`; a name's first line above the
second; :data:`TIER_LEGEND` says what they are)."""

TIER_LEGEND = ("DRAM, disk: capacities in tokens (disk 0: no disk tier); hit rates in % of the prompt tokens.",
               "real: the real store (repeats: the median, lowest–highest); of it: hits read from DRAM, from disk.",
               "model: offline two-tier LRU, DRAM demoting to disk; MIN: Belady's optimum at DRAM + disk.",
               "gap: real − model (percentage points); refused: puts the real store refused (NO_AVAILABLE_HANDLE).")
"""What the columns of :data:`TIER_HEAD` are, in lines of at most 100 characters."""

TIER_STORE_HEAD = ("DRAM", "disk", "pages", "segment", "disk pages", "disk tier", "held", "on disk", "evicted",
                   "dropped")
"""The columns of a DRAM × disk sweep's store table (:func:`tier_store_rows`)."""

TIER_STORE_TITLE = ("the stores: pages the DRAM holds below the watermark, its segment; the disk tier's pages and "
                    "bytes;", "objects held at the end (of them on disk); DRAM evictions; dropped: gone from both "
                    "tiers:")
"""The lines above :data:`TIER_STORE_HEAD`."""


def is_tiered(result: SweepResult) -> bool:
    """True when a point of ``result`` has a disk tier (a DRAM × disk sweep)."""
    return any(p.disk_tokens for p in result.points)


def repeats_of(result: SweepResult) -> int:
    """The most repeats a point of ``result`` has (1 for a file written before repeats)."""
    return max([len(p.runs) for p in result.points] + [1])


def real_text(p: SweepPoint, two_lines: bool = False) -> str:
    """The real store's rate of ``p`` (%): ``35.10 %``, or with repeats the median and the range,
    ``35.10 % (33.93–36.95)`` (``two_lines``: the range below, without brackets)."""
    text = f"{p.real_token_hit_rate * 100:.2f} %"
    if len(p.runs) < 2:
        return text
    lo, hi = p.real_range()
    return f"{text}\n{lo * 100:.2f}–{hi * 100:.2f}" if two_lines else f"{text} ({lo * 100:.2f}–{hi * 100:.2f})"


def table_rows(result: SweepResult, two_lines: bool = False) -> list[tuple[str, ...]]:
    """One row of :data:`TABLE_HEAD` per point, as text with units: capacity in tokens, the pages the store
    holds below the watermark, the segment's bytes, the three token hit rates (%: the real store, with its
    range over the repeats (:func:`real_text`), offline LRU, Belady's optimal; "—" where the file has no
    optimal), the real store's gap to LRU (percentage points), the objects held at the end and the master's
    evicted keys and refused puts (the median repeat's); ``two_lines``: the range below the rate (a screen)."""
    rows: list[tuple[str, ...]] = []
    for p in result.points:
        held = "—" if p.keys_at_end is None else f"{p.keys_at_end:,}"
        evicted = "—" if p.evicted_keys is None else f"{p.evicted_keys:,}"
        rows.append((f"{p.capacity_tokens:,} tok", f"{p.pages:,}", format_bytes(p.segment_bytes),
                     real_text(p, two_lines), f"{p.lru_token_hit_rate * 100:.2f} %",
                     "—" if p.min_token_hit_rate is None else f"{p.min_token_hit_rate * 100:.2f} %",
                     f"{(p.real_token_hit_rate - p.lru_token_hit_rate) * 100:+.2f} pt", held, evicted,
                     f"{p.pages_failed:,}"))
    return rows


def _pct(rate: float | None) -> str:
    return "—" if rate is None else f"{rate * 100:.2f}"


def _count(n: int | None) -> str:
    return "—" if n is None else f"{n:,}"


def _pair(p: SweepPoint) -> tuple[str, str]:
    return format_tokens(p.capacity_tokens), format_tokens(p.disk_tokens) if p.disk_tokens else "0"


def tier_rows(result: SweepResult, two_lines: bool = False) -> list[tuple[str, ...]]:
    """One row of :data:`TIER_HEAD` per point, as text without units (:data:`TIER_LEGEND` says them): the DRAM
    and disk capacities (``4M``), the real store's token hit rate (%, with repeats the median and its range,
    ``two_lines``: the range below) and of it the hits read from DRAM and from disk (the median repeat's), the
    two-tier model's rate and its DRAM and disk shares, Belady's MIN at DRAM + disk, the real store's gap to
    the model (percentage points) and its refused puts; "—" where the file has no figure."""
    rows: list[tuple[str, ...]] = []
    for p in result.points:
        real = f"{p.real_token_hit_rate * 100:.2f}"
        if len(p.runs) > 1:
            lo, hi = p.real_range()
            real += f"\n{lo * 100:.2f}–{hi * 100:.2f}" if two_lines else f" ({lo * 100:.2f}–{hi * 100:.2f})"
        model = p.model_token_hit_rate
        gap = "—" if model is None else f"{(p.real_token_hit_rate - model) * 100:+.2f}"
        rows.append((*_pair(p), real, _pct(p.real_memory_token_hit_rate), _pct(p.real_disk_token_hit_rate),
                     _pct(model), _pct(p.model_memory_token_hit_rate), _pct(p.model_disk_token_hit_rate),
                     _pct(p.min_token_hit_rate), gap, f"{p.pages_failed:,}"))
    return rows


def tier_store_rows(result: SweepResult) -> list[tuple[str, ...]]:
    """One row of :data:`TIER_STORE_HEAD` per point: the DRAM and disk capacities, the pages the DRAM segment
    holds below the watermark and its bytes, the disk tier's pages and bytes ("—": none), the objects held at
    the end and of them those with a disk replica, the DRAM evictions, and the objects dropped from both tiers
    (pages published − held at the end: a page published again after it was dropped counts twice) (the median
    repeat's)."""
    return [(*_pair(p), f"{p.pages:,}", format_bytes(p.segment_bytes),
             f"{p.disk_pages:,}" if p.disk_tokens else "—", format_bytes(p.disk_bytes) if p.disk_tokens else "—",
             _count(p.keys_at_end), _count(p.disk_keys_at_end) if p.disk_tokens else "—", _count(p.evicted_keys),
             "—" if p.keys_at_end is None else f"{p.pages_published - p.keys_at_end:,}")
            for p in result.points]


def misses_head(result: SweepResult) -> tuple[str, ...]:
    """The columns of ``result``'s miss-reason table: :data:`MISSES_HEAD`, with a DRAM and a disk column in place
    of the capacity for a DRAM × disk sweep."""
    return ("DRAM", "disk", *MISSES_HEAD[1:]) if is_tiered(result) else MISSES_HEAD


def misses_rows(result: SweepResult) -> list[tuple[str, ...]]:
    """One row of :func:`misses_head` per point that has miss reasons (none in a file written before them):
    the real store's hit rate and each reason's share of the prompt tokens (%), the median repeat's."""
    rows: list[tuple[str, ...]] = []
    tiered = is_tiered(result)
    for p in result.points:
        if not p.misses:
            continue
        shares = [p.misses.get(NAMES[r], {}).get("share", 0.0) for r in REASONS]
        where = _pair(p) if tiered else (f"{p.capacity_tokens:,} tok",)
        rows.append((*where, f"{p.real_token_hit_rate * 100:.2f} %", *(f"{x * 100:.2f} %" for x in shares)))
    return rows


@dataclass(frozen=True)
class TierLine:
    """The points of one disk size of a DRAM × disk sweep, as its plot draws them (rates in %, ascending DRAM
    capacity in tokens): the real store's median and its lowest and highest repeat, the two-tier model (None
    where the file has none) and Belady's MIN at DRAM + disk (None where it has none)."""

    disk_tokens: int
    capacities: tuple[int, ...]
    real: tuple[float, ...]
    low: tuple[float, ...]
    high: tuple[float, ...]
    model: tuple[float | None, ...]
    best: tuple[float | None, ...]

    @property
    def name(self) -> str:
        """``DRAM only`` or ``+ 8M disk``."""
        return f"+ {format_tokens(self.disk_tokens)} disk" if self.disk_tokens else "DRAM only"


def _model_pct(p: SweepPoint) -> float | None:
    """The two-tier model's rate of ``p`` (%): LRU for a DRAM-only point of a file without the model's figures."""
    rate = p.model_token_hit_rate
    if rate is None and not p.disk_tokens:
        rate = p.lru_token_hit_rate
    return None if rate is None else 100 * rate


def tier_lines(result: SweepResult) -> list[TierLine]:
    """One :class:`TierLine` per disk size of ``result`` (ascending; 0 first): what a disk tier adds at each DRAM
    capacity. A DRAM-only point's model is LRU (a file without the model's figures: its ``lru_token_hit_rate``)."""
    by_disk: dict[int, list[SweepPoint]] = {}
    for p in result.points:
        by_disk.setdefault(p.disk_tokens, []).append(p)
    lines = []
    for disk in sorted(by_disk):
        pts = sorted(by_disk[disk], key=lambda p: p.capacity_tokens)
        ranges = [p.real_range() for p in pts]
        lines.append(TierLine(disk, tuple(p.capacity_tokens for p in pts),
                              tuple(100 * p.real_token_hit_rate for p in pts), tuple(100 * lo for lo, _ in ranges),
                              tuple(100 * hi for _, hi in ranges), tuple(_model_pct(p) for p in pts),
                              tuple(None if p.min_token_hit_rate is None else 100 * p.min_token_hit_rate
                                    for p in pts)))
    return lines


_SKIPPED = set(SkippedPair.__dataclass_fields__)


def describe_sweep(result: SweepResult) -> list[str]:
    """The lines above a sweep's table: the trace, the layout and how the stores were sized and run."""
    lay = PageLayout(**result.layout)
    s, st = result.sizing, result.store
    lines = [f"trace {result.trace}: {result.rows:,} rows, {result.input_tokens:,} input tokens, "
             f"{result.block_tokens} tokens per block; unbounded ideal {result.ideal_token_hit_rate * 100:.2f} %",
             f"layout {lay.describe()}" + (" (element size chosen for Mooncake's 16 MiB minimum segment)"
                                           if s.get("elem_bytes_auto") else "")]
    if result.synthesis:
        lines.append("trace synthesis: " + ", ".join(f"{k.replace('_', ' ')} {v:g}" if isinstance(v, (int, float))
                                                     else f"{k.replace('_', ' ')} {v}"
                                                     for k, v in result.synthesis.items()))
    if s.get("rule"):
        lines.append(f"store sizing: {s['rule']}")
    if s.get("disk_rule"):
        lines.append(f"disk tier: {s['disk_rule']}")
    left = [SkippedPair(**p) for p in s.get("skipped_pairs") or [] if isinstance(p, dict) and set(p) >= _SKIPPED]
    if left:
        lines.append("left out (a disk tier below its DRAM segment wedges the store): " + ", ".join(
            f"{format_tokens(p.capacity_tokens)} + {format_tokens(p.disk_tokens)} disk (needs "
            f"{format_tokens(p.least_disk_tokens)})" for p in left))
    if st:
        lease = st.get("lease_ttl_s")
        lines.append(f"each point: a fresh embedded cluster (empty store), replay at --speed "
                     f"{st.get('speed', 'max')}, --concurrency {st.get('concurrency', 1)}, read lease "
                     f"{lease:g} s" if isinstance(lease, (int, float)) else "each point: a fresh embedded cluster")
    n = repeats_of(result)
    if n > 1:
        lines.append(f"real store: the median of {plural(n, 'repeat')}, each on a fresh cluster (lowest–highest in "
                     "brackets)")
    if result.interrupted:
        lines.append(f"interrupted: {plural(len(result.points), 'point')} finished")
    return lines


def _text_table(head: tuple[str, ...], body: list[tuple[str, ...]]) -> list[str]:
    """``body`` under ``head`` in aligned columns (the first left, the rest right); a name with a line break is
    two header lines."""
    depth = max(name.count("\n") + 1 for name in head)
    heads = [tuple(([""] * (depth - len(parts)) + parts)[k] for parts in (name.split("\n") for name in head))
             for k in range(depth)]
    rows = [*heads, *body]
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    return ["  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip()
            for r in rows]


def format_sweep_table(result: SweepResult) -> str:
    """The text of a sweep: :func:`describe_sweep` lines, the table of :func:`table_rows` (a DRAM × disk sweep:
    :data:`TIER_LEGEND`, the table of :func:`tier_rows` and that of :func:`tier_store_rows`), then, when the
    points have them, why the rest missed (:func:`misses_rows`)."""
    out = describe_sweep(result) + [""]
    if is_tiered(result):
        out += [*TIER_LEGEND, "", *_text_table(TIER_HEAD, tier_rows(result)), "", *TIER_STORE_TITLE,
                *_text_table(TIER_STORE_HEAD, tier_store_rows(result))]
    else:
        out += _text_table(TABLE_HEAD, table_rows(result))
    why = misses_rows(result)
    if why:
        out += ["", "why the prompt tokens missed (% of prompt tokens"
                + ("; the median repeat" if repeats_of(result) > 1 else "") + "; partial pages are the rest):",
                *_text_table(misses_head(result), why)]
    return "\n".join(out)
