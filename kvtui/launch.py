"""Start what a :class:`~kvtui.config.plan.RunPlan` describes: the one session builder of ``run``, ``watch``,
``soak`` and ``serve`` (whose browser tabs each run ``watch``), and the pieces ``bench`` and ``sweep`` start
their own engines with.

:func:`open_session` isolates the network (when it may), starts the engine (the embedded cluster or an
attachment, and the workers), binds the remote-worker listener and builds the
:class:`~kvtui.live.LiveSession`; :class:`Outputs` binds the Prometheus exporter and opens the request log
before anything starts. Every start-up failure is one line (:class:`~kvtui.core.errors.KvtuiError`), and a
Ctrl-C or an error half-way stops whatever had started.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from kvtui.config.cluster import ClusterPlan, ListenPlan
from kvtui.config.exports import ExportPlan
from kvtui.config.plan import RunPlan
from kvtui.core.errors import KvtuiError

SCRAPE_HZ = 2.0
"""Frames a second a session builds for its Prometheus exporter (a scrape serves the newest one)."""

if TYPE_CHECKING:
    from kvtui.engine.engine import Engine
    from kvtui.engine.options import EngineOptions
    from kvtui.live import LiveSession
    from kvtui.mooncake.client import ClusterEndpoints
    from kvtui.mooncake.cluster import ClusterOptions
    from kvtui.mooncake.ops import MooncakeCluster


def isolate(mode: str, explicit_ports: bool = False, hosts: bool = False) -> str:
    """Apply ``--isolate-network`` ``mode`` (``auto``, ``on``, ``off``): move this process into a private
    network namespace whose only interface is loopback when it may (:func:`kvtui.mooncake.netns.isolate_network`),
    so the cluster and workers it starts inherit it. Returns a one-line description for the user.
    ``KvtuiError`` when ``on`` (or ``hosts``: emulated hosts need it) cannot be honoured."""
    from kvtui.mooncake.netns import isolate_network

    why = "--isolate-network off"
    if explicit_ports and mode == "off":
        why = "explicit ports requested"
    env = os.environ.get("KVTUI_ISOLATE", "").lower()
    if mode == "auto" and env in ("off", "0", "no"):
        mode, why = "off", f"KVTUI_ISOLATE={env}"
    if mode == "off":
        return f"not isolated ({why}): Mooncake's transfer listeners bind all interfaces"
    try:
        reason = isolate_network()
    except OSError as exc:  # (stuck in a namespace that reaches nothing: no run can work)
        raise KvtuiError(str(exc)) from None
    if reason is None:
        if hosts:
            return "isolated: private network namespace, emulated hosts on a private bridge (10.77.0.0/24)"
        return "isolated: private network namespace, loopback only"
    if hosts:
        raise KvtuiError(f"--hosts auto: {reason}")
    if mode == "on":
        raise KvtuiError(f"--isolate-network on: {reason}")
    return f"not isolated ({reason}): Mooncake's transfer listeners bind all interfaces"


def isolate_cluster(cluster: ClusterPlan) -> str | None:
    """:func:`isolate` for an embedded cluster's plan, the link's shaping appended; None when attached (kvtui
    starts nothing of its own)."""
    if cluster.attached:
        return None
    text = isolate(cluster.isolate, explicit_ports=bool(cluster.ports), hosts=cluster.hosts)
    return text + (f"; every host's link {cluster.link_text} each way (tc tbf)" if cluster.link is not None else "")


class Stack:
    """A started cluster (embedded or attached: :class:`~kvtui.mooncake.ops.MooncakeCluster`) and the
    :class:`~kvtui.engine.engine.Engine` whose workers are its clients. :meth:`stop` stops both together (use as
    a context manager)."""

    def __init__(self, engine: Engine, cluster: MooncakeCluster) -> None:
        self.engine, self.cluster = engine, cluster

    def __enter__(self) -> Stack:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        """Stop the workers and, meanwhile, the embedded cluster (its logs kept when a worker died)."""
        cluster = self.cluster
        self.engine.stop(meanwhile=lambda trouble: cluster.stop(keep_logs=trouble))


def start_stack(options: EngineOptions, cluster: ClusterOptions | ClusterEndpoints) -> Stack:
    """Start the cluster (``ClusterOptions``: an embedded one, sized and placed as ``options`` say; endpoints:
    attach to them), then the engine's workers over it. Raises what failed (``ClusterError``, ``WorkerError``,
    ``StoreError``) after stopping whatever had started (the cluster's logs kept). Call from the main thread:
    children die with the thread that started them."""
    from dataclasses import replace as _replace

    from kvtui.core.topology import worker_names
    from kvtui.engine.engine import Engine
    from kvtui.mooncake.client import ClusterEndpoints
    from kvtui.mooncake.ops import MooncakeCluster

    if isinstance(cluster, ClusterEndpoints):
        backend = MooncakeCluster.attach(cluster)
    else:
        names = worker_names("prefill", options.prefill_workers) + worker_names("decode", options.decode_workers)
        backend = MooncakeCluster.start(_replace(cluster, store_bytes=options.store_bytes,
                                                 segment_on=options.segment_on, worker_names=tuple(names),
                                                 page_bytes=options.layout.page_bytes))
    engine = Engine(options, backend.endpoints)
    try:
        engine.start()
    except BaseException as exc:
        backend.stop(keep_logs=isinstance(exc, Exception))
        raise
    return Stack(engine, backend)


def start_engine(options: EngineOptions, cluster: ClusterOptions | ClusterEndpoints) -> Stack:
    """:func:`start_stack`, turning start-up failures into one-line errors (:class:`KvtuiError`)."""
    from kvtui.config.cluster import cluster_error_text
    from kvtui.core.engine_api import WorkerError
    from kvtui.mooncake.client import StoreError
    from kvtui.mooncake.errors import ClusterError

    try:
        return start_stack(options, cluster)
    except ClusterError as exc:
        raise KvtuiError(cluster_error_text(exc)) from None
    except (WorkerError, StoreError, ValueError) as exc:
        raise KvtuiError(str(exc).splitlines()[0]) from None


@contextmanager
def engine_guard(stack: Stack, listener: Any = None) -> Iterator[None]:
    """Between a started stack and its owner's own teardown (building its session, its outputs): a Ctrl-C, a
    SIGTERM or an error there stops ``stack`` (its workers and embedded cluster, whose log folder is then
    removed or named) and closes ``listener`` before it is re-raised, so nothing is left to the parent-death
    signal."""
    try:
        yield
    except BaseException:
        stack.stop()
        if listener is not None:
            listener.close()
        raise


def bind_listener(listen: ListenPlan | None) -> Any:
    """The remote-worker listener of ``listen`` bound now (before the engine starts), None without one;
    ``KvtuiError`` (one line) when the address cannot be listened on."""
    if listen is None:
        return None
    from kvtui.engine.remote import open_listener

    try:
        return open_listener((listen.host, listen.port), listen.token)
    except OSError as exc:
        raise KvtuiError(f"--listen {listen.host}:{listen.port}: cannot listen there ({exc.strerror or exc})") from None


def cluster_of(plan: RunPlan, isolation: str | None) -> ClusterOptions | ClusterEndpoints:
    """What :func:`start_stack` starts the plan's cluster from: an attached cluster's endpoints, with ``--log-dir``
    for the workers' native logs (without it the engine makes a temporary folder, removed after a run without
    trouble: :mod:`kvtui.runtime.logs`), or the embedded cluster's options."""
    if plan.cluster.endpoints is None:
        return plan.cluster_options(isolation)
    return replace(plan.cluster.endpoints, log_dir=plan.cluster.log_dir or "")


