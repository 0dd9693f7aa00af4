"""The keys of the run summary: what ``kvtui run --json`` and ``kvtui report --json`` write, what ``kvtui run``
prints (:func:`kvtui.commands.output.format_summary`) and what ``kvtui compare`` reads back.

The summary stays a plain dict, so it is its JSON as it is; these ``TypedDict`` s name its keys, their types
and units. :class:`RunSummary`'s required keys are those every summary has
(:func:`kvtui.metrics.aggregate.summary_from_frame`); the rest are added by the command that writes it.
The counters are the aggregator's (:data:`kvtui.metrics.aggregate.COUNTERS` and its neighbours), named here
once more for the type checker: tests/unit/test_metrics.py checks that the two lists agree.
"""

from __future__ import annotations

from typing import Any, TypedDict

from kvtui.core.panels import WorkloadPanel
from kvtui.metrics.workers import WorkerRow


class LatencySummary(TypedDict):
    """One kind of latency over the run (:meth:`kvtui.metrics.latency.LatencySnapshot.as_dict`): ``count``
    samples and their ``min``, ``p50``, ``p90``, ``p99``, ``mean`` and ``max`` (ms, HdrHistogram figures)."""

    count: int
    min: float
    p50: float
    p90: float
    p99: float
    mean: float
    max: float


class Throughput(TypedDict):
    """The summary's ``throughput`` (:data:`kvtui.metrics.figures.RUN`): MB/s (10^6 B/s) over the busy time of
    the reads and the puts, requests and prompt tokens skipped per second of the run."""

    reuse_read_MBps: float
    publish_write_MBps: float
    requests_per_s: float
    tokens_skipped_per_s: float


class MissFigures(TypedDict):
    """The missed full pages of one reason (:data:`kvtui.core.misses.NAMES`): ``pages``, their prompt
    ``tokens`` and ``share`` of the prompt tokens (0..1, :data:`kvtui.metrics.figures.MISS_SHARE`)."""

    pages: int
    tokens: int
    share: float


class TtftSaved(TypedDict):
    """TTFT saved (recompute estimate − measured reload, ms) over ``count`` reloads: ``total``, ``p50``, ``p99``."""

    total: float
    p50: float
    p99: float
    count: int


class TtftInputs(TypedDict, total=False):
    """``ttft_estimate``: the TTFT estimate's inputs (:meth:`kvtui.metrics.ttft.TtftEstimator.inputs`):
    ``basis`` in one line, ``saved`` (what TTFT saved means), ``off`` (why there is no estimate); the formula
    and its figures (a model's parameters and shape, the GPU's peak and the MFU, or a measured prefill rate);
    ``at_start`` (``kvtui report``): the inputs as the run began, when a layout switch changed the model."""

    basis: str
    saved: str
    off: str
    formula: str
    prefill_tokens_per_s: float
    model: str | None
    model_source: str
    params_non_embedding: int
    layers: int
    attn_dim: int
    gpu: str
    gpu_name: str
    peak_tflops_bf16_dense: float
    peak_source: str
    mfu: float
    at_start: dict[str, Any]  # (an older recording's header: whatever its kvtui wrote)


class TtftNumbers(TypedDict):
    """The four TTFT figures, of a run or of one tier (:func:`kvtui.metrics.ttft_saved.tier_fields`); None when
    there is no estimate: ``ttft_saved_ms``, ``prefill_gpu_s_saved`` (s), ``reload_vs_recompute`` (Σ reload ÷
    Σ recompute), ``reloads_slower_than_recompute`` (requests)."""

    ttft_saved_ms: TtftSaved | None
    prefill_gpu_s_saved: float | None
    reload_vs_recompute: float | None
    reloads_slower_than_recompute: int | None


class TtftFields(TtftNumbers):
    """The summary's TTFT fields (:func:`kvtui.metrics.ttft_saved.summary_fields`): :class:`TtftNumbers` and
    ``ttft_estimate`` (why there is no estimate, when there is none)."""

    ttft_estimate: TtftInputs


