"""A store-less engine and cluster for tests: :class:`FakeEngine` satisfies :class:`kvtui.core.engine_api.EngineAPI`
without workers or store, and :class:`FakeCluster` satisfies :class:`kvtui.core.cluster_api.ClusterOps` without
processes, so a :class:`~kvtui.engine.driver.Driver` or a :class:`~kvtui.live.LiveSession` runs over them in
milliseconds.

What it does, per request: :meth:`FakeEngine.submit` records the request; unless held, it is answered at
once (``answer=True``: a :class:`~kvtui.core.events.RequestResult` of a cold store, every cacheable page
published, carrying :attr:`FakeEngine.codes`) or stays under way for ever (``answer=False``: a store call
that never ends). While held (:meth:`FakeEngine.hold`), submitted requests wait; a release answers them,
a drain drops them (each a :class:`~kvtui.core.engine_api.Dropped`), as decode workers do. Results of a
run an earlier :meth:`FakeEngine.begin_run` began are discarded.

Knobs a test sets on the engine: ``codes`` (store codes every result carries from now on, e.g. RPC_FAIL for an
outage), ``hung_s`` (a result carrying codes began this long before it ended: a call that hung first),
``refuse`` (the exception :meth:`~FakeEngine.set_layout` raises), ``begin_error`` (the exception
:meth:`~FakeEngine.begin_run` raises: a worker dead before the run began), ``pids``
(:meth:`~FakeEngine.worker_pids`); on the cluster: ``answers`` (what :meth:`~FakeCluster.reachable` says).
What they were asked is kept: ``submitted``, ``runs``, ``holds``, ``drains``, ``layouts_set``,
``workers_restarted``, ``stopped``; ``master_restarts``, ``store_restarts``, ``stopped`` and ``watches`` (every
:class:`FakeFailoverWatch` it handed out, which a test ends with :meth:`~FakeFailoverWatch.finish`) of the
cluster.
:meth:`~FakeEngine.replace_workers` and :meth:`~FakeEngine.join_remote` publish a worker rebuild and a remote
join to the subscribers, as the real engine does.
"""

from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass, replace
from typing import Callable, Sequence

from kvtui.core.cluster_api import AckLedger, ClusterProcess, FailoverSeen, LinkControl
from kvtui.core.defaults import DEFAULT_MODEL
from kvtui.core.engine_api import Dropped, RemoteJoin, SubmittedRequest, WorkerReplacement
from kvtui.core.events import RequestResult
from kvtui.core.failover import FailoverReport
from kvtui.core.layout import PRESETS, PageLayout
from kvtui.core.pages import PageState
from kvtui.core.panels import StoreScrape
from kvtui.core.storeloss import KeyCensus
from kvtui.core.subscribers import Subscribers, Unsubscribe
from kvtui.core.topology import DEFAULT_ROUTE

__all__ = ["FakeCluster", "FakeClusterOptions", "FakeEndpoints", "FakeEngine", "FakeFailoverWatch", "FakeOptions"]


@dataclass(frozen=True)
class FakeClusterOptions:
    """The embedded cluster's options a session reads (:class:`~kvtui.core.engine_api.ClusterSettings`)."""

    store_nodes: int = 1
    eviction_high_watermark: float = 0.9
    lease_ttl_ms: int = 10_000
    client_ttl_s: int = 10
    disk_bytes: int = 0
    isolation: str | None = None


@dataclass(frozen=True)
class FakeOptions:
    """How the fake engine says it runs (:class:`~kvtui.core.engine_api.EngineSettings`); sizes in bytes."""

    layout: PageLayout = PRESETS["tiny"]
    model: str = DEFAULT_MODEL
    store_bytes: int = 1 << 30
    segment_on: str = "store"
    concurrency: int = 1
    prefill_workers: int = 1
    decode_workers: int = 1
    remote_slots: int = 0
    route: str = DEFAULT_ROUTE
    replace_dead_workers: bool = False
    verify: str = "full"


@dataclass(frozen=True)
class FakeEndpoints:
    """Where a fake cluster says it is (:class:`~kvtui.core.cluster_api.Endpoints`): nowhere."""

    master: str = "127.0.0.1:1"
    metadata_url: str = "http://127.0.0.1:1/metadata"
    metrics_url: str | None = None
    embedded: bool = False
    log_dir: str = ""
    real_client: str = ""
    ha: bool = False
    masters: tuple[tuple[str, str], ...] = ()
    tiers: tuple[str, ...] = ("memory",)
    replicate_hot: bool = False

    def as_dict(self) -> dict[str, object]:
        return {"master": self.master, "metadata_url": self.metadata_url, "embedded": self.embedded}