def open_session(plan: RunPlan, *, outputs: Outputs | None = None,
                 echo: Callable[[str], None] | None = None) -> LiveSession:
    """Start the engine of ``plan`` and return its :class:`~kvtui.live.LiveSession`, not yet started (the
    caller starts it, and always stops it): the network isolated first (embedded), then the remote-worker
    listener bound, the engine started, ``outputs`` attached and the listener handed to the session
    (``echo(text)``: where remote workers' joins are also said). ``KvtuiError`` (one line) when anything
    cannot start; what had started is stopped first."""
    from kvtui.live import LiveSession
    from kvtui.metrics.aggregate import Aggregator

    isolation = isolate_cluster(plan.cluster)
    options = plan.engine_options()
    listener = bind_listener(plan.cluster.listen)  # (a busy --listen address fails before anything starts)
    try:
        stack = start_engine(options, cluster_of(plan, isolation))  # from the main thread: children die with it
    except BaseException:
        if listener is not None:
            listener.close()
        raise
    with engine_guard(stack, listener):  # until the session's own teardown takes over
        session = LiveSession(
            stack.engine, plan.workload.build(), dict(plan.workload.description), cluster=stack.cluster,
            concurrency=plan.concurrency,
            max_requests=plan.max_requests, duration_s=plan.run_for_s, duration_from=plan.started_at,
            layout_text=plan.layout.layout.describe(), layout_name=plan.layout.name,
            prompt_pages=plan.workload.prompt_pages, header=plan.header(),
            aggregator=Aggregator(estimator=plan.estimator, tiered="disk" in stack.cluster.endpoints.tiers,
                                  replicated=stack.cluster.endpoints.replicate_hot),
            rerun_lost=plan.rerun_lost,
            store_limit=plan.store_limit)
        if outputs is not None:
            outputs.attach(session)
        if listener is not None:
            session.listen(listener, echo=echo)
    return session


def start_recording(session: Any, path: str | None) -> None:
    """``--record``: start recording ``session`` into ``path`` (if given); ``KvtuiError`` if it cannot."""
    from kvtui.session import SessionError

    if path:
        try:
            session.recording.start(path)
        except SessionError as exc:
            raise KvtuiError(str(exc)) from None