class RunSetup(TypedDict, total=False):
    """How a run was set up (:meth:`kvtui.config.plan.RunPlan.setup`, :func:`kvtui.commands.output.full_setup`):
    the embedded segment's ``store_bytes`` (None when attached; then ``store_capacity_bytes``, the capacity the
    master reported), ``segment_on``, ``protocol``, ``read_streams``, ``hosts``, ``link``, the workers and their
    routing, ``store_nodes``, ``listen``, ``worker_client``, ``ha`` (masters of an HA cluster), ``verify``, the
    kvtui and Mooncake versions, ``disk_bytes`` (the embedded store's disk tier, None: none) and
    ``replicate_hot`` (hot keys get a second memory replica)."""

    store_bytes: int | None
    store_capacity_bytes: int
    segment_on: str
    protocol: str
    read_streams: int
    kvtui_version: str | None
    mooncake_version: str | None
    hosts: str
    link: str | None
    prefill_workers: int
    decode_workers: int
    route: str
    store_nodes: int
    listen: str | None
    worker_client: str
    ha: int | None
    verify: str
    disk_bytes: int | None
    replicate_hot: bool


class RunInputs(TypedDict, total=False):
    """The summary's ``context`` (:data:`kvtui.config.plan.CONTEXT_KEYS`): the workload's ``seed``, the
    ``model`` and key ``scheme``, the ``command`` and its bounds ``duration_s`` and ``max_requests`` (None:
    unbounded)."""

    seed: int
    model: str
    scheme: str
    command: str
    duration_s: float | None
    max_requests: int | None


class RunContext(TypedDict):
    """What a summary says about the run besides its figures (:meth:`kvtui.config.plan.RunPlan.context`):
    ``layout`` (``PageLayout.as_dict()``), ``page_bytes``, ``workload``, ``bad_rows_skipped``, ``concurrency``,
    ``store_mode`` (``embedded`` or ``attached``) and ``setup``."""

    layout: dict[str, int]
    page_bytes: int
    workload: WorkloadPanel
    bad_rows_skipped: int
    concurrency: int
    store_mode: str
    setup: RunSetup


class SpanBounds(TypedDict):
    """A recorded span's bounds (``kvtui report``): ``from_s`` and ``to_s`` (s of the session) and what its
    latencies cover, ``span`` or (an older recording) ``session``."""

    from_s: float
    to_s: float
    latency_covers: str


class Failovers(TypedDict):
    """The failovers a run saw: ``n``, each figure's ``ranges`` (:func:`kvtui.metrics.figures.failover_ranges`),
    the ``reports`` (``FailoverReport.as_dict()``) and ``pages_lost`` (:func:`kvtui.core.failover.loss_summary`)."""

    n: int
    ranges: dict[str, dict[str, Any]]
    reports: list[dict[str, Any]]
    pages_lost: dict[str, Any]


class _Counters(TypedDict):
    """The totals every run has (see :class:`RunTotals`)."""

    requests: int
    pages_total: int
    pages_hit: int
    tokens_input: int
    tokens_cacheable: int
    tokens_hit: int
    pages_published: int
    pages_already_present: int
    pages_failed: int
    verified_pages: int
    mismatches: int
    bytes_loaded: int
    bytes_written: int
    reloads_probe_only: int
    reloads_unusable: int
    read_ms_total: float
    put_ms_total: float
    page_hit_rate: float
    token_hit_rate: float


class RunTotals(_Counters, total=False):
    """The run's totals as the summary states them (:meth:`kvtui.metrics.aggregate.Aggregator.totals` but the
    miss counters): the counters (requests, pages, tokens, bytes; ``reloads_probe_only`` and
    ``reloads_unusable``: requests with no reload latency), the busy times ``read_ms_total`` / ``put_ms_total``
    (ms), ``page_hit_rate`` and ``token_hit_rate`` (0..1). A trace's rows add ``ideal_tokens_hit`` /
    ``ideal_pages_hit`` and ``ideal_token_hit_rate`` (what an unbounded cache would have reloaded),
    ``aiperf_share_sum`` / ``aiperf_requests`` and ``aiperf_hit_rate_so_far``. A store that replicates hot keys
    adds ``pages_hit_replicated`` (:data:`kvtui.metrics.figures.HOT_PAGES_HIT`: hits that had a second memory
    replica)."""

    ideal_tokens_hit: int
    ideal_pages_hit: int
    ideal_token_hit_rate: float
    aiperf_share_sum: float
    aiperf_requests: int
    aiperf_hit_rate_so_far: float
    pages_hit_replicated: int