class FakeFailoverWatch:
    """A failover watch without masters (:class:`~kvtui.core.cluster_api.FailoverWatcher`), as
    :meth:`FakeCluster.watch_failover` hands it out: its own thread waits until the test ends it
    (:meth:`finish`) or :meth:`stop` does, then, as the real watch does from its thread, calls ``on_serving`` (when
    the report names a ``new_leader``), sets ``done`` and calls ``on_done(report)``. ``results``: the finished
    requests :meth:`add` was fed before the end; ``stopped`` / ``was_cleared``: whether :meth:`stop` /
    :meth:`cleared` was called. Threads: ``results`` and the report change under the watch's lock until ``done``."""

    def __init__(self, n: int, kind: str, t_s: float, *, on_serving: Callable[[str], None] | None = None,
                 on_done: Callable[[FailoverReport], None] | None = None) -> None:
        self.report = FailoverReport(n, kind, t_s)
        self.serving = threading.Event()
        self.done = threading.Event()
        self.results: list[RequestResult] = []
        self.stopped = False
        self.was_cleared = False
        self._on_serving, self._on_done = on_serving, on_done
        self._lock = threading.Lock()
        self._end = threading.Event()
        self._changes: dict[str, object] = {}
        self._thread = threading.Thread(target=self._run, name="kvtui-fake-failover", daemon=True)
        self._thread.start()

    def add(self, r: RequestResult) -> None:
        with self._lock:
            if not self._end.is_set():
                self.results.append(r)

    def cleared(self) -> None:
        self.was_cleared = True

    def stop(self) -> None:
        self.stopped = True
        self._end.set()

    def finish(self, **report: object) -> None:
        """End the watch now, with these fields of its :class:`~kvtui.core.failover.FailoverReport` set (e.g.
        ``new_leader="master-1", serving_s=1.2``); returns at once (``done`` is set on the watch's thread)."""
        with self._lock:
            self._changes.update(report)
            self._end.set()

    def _run(self) -> None:
        self._end.wait()
        with self._lock:
            for name, value in self._changes.items():
                setattr(self.report, name, value)
        new_leader = self.report.new_leader
        if new_leader is not None:
            if self._on_serving is not None:
                self._on_serving(new_leader)
            self.serving.set()
        self.done.set()
        if self._on_done is not None:
            self._on_done(self.report)


