"""What ``run``, ``watch``, ``soak`` and ``serve`` run, as one frozen :class:`RunPlan` made from their flags by
:func:`plan_from_args`: the pages, the TTFT estimate, the workload, its working set, the store and the workers,
and the run's bounds. :func:`kvtui.launch.open_session` starts what the plan describes."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from kvtui.config.cluster import ClusterPlan, cluster_from_args
from kvtui.config.estimate import estimator_from_args
from kvtui.config.exports import NO_EXPORTS, ExportPlan
from kvtui.config.layout import LayoutPlan, layout_from_args
from kvtui.config.workload import WorkloadPlan, workload_from_args
from kvtui.core.errors import bad_value
from kvtui.metrics.ttft import TtftEstimator

if TYPE_CHECKING:
    from kvtui.core.panels import WorkloadPanel
    from kvtui.engine.options import EngineOptions
    from kvtui.metrics.summary import RunContext, RunInputs, RunSetup
    from kvtui.mooncake.cluster import ClusterOptions
    from workload import WorkloadSpec
    from workload.working_set import WorkingSet

CONTEXT_KEYS = ("seed", "model", "scheme", "command", "duration_s", "max_requests")
"""What a run was asked besides its setup: the workload's seed, the model and key scheme its keys are named
after, the command, and its bounds (``--duration`` in seconds, ``--requests``; None: unbounded). A session
keeps them in its header; ``run --json`` and ``report --json`` as ``context``; ``kvtui compare`` lists them
when runs differ (a 6 s run against a 10 s one is not a regression of 40 % of the requests)."""


@dataclass(frozen=True)
class RunPlan:
    """One run: ``command`` (``run``, ``watch``, ``soak``…), its ``layout`` (pages, model, keys), the TTFT
    ``estimator`` (None: frames carry no TTFT estimate), the ``workload`` and the ``working_set`` it keeps live
    (None when it cannot be said),
    the ``cluster`` (store and workers), the ``exports`` (Prometheus, request log), ``concurrency`` (requests
    in flight per decode worker), and its bounds: ``max_requests`` (None: no limit), ``run_for_s`` (the
    session ends this many seconds after ``started_at``, ``time.monotonic()`` when the command was called;
    None: no bound) and ``duration_s`` (the ``--duration`` asked, which a summary states); ``ack_ledger``: the
    engine keeps every page key a put acknowledged, for loss checks (a soak with store faults)."""

    command: str
    layout: LayoutPlan
    estimator: TtftEstimator | None
    workload: WorkloadPlan
    working_set: WorkingSet | None
    cluster: ClusterPlan
    exports: ExportPlan = NO_EXPORTS
    concurrency: int = 1
    max_requests: int | None = None
    run_for_s: float | None = None
    duration_s: float | None = None
    started_at: float | None = None
    quiet: bool = False
    always_replace_workers: bool = False
    count_lost: bool = False
    ack_ledger: bool = False

    @property
    def store_limit(self) -> int | None:
        """The embedded segment (bytes) when kvtui sized it for the working set: a live knob change that would
        need more is refused (:class:`~kvtui.live.LiveSession`); None with ``--store-size`` or attached."""
        return self.cluster.store_bytes if self.cluster.store_sized else None

    @property
    def replace_dead_workers(self) -> bool:
        """A dead worker is replaced and the run goes on (``always_replace_workers``: a soak; else with several
        workers of a role, or remote ones), rather than ending the run."""
        return self.always_replace_workers or self.cluster.topology.several or self.cluster.remote_slots > 0

    @property
    def rerun_lost(self) -> bool:
        """Requests lost with a dead worker are submitted again (unless ``count_lost``: a soak counts them)."""
        return self.replace_dead_workers and not self.count_lost

    def engine_options(self) -> EngineOptions:
        """The :class:`~kvtui.engine.options.EngineOptions` of the plan: made once, they travel unchanged to
        every worker."""
        from kvtui.engine.options import EngineOptions

        c, t, p = self.cluster, self.cluster.topology, self.layout
        return EngineOptions(layout=p.layout, model=p.model, scheme=p.scheme, namespace=p.key_prefix,
                             segment_on=c.segment_on, store_bytes=c.store_bytes, read_streams=c.read_streams,
                             concurrency=self.concurrency, prefill_workers=t.prefill_workers,
                             decode_workers=t.decode_workers, route=t.route, remote_slots=c.remote_slots,
                             replace_dead_workers=self.replace_dead_workers, verify=c.verify,
                             ack_ledger=self.ack_ledger)

    def cluster_options(self, isolation: str | None, log_dir: str | None = None) -> ClusterOptions:
        """The embedded cluster's :class:`~kvtui.mooncake.cluster.ClusterOptions` (``isolation``: the line
        :func:`kvtui.launch.isolate` returned, None when attached; ``log_dir``: where native logs go, when not
        ``--log-dir``)."""
        return self.cluster.cluster_options(isolation, log_dir)

    def setup(self) -> RunSetup:
        """How the run was set up, as summaries and recordings state it: the embedded segment's
        ``store_bytes`` (None when attached), ``segment_on``, ``protocol``, ``read_streams``, ``hosts``
        (``off``/``auto``), ``link`` (normalised; None: unshaped), ``prefill_workers``, ``decode_workers``,
        ``route``, ``store_nodes``, ``listen`` (as given; None), ``worker_client`` (resolved), ``ha`` (the masters
        of an HA cluster: ``--ha N``, or attached through etcd the admin URLs given, None when none were; 0: one
        master, no etcd), ``verify`` (``full`` or ``sampled``: how loaded pages were checked) and the kvtui and
        Mooncake versions (what ``kvtui compare`` lists when runs differ), ``disk_bytes``: the embedded store's
        disk tier (None: none), and ``replicate_hot``: hot keys get a second memory replica."""
        from kvtui import __version__
        from kvtui.session.writer import mooncake_version

        c, t = self.cluster, self.cluster.topology
        return {"store_bytes": None if c.attached else c.store_bytes, "segment_on": c.segment_on,
                "protocol": c.protocol, "read_streams": c.read_streams, "kvtui_version": __version__,
                "mooncake_version": mooncake_version(), "hosts": "auto" if c.hosts else "off", "link": c.link_text,
                "prefill_workers": t.prefill_workers, "decode_workers": t.decode_workers, "route": t.route,
                "store_nodes": t.store_nodes, "listen": c.listen.text if c.listen else None,
                "worker_client": c.worker_client, "ha": self._ha_masters(), "verify": c.verify,
                "disk_bytes": c.tiers.disk_bytes or None, "replicate_hot": c.tiers.replicate_hot}

    def _ha_masters(self) -> int | None:
        c = self.cluster
        if c.endpoints is not None and c.endpoints.ha:
            return len(c.endpoints.masters) or None
        return c.ha

    def context(self, description: Mapping[str, Any] | None = None, bad_rows: int = 0) -> RunContext:
        """What a summary says about the run besides its figures (also kept in a recorded session's header):
        ``layout``, ``page_bytes`` (bytes), ``workload`` (``description``, default the plan's: a ``Frame.workload``
        panel), ``bad_rows_skipped``, ``concurrency``, ``store_mode`` and :meth:`setup`."""
        layout = self.layout.layout
        workload = dict(description if description is not None else self.workload.description)
        return {"layout": layout.as_dict(), "page_bytes": layout.page_bytes,
                "workload": cast("WorkloadPanel", workload), "bad_rows_skipped": bad_rows,
                "concurrency": self.concurrency, "store_mode": "attached" if self.cluster.attached else "embedded",
                "setup": self.setup()}

    def inputs(self) -> RunInputs:
        """The :data:`CONTEXT_KEYS` of the run."""
        return {"seed": self.workload.seed, "model": self.layout.model, "scheme": self.layout.scheme,
                "command": self.command, "duration_s": self.duration_s, "max_requests": self.max_requests}

    def header(self) -> dict[str, Any]:
        """The header of a recorded session: :meth:`context`, :meth:`inputs`, the ``trace`` as given and the
        ``layout_text``; and ``ttft_estimate``, the estimate's inputs, with an estimator."""
        t = self.workload.trace
        header = {**self.context(), **self.inputs(), "trace": t.source if t is not None else None,
                  "layout_text": self.layout.layout.describe()}
        if self.estimator is not None:
            header["ttft_estimate"] = self.estimator.inputs()
        return header


def reachable_working_set(spec: WorkloadSpec, in_flight: int, page_bytes: int) -> WorkingSet:
    """The working set a monitor started with ``spec`` can reach with its keys and its settings dialog: the one
    that needs the largest segment (:func:`kvtui.core.capacity.need_bytes`) over every scenario and every whole
    percent of overlap, at ``spec``'s pool, prompt length and page size, ``in_flight`` requests under way. A
    larger pool or another layout can be asked for too; the session refuses those that would outgrow the
    store (:attr:`RunPlan.store_limit`)."""
    from kvtui.core.capacity import need_bytes
    from kvtui.core.knobs import OVERLAP, SCENARIOS
    from kvtui.mooncake.cluster import ClusterOptions
    from workload.working_set import reachable_working_set as reachable

    watermark = ClusterOptions.eviction_high_watermark
    percents = range(int(OVERLAP.user(OVERLAP.low)), int(OVERLAP.user(OVERLAP.high)) + 1)
    return reachable(spec, in_flight, SCENARIOS, [p / OVERLAP.scale for p in percents],
                     lambda ws: need_bytes(ws, page_bytes, watermark))


def plan_from_args(args: argparse.Namespace, *, layout: LayoutPlan | None = None, started_at: float | None = None,
                   exports: ExportPlan = NO_EXPORTS,
                   follow_layout: bool = False, max_requests: int | None = None, run_for_s: float | None = None,
                   duration_s: float | None = None, quiet: bool = False, estimate: bool = True,
                   always_replace_workers: bool = False, count_lost: bool = False, knobs: bool = False) -> RunPlan:
    """The :class:`RunPlan` of the flags of ``run``, ``watch``, ``soak`` or ``serve``, made in this order:
    the page layout (``layout``: made already by :func:`~kvtui.config.layout.layout_from_args`), the TTFT
    estimate, ``--concurrency``, the workload (a trace is read now), its working set
    with ``--concurrency`` × ``--decode-workers`` requests in flight, then the store sized for it and the
    workers. ``follow_layout``: prompts keep their page count when the monitor switches layout. The bounds
    and ``quiet`` are the command's own; ``estimate`` False: no TTFT estimate (a command without its flags);
    ``always_replace_workers``: a dead worker is always replaced, and ``count_lost``: the requests it had are
    counted as lost rather than run again (both ``soak``); ``knobs``: the command's monitor changes the
    knobs while it runs (``watch``), so the store kvtui sizes for a synthetic workload (no ``--store-size``,
    embedded) holds the largest working set over every scenario and overlap they reach
    (:func:`reachable_working_set`). ``KvtuiError`` (one line naming the flag) for any bad
    value; attach mode checks that the cluster answers, and nothing starts."""
    layout = layout if layout is not None else layout_from_args(args)
    estimator = estimator_from_args(args, layout) if estimate else None
    concurrency = getattr(args, "concurrency", 1)
    if concurrency < 1:
        raise bad_value("--concurrency", "at least 1", concurrency)
    workload = workload_from_args(args, layout.layout, follow_layout=follow_layout)
    in_flight = concurrency * max(1, getattr(args, "decode_workers", 1))  # (a bad count is refused just below)
    try:
        working_set = workload.working_set(layout.layout.page_tokens, in_flight)
        sized_here = getattr(args, "store_size", None) is None and not getattr(args, "master", None)
        if knobs and workload.spec is not None and sized_here:  # (the user's store or cluster: the user's call)
            working_set = reachable_working_set(workload.spec, in_flight, layout.layout.page_bytes)
    except ValueError:
        working_set = None
    cluster = cluster_from_args(args, layout.layout, working_set)
    return RunPlan(command=args.command, layout=layout, estimator=estimator, workload=workload,
                   working_set=working_set, cluster=cluster, exports=exports, concurrency=concurrency,
                   max_requests=max_requests, run_for_s=run_for_s, duration_s=duration_s, started_at=started_at,
                   quiet=quiet, always_replace_workers=always_replace_workers, count_lost=count_lost)