class _Figures(RunTotals):
    """The figures every summary has (see :class:`SummaryFigures`)."""

    misses: dict[str, MissFigures] | None
    elapsed_s: float
    errors: dict[str, int]
    reload_ms: LatencySummary
    publish_ms: LatencySummary
    probe_ms: LatencySummary
    throughput: Throughput


class SummaryFigures(_Figures, total=False):
    """The summary's figures but the TTFT fields: :class:`RunTotals`, ``misses`` by reason name (None when no
    request carried reasons; ``misses_keys_forgotten``: the reasons are approximate), ``elapsed_s``,
    ``errors`` (answers by Mooncake code name), ``reload_ms`` / ``publish_ms`` / ``probe_ms`` and
    ``throughput``; ``tiers`` on a store with a disk tier (per tier, ``memory`` and ``disk``, its figures of
    :data:`kvtui.metrics.figures.TIER`: :func:`kvtui.metrics.aggregate.tier_summary`)."""

    misses_keys_forgotten: int
    tiers: dict[str, dict[str, Any]]


class RecordedSession(TypedDict):
    """``kvtui report``'s ``session``: the ``file`` read, its ``frames``, ``duration_s``, the kvtui and Mooncake
    versions that wrote it, when it ``started_at`` and whether it was ``damaged``, its WAL missing or not
    closed."""

    file: str
    frames: int
    duration_s: float
    kvtui_version: str | None
    mooncake_version: str | None
    started_at: Any
    damaged: bool
    wal_missing: bool
    not_closed: bool


class RunSummary(SummaryFigures, TtftFields, total=False):
    """The run summary: :class:`SummaryFigures` and :class:`TtftFields` (every summary has them), ``workers``
    (per worker, :mod:`kvtui.metrics.workers`, with ``pid`` and ``host``; not in a recorded span's).

    The commands add: :class:`RunContext`'s keys, ``store_at_end`` (the master's counts by the keys of
    :data:`kvtui.metrics.figures.STORE_COUNTS`), ``context`` (:class:`RunInputs`), ``interrupted`` (and
    ``interrupted_during``, ``stopped_by``), ``requests_lost`` / ``requests_rerun``, ``failovers``; ``kvtui
    report``: ``span``, ``session`` and ``layout_at_end`` (a layout switched to from the command palette)."""

    workers: list[WorkerRow]
    span: SpanBounds
    layout: dict[str, int]
    layout_at_end: dict[str, int]
    page_bytes: int
    workload: WorkloadPanel
    bad_rows_skipped: int
    concurrency: int
    store_mode: str
    setup: RunSetup
    store_at_end: dict[str, int]
    context: RunInputs
    interrupted: bool
    interrupted_during: str
    stopped_by: str
    requests_lost: int
    requests_rerun: int
    failovers: Failovers
    session: RecordedSession


def add_context(summary: RunSummary, context: RunContext) -> None:
    """Add ``context`` (:meth:`kvtui.config.plan.RunPlan.context`) to ``summary``, in place: what
    ``summary.update(context)`` does, which the type checker cannot follow from one TypedDict into another."""
    summary["layout"] = context["layout"]
    summary["page_bytes"] = context["page_bytes"]
    summary["workload"] = context["workload"]
    summary["bad_rows_skipped"] = context["bad_rows_skipped"]
    summary["concurrency"] = context["concurrency"]
    summary["store_mode"] = context["store_mode"]
    summary["setup"] = context["setup"]