class FakeCluster:
    """A cluster without processes (:class:`~kvtui.core.cluster_api.ClusterOps`): ``embedded`` says whether kvtui
    started it (then its ``store_bytes`` bound a layout switch, and restarts are counted), ``answers`` what
    :meth:`reachable` says (a test makes an outage end with it), ``settings`` its options; ``listed``: what
    :meth:`census` says of each key (absent keys: not listed; None: the master does not answer), and
    ``fills`` the arguments of each :meth:`fill_store`."""

    def __init__(self, *, embedded: bool = False, store_bytes: int = 1 << 30,
                 settings: FakeClusterOptions | None = None) -> None:
        self.embedded = embedded
        self.store_bytes: int | None = store_bytes if embedded else None
        self.settings = settings or FakeClusterOptions()
        self.endpoints = FakeEndpoints(embedded=embedded)
        self.answers = True
        self.master_restarts = 0
        self.store_restarts = 0
        self.stopped = False
        self.links: LinkControl | None = None
        self.watches: list[FakeFailoverWatch] = []  # appended under _lock (any thread may start a watch)
        self.listed: dict[str, tuple[int, int]] | None = {}  # the test's; read by census
        self.offloads, self.disk_evictions = 0, 0  # the test's; read by census
        self.fills: list[dict[str, object]] = []  # the caller's (fill_store)
        self._lock = threading.Lock()

    def pids(self) -> dict[str, int]:
        return {}

    def host_addresses(self) -> dict[str, str]:
        return {}

    def reachable(self) -> bool:
        return self.answers

    def sample_store(self) -> StoreScrape:
        return {}

    def process(self, name: str) -> ClusterProcess | None:
        return None

    def store_names(self) -> list[str]:
        return []

    def master_names(self) -> list[str]:
        return ["master"]

    def dead_process(self) -> ClusterProcess | None:
        return None

    def restart_master(self) -> None:
        if not self.embedded:
            raise RuntimeError("the master belongs to an attached cluster; kvtui does not act on it")
        self.master_restarts += 1

    def restart_store(self) -> bool:
        if not self.embedded:
            raise RuntimeError("kvtui runs no store node here (attached cluster, or the segment is on a worker)")
        self.store_restarts += 1
        return False

    def leader(self) -> str | None:
        return None

    def signal(self, name: str, sig: int) -> int:
        raise RuntimeError(f"{name} is not running (the fake cluster has no processes)")

    def fill_store(self, *, object_bytes: int, min_object_bytes: int, max_bytes: int, hold_s: float,
                   timeout_s: float, on_start: Callable[[int], None] | None = None,
                   retry_refused_s: float | None = None, halt: object = None) -> dict[str, object]:
        if not self.embedded:
            raise RuntimeError("the fake cluster has no store to fill")
        self.fills.append({"object_bytes": object_bytes, "max_bytes": max_bytes, "retry_refused_s": retry_refused_s})
        return {"stored": 0, "full": True}

    def census(self, keys: Sequence[str]) -> KeyCensus | None:
        listed = self.listed
        if listed is None:
            return None
        return KeyCensus({k: listed.get(k, (0, 0)) for k in keys}, self.offloads, self.disk_evictions)

    def subscribe_failovers(self, fn: Callable[[FailoverSeen], None], *, snapshots: bool = True) -> Unsubscribe:
        return lambda: None

    def watch_failover(self, n: int, kind: str, *, clock: Callable[[], float], ledger: AckLedger | None,
                       log: Callable[[str, str], None], hit_rate_before: float | None,
                       on_serving: Callable[[str], None] | None = None,
                       on_done: Callable[[FailoverReport], None] | None = None,
                       seen: FailoverSeen | None = None) -> FakeFailoverWatch:
        watch = FakeFailoverWatch(n, kind, clock(), on_serving=on_serving, on_done=on_done)
        with self._lock:
            self.watches.append(watch)
        return watch

    def stop(self, keep_logs: bool = False) -> None:
        self.stopped = True


@dataclass
class _Item:
    """A submitted request: the run it belongs to and the layout in force when it was submitted."""

    run: int
    req: SubmittedRequest
    layout: PageLayout


