"""What a view gets: the immutable :class:`Frame` and its page-grid rows (panel keys: :mod:`kvtui.core.panels`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypedDict

from kvtui.core.panels import FrameStatus, ProcRow, StoreScrape, TtftPanel, WorkloadPanel

if TYPE_CHECKING:
    from kvtui.core.events import EngineEvent
    from kvtui.metrics.latency import LatencySnapshot
    from kvtui.metrics.workers import WorkerRow


class SpanStart(TypedDict, total=False):
    """``Frame.span``: the session as it was when the current span (a recording) began: ``t`` (s), ``totals``
    and ``errors`` (by code name); empty when no span began."""

    t: float
    totals: dict[str, float]
    errors: dict[str, int]


@dataclass(frozen=True)
class PageRow:
    """One request in the page grid: ``states`` has one :class:`~kvtui.core.pages.PageState` per cell.

    The rest is for the row's label and detail panel (defaults: unknown, e.g. in an older recording):
    ``group``: its prefix group (:func:`kvtui.metrics.aggregate.prefix_group`, ``""`` none); ``page_tokens``
    / ``page_bytes``: its layout; ``bytes_loaded`` / ``bytes_written``; ``reload_ms`` (probe + read) and
    ``publish_ms`` (probe + put), ms; ``t``: when it finished (s, the frame clock); ``keys``: its first and
    last page key; ``codes``: failing store codes ``((name, count), …)``; ``ideal_pages``: trace rows, the
    pages an unbounded cache would have reloaded (-1: not a trace); ``misses``: its missed full pages by reason
    ``((name, pages), …)`` (:data:`kvtui.core.misses.NAMES`, only the reasons it has; () when unknown);
    ``reasons``: why each full page missed, one :class:`~kvtui.core.misses.MissReason` byte per full page (the
    first ``len(reasons)`` cells; ``b""`` when unknown, e.g. an older recording) — the grid draws them;
    ``disk_read_ms``: of ``reload_ms``, reading the pages that came from the store's disk tier (HIT_DISK cells);
    ``pages_replicated``: of ``pages_hit``, those the store held in two memory replicas or more (hot keys)."""

    req_id: int
    scenario: str
    n_tokens: int
    pages_hit: int
    states: bytes
    group: str = ""
    page_tokens: int = 0
    page_bytes: int = 0
    bytes_loaded: int = 0
    bytes_written: int = 0
    reload_ms: float = 0.0
    publish_ms: float = 0.0
    t: float = 0.0
    keys: tuple[str, ...] = ()
    codes: tuple[tuple[str, int], ...] = ()
    ideal_pages: int = -1
    misses: tuple[tuple[str, int], ...] = ()
    reasons: bytes = b""
    disk_read_ms: float = 0.0
    pages_replicated: int = 0


@dataclass(frozen=True)
class Frame:
    """Everything a view shows at one moment (immutable).

    ``t``: seconds since the run started; ``totals``: cumulative counters (see :meth:`Aggregator.totals`);
    ``rates``: per-second values over the last ~2 s (MB/s are 10^6 bytes/s); ``series``: the recent history of each
    rate (oldest first, one value per second); ``latency`` / ``latency_window``: whole-session and last-``window_s``
    snapshots per kind (reload, publish, probe; on a store with a disk tier also ``reload_memory`` and
    ``reload_disk``, :data:`kvtui.metrics.figures.TIER_LATENCY_KEYS`); ``rows``: newest request rows (newest last);
    ``errors``: counts by Mooncake code name; ``events``: the bounded event log (newest last); ``store``
    (:class:`StoreScrape`), ``procs`` (:class:`ProcRow` s), ``workload`` (:class:`WorkloadPanel`), ``status``
    (:class:`FrameStatus`): panels filled by the live session's samplers, as plain dicts (they record to JSON and
    replay unchanged) whose keys :mod:`kvtui.core.panels` defines; ``row_seq`` / ``event_seq`` / ``series_seq``: how
    many rows, events and series points were ever added; ``span``: ``{"t", "totals", "errors"}`` as they were when
    the current span (a recording) began, ``{}`` when none; ``latency_span``: the latency snapshots per kind
    recorded since then (``{}`` when none); ``ttft``: the TTFT and prefill GPU time saved, estimated
    (:class:`TtftPanel`; ``{}`` without an estimator); ``workers``: per-worker figures
    (:class:`~kvtui.metrics.workers.WorkerTally` rows; ``()`` before any).
    """

    t: float
    totals: dict[str, float]
    rates: dict[str, float]
    series: dict[str, tuple[float, ...]]
    latency: dict[str, LatencySnapshot]
    latency_window: dict[str, LatencySnapshot]
    rows: tuple[PageRow, ...]
    errors: dict[str, int]
    events: tuple[EngineEvent, ...]
    store: StoreScrape = field(default_factory=StoreScrape)
    procs: tuple[ProcRow, ...] = ()
    workload: WorkloadPanel = field(default_factory=WorkloadPanel)
    status: FrameStatus = field(default_factory=FrameStatus)
    row_seq: int = 0  # rows ever added (the newest row is number row_seq); lets a recorder store only new rows
    event_seq: int = 0  # events ever added
    series_seq: int = 0  # series points ever appended
    span: SpanStart = field(default_factory=SpanStart)
    latency_span: dict[str, LatencySnapshot] = field(default_factory=dict)
    window_totals: dict[str, float] = field(default_factory=dict)  # counters over the last window_s (Aggregator.frame)
    ttft: TtftPanel = field(default_factory=TtftPanel)
    workers: tuple[WorkerRow, ...] = ()  # one dict per worker (kvtui.metrics.workers.WorkerTally.rows)
