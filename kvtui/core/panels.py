"""The keys of a frame's panels, defined once for the samplers that fill them and the views that read them.

The panels stay plain dicts, so a frame records to JSON and a session replays without kvtui's classes; these
``TypedDict`` s name their keys and units. Every key is optional (``total=False``): a panel carries what its
source knows.
"""

from __future__ import annotations

from typing import Any, TypedDict


class SegmentRow(TypedDict, total=False):
    """One memory segment the master knows (observe mode): ``name``, ``used_bytes``, ``capacity_bytes``, and
    ``status`` (the master's word for it, ``""`` when it gives none)."""

    name: str
    used_bytes: int
    capacity_bytes: int
    status: str


class MasterRow(TypedDict, total=False):
    """One master of an HA cluster as its admin endpoint answered (:class:`kvtui.mooncake.ha.MasterState`):
    ``name`` (``master-0`` …), ``url`` (its admin base), ``up`` (it answered), ``role`` (``leader`` when
    serving, ``warm-up``, ``candidate``, ``standby``, ``down``), ``ha_state`` (its own word), ``leader`` (the
    leader's RPC address as it sees it), ``lag`` (OpLog entries not applied yet, ``ha_oplog_standby_lag``)."""

    name: str
    url: str
    up: bool
    role: str
    ha_state: str
    leader: str
    lag: int


class StoreScrape(TypedDict, total=False):
    """The master's ``/metrics`` scrape (:mod:`kvtui.mooncake.samplers`), which grants no lease. ``up``: the
    last scrape answered (None before the first); ``keys``, ``used_bytes``, ``capacity_bytes``,
    ``evicted_keys``, ``alloc_failures``, ``clients``: the master's gauges (Mooncake ``master_*`` metrics);
    ``put_rps`` / ``get_rps``: put and get requests per second between the last two scrapes.

    Observe mode (:mod:`kvtui.observe`) adds: ``soft_pinned_keys``, ``put_discards`` / ``put_releases`` (put
    starts the master discarded after its put-start timeout / released), ``remove_failures`` (removes refused,
    e.g. OBJECT_HAS_LEASE): the master's counts; per second between two samples: ``evict_kps`` (keys
    evicted), ``evict_fail_ps`` (eviction attempts that evicted nothing), ``alloc_fail_ps`` (PutStart
    allocation failures), ``put_fail_ps`` / ``get_fail_ps`` (failed puts / gets); ``get_hit_ratio``
    (GetReplicaList calls that found a complete replica ÷ all, 0–1; absent when there were none);
    ``segments``: ``[{"name", "used_bytes", "capacity_bytes", "status"}]``; ``health``: the master's
    ``/health`` (``status``, ``role``, ``ha_state``, ``service_ready``).

    An HA cluster's masters (live and observe modes) add ``masters`` (:class:`MasterRow` each) and ``leader``
    (the serving leader's RPC address, or the last one a master named); the gauges are the serving leader's.

    A store with a disk tier adds (:data:`kvtui.metrics.figures.STORE_DISK`): ``disk_used_bytes``,
    ``disk_capacity_bytes`` (absent when unknown), ``offloaded_keys`` (keys evicted from DRAM to disk),
    ``disk_evicted_keys``, ``promoted_keys`` (disk to DRAM), ``mem_cache_hits`` / ``disk_cache_hits`` (the
    master's lookups answered from each tier).

    A store that replicates hot keys (``--replicate-hot``, or a master that has copied one) adds
    (:data:`kvtui.metrics.figures.STORE_HOT`): ``copies_started`` / ``copies_done``, the copies of a hot key to a
    second segment the master began and completed."""

    up: bool | None
    keys: int
    used_bytes: int
    capacity_bytes: int
    evicted_keys: int
    alloc_failures: int
    clients: int
    put_rps: float
    get_rps: float
    soft_pinned_keys: int
    put_discards: int
    put_releases: int
    remove_failures: int
    evict_kps: float
    evict_fail_ps: float
    alloc_fail_ps: float
    put_fail_ps: float
    get_fail_ps: float
    get_hit_ratio: float
    segments: list[SegmentRow]
    health: dict[str, Any]  # the master's /health JSON as it answered
    masters: list[MasterRow]
    leader: str
    disk_used_bytes: int
    disk_capacity_bytes: int
    offloaded_keys: int
    disk_evicted_keys: int
    promoted_keys: int
    mem_cache_hits: int
    disk_cache_hits: int
    copies_started: int
    copies_done: int