# -- outputs --------------------------------------------------------------------------------------------------
def open_requests_log(path: str, estimator: Any = None, *, atomic: bool = False, flag: str = "--requests-log") -> Any:
    """A :class:`~kvtui.export.request_log.RequestLog` (CSV) or a Parquet one by the path's suffix;
    ``KvtuiError`` naming ``flag`` when it cannot be created."""
    from kvtui.export.request_log import open_log

    try:
        return open_log(path, estimator, atomic=atomic)
    except OSError as exc:
        raise KvtuiError(f"{flag}: {path}: {exc.strerror or exc}") from None


class Outputs:
    """The Prometheus exporter and the request log of one command (use as a context manager: everything is
    closed on the way out, also after an error). The exporter binds when this is made, before anything else
    starts, so a busy port is one line at once; :meth:`attach` wires both to a session; at the end,
    :meth:`finish` pins the exporter to the final frame, so every later scrape returns exactly the summary's
    counters, and :meth:`linger` waits ``--prometheus-linger`` seconds for a last scrape."""

    def __init__(self, plan: ExportPlan):
        self.plan = plan
        self.exporter: Any = None
        self.log: Any = None
        self.trace: Any = None  # --save-trace: a workload.trace_writer.TraceRecorder
        self._told = False  # a failed log was reported
        self._told_trace = False
        if plan.prometheus is not None:
            from kvtui.export.prometheus import ExporterError, PrometheusExporter

            host, port = plan.prometheus
            try:
                self.exporter = PrometheusExporter(host, port).start()  # bound now: a busy port fails here
            except ExporterError as exc:
                raise KvtuiError(f"--prometheus: {exc}") from None

    def __enter__(self) -> Outputs:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def url(self) -> str | None:
        """The exporter's ``/metrics`` URL (None without ``--prometheus``)."""
        return self.exporter.url if self.exporter is not None else None

    def attach(self, session: Any) -> None:
        """Serve ``session``'s frames and log its requests."""
        if self.exporter is not None:
            session.want("prometheus", SCRAPE_HZ)  # a scrape reads the newest frame, at most this old
            self.exporter.attach(session.frame)
        if self.plan.requests_log:
            self.log = open_requests_log(self.plan.requests_log, session.estimator)
            session.subscribe_results(self.log.add)
        if self.plan.save_trace:
            from workload.trace_writer import TraceRecorder

            try:  # blocks of the run's page size: a replay with that page size issues the same pages
                self.trace = TraceRecorder(self.plan.save_trace, session.engine.options.layout.page_tokens)
            except OSError as exc:
                raise KvtuiError(f"--save-trace: {self.plan.save_trace}: {exc.strerror or exc}") from None
            trace = self.trace
            session.page_size_pinned_by = f"--save-trace {self.plan.save_trace}"  # (watch: no switch to another)
            session.subscribe_requests(trace.drawn)
            session.subscribe_results(lambda r: trace.finished(r.req_id, r.t_start))

    def finish(self, final: Any = None, notes: bool = True) -> list[str]:
        """The run ended: pin the exporter to ``final`` (the summary's frame), close the request log and the
        saved trace; returns lines for the user (a log that failed; with ``notes``, the trace's rows, block size
        and how to replay it)."""
        lines = []
        if self.exporter is not None and final is not None:
            self.exporter.pin(final)
        if self.log is not None:
            self.log.close()
            if self.log.error and not self._told:
                lines.append(f"--requests-log: {self.log.error}")
            self._told = True
        lines += self._close_trace(notes)
        return lines

    def _close_trace(self, notes: bool = True) -> list[str]:
        """Close the ``--save-trace`` file; once, a line for the user: its error, or (``notes``) its rows, its
        block size (the file cannot say it) and how to replay it."""
        if self.trace is None:
            return []
        self.trace.close()
        if self._told_trace:
            return []
        self._told_trace = True
        if self.trace.error:
            return [f"--save-trace: {self.trace.error}"]
        return [f"--save-trace {self.trace.text()}"] if notes else []

    def linger(self) -> None:
        """Keep serving ``--prometheus-linger`` seconds (after the summary; Ctrl-C ends it as an interrupt)."""
        if self.exporter is None or self.plan.linger_s <= 0:
            return
        print(f"kvtui: serving the final figures on {self.url} for {self.plan.linger_s:g} s (--prometheus-linger)",
              file=sys.stderr, flush=True)
        time.sleep(self.plan.linger_s)

    def close(self) -> None:
        """Stop the exporter and close the log (safe to call twice); a log that failed says so on stderr."""
        if self.log is not None:
            self.log.close()
            if self.log.error and not self._told:
                print(f"kvtui: --requests-log: {self.log.error}", file=sys.stderr)
            self._told = True
        for line in self._close_trace():
            print(f"kvtui: {line}", file=sys.stderr)
        if self.exporter is not None:
            self.exporter.stop()
            self.exporter = None