class FakeEngine:
    """A store-less :class:`~kvtui.core.engine_api.EngineAPI` (see the module). ``layout`` /
    ``store_bytes`` / ``options``: what :attr:`options` says (``options`` wins when given); ``answer``: answer
    each request at once (True) or never (False)."""

    def __init__(self, layout: PageLayout = PRESETS["tiny"], *, store_bytes: int = 1 << 30,
                 answer: bool = True, options: FakeOptions | None = None) -> None:
        self.options = options or FakeOptions(layout=layout, store_bytes=store_bytes)
        self.endpoints = FakeEndpoints()
        self.answer = answer
        self.codes: dict[int, int] = {}
        self.hung_s = 0.0
        self.refuse: Exception | None = None
        self.begin_error: BaseException | None = None
        self.pids: dict[str, int] = {}
        self.submitted: list[SubmittedRequest] = []
        self.runs: list[int] = []  # the concurrency of each begin_run
        self.holds: list[bool] = []
        self.drains = 0
        self.layouts_set: list[PageLayout] = []
        self.workers_restarted = 0
        self.stopped = False
        self.replacements: list[WorkerReplacement] = []
        self._t0 = time.monotonic()
        self._lock = threading.Lock()
        self._run = 0
        self._held = False
        self._waiting: list[_Item] = []  # submitted while held
        self._ready: queue.Queue[tuple[int, RequestResult | Dropped]] = queue.Queue()  # (run, answer)
        self._replaced: Subscribers[[WorkerReplacement]] = Subscribers()
        self._joined: Subscribers[[RemoteJoin]] = Subscribers()

    # -- RequestEngine ---------------------------------------------------------------------------------
    def now(self) -> float:
        return time.monotonic() - self._t0

    def begin_run(self, concurrency: int) -> None:
        if self.begin_error is not None:
            raise self.begin_error
        with self._lock:
            self.runs.append(concurrency)
            self._run += 1
            self._held, self._waiting = False, []

    def submit(self, req: SubmittedRequest) -> None:
        with self._lock:
            self.submitted.append(req)
            item = _Item(self._run, req, self.options.layout)
            if self._held:
                self._waiting.append(item)
            else:
                self._start(item)

    def next_result(self, timeout_s: float | None = None) -> RequestResult | Dropped | None:
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            try:
                wait = None if deadline is None else max(0.0, deadline - time.monotonic())
                run, answer = self._ready.get(timeout=wait)
            except queue.Empty:
                return None
            if run == self._run:  # (an earlier run's answers are discarded)
                return answer

    def hold(self, held: bool) -> None:
        with self._lock:
            self.holds.append(held)
            self._held = held
            if not held:
                waiting, self._waiting = self._waiting, []
                for item in waiting:
                    self._start(item)

    def drain(self) -> None:
        with self._lock:
            self.drains += 1
            if self._held:
                waiting, self._waiting = self._waiting, []
                for item in waiting:
                    self._ready.put((item.run, Dropped(item.req)))

    def subscribe_replacement(self, fn: Callable[[WorkerReplacement], None]) -> Unsubscribe:
        return self._replaced.subscribe(fn)

    # -- EngineAPI -------------------------------------------------------------------------------------
    def worker_pids(self) -> dict[str, int]:
        return dict(self.pids)

    def set_layout(self, layout: PageLayout) -> None:
        if self.refuse is not None:
            raise self.refuse
        self.layouts_set.append(layout)
        self.options = replace(self.options, layout=layout)

    def clear_store(self) -> int:
        return 0

    def restart_workers(self) -> None:
        self.workers_restarted += 1

    published: AckLedger | None = None  # (no store: nothing is published)

    def subscribe_remote(self, fn: Callable[[RemoteJoin], None]) -> Unsubscribe:
        return self._joined.subscribe(fn)

    def stop(self, meanwhile: Callable[[bool], None] | None = None) -> None:
        if meanwhile is not None and not self.stopped:
            meanwhile(False)
        self.stopped = True

    # -- what a test makes happen ----------------------------------------------------------------------
    def replace_workers(self, dead: tuple[str, ...] = ("decode",), exit_codes: tuple[int | None, ...] = (-9,),
                        lost: int = 0, reason: str = "decode worker died (exit code -9)") -> WorkerReplacement:
        """Record a rebuild of the workers (as after ``dead`` died) and publish it to the
        :meth:`subscribe_replacement` subscribers, from the calling thread; returns it."""
        rep = WorkerReplacement(t=self.now(), dead=dead, exit_codes=exit_codes, reason=reason, lost=lost,
                                took_s=0.0, pids=dict(self.pids))
        self.replacements.append(rep)
        self._replaced(rep)
        return rep

    def join_remote(self, role: str = "decode", index: int = 1, name: str = "remote-decode-0",
                    host: str = "10.0.0.2", pid: int = 4242) -> RemoteJoin:
        """Publish a remote worker's join to the :meth:`subscribe_remote` subscribers; returns it."""
        join = RemoteJoin(role, index, name, host, pid)
        self._joined(join)
        return join

    # -- answers ---------------------------------------------------------------------------------------
    def _start(self, item: _Item) -> None:
        """A request whose store calls begin (called under the lock): answered now, or never."""
        if self.answer:
            self._ready.put((item.run, self._result(item)))

    def _result(self, item: _Item) -> RequestResult:
        """A cold store's answer: every cacheable full page computed and published, a partial cell per
        started page beyond them; ``codes``: :attr:`codes` as they are now."""
        req, layout = item.req, item.layout
        n_tokens = len(req.tokens)
        pages = req.cacheable_tokens // layout.page_tokens
        rest = n_tokens - pages * layout.page_tokens
        states = bytes([PageState.PUBLISHED] * pages + [PageState.PARTIAL] * (-(-rest // layout.page_tokens)))
        t = self.now()
        return RequestResult(
            req_id=req.req_id, scenario=req.scenario, n_tokens=n_tokens, cacheable_tokens=req.cacheable_tokens,
            page_tokens=layout.page_tokens, page_bytes=layout.page_bytes, pages_total=pages, pages_hit=0,
            states=states, pages_published=pages, bytes_written=pages * layout.page_bytes, codes=dict(self.codes),
            arrival_s=req.arrival_s, t_start=t - (self.hung_s if self.codes else 0.0), t_end=t,
            labels=tuple(req.labels))
