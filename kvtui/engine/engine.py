"""The engine: owns the cluster (embedded or attached) and the prefill/decode workers, and drives requests.

Per request (prefill/decode disaggregation over the store):

1. the **decode** worker reloads the longest cached leading run of the request's pages
   (``load_cached_prefix``): these are prefix hits, prefill is skipped for them;
2. the **prefill** worker computes the remaining cacheable pages and publishes the absent ones
   (``store_computed_prefix`` from the first page not reloaded, reusing the reload's probe answers).

Requests flow parent → decode → prefill → parent as a chain of pipes (:mod:`kvtui.engine.protocol`): the
parent submits, decode hands its result straight to prefill, prefill acknowledges to decode and sends the
finished request back. The parent hashes a request's page keys when it submits it, ahead of the store
calls. With ``concurrency`` 1 the next request's store calls start only after the previous one published
(exact replay); with more, up to ``concurrency`` requests are between reload and end of publish. Results
leave through ``on_result`` (called from an engine thread) as :class:`~kvtui.core.events.RequestResult`.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace

from kvtui.core.defaults import DEFAULT_MODEL, DEFAULT_STORE_BYTES
from kvtui.core.events import RequestResult
from kvtui.core.layout import PageLayout
from kvtui.core.pages import PageState
from kvtui.engine.cluster import ClusterEndpoints, ClusterOptions, EmbeddedCluster
from kvtui.engine.connector import PublishResult, ReloadResult
from kvtui.engine.keys import PageKeyer
from kvtui.engine.protocol import (
    Begin, Drain, Hold, RemoveAll, RequestDone, RequestDropped, RequestFailed, SetLayout, Submit,
)
from kvtui.engine.worker import WorkerSpec
from kvtui.engine.workers import STOP_GRACE_S as WORKER_STOP_GRACE_S
from kvtui.engine.workers import WorkerError, WorkerHandle, start_chain, stop_all

SEGMENT_PLACES = ("store", "prefill", "decode")
EMBEDDED_STOP_GRACE_S = 0.2  # an idle worker exits on Stop within ms; one inside a store call is killed after this
REPLACE_WAIT_S = 5.0  # stop() waits this long for a worker replacement under way (a worker starts in ~1-2 s)


@dataclass
class EngineOptions:
    """How the engine runs. ``segment_on``: where the store segment lives (``store``: a separate store node,
    so decode reads cross TCP; ``prefill``/``decode``: co-located with that worker). Sizes in bytes."""

    layout: PageLayout
    model: str = DEFAULT_MODEL
    scheme: str = "ollama"
    namespace: str | None = None
    segment_on: str = "store"
    store_bytes: int = DEFAULT_STORE_BYTES
    concurrency: int = 1
    read_streams: int = 1
    cluster: ClusterOptions = field(default_factory=ClusterOptions)
    replace_dead_workers: bool = False  # a dead worker: rebuild the chain and go on (see Engine) instead of failing


_CELL = {state: bytes((int(state),)) for state in PageState}  # one page cell of each state


@dataclass(frozen=True)
class Dropped:
    """A submitted request dropped without any store call (see :meth:`Engine.drain`)."""

    req: object


@dataclass(frozen=True)
class Lost(Dropped):
    """A submitted request that will never finish: a worker died while it was queued or under way, and the
    engine rebuilt the chain (``EngineOptions.replace_dead_workers``). A :class:`Dropped` to a caller that
    only frees its slot; ``reason``: the one-line cause."""

    reason: str = ""


@dataclass(frozen=True)
class WorkerReplacement:
    """One rebuild of the chain after a worker died: ``t`` engine seconds when the death was seen, the
    ``dead`` roles and their ``exit_codes`` (negative: the signal), ``lost`` requests (:class:`Lost`), ``took_s``
    until both new workers were ready, their ``pids`` (``{role: pid}``)."""

    t: float
    dead: tuple[str, ...]
    exit_codes: tuple[int | None, ...]
    reason: str
    lost: int
    took_s: float
    pids: dict


def result_from(req, reload: ReloadResult, publish: PublishResult | None, layout: PageLayout, t_start: float,
                t_end: float, keys: tuple = ()) -> RequestResult:
    """Combine the decode worker's reload and the prefill worker's publish (None: nothing published) of
    ``req`` (a ``workload.Request``) into one :class:`RequestResult`; ``t_start``/``t_end`` in seconds.

    Page cells: HIT for the reloaded run; then the reload's stop state (EVICTED, FAILED, MISMATCH) for the
    page where the run ended early, even when prefill then recomputed and republished it (the counts still
    say so); the publish states after it; then one PARTIAL cell per started page of tokens beyond the
    cacheable full pages. ``codes``: the reload's and the publish's codes added up (the reload's include
    its stop code). ``keys``: the request's first and last page key (for the monitor's row details).
    """
    hit = reload.pages_hit
    total = reload.pages_total
    states = bytearray(_CELL[PageState.HIT] * hit)  # (bytes arithmetic: extending by enum members is slow)
    pub_states = bytearray(publish.states) if publish else bytearray(_CELL[PageState.COMPUTED] * (total - hit))
    if reload.stop_state is not None and pub_states:
        pub_states[0] = reload.stop_state
    states += pub_states
    rest = len(req.tokens) - total * layout.page_tokens
    if rest > 0:
        states += _CELL[PageState.PARTIAL] * (-(-rest // layout.page_tokens))
    codes = {int(k): int(v) for k, v in reload.codes.items()}
    for k, v in (publish.codes.items() if publish else ()):
        codes[int(k)] = codes.get(int(k), 0) + int(v)
    return RequestResult(
        req_id=req.req_id, scenario=req.scenario, n_tokens=len(req.tokens), cacheable_tokens=req.cacheable_tokens,
        page_tokens=layout.page_tokens, page_bytes=layout.page_bytes, pages_total=total, pages_hit=hit,
        states=bytes(states),
        pages_published=publish.stored if publish else 0,
        pages_already_present=publish.already_present if publish else 0,
        pages_failed=publish.failed if publish else 0,
        bytes_loaded=reload.bytes_loaded, bytes_written=publish.bytes_written if publish else 0,
        verified=reload.verified, mismatches=reload.mismatches,
        probe_ms=reload.probe_ms, read_ms=reload.read_ms, verify_ms=reload.verify_ms,
        publish_probe_ms=publish.probe_ms if publish else 0.0, compute_ms=publish.compute_ms if publish else 0.0,
        put_ms=publish.put_ms if publish else 0.0, codes=codes, arrival_s=req.arrival_s,
        t_start=t_start, t_end=t_end, labels=tuple(req.labels), keys=tuple(keys),
    )


class Engine:
    """Cluster + workers. ``start()`` then :meth:`process` / :meth:`drive`; ``stop()`` always (or use ``with``).

    ``endpoints``: attach to this cluster instead of starting one. Raises ``ClusterError`` / ``WorkerError``
    (one-line messages) when start-up fails, after stopping whatever did start.
    """

    def __init__(self, options: EngineOptions, endpoints: ClusterEndpoints | None = None):
        self.options = options  # (also sets ``keyer``)
        self.cluster: EmbeddedCluster | None = None
        self.endpoints = endpoints
        self.prefill: WorkerHandle | None = None
        self.decode: WorkerHandle | None = None
        self.t0 = time.monotonic()
        self._results = None  # read end of the results pipe from prefill
        self._seq = itertools.count()
        self._run = 0  # counts begin_run calls: results of requests submitted in an earlier run are discarded
        self._pending: dict[int, tuple] = {}  # seq → (run, submitted request, its first and last page key)
        self._chain_lock = threading.RLock()  # the workers and pipes of the chain change only under it
        self._lost: deque[Lost] = deque()  # results to report after a rebuild, before any new one
        self.replacements: list[WorkerReplacement] = []  # every rebuild of the chain (replace_dead_workers)
        self._spawner: ThreadPoolExecutor | None = None  # starts replacement workers (see _replace_chain)
        self._stopping = False
        self._chain_state = {"concurrency": 1, "held": False, "drained": False}  # re-sent to a rebuilt chain

    @property
    def options(self) -> EngineOptions:
        """How the engine runs; setting it also sets :attr:`keyer`, the parent's page keys, which follow
        the options' model, key scheme and layout (the workers' keys are derived from the same fields)."""
        return self._options

    @options.setter
    def options(self, options: EngineOptions) -> None:
        self._options = options
        self.keyer = PageKeyer(options.model, options.layout.page_tokens, options.scheme, options.namespace)

    def __enter__(self) -> "Engine":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self) -> None:
        """Start (or attach to) the cluster and both workers."""
        o = self.options
        if o.segment_on not in SEGMENT_PLACES:
            raise ValueError(f"--segment-on must be one of {', '.join(SEGMENT_PLACES)}")
        try:
            if self.endpoints is None:
                self.cluster = EmbeddedCluster(replace(o.cluster, store_bytes=o.store_bytes, segment_on=o.segment_on))
                self.endpoints = self.cluster.start()
            self._start_chain()
            if o.replace_dead_workers:  # made now, by the caller's thread: a worker's parent-death signal is
                # tied to the thread that started it, and a driver's threads end with their run
                self._spawner = ThreadPoolExecutor(1, thread_name_prefix="kvtui-respawn")
                self._spawner.submit(lambda: None).result()
            self.begin_run(o.concurrency)
        except BaseException:
            self.stop()
            raise
        self.t0 = time.monotonic()

    def _start_chain(self) -> None:
        """Start both workers with the specs of the current options (layout included), joined by new pipes."""
        o = self.options
        common = dict(endpoints=self.endpoints.as_dict(), layout=o.layout.as_dict(), model=o.model, scheme=o.scheme,
                      namespace=o.namespace)
        seg = {r: (o.store_bytes if o.segment_on == r and self.cluster is not None else 0) for r in ("prefill", "decode")}
        self.prefill, self.decode, self._results = start_chain(
            WorkerSpec("prefill", segment_bytes=seg["prefill"], **common),
            WorkerSpec("decode", segment_bytes=seg["decode"], read_streams=o.read_streams, **common),
            log_dir=self.endpoints.log_dir or None)

    def now(self) -> float:
        """Seconds since the engine started."""
        return time.monotonic() - self.t0

    def _chain_send(self, role: str, msg) -> None:
        """Send a chain command to the ``role`` worker; ``WorkerError`` if it died, unless dead workers are
        replaced (the collector's next result rebuilds the chain, and the run's state goes to the new one)."""
        with self._chain_lock:
            handle = getattr(self, role)
            try:
                handle.send(msg)
            except (OSError, AttributeError):
                if self.options.replace_dead_workers and not self._stopping:
                    return
                code = handle.exit_code() if handle is not None else None
                raise WorkerError(f"{role} worker died (exit code {code})") from None

    def begin_run(self, concurrency: int) -> None:
        """Start a run (a :class:`Driver`): allow up to ``concurrency`` requests between the start of their
        reload and the end of their publish, and clear a hold or drain left by an earlier run. Both workers
        hear it: at 1 they run their store calls on the same CPU (``kvtui.engine.worker._Chain.pin``).
        Requests an earlier run abandoned (``Driver.stop``) may still finish: :meth:`next_result` discards
        their results."""
        self._run += 1
        self._chain_state = {"concurrency": max(1, int(concurrency)), "held": False, "drained": False}
        for role in ("decode", "prefill"):
            self._chain_send(role, Begin(max(1, int(concurrency))))

    def hold(self, held: bool) -> None:
        """Hold (True) or release (False) the submitted requests whose reload has not started. The decode
        worker also holds by itself when a reload fails with RPC_FAIL / RPC_TIMEOUT (the master is down)."""
        self._chain_state["held"] = bool(held)
        self._chain_send("decode", Hold(bool(held)))

    def drain(self) -> None:
        """Nothing more will be submitted: run the requests already submitted, or, while decode holds them
        for a dead master, drop them unrun (:meth:`next_result` gives a :class:`Dropped` for each), so a run
        that ends during an outage finishes at once."""
        self._chain_state["drained"] = True
        self._chain_send("decode", Drain())

    def submit(self, req) -> None:
        """Hash the page keys of ``req`` (a ``workload.Request``: its cacheable full pages) and hand them to
        the decode worker; the result comes from :meth:`next_result`. Thread-safe with respect to
        :meth:`next_result`. With ``replace_dead_workers``, a request submitted to a dead decode worker
        is reported :class:`Lost` once the chain is rebuilt."""
        keys = self.keyer.keys(req.tokens[: req.cacheable_tokens])
        with self._chain_lock:
            seq = next(self._seq)
            self._pending[seq] = (self._run, req, (keys[0], keys[-1]) if keys else ())
            try:
                self._chain_send("decode", Submit(seq, keys))
            except WorkerError:
                self._pending.pop(seq, None)
                raise

    def next_result(self, timeout_s: float | None = None) -> "RequestResult | Dropped | None":
        """The next finished request of the current run (in submission order: each worker handles requests
        in turn; those of an earlier, abandoned run are discarded); ``None`` after ``timeout_s`` without one.
        Raises ``WorkerError`` when a worker failed or died, unless ``replace_dead_workers``: then the chain
        is rebuilt (:meth:`_replace_chain`) and each request it lost comes as a :class:`Lost`. Call it from
        one thread (the driver's collector)."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            if self._lost:
                return self._lost.popleft()
            try:
                msg = self._recv_result(deadline)
                if msg is None:
                    return None
                seq = getattr(msg, "seq", None)
                if seq is not None and seq in self._pending and self._pending[seq][0] != self._run:
                    self._pending.pop(seq)  # abandoned by an earlier run
                    continue
                return self._result_of(msg)
            except WorkerError as exc:
                if not self.options.replace_dead_workers or self._stopping:
                    raise
                self._replace_chain(str(exc).splitlines()[0])

    def _recv_result(self, deadline: float | None):
        results = self._results
        try:
            if results is None:
                raise EOFError
            if deadline is not None and not results.poll(max(0.0, deadline - time.monotonic())):
                return None
            return results.recv()
        except (EOFError, OSError):
            code = self.prefill.exit_code() if self.prefill is not None else None
            raise WorkerError(f"prefill worker died (exit code {code})") from None

    def _result_of(self, msg) -> "RequestResult | Dropped":
        match msg:
            case RequestDone(seq, reload, publish, t_start, t_end):
                _run, req, edge_keys = self._pending.pop(seq)
                return result_from(req, reload, publish, self.options.layout, t_start - self.t0, t_end - self.t0,
                                   keys=edge_keys)
            case RequestDropped(seq):
                return Dropped(self._pending.pop(seq)[1])
            case RequestFailed(None, message) if self.decode is not None:  # relayed by prefill: decode is gone
                raise WorkerError(f"{message} (exit code {self.decode.exit_code()})")
            case RequestFailed(_seq, message):
                raise WorkerError(message)
        raise WorkerError(f"unexpected result message {type(msg).__name__}")

    def process(self, req) -> RequestResult:
        """Run one request to completion (reload on decode, then publish on prefill). Not while a
        :class:`Driver` is running on this engine."""
        self.submit(req)
        return self.next_result()

    def _replace_chain(self, reason: str) -> None:
        """A worker died (``reason``): stop the other one too (after its current store call, killed after the
        stop grace), report every request of the current run still under way as :class:`Lost`, and start
        both workers again with the same specs on new pipes (from the engine's spawner thread), sending them
        the run's concurrency, hold and drain. The survivor is restarted rather than re-wired: a running
        worker cannot take a new chain pipe, and a decode worker whose prefill died fails on its next send
        anyway. ``WorkerError`` when the new workers do not start (or the engine is stopping)."""
        with self._chain_lock:
            if self._stopping:
                raise WorkerError(reason)
            t, began = self.now(), time.monotonic()
            old = [h for h in (self.decode, self.prefill) if h is not None]
            for h in old:
                h.process.join(0.05)
            dead = tuple(h.spec.role for h in old if not h.process.is_alive())
            stop_all(old, EMBEDDED_STOP_GRACE_S if self.cluster is not None else WORKER_STOP_GRACE_S)
            codes = tuple(h.process.exitcode for h in old if h.spec.role in dead)
            if self._results is not None:
                self._results.close()
                self._results = None
            lost = [Lost(entry[1], reason) for _seq, entry in sorted(self._pending.items()) if entry[0] == self._run]
            self._pending.clear()
            self._lost.extend(lost)
            self.decode = self.prefill = None
            spawner = self._spawner
            if spawner is None:  # stopped meanwhile
                raise WorkerError(reason)
            spawner.submit(self._start_chain).result()
            if self._stopping:  # stop() gave up waiting for us: take the new workers down ourselves
                stop_all([self.decode, self.prefill], 0.0)
                raise WorkerError(reason)
            state = self._chain_state
            for h in (self.decode, self.prefill):
                h.send(Begin(state["concurrency"]))
            for msg in ([Hold(True)] if state["held"] else []) + ([Drain()] if state["drained"] else []):
                self.decode.send(msg)
            self.replacements.append(WorkerReplacement(
                t=t, dead=dead or ("unknown",), exit_codes=codes, reason=reason, lost=len(lost),
                took_s=time.monotonic() - began, pids={"prefill": self.prefill.pid, "decode": self.decode.pid}))

    def worker_pids(self) -> dict[str, int]:
        """``{role: pid}`` of every process kvtui runs (workers and, when embedded, cluster processes)."""
        pids = {}
        if self.cluster is not None:
            pids.update({p.name: p.pid for p in self.cluster.processes})
        for h in (self.prefill, self.decode):
            if h is not None:
                pids[h.spec.role] = h.pid
        return pids

    def master_reachable(self) -> bool:
        """True if the master's RPC port accepts a TCP connection (no store call, no lease)."""
        from kvtui.engine.store import probe_tcp, split_hostport

        host, port = split_hostport(self.endpoints.master)
        return probe_tcp(host, port, timeout_s=0.5)

    def set_layout(self, layout: PageLayout) -> None:
        """Use page ``layout`` from the next submitted request on: both workers switch their connector and
        the parent its keyer, or none does. Only while no request is submitted and unfinished
        (``Driver.wait_idle``); ``RuntimeError`` otherwise. ``WorkerError`` if a worker refuses or died:
        decode, switched first, is switched back when prefill refuses, and the engine keeps its layout."""
        if self._pending:
            raise RuntimeError(f"{len(self._pending)} requests are still under way")
        old = self.options.layout
        self.decode.call(SetLayout(layout), timeout_s=10)
        try:
            self.prefill.call(SetLayout(layout), timeout_s=10)
        except WorkerError as exc:
            try:
                self.decode.call(SetLayout(old), timeout_s=10)
            except WorkerError as back:
                raise WorkerError(f"{exc}; decode did not switch back to the old layout either: {back}") from None
            raise
        self.options = replace(self.options, layout=layout)

    def restart_master(self) -> None:
        """Embedded mode: start the master again on the same ports (``RuntimeError`` when attached)."""
        if self.cluster is None:
            raise RuntimeError("the master belongs to an attached cluster; restart it there")
        self.cluster.restart_master()

    def restart_store(self) -> None:
        """Embedded mode with a store node: start it again after it died, with a new segment of the same
        size (``RuntimeError`` otherwise; ``ClusterError`` if it does not come up). The dead node's pages stay
        listed by the master until its ``client_ttl`` passes (reads of them fail with TRANSFER_FAIL)."""
        if self.cluster is None or self.cluster.process("store") is None:
            raise RuntimeError("kvtui runs no store node here (attached cluster, or the segment is on a worker)")
        self.cluster.restart_store()

    def clear_store(self) -> int:
        """Remove every object in the store (global, also other clients'); returns the count removed."""
        return int(self.prefill.call(RemoveAll()))

    def stop(self) -> None:
        """Stop the workers and the embedded cluster together, every process gone within ~1 s: both workers
        are asked to exit (each after its current store call, abandoning what it had queued or under way:
        see ``workers.stop_all``), the embedded cluster is stopped while they do, then a worker still in a
        store call is killed: after ``EMBEDDED_STOP_GRACE_S`` with an embedded cluster (it goes down with
        them, so no store outlives an unfinished put), after ``workers.STOP_GRACE_S`` when attached (a put
        cut short would keep its space in the shared store for minutes). A worker replacement under way
        is waited for up to ``REPLACE_WAIT_S`` (it then stops its new workers itself). Safe to call twice."""
        self._stopping = True
        locked = self._chain_lock.acquire(timeout=REPLACE_WAIT_S)
        try:
            handles = [h for h in (self.decode, self.prefill) if h is not None]
            for h in handles:
                h.ask_stop()
            grace = EMBEDDED_STOP_GRACE_S if self.cluster is not None else WORKER_STOP_GRACE_S
            deadline = time.monotonic() + grace
            if self.cluster is not None:
                self.cluster.stop()  # (its master going away only makes a worker's last store call fail sooner)
                self.cluster = None
            for h in handles:
                h.finish_stop(deadline - time.monotonic())
            self.decode = self.prefill = None
            if self._results is not None:
                self._results.close()
                self._results = None
            self._pending.clear()
            self._lost.clear()
            if self._spawner is not None:
                self._spawner.shutdown(wait=False)
                self._spawner = None
        finally:
            if locked:
                self._chain_lock.release()