class ProcRow(TypedDict, total=False):
    """One process kvtui runs: ``name`` (kvtui, prefill, decode, master, metadata, store), ``pid``,
    ``cpu_percent`` (of one CPU, since the last sample), ``rss_bytes``, ``alive``; ``host``: its address
    on an emulated host (``--hosts auto``, :mod:`kvtui.mooncake.hosts`), absent otherwise; ``role``: a master of
    an HA cluster, what it is (:class:`MasterRow` ``role``), absent otherwise; ``remote``: not a process kvtui
    samples (an attached cluster's master: a name and a role, no pid, CPU or RSS)."""

    name: str
    pid: int
    cpu_percent: float
    rss_bytes: int
    alive: bool
    host: str
    role: str
    remote: bool


class WorkloadPanel(TypedDict, total=False):
    """The workload now. ``kind``: ``synthetic``, ``trace`` or ``observe`` (no workload: ``name`` is the
    master watched, :mod:`kvtui.observe`). Synthetic: ``scenario``, ``overlap``
    (fraction 0–1), ``pool``, ``rate`` (req/s, 0 = closed loop), ``prompt_tokens``, ``output_tokens`` (each
    request's decode length), ``layout`` (preset name
    or ``custom``). Trace: ``name`` (file name), ``done`` / ``total`` (rows), ``complete``, ``speed`` (× trace
    time; None = as fast as possible), ``position_s`` (trace time of the newest row issued, since the first
    row, s), ``length_s`` (the trace's span, s) and ``synthesis`` (the trace synthesis flags given, by
    field of ``workload.synthesis.Synthesis``, e.g. ``{"prefix_scale": 2.0}``; absent when none)."""

    kind: str
    scenario: str
    overlap: float
    pool: int
    rate: float
    prompt_tokens: int
    output_tokens: int
    layout: str
    name: str
    done: int
    total: int
    complete: bool
    speed: float | None
    position_s: float
    length_s: float
    synthesis: dict[str, float]


class ReplayStatus(TypedDict, total=False):
    """Where a replay is: ``position`` / ``length`` (seconds of the recording), ``speed`` (×), ``paused``,
    ``ended``."""

    position: float
    length: float
    speed: float
    paused: bool
    ended: bool


class FrameStatus(TypedDict, total=False):
    """The run's state. ``mode``: ``live`` or ``replay``; ``store_mode``: ``embedded`` or ``attached``;
    ``store_up``: the master's last scrape answered (None before the first); ``paused``; ``layout``: the page
    layout in words; ``finished``: the workload ended; ``error``: why the run stopped; ``outage``: the master
    does not answer; ``outage_of``: what is down in an outage of an embedded store, ``master`` or ``store`` (the
    store node whose dummy clients the workers are); ``recording`` / ``record_path``; ``window_s``: length of
    the latency window (s); ``replay``: :class:`ReplayStatus` in replay mode."""

    mode: str
    store_mode: str
    store_up: bool | None
    paused: bool
    layout: str
    finished: bool
    error: str
    outage: bool
    outage_of: str
    recording: bool
    record_path: str
    window_s: float
    replay: ReplayStatus


class TtftStats(TypedDict, total=False):
    """TTFT figures of a set of requests, each of which reloaded at least one page (estimates:
    :mod:`kvtui.metrics.ttft_saved`). ``count``: requests; ``tokens``: prompt tokens reloaded; ``total_ms`` /
    ``p50_ms`` / ``p99_ms``: TTFT saved (recompute estimate − measured reload, ms; negative when the reload
    is slower); ``reload_ms``: Σ measured reload time (ms); ``gpu_s``: Σ estimated recompute time, the prefill
    GPU time saved (s); ``slower``: requests whose reload took longer than the recompute estimate;
    ``ratio``: ``reload_ms`` ÷ the Σ recompute time (> 1: the reloads were slower than recomputing); ``tiers``
    (a store with a disk tier): the same figures of each tier's part (``memory``, ``disk``: the tokens reloaded
    from it and the reload's time in it, :mod:`kvtui.metrics.tiers`) of the requests that reloaded a page from it."""

    count: int
    tokens: int
    total_ms: float
    p50_ms: float
    p99_ms: float
    reload_ms: float
    gpu_s: float
    slower: int
    ratio: float
    tiers: dict[str, TtftStats]


class TtftPanel(TypedDict, total=False):
    """``Frame.ttft``: the TTFT and GPU time reuse saves (estimates; empty when the run has no estimator).
    ``basis``: the estimate's inputs in one line (model, GPU, MFU, or the measured prefill rate); ``short``:
    a few words of it (``H100 @ 40 % MFU``); ``off``: why there is no estimate (tiny or custom layout);
    ``window`` / ``session`` / ``span``: :class:`TtftStats` of the last ``window_s`` seconds, the whole
    session and the recorded span (absent when none); ``gpu_s_per_s``: prefill GPU-seconds saved per second
    of wall-clock time over the last 2 s."""

    basis: str
    short: str
    off: str
    window_s: float
    window: TtftStats
    session: TtftStats
    span: TtftStats
    gpu_s_per_s: float
