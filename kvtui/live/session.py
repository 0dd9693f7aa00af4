"""A live session: engine + driver + aggregator + samplers behind the two interfaces the TUI needs.

:class:`LiveSession` is the UI's ``FrameSource`` (``frame()``) and ``Controller``: ``send(control)`` for
knob and layout changes (typed messages of :mod:`kvtui.core.controls`, checked against
:mod:`kvtui.core.knobs`), ``pause``, ``resume``, ``clear_store``, ``toggle_recording``, ``restart_master``,
``stop``. Controls reach the workload on the driver's feeder thread, so they apply from the next request;
every control change (or its refusal) is also logged as an engine event (shown in the event log).

The engine is anything that satisfies :class:`kvtui.core.engine_api.EngineAPI` (the real
:class:`~kvtui.engine.engine.Engine`, or :class:`kvtui.testing.fake_engine.FakeEngine` in tests), and the
store's cluster anything that satisfies :class:`kvtui.core.cluster_api.ClusterOps` (the real
:class:`~kvtui.mooncake.ops.MooncakeCluster`, or :class:`kvtui.testing.fake_engine.FakeCluster`): the session
reaches the cluster only through it. The session subscribes to the engine's worker rebuilds and remote joins
and offers its finished requests to subscribers (:meth:`LiveSession.subscribe_results`), each in subscription
order.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Callable

from kvtui.config.workload import synthetic_description
from kvtui.core.cluster_api import ClusterOps, FailoverSeen, FailoverWatcher
from kvtui.core.codes import NO_SPACE
from kvtui.core.controls import Control, SetLayout, SetTraceSpeed
from kvtui.core.engine_api import EngineAPI, RemoteJoin, WorkerReplacement
from kvtui.core.events import EngineEvent, RequestResult
from kvtui.core.failover import EXTERNAL, LEADER_KILL, FailoverReport, failover_status
from kvtui.core.layout import PageLayout
from kvtui.core.subscribers import Subscribers, Unsubscribe
from kvtui.core.text import plural
from kvtui.live.controls import LayoutRefused, change_text, knob_change, plan_layout_switch
from kvtui.live.failovers import Failovers
from kvtui.live.panels import PanelThread
from kvtui.metrics.aggregate import Aggregator
from kvtui.metrics.frame import Frame
from kvtui.metrics.producer import FrameProducer
from kvtui.metrics.store_full import StoreFullAlarm
from kvtui.runtime.processes import ProcessSampler
from kvtui.session.recording import Recording
from workload import SyntheticWorkload, TraceWorkload, WorkloadSpec

if TYPE_CHECKING:
    from kvtui.engine.remote import Coordinator

LAYOUT_WAIT_S = 10.0  # a layout switch waits this long for the requests under way to finish
HALT_WAIT_S = 1.0  # an abandoned driver ends within ~0.1 s (its feeder may be in a control handler a bit longer)


def with_roles(procs: tuple, store) -> tuple:
    """The Processes panel's rows with each HA master's ``role`` (from the store panel's ``masters``); a master
    that is not a process kvtui samples (an attached cluster's) gets a row of its own with ``remote`` set: its
    role, no pid, CPU or memory."""
    roles = {m.get("name"): m.get("role") for m in (store or {}).get("masters") or ()}
    if not roles:
        return procs
    names = {p.get("name") for p in procs}
    rows = tuple({**p, "role": roles[p.get("name")]} if roles.get(p.get("name")) else p for p in procs)
    return rows + tuple({"name": name, "role": role, "remote": True} for name, role in roles.items()
                        if name not in names and name and role)


@dataclass(frozen=True)
class RunCounts:
    """What became of a run's requests: ``issued`` (submitted), ``completed`` (results counted), ``dropped``
    (reported dropped unrun: the run was abandoned, or ended in an outage), ``abandoned`` (never reported:
    under way when the run was abandoned), ``lost`` (of the dropped, lost when a worker died), ``rerun``
    (submitted again after a worker's death) and whether lost requests are run again (``rerun_lost``)."""

    issued: int
    completed: int
    dropped: int
    abandoned: int
    lost: int
    rerun: int
    rerun_lost: bool


class LiveSession:
    """Owns a running :class:`~kvtui.engine.driver.Driver` over a started engine.

    ``engine``: a started :class:`~kvtui.core.engine_api.EngineAPI`; ``cluster``: the store's cluster its
    workers are clients of (:class:`~kvtui.core.cluster_api.ClusterOps`); ``workload``: the request source (a
    ``SyntheticWorkload`` accepts knob and layout changes, a ``TraceWorkload`` speed changes, any other
    iterable of requests neither);
    ``description``: the ``frame.workload`` dict at the start (:func:`synthetic_description`, or a trace's
    name and row count); ``layout_text``: shown in the header; ``layout_name``: the page layout preset the
    engine started with (``custom`` when none); ``prompt_pages``: prompts of this many pages of the layout
    (after a layout switch too; None: the prompt length in tokens stays as it is); ``store_limit``: the
    embedded segment (bytes) when kvtui sized it (``RunPlan.store_limit``): a knob change or layout switch that
    would need a larger one is refused (:meth:`_outgrows`); None (the user's ``--store-size``, an attached
    cluster): every change in range is made. ``owns_engine``: :meth:`stop` stops the engine and the cluster
    (False: both keep running, e.g. for the bench's next session).

    Frames: one :class:`~kvtui.metrics.producer.FrameProducer` builds them at the rate its consumers ask for
    (:meth:`want`: the monitor, a recording, a Prometheus exporter); :meth:`frame` is the newest one, and
    :meth:`final_frame` the last, which every reader sees from then on.

    Threads: the caller's (start, stop, the controller's immediate actions), the driver's feeder (controls:
    :meth:`_apply`) and collector (:meth:`_on_result`, the results subscribers, worker rebuilds), the frame
    producer (:meth:`_build_frame`), the panels' sampler and each failover watch's (:meth:`_failover_done`).
    Each field says, where it is set in ``__init__``, its one writer or the lock it changes under.
    """

    def __init__(self, engine: EngineAPI, workload, description: dict, *, cluster: ClusterOps,
                 concurrency: int = 1, max_requests=None,
                 duration_s=None, aggregator: Aggregator | None = None, layout_text: str = "",
                 header: dict | None = None, owns_engine: bool = True, prompt_pages: int | None = None,
                 layout_name: str = "custom", duration_from: float | None = None, rerun_lost: bool = False,
                 store_limit: int | None = None):
        from kvtui.engine.driver import Driver

        # (engine, cluster, workload, agg, driver, panels, producer, recording, store_full, _drawn, _results,
        # header, owns_engine, prompt_pages, store_limit: set here, never replaced; the objects guard their own state)
        self.engine = engine
        self.cluster = cluster
        self.workload = workload  # its spec changes on the feeder only (replaced whole: read without a lock)
        self._lock = threading.Lock()  # guards the fields below marked "_lock"
        self._description = dict(description)  # _lock; replaced whole, never changed in place (collector)
        self._layout = (layout_text, layout_name)  # _lock; replaced whole together with the workload's spec (feeder)
        self.agg = aggregator or Aggregator()
        o = engine.options
        self.agg.set_worker_counts(o.prefill_workers, o.decode_workers, local_segments=o.segment_on == "decode")
        self._drawn: Subscribers[[Any]] = Subscribers()
        self.driver = Driver(engine, self._draw(workload), self._on_result, self.agg.event, on_control=self._apply,
                             concurrency=concurrency, max_requests=max_requests, duration_s=duration_s,
                             duration_from=duration_from, rerun_lost=rerun_lost, store_answers=cluster.reachable,
                             ha=cluster.endpoints.ha)
        self._results: Subscribers[[RequestResult]] = Subscribers()
        self._unsubscribe: list[Unsubscribe] = []  # _lock; from the engine's publishers, undone by stop()
        ep = cluster.endpoints
        self.panels = PanelThread(cluster.sample_store, ProcessSampler(self.process_pids(), cluster.host_addresses()),
                                  store={"up": None} if ep.metrics_url or ep.masters else {})
        self._closing = False  # _lock; stop() began: no more subscriptions
        self._started = False  # the caller's (start(), before the driver's threads run)
        self._engine_stopped = False  # the thread in stop(): it stopped the engine it owns, no store left to scrape
        self.header = dict(header or {})
        self.owns_engine = owns_engine  # False: stop() leaves the engine running (the bench reuses it)
        self.producer = FrameProducer(self._build_frame, name="kvtui-live-frames")
        self.recording = Recording(self.producer, self.recording_header, self.agg.begin_span, self.log)
        self._drawn.subscribe(lambda req: self.recording.drawn(req, self.engine.options.layout.page_tokens))
        self.prompt_pages = prompt_pages  # prompts of this many pages of the layout (None: --prompt-tokens fixed)
        self.page_size_pinned_by: str | None = None  # what needs the page size kept ("--save-trace FILE"): a layout
        # switch to another page size is refused while it is set (the caller's, before start(); the feeder reads it)
        self._page_bytes_used: dict[int, int] = {}  # the feeder's: tokens per page → page bytes of every layout used
        self.store_full = StoreFullAlarm(self._store_full_text)  # one event-log line per burst of refused puts
        self.store_limit = store_limit
        self.coordinator: Coordinator | None = None  # the caller's (listen); while remote workers may join
        self._failovers = Failovers(cluster, clock=engine.now, ledger=lambda: self.engine.published, log=self.log,
                                    subscribe_results=self.subscribe_results, hit_rate_before=self._hit_rate_30s,
                                    keep_recent=cluster.endpoints.ha)  # (guards its own state)

    @property
    def layout_text(self) -> str:
        """The page layout in words (the header's)."""
        with self._lock:
            return self._layout[0]

    @property
    def layout_name(self) -> str:
        """The page layout preset the engine runs (``custom`` when none)."""
        with self._lock:
            return self._layout[1]

    @property
    def failovers(self) -> tuple[FailoverReport, ...]:
        """Every failover measured (:meth:`watch_failover`), in the order they ended."""
        return self._failovers.reports

    def _hit_rate_30s(self) -> float | None:
        """The header's page hit rate of the last 30 s (None: no full page then): a failover's hit rate before."""
        recent = self.producer.latest().window_totals
        return recent.get("page_hit_rate") if recent.get("pages_total") else None

    @property
    def description(self) -> dict:
        """The ``frame.workload`` dict now (a copy): a trace's progress (``done`` of ``total`` rows), or a
        synthetic workload's knobs, read from the workload's current spec (so the header never disagrees with
        what the next request uses), and its layout preset name (``layout``)."""
        return self._described()[0]

    def _described(self) -> tuple[dict, str]:
        """:attr:`description` and :attr:`layout_text`, read together (a layout switch changes the workload's
        spec, the preset's name and the text at once: a frame shows all of them before or all after)."""
        with self._lock:
            d = dict(self._description)
            text, name = self._layout
            if d.get("kind") == "synthetic":
                if isinstance(self.workload, SyntheticWorkload):
                    d.update(synthetic_description(self.workload.spec))
                d["layout"] = name
            if d.get("kind") == "trace" and isinstance(self.workload, TraceWorkload):  # position, length, speed
                p = self.workload.progress()
                d.update(speed=p["speed"], position_s=p["position_s"], length_s=p["length_s"])
        return d, text

    def _draw(self, workload) -> Iterator[Any]:
        """The workload's requests as the driver draws them, each shown first to :meth:`subscribe_requests`'
        functions (the workload object itself stays :attr:`workload`: knob changes apply to the next one drawn)."""
        for req in workload:
            self._drawn(req)
            yield req

    def subscribe_requests(self, fn: Callable[[Any], None]) -> Unsubscribe:
        """Call ``fn`` with every ``workload.Request`` the driver draws from now on, in issue order (from the
        driver's feeder thread, before the request is submitted; one it draws but never submits, when the run
        ends meanwhile, has no result); returns the function that unsubscribes. An exception ``fn`` raises
        ends the run."""
        return self._drawn.subscribe(fn)

    def subscribe_results(self, fn: Callable[[RequestResult], None]) -> Unsubscribe:
        """Call ``fn`` with every finished request from now on (from the driver's collector thread, after
        the aggregator and the earlier subscribers); returns the function that unsubscribes.
        An exception ``fn`` raises ends the run (:attr:`error`)."""
        return self._results.subscribe(fn)

    def log(self, kind: str, text: str) -> None:
        """Add an event-log line of ``kind`` (``info``, ``control``, ``error``, ``outage``) at the session's
        time now; it is shown by the monitor and recorded with the frames."""
        self.agg.event(EngineEvent(kind, self.agg.now(), text))

    def now(self) -> float:
        """Seconds since the session's aggregator started (the time of its frames and events)."""
        return self.agg.now()

    @property
    def error(self) -> BaseException | None:
        """Why the run stopped early (a workload error, a worker that died and was not rebuilt), else None."""
        return self.driver.error

    def wait(self, timeout_s: float | None = None) -> bool:
        """Wait up to ``timeout_s`` (None: for ever) for the run to end; True once it has."""
        return self.driver.done.wait(timeout_s)

    def process_pids(self) -> dict[str, int]:
        """``{name: pid}`` of every local process kvtui runs: the workers, then the embedded cluster's."""
        return {**self.engine.worker_pids(), **self.cluster.pids()}

    def follow_processes(self) -> None:
        """The Processes panel samples the processes as they are now (after a restart or a rebuild gave some a
        new pid)."""
        self.panels.proc_sampler.set_pids(self.process_pids())

    def listen(self, listener, echo=None) -> None:
        """Let remote decode and prefill workers join through ``listener`` (``kvtui.engine.remote.open_listener``; the
        engine needs relay slots, ``EngineOptions.remote_slots``): each join and refusal is an event (and goes
        to ``echo(text)`` when given: ``kvtui run`` prints it), each joined worker gets its row in
        ``Frame.workers``."""
        from kvtui.engine.remote import Coordinator

        def event(kind: str, text: str) -> None:
            self.log(kind, text)
            if echo is not None:
                echo(text)

        self._keep(self.engine.subscribe_remote(self._remote_joined))
        self.coordinator = Coordinator(self.engine, listener, event)
        host, port = self.coordinator.address
        self.log("info", f"listening for remote workers on {host}:{port} (kvtui worker --join)")

    def _keep(self, unsubscribe: Unsubscribe) -> None:
        """Undo this subscription when the session stops (at once if it stops already)."""
        with self._lock:
            if not self._closing:
                self._unsubscribe.append(unsubscribe)
                return
        unsubscribe()

    def _remote_joined(self, join: RemoteJoin) -> None:  # a remote worker gets its row in Frame.workers
        self.agg.describe_worker(join.role, join.index, name=join.name, host=join.host, pid=join.pid, remote=True)

    def _workers_replaced(self, rep: WorkerReplacement) -> None:  # the Processes panel follows the new workers
        self.follow_processes()

    def start(self) -> "LiveSession":
        """Start sampling and issuing requests; from now until :meth:`stop`, each rebuild of the engine's
        workers (after the driver's event line for it) points the Processes panel at the new processes."""
        self._started = True
        self.panels.start()
        self.driver.start()
        self._keep(self.engine.subscribe_replacement(self._workers_replaced))
        self.log("info", f"started: {self._workload_text()}")
        if self.cluster.endpoints.ha:  # (a failover kvtui did not cause is measured too)
            self._keep(self.cluster.subscribe_failovers(self._failover_seen,
                                                        snapshots=self.engine.published is not None))
        o = self.engine.options
        nodes = self.cluster.settings.store_nodes if o.segment_on == "store" else 1
        if o.prefill_workers > 1 or o.decode_workers > 1 or nodes > 1:
            self.log("info", f"workers: {o.prefill_workers} prefill × {o.decode_workers} decode, route {o.route}, "
                             f"concurrency {self.driver.concurrency} per decode worker"
                             + (f"; {nodes} store nodes" if nodes > 1 else ""))
        return self

    def _on_result(self, result: RequestResult) -> None:
        self.agg.add(result)
        self._failovers.pass_on(result, self._results)
        if self.recording.path is not None:  # the session file's request rows (kvtui report --requests-log)
            from kvtui.export.request_log import request_row

            self.recording.add_request(request_row(result, self.agg.estimator))
        self._log_line(self.store_full.add(result.codes.get(NO_SPACE, 0), self.agg.now()))
        if self._description.get("kind") == "trace":  # (the kind never changes)
            done = self.driver.completed
            with self._lock:
                d = self._description
                self._description = {**d, "done": done, "complete": done >= d.get("total", 0)}

    def _log_line(self, store_full: str | None) -> None:
        if store_full:
            self.log("error", store_full)

    def _store_full_text(self, failed: int, seconds: float) -> str:
        """The line of a burst of refused puts (:class:`~kvtui.metrics.store_full.StoreFullAlarm`): the
        working set of the workload as it is now against the segment (embedded) or the scraped capacity."""
        from kvtui.core.capacity import store_full_text
        from workload.working_set import working_set_of

        o = self.engine.options
        try:
            ws = working_set_of(self.workload, o.layout.page_tokens, self.driver.concurrency)
        except ValueError:
            ws = None
        cluster = self.cluster
        embedded = cluster.embedded
        segment = o.store_bytes if embedded else (self.panels.store.get("capacity_bytes") or None)
        dead = tuple(n for n in cluster.store_names() if (p := cluster.process(n)) is not None and not p.alive())
        return store_full_text(failed, seconds, ws, o.layout.page_bytes, segment,
                               cluster.settings.eviction_high_watermark,
                               cluster.settings.lease_ttl_ms / 1000 if embedded else None, dead,
                               disk_tier="disk" in cluster.endpoints.tiers)

    def _workload_text(self) -> str:
        d = self.description
        if d.get("kind") == "trace":
            return f"trace {d['name']} ({d['total']} rows)"
        return f"{d['scenario']}, overlap {d['overlap']:.0%}, pool {d['pool']}, rate {d['rate'] or 'closed loop'}"

    # -- FrameSource ------------------------------------------------------------------------------------
    def frame(self) -> Frame:
        """The newest frame the producer built (reading it changes nothing another reader sees)."""
        return self.producer.latest()

    def want(self, consumer: str, hz: float) -> None:
        """``consumer`` (the monitor, an exporter) needs ``hz`` frames a second from now on."""
        self.producer.want(consumer, hz)

    def unwant(self, consumer: str) -> None:
        """``consumer`` needs no more frames."""
        self.producer.unwant(consumer)

    def _build_frame(self) -> Frame:
        """A new frame (only the producer calls this: building one advances the rate history)."""
        store = self.panels.store
        workload, layout_text = self._described()
        status = {"store_mode": "embedded" if self.cluster.embedded else "attached",
                  "store_up": store.get("up"), "paused": self.driver.paused,  # None until the first scrape
                  "layout": layout_text, "mode": "live", "finished": self.driver.done.is_set()}
        if self.engine.options.verify != "full":  # (the default goes unsaid: the header marks a sampled check)
            status["verify"] = self.engine.options.verify
        if self.driver.error is not None:
            status["error"] = str(self.driver.error)
        if self.driver.outage:
            status["outage"], status["outage_of"] = True, self.outage_of()
        failovers = self.failovers
        if failovers:
            status.update(failover_status(list(failovers)))
        if self.cluster.endpoints.ha:
            status["ha"] = True  # (an HA cluster: the monitor's K says what it can do)
        if self.cluster.embedded and len(self.cluster.master_names()) > 1:
            status["ha_own"] = True  # (kvtui's own HA cluster: the monitor offers K, kill the leader)
        path = self.recording.path
        if path is not None:
            status.update(recording=True, record_path=path)
        return self.agg.frame(store=store, procs=with_roles(self.panels.procs, store), workload=workload,
                              status=status)

    def outage_of(self) -> str:
        """Whose outage it is: ``master`` (every master kvtui started is dead, or the cluster is another's),
        ``leader`` (kvtui's HA cluster, a master alive and every store node too: the leader is gone or hung, the
        masters elect a new one) or ``store`` (the masters live: the store node whose dummy clients the workers
        are)."""
        cluster = self.cluster
        if not cluster.embedded:
            return "master"
        names = cluster.master_names()
        if not any((p := cluster.process(n)) is not None and p.alive() for n in names):
            return "master"
        if len(names) > 1 and all((p := cluster.process(n)) is None or p.alive() for n in cluster.store_names()):
            return "leader"
        return "store"

    # -- Controller -------------------------------------------------------------------------------------
    def send(self, control: Control) -> None:
        """Change a knob or the page layout (:mod:`kvtui.core.controls`), from the next request: queued on
        the driver, applied on its feeder thread by :meth:`_apply`, which logs one event-log line, either the
        change (``overlap → 60 %``) or ``control refused: …`` (a value outside its
        :mod:`kvtui.core.knobs` range, which is refused, never clamped; an unknown scenario or layout; a
        layout that cannot be used). ``TypeError`` if ``control`` is not a control message."""
        self.driver.send(control)

    def _apply(self, control: Control) -> None:
        """The driver's control handler (feeder thread, before the next request is drawn); the next frame is
        built at once, so the monitor shows the change (or its refusal) without waiting a tick."""
        try:
            self._apply_control(control)
        finally:
            self.producer.poke()

    def _apply_control(self, control: Control) -> None:
        """A layout switch, a trace's speed, or any workload knob (:class:`~kvtui.core.controls.SetKnob`,
        checked against its :mod:`kvtui.core.knobs` entry, refused when the store kvtui sized cannot hold it)."""
        if isinstance(control, SetLayout):
            self._switch_layout(control.name)
            return
        if isinstance(control, SetTraceSpeed):
            self._set_trace_speed(control.speed)
            return
        if not isinstance(self.workload, SyntheticWorkload):
            self.log("control", "this workload (a trace) has no knobs to change")
            return
        try:
            knob, value = knob_change(control)
            changes: dict[str, Any] = {knob: value}
            outgrown = self._outgrows(replace(self.workload.spec, **changes), self.engine.options.layout)
            if outgrown:
                self.log("error", f"control refused: {change_text(knob, value).replace(' → ', ' ')} would {outgrown}")
                return
            self.workload.update(**changes, now_s=self.driver.elapsed())  # a new rate counts from now
        except ValueError as exc:
            self.log("error", f"control refused: {exc}")
            return
        self.log("control", change_text(knob, value))

    def _outgrows(self, spec: WorkloadSpec, layout: PageLayout) -> str:
        """Why the segment kvtui sized (:attr:`store_limit`) cannot take the workload of ``spec`` on pages of
        ``layout``, which needs more than the workload as it runs now (:func:`kvtui.core.capacity.outgrown_text`:
        its working set below the eviction watermark, one publish of the requests in flight above it); ``""``
        when it can, or when no limit applies. ``ValueError`` for an invalid ``spec``."""
        if self.store_limit is None or not isinstance(self.workload, SyntheticWorkload):
            return ""
        from kvtui.core.capacity import need_bytes, outgrown_text
        from workload.working_set import synthetic_working_set

        o = self.engine.options
        wm = self.cluster.settings.eviction_high_watermark
        in_flight = self.driver.concurrency * max(1, o.decode_workers)
        new = synthetic_working_set(spec, in_flight)
        now = synthetic_working_set(self.workload.spec, in_flight)
        if need_bytes(new, layout.page_bytes, wm) <= need_bytes(now, o.layout.page_bytes, wm):
            return ""  # (never refuse a change that asks for less)
        return outgrown_text(new, layout.page_bytes, self.store_limit, wm)

    def _set_trace_speed(self, speed: float | None) -> None:
        """A trace replay's speed from the next row drawn (``TraceWorkload.set_speed``, counted from now on the
        driver's arrival clock); refused with an event-log line for a synthetic workload or a speed not > 0."""
        from kvtui.core.knobs import trace_speed_text

        if not isinstance(self.workload, TraceWorkload):
            self.log("control", "trace speed: this workload is not a trace (its rate is the r / R knob)")
            return
        try:
            self.workload.set_speed(speed, now_s=self.driver.elapsed())
        except ValueError as exc:
            self.log("error", f"control refused: {exc}")
            return
        self.log("control", f"trace speed → {trace_speed_text(speed)}")

    def _switch_layout(self, name: str) -> None:
        """Switch to page layout preset ``name`` (:data:`kvtui.core.layout.PRESETS`: seed, tiny and every model
        preset at its default page size; the page keys keep the session's model name), all or nothing: the
        switch is checked first (:func:`~kvtui.live.controls.plan_layout_switch`), the requests under way
        finish (up to ``LAYOUT_WAIT_S``), then both workers switch (the engine puts both back if one
        refuses), then the workload (prompts of ``prompt_pages`` pages follow the new page size). Synthetic
        workloads only. A refusal is one event-log line; the workload, the engine, the header and
        :attr:`description` stay as they were."""
        if self._description.get("kind") != "synthetic" or not isinstance(self.workload, SyntheticWorkload):
            self.log("control", "this workload (a trace) keeps the page layout it started with")
            return
        old = self.engine.options.layout
        self._page_bytes_used.setdefault(old.page_tokens, old.page_bytes)
        try:
            switch = plan_layout_switch(name, old, self.workload.spec, prompt_pages=self.prompt_pages,
                                        page_bytes_used=self._page_bytes_used,
                                        store_bytes=self.cluster.store_bytes,
                                        pinned_by=self.page_size_pinned_by)
        except LayoutRefused as exc:
            self.log("error", f"control refused: {exc}")
            return
        if switch is None:  # (already on it)
            with self._lock:
                self._layout = (self._layout[0], name)
            return
        outgrown = self._outgrows(replace(self.workload.spec, **switch.changes), switch.layout)
        if outgrown:
            self.log("error", f"control refused: layout {name} would {outgrown}")
            return
        if not self.driver.wait_idle(LAYOUT_WAIT_S):
            self.log("error", f"control refused: requests still under way after {LAYOUT_WAIT_S:g} s; "
                              "layout unchanged")
            return
        try:
            self.engine.set_layout(switch.layout)  # both workers or neither
        except Exception as exc:
            self.log("error", f"control refused: layout {name}: {exc}")
            return
        text = switch.layout.describe()
        try:
            with self._lock:  # (a frame shows the new spec with the new layout's name and text, never half of it)
                self.workload.update(**switch.changes)  # validated above: cannot refuse, but if it did, switch back
                self._layout = (text, name)
        except ValueError as exc:
            self.engine.set_layout(old)
            self.log("error", f"control refused: layout {name}: {exc}")
            return
        self._page_bytes_used[switch.layout.page_tokens] = switch.layout.page_bytes
        self.log("control", f"layout → {name} ({text})")
        if self.agg.estimator is not None:  # the TTFT estimate follows the model whose shape the layout is
            self.agg.set_estimator(self.agg.estimator.for_layout(name))
            self.log("info", f"TTFT estimate: {self.agg.estimator.basis}")

    def pause(self) -> None:
        """Stop issuing requests (in-flight ones finish)."""
        self.driver.pause()
        self.log("control", "workload paused")

    def resume(self) -> None:
        """Resume issuing requests."""
        self.driver.resume()
        self.log("control", "workload resumed")

    def clear_store(self) -> int:
        """Remove every object from the store (pauses issuing around it; the few requests already submitted
        may still run meanwhile); returns the count removed."""
        was_paused = self.driver.paused
        self.driver.pause()
        try:
            n = self.engine.clear_store()
            self.log("control", f"store cleared: {plural(n, 'key')} removed")
            return n
        finally:
            if not was_paused:
                self.driver.resume()

    # -- recording --------------------------------------------------------------------------------------
    def recording_header(self) -> dict:
        """The header of a file recorded from now: the session's, with the workload it runs now."""
        return {**self.header, "workload_now": self.description}

    def toggle_recording(self) -> tuple[bool, str | None]:
        """Ctrl+R: start or stop recording (:meth:`kvtui.session.recording.Recording.toggle`)."""
        return self.recording.toggle()

    def final_frame(self) -> Frame:
        """The frame a finished run is summarised from (and recorded as its last frame), with the store scraped
        once more now (the periodic scrape can be a second old: it missed the run's last puts). It is the
        last frame: the monitor, an exporter and the recording all read it from now on."""
        self._log_line(self.store_full.flush(self.agg.now()))
        if self._started and not self._engine_stopped:
            self.panels.refresh_store()
        final = self.producer.finish()
        assert final is not None
        return final

    def restart_master(self) -> None:
        """Embedded mode: start the master kvtui owns again on the same ports (``RuntimeError`` otherwise).
        Dispatch resumes by itself once the master answers (the driver watches it)."""
        self.cluster.restart_master()
        self.follow_processes()  # the new master has a new pid
        self.log("control", "master restarted on the same ports (it starts with no keys)")

    def restart_store(self) -> None:
        """Start every dead store node of the embedded cluster again, each with a new segment of the same size
        (the dead node's pages stay listed until the master's ``client_ttl`` passes); dummy workers, which never
        return to a new real client, are started again too (rebuilt by the engine). ``RuntimeError`` without
        store nodes of kvtui's."""
        if self.cluster.restart_store():
            self.engine.restart_workers()
        self.follow_processes()

    def watch_failover(self, kind: str, *, on_serving: Callable[[str], None] | None = None,
                       seen: FailoverSeen | None = None) -> FailoverWatcher:
        """Start measuring a failover (the cluster's :meth:`~kvtui.core.cluster_api.ClusterOps.watch_failover`)
        caused by a fault of ``kind`` that the caller injects right after this returns (``seen``: one that began
        without kvtui, logged with its number); its report joins :attr:`failovers` (and the frames' status) when
        it is done, and its lines go to the event log. ``RuntimeError`` once :meth:`stop` began (a watch that
        started meanwhile is stopped first; its report still joins :attr:`failovers`). Any thread."""
        return self._failovers.watch(kind, on_serving=on_serving, seen=seen)

    def _failover_seen(self, seen: FailoverSeen) -> None:
        """The cluster saw a failover kvtui did not cause begin (its leader watcher's thread): measure it like one
        of kvtui's own (the same report, the same loss check), and start a dead master of kvtui's cluster again
        as a standby once another serves."""
        if not self.cluster.endpoints.masters:
            self.log("outage", f"{seen.text}; kvtui measures a failover only with the masters' admin URLs "
                               "(--metrics-url URL,URL…)")
            return
        try:
            self.watch_failover(EXTERNAL, seen=seen,
                                on_serving=self._restart_if_dead if self.cluster.embedded else None)
        except RuntimeError:
            if not self._failovers.closing:
                raise
            # (the session is stopping: nothing more is measured)

    def _restart_if_dead(self, _serving: str) -> None:
        """A failover kvtui did not cause ended: start a dead master of kvtui's cluster again (a hung one, or one
        that stepped down, is left as it is)."""
        cluster = self.cluster
        if any((p := cluster.process(n)) is not None and not p.alive() for n in cluster.master_names()):
            self._restart_dead_masters()

    def failover_reports(self) -> list[list[str]]:
        """Every failover measured so far, each as the lines of its whole report (:meth:`FailoverReport.lines`)."""
        return [r.lines() for r in self.failovers]

    def kill_leader(self) -> FailoverWatcher:
        """SIGKILL the master of kvtui's HA cluster that serves now (``RuntimeError`` when there is no HA
        cluster of kvtui's or no master serves: a failover under way); the standbys elect a new leader, the
        failover is measured (:meth:`watch_failover`) and, once a master serves again, the killed one starts
        again as a standby. Returns the watch (the killed master's name: ``report.old_leader``)."""
        name = self.cluster.leader()
        if name is None:
            raise RuntimeError("no master of kvtui's HA cluster serves now (no --ha, or a failover is under way)")
        watch = self.watch_failover(LEADER_KILL, on_serving=lambda _new: self._restart_dead_masters())
        try:
            pid = self.cluster.signal(name, signal.SIGKILL)
        except BaseException:
            watch.stop()
            raise
        self.log("outage", f"leader {name} (pid {pid}) killed: a standby takes over")  # (its row says down until
        # it starts again)
        return watch

    def _restart_dead_masters(self) -> None:
        """Start every dead master of kvtui's HA cluster again (each joins as a standby)."""
        try:
            self.cluster.restart_master()
        except Exception as exc:  # (the cluster is stopping, or a master does not come up: said, not raised)
            self.log("error", f"the killed master did not start again: {exc}")
            return
        self.follow_processes()
        self.log("control", "the killed master started again as a standby")

    def halt(self, timeout_s: float = HALT_WAIT_S) -> bool:
        """Abandon the workload now (``Driver.stop``: nothing more is issued, queued requests are dropped,
        those under way are not waited for) and wait up to ``timeout_s`` for the driver to end; True if it
        did. The figures then hold every request that finished before."""
        if not self._started:
            return True
        self.driver.stop()
        return self.driver.done.wait(timeout_s)

    def stop(self, final: Frame | None = None) -> None:
        """Abandon the workload (:meth:`halt`), stop recording (``final`` becomes the last recorded frame),
        the samplers, the workers and the (embedded) cluster: every process gone within ~1 s
        (``Engine.stop``). Every failover watch is stopped, also one starting meanwhile (:meth:`watch_failover`
        then raises), and their reports join :attr:`failovers` (:meth:`~kvtui.live.failovers.Failovers.close`). A second
        Ctrl-C or SIGTERM meanwhile is held back until the end (``kvtui.runtime.procs.uninterrupted``). Safe to
        call twice, also from two threads at once (the second returns at once)."""
        from kvtui.runtime.procs import uninterrupted

        with self._lock:
            if self._closing:
                return
            self._closing = True
            unsubscribes, self._unsubscribe = self._unsubscribe, []
        with uninterrupted():
            self.halt()
            self._failovers.close()  # (each files what it measured: the summary and the monitor list every one)
            for unsubscribe in unsubscribes:
                unsubscribe()
            if final is None and self.recording.path is not None and self._started:
                final = self.final_frame()  # (watch: the recording ends with the store as the run left it)
            self.recording.stop(final)
            self.producer.stop()
            if self.coordinator is not None:
                self.coordinator.stop()  # (no worker joins a stopping engine)
            if self.owns_engine:
                cluster = self.cluster
                lost = any(r.pages_lost for r in self.failovers)  # (the masters' logs say why: kept)
                self.engine.stop(meanwhile=lambda trouble: cluster.stop(keep_logs=trouble or lost))
                self._engine_stopped = True
            self._failovers.wait()  # (one that started meanwhile: the run's summary lists every failover)
            if self._started:
                self.panels.stop()  # after the engine: a scrape then fails at once rather than wait on a master

    # -- what a command reads ---------------------------------------------------------------------------
    @property
    def estimator(self):
        """The TTFT :class:`~kvtui.metrics.ttft.TtftEstimator` of the figures (None: no estimate)."""
        return self.agg.estimator

    @property
    def network(self) -> str | None:
        """The line on the embedded cluster's network isolation (None when attached)."""
        return self.cluster.settings.isolation

    @property
    def outage(self) -> bool:
        """Dispatch is held: the store does not answer (the master, or the store node of dummy workers)."""
        return self.driver.outage

    def totals(self) -> dict:
        """The cumulative counters now (:meth:`kvtui.metrics.aggregate.Aggregator.totals`)."""
        return self.agg.totals()

    def counts(self) -> RunCounts:
        """What became of the requests issued so far (:class:`RunCounts`)."""
        d = self.driver
        return RunCounts(issued=d.issued, completed=d.completed, dropped=d.dropped, abandoned=d.abandoned,
                         lost=d.lost, rerun=d.rerun, rerun_lost=d.rerun_lost)

    @property
    def replacements(self) -> tuple:
        """Every rebuild of the workers after one died (:class:`~kvtui.engine.results.WorkerReplacement`)."""
        return tuple(self.engine.replacements)

    def dead_cluster_process(self):
        """A process of the embedded cluster that has exited (its ``ManagedProcess``), None while all live."""
        return self.cluster.dead_process()
