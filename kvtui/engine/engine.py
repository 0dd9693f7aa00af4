"""The engine: the prefill/decode workers of a run, the requests routed to them and their results.

Per request (prefill/decode disaggregation over the store): the **decode** worker reloads the longest cached
leading run of the request's pages (``load_cached_prefix``: prefix hits, prefill is skipped for them); the
**prefill** worker computes the remaining cacheable pages and publishes the absent ones
(``store_computed_prefix`` from the first page not reloaded, reusing the reload's probe answers).

Requests flow parent → decode → prefill → parent as a chain of pipes (:mod:`kvtui.engine.protocol`): the
parent submits, decode hands its result straight to prefill, prefill acknowledges to decode and sends the
finished request back. With N prefill × M decode workers (:mod:`kvtui.core.topology`) every decode worker
has a chain to every prefill worker, the parent routes each request (:mod:`kvtui.engine.routing`) and hashes
its page keys when it submits it. At ``concurrency`` 1 (per decode worker) the next request's store calls
start only after the previous one published (exact replay with one decode worker). Decode workers on other
machines join through relay slots (:mod:`kvtui.engine.remote`; the engine owns a
:class:`~kvtui.engine.remote_slots.RemoteSlots` per chain).

What the layers above use of an engine is :class:`kvtui.core.engine_api.EngineAPI`; a worker rebuild and a
remote worker's join are published to subscribers (:meth:`Engine.subscribe_replacement`,
:meth:`Engine.subscribe_remote`). The store's cluster is not the engine's: it is given the cluster's
endpoints (:class:`~kvtui.mooncake.client.ClusterEndpoints`, embedded or attached) and starts only workers.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Callable

from kvtui.core.engine_api import RemoteJoin, SubmittedRequest, WorkerError
from kvtui.core.events import RequestResult
from kvtui.core.layout import PageLayout
from kvtui.core.misses import MissTracker
from kvtui.core.pages import PageState
from kvtui.core.subscribers import Subscribers, Unsubscribe
from kvtui.core.topology import worker_name, worker_names
from kvtui.engine.keys import PageKeyer
from kvtui.engine.ledger import PublishedLedger
from kvtui.engine.options import SEGMENT_PLACES, EngineOptions
from kvtui.engine.protocol import (
    Begin,
    Drain,
    Hold,
    RemoveAll,
    RequestDone,
    RequestDropped,
    RequestFailed,
    SetLayout,
    SetVerify,
    Submit,
)
from kvtui.engine.remote_slots import RemoteSlots, remote_chains, remote_spec
from kvtui.engine.result_pipes import PipeGone, ResultPipes
from kvtui.engine.results import Dropped, Lost, WorkerReplacement, result_from
from kvtui.engine.routing import Router, least_loaded
from kvtui.engine.worker import WorkerSpec
from kvtui.engine.workers import STOP_GRACE_S as WORKER_STOP_GRACE_S, WorkerHandle, start_mesh, stop_all
from kvtui.mooncake.client import ClusterEndpoints
from kvtui.runtime.logs import LogFolder

__all__ = ["SEGMENT_PLACES", "Dropped", "Engine", "EngineOptions", "Lost", "WorkerReplacement", "result_from"]

EMBEDDED_STOP_GRACE_S = 0.2  # an idle worker exits on Stop within ms; one inside a store call is killed after this


@dataclass(frozen=True)
class Pending:
    """A submitted request under way: the ``run`` (``begin_run`` count) it was submitted in, the request,
    its first and last page key (``edge_keys``, () without a cacheable page), the indexes of the
    ``decode`` and ``prefill`` workers it was routed to, and, when the engine keeps a ledger of what it
    published (an HA cluster, or ``ack_ledger``), every page key (``keys``; () otherwise)."""

    run: int
    req: SubmittedRequest
    edge_keys: tuple
    decode: int
    prefill: int
    keys: tuple = ()


@dataclass
class ChainState:
    """What every worker of the current run was told, re-sent to a rebuilt chain and to a joining worker:
    the run's ``concurrency`` per decode worker, whether the decode workers are ``held``, and whether the
    run was ``drained``."""

    concurrency: int = 1
    held: bool = False
    drained: bool = False

    def decode_messages(self) -> list:
        """The messages that bring a new decode worker (after its ``Begin``) to this hold and drain."""
        return ([Hold(True)] if self.held else []) + ([Drain()] if self.drained else [])


class Engine:
    """The workers of a run over the cluster at ``endpoints``. ``start()`` then :meth:`process` or a
    :class:`~kvtui.engine.driver.Driver`; ``stop()`` always (or use ``with``). Raises ``WorkerError`` (a one-line
    message) when start-up fails, after stopping whatever did start. ``prefills`` / ``decodes``: the worker
    handles (``prefill`` / ``decode``: the first of each). Satisfies :class:`kvtui.core.engine_api.EngineAPI`.

    Threads: the caller's (start, begin_run, set_verify, stop), a driver's feeder (submit, hold, drain, a
    session's set_layout) and collector (next_result, which rebuilds the workers), the remote coordinator's
    (joins) and the spawner (a rebuild's new workers). The workers, pipes, pending requests, loads and relay
    slots change only under ``_chain_lock`` (the spawner changes them for the rebuild that holds it); each
    field says, where ``__init__`` sets it, its one writer or its lock. ``stop`` never goes on without the lock:
    a rebuild under way gives up once ``_stopping`` is set (its start-up abandoned), so the chain is never
    changed by two threads at once."""

    def __init__(self, options: EngineOptions, endpoints: ClusterEndpoints):
        self._chain_lock = threading.RLock()  # guards the fields marked "chain lock"
        self.options = options  # chain lock (set_layout, set_verify); replaced whole, read freely (also sets keyer)
        self.endpoints = endpoints  # the caller's (start, before any other thread)
        # chain lock; replaced whole, never changed in place, so a reader without the lock takes a consistent list:
        self.prefills: list[WorkerHandle] = []
        self.decodes: list[WorkerHandle] = []
        self.t0 = time.monotonic()  # the caller's (start)
        self._results: list = []  # chain lock, replaced whole; read ends of the results pipes, one per prefill worker
        self._pipes: ResultPipes | None = None  # the collector's: how it waits on them (rebuilt with them)
        self._seq = itertools.count()  # chain lock
        self._run = 0  # chain lock; counts begin_run calls: results of an earlier run's requests are discarded
        self._pending: dict[int, Pending] = {}  # chain lock; seq → the request under way
        self._misses = MissTracker()  # chain lock; the run's key history: each result's miss reasons (core.misses)
        self._router = Router(options.route, options.decode_workers, options.prefill_workers)  # chain lock
        self._decode_load = [0] * options.decode_workers  # chain lock; requests under way per worker (routing)
        self._prefill_load = [0] * options.prefill_workers  # chain lock
        self._lost: deque[Lost] = deque()  # chain lock; results to report after a rebuild, before any new one
        self.replacements: list[WorkerReplacement] = []  # chain lock, appended only; every rebuild of the chain
        self._spawner: ThreadPoolExecutor | None = None  # chain lock (start, before any other thread; stop); starts
        # replacement workers (see _replace_chain)
        self.published: PublishedLedger | None = None  # the caller's (start); HA or options.ack_ledger: every page a
        # put acknowledged
        self._stopping = False  # stop()'s, set once before it takes the chain lock: whoever holds it lets go
        self._abandon = threading.Event()  # set with _stopping: a rebuild's start-up is abandoned
        self._stopped = False  # chain lock; stop() ran its ``meanwhile`` (the cluster's stop) once
        self._failed = False  # the caller's (start); start-up failed: the logs are kept (kvtui.runtime.logs)
        self._logs: LogFolder | None = None  # the caller's (start, stop); the workers' temporary log folder, if any
        self._chain_state = ChainState()  # chain lock; re-sent to a rebuilt chain and to a joining worker
        self._slots = RemoteSlots()  # chain lock; the relay slots of the current chain (remote workers)
        self.prefill_peers: list[int] = []  # chain lock, replaced whole; each prefill worker's chain index
        # (kvtui.engine.remote_slots)
        self._replaced: Subscribers[[WorkerReplacement]] = Subscribers()  # (thread-safe)
        self._joined: Subscribers[[RemoteJoin]] = Subscribers()  # (thread-safe)

    def subscribe_replacement(self, fn: Callable[[WorkerReplacement], None]) -> Unsubscribe:
        """Call ``fn`` with each :class:`WorkerReplacement` (from the thread calling :meth:`next_result`,
        after the earlier subscribers); returns the function that unsubscribes."""
        return self._replaced.subscribe(fn)

    def subscribe_remote(self, fn: Callable[[RemoteJoin], None]) -> Unsubscribe:
        """Call ``fn`` with a :class:`~kvtui.core.engine_api.RemoteJoin` each time a remote worker joins
        (from the coordinator's thread, after the earlier subscribers); returns the function that
        unsubscribes."""
        return self._joined.subscribe(fn)

    @property
    def options(self) -> EngineOptions:
        """How the engine runs; setting it also sets :attr:`keyer`, the parent's page keys, which follow
        the options' model, key scheme and layout (the workers' keys are derived from the same fields)."""
        return self._options

    @options.setter
    def options(self, options: EngineOptions) -> None:
        with self._chain_lock:
            self._options = options
            self.keyer = PageKeyer(options.model, options.layout.page_tokens, options.scheme, options.namespace)

    @property
    def prefill(self) -> WorkerHandle | None:  # the first prefill worker (it answers store-wide commands)
        prefills = self.prefills  # (one read: stop or a rebuild may replace it meanwhile)
        return prefills[0] if prefills else None

    @prefill.setter
    def prefill(self, handle) -> None:
        self.prefills = [handle] if handle is not None else []

    @property
    def decode(self) -> WorkerHandle | None:  # the first decode worker, None while there is none
        decodes = self.decodes
        return decodes[0] if decodes else None

    @decode.setter
    def decode(self, handle) -> None:
        self.decodes = [handle] if handle is not None else []

    @property
    def workers(self) -> list[WorkerHandle]:  # every worker handle: the prefill workers, then the decode ones
        return [*self.prefills, *self.decodes]

    def __enter__(self) -> Engine:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self) -> None:
        """Start the workers."""
        o = self.options
        try:
            if not self.endpoints.log_dir:  # the workers' native logs never go to the terminal
                self._logs = LogFolder()
                self.endpoints = replace(self.endpoints, log_dir=str(self._logs.path))
            if self.endpoints.ha or o.ack_ledger:
                self.published = PublishedLedger()
            self._start_chain()
            if o.replace_dead_workers:  # made now, by the caller's thread: a worker's parent-death signal is
                # tied to the thread that started it, and a driver's threads end with their run
                self._spawner = ThreadPoolExecutor(1, thread_name_prefix="kvtui-respawn")
                self._spawner.submit(lambda: None).result()
            self.begin_run(o.concurrency)
        except BaseException as exc:
            self._failed = isinstance(exc, Exception)  # (not a Ctrl-C: nothing failed)
            self.stop()
            raise
        self.t0 = time.monotonic()

    def worker_names(self) -> list[str]:
        """The names of the workers the options ask for, prefill then decode (:func:`worker_names`)."""
        o = self.options
        return worker_names("prefill", o.prefill_workers) + worker_names("decode", o.decode_workers)

    def _start_chain(self, cancel: threading.Event | None = None) -> None:
        """Start every worker with the specs of the current options (layout included), joined by new pipes
        (``WorkerError`` once ``cancel`` is set: the start-up is abandoned)."""
        o = self.options
        n, m = o.prefill_workers, o.decode_workers
        endpoints = self.endpoints
        ep = endpoints.as_dict()
        def segment(role: str, i: int) -> int:
            return o.segment_share(role, i) if endpoints.embedded else 0

        self.prefills, self.decodes, self._results, relays = start_mesh(
            [WorkerSpec("prefill", o, ep, name=worker_name("prefill", i, n), segment_bytes=segment("prefill", i))
             for i in range(n)],
            [WorkerSpec("decode", o, ep, name=worker_name("decode", i, m), segment_bytes=segment("decode", i))
             for i in range(m)],
            log_dir=endpoints.log_dir or None, relays=o.remote_slots, cancel=cancel)
        self._decode_load, self._prefill_load = [0] * m, [0] * n
        self._slots.close()
        self._slots = RemoteSlots(relays)
        self.prefill_peers = list(range(n))
        self._router.resize(m)

    def now(self) -> float:
        """Seconds since the engine started."""
        return time.monotonic() - self.t0

    def _chain_send(self, role: str, msg, index: int | None = None) -> None:
        """Send a chain command to every ``role`` worker (or to worker ``index``); ``WorkerError`` if one died,
        unless dead workers are replaced (the collector's next result rebuilds them, with the run's state)."""
        with self._chain_lock:
            handles = self.decodes if role == "decode" else self.prefills
            targets = handles if index is None else handles[index:index + 1]
            if not targets:  # (a rebuild under way)
                if self.options.replace_dead_workers and not self._stopping:
                    return
                raise WorkerError(f"{role} worker died (exit code None)")
            for handle in targets:
                try:
                    handle.send(msg)
                except OSError:
                    if self.options.replace_dead_workers and not self._stopping:
                        return
                    raise WorkerError(self._death_of(handle)) from None

    def begin_run(self, concurrency: int) -> None:
        """Start a run (a :class:`Driver`): allow up to ``concurrency`` requests per decode worker between the
        start of their reload and the end of their publish, and clear a hold or drain left by an earlier run.
        Every worker hears it: with one prefill and one decode worker at 1 they run their store calls on the
        same CPU (``kvtui.engine.worker._Chain.pin``). Requests an earlier run abandoned (``Driver.stop``)
        may still finish: :meth:`next_result` discards their results. The miss reasons' key history starts
        afresh (:mod:`kvtui.core.misses`: "first use" means first in this run)."""
        with self._chain_lock:
            self._run += 1
            self._misses.reset(concurrency)
            self._chain_state = ChainState(concurrency=max(1, int(concurrency)))
            for role in ("decode", "prefill"):
                self._chain_send(role, Begin(max(1, int(concurrency))))

    def hold(self, held: bool) -> None:
        """Hold (True) or release (False) the submitted requests whose reload has not started. A decode
        worker also holds by itself when a reload fails with RPC_FAIL / RPC_TIMEOUT (the master is down)."""
        with self._chain_lock:
            self._chain_state.held = bool(held)
            self._chain_send("decode", Hold(bool(held)))

    def drain(self) -> None:
        """Nothing more will be submitted: run the requests already submitted, or, while the decode workers
        hold them for a dead master, drop them unrun (:meth:`next_result` gives a :class:`Dropped` for each),
        so a run that ends during an outage finishes at once."""
        with self._chain_lock:
            self._chain_state.drained = True
            self._chain_send("decode", Drain())

    def submit(self, req: SubmittedRequest) -> None:
        """Hash the page keys of ``req`` (a ``workload.Request``: its cacheable full pages), route it
        (:class:`~kvtui.engine.routing.Router`) and hand the keys to its decode worker; the result comes
        from :meth:`next_result`. Thread-safe with respect to :meth:`next_result`. With
        ``replace_dead_workers``, a request submitted to a dead worker is reported :class:`Lost` once the
        workers are rebuilt."""
        keys = self.keyer.keys(req.tokens[: req.cacheable_tokens])
        with self._chain_lock:
            seq = next(self._seq)
            d, p = self._router.route(keys[0] if keys else None, self._decode_load, self._prefill_load)
            if d >= self.options.decode_workers:  # a remote decode worker publishes through a local prefill one
                p = least_loaded(self._prefill_load[: self.options.prefill_workers], seq)
            self._pending[seq] = Pending(self._run, req, (keys[0], keys[-1]) if keys else (), d, p,
                                         tuple(keys) if self.published is not None else ())
            self._misses.begin(seq, keys, self.now(), d)
            self._decode_load[d] += 1
            self._prefill_load[p] += 1
            try:
                self._chain_send("decode", Submit(seq, keys, self.prefill_peers[p]), index=d)
            except WorkerError:
                self._take(seq)
                raise

    def _take(self, seq: int, done: bool = False) -> Pending:
        """Request ``seq`` is no longer under way: its pending entry. ``done``: its result came (the caller
        classifies its misses); else it ended without one and leaves the miss reasons' requests under way."""
        with self._chain_lock:
            entry = self._pending.pop(seq)
            if not done:
                self._misses.forget(seq)
            if entry.decode < len(self._decode_load) and entry.prefill < len(self._prefill_load):
                self._decode_load[entry.decode] -= 1
                self._prefill_load[entry.prefill] -= 1
            return entry

    def next_result(self, timeout_s: float | None = None) -> "RequestResult | Dropped | None":
        """The next finished request of the current run (those of an earlier, abandoned run are discarded):
        in submission order with one decode and one prefill worker; ``None`` after ``timeout_s`` without one.
        Raises ``WorkerError`` when a worker failed or died, unless ``replace_dead_workers``: then the
        workers are rebuilt (:meth:`_replace_chain`) and each request lost comes as a :class:`Lost`. Call it
        from one thread (the driver's collector)."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            with self._chain_lock:
                lost = self._lost.popleft() if self._lost else None
            if lost is not None:
                return lost
            try:
                msg = self._recv_result(deadline)
                if msg is None:
                    return None
                seq = getattr(msg, "seq", None)
                if seq is not None and self._take_stale(seq):
                    continue
                return self._result_of(msg)
            except WorkerError as exc:
                if not self.options.replace_dead_workers or self._stopping:
                    raise
                self._replace_chain(str(exc).splitlines()[0])

    def _take_stale(self, seq: int) -> bool:
        """Whether request ``seq`` was abandoned by an earlier run (then it is no longer under way)."""
        with self._chain_lock:
            entry = self._pending.get(seq)
            if entry is None or entry.run == self._run:
                return False
            self._take(seq)
            return True

    def _recv_result(self, deadline: float | None):
        """The next message on any results pipe (they take turns), None once ``deadline`` passed."""
        if not self._results:
            raise WorkerError("prefill worker died (exit code None)")
        if self._pipes is None or not self._pipes.serves(self._results):  # (a rebuilt chain, a remote prefill)
            self._pipes = ResultPipes(self._results)
        try:
            return self._pipes.recv(deadline)
        except PipeGone as gone:
            prefills = self.prefills
            h = prefills[gone.index] if gone.index < len(prefills) else None
            code = h.exit_code() if h is not None else None
            raise WorkerError(f"{h.name if h else 'prefill'} worker died (exit code {code})") from None

    def _result_of(self, msg) -> "RequestResult | Dropped":
        match msg:
            case RequestDone(seq, reload, publish, t_start, t_end):
                e = self._take(seq, done=True)
                res = result_from(e.req, reload, publish, self.options.layout, t_start - self.t0,
                                  t_end - self.t0, keys=e.edge_keys, decode_worker=e.decode, prefill_worker=e.prefill)
                if self.published is not None and res.pages_published:
                    self.published.add([k for k, state in zip(e.keys, res.states) if state == PageState.PUBLISHED],
                                       res.t_end)
                o = self.options  # (a worker on another machine has another monotonic clock: its times are not ours)
                here = e.decode < o.decode_workers and e.prefill < o.prefill_workers
                with self._chain_lock:  # (submit() calls the tracker too, from the feeder thread)
                    res.reasons = self._misses.finish(seq, res.states, res.t_start if here else None,
                                                      res.t_end if here else self.now())
                    res.keys_forgotten = self._misses.take_forgotten()
                return res
            case RequestDropped(seq):
                return Dropped(self._take(seq).req)
            case RequestFailed(None, _message) if self.decodes:  # relayed by prefill: a decode worker is gone
                raise WorkerError(self._dead_decode())
            case RequestFailed(_seq, message):
                raise WorkerError(message)
        raise WorkerError(f"unexpected result message {type(msg).__name__}")

    def _death_of(self, handle) -> str:
        """One line naming ``handle``'s worker, whose pipe ended, with its exit code; one that left with code 0
        (decode, once a send to its dead prefill worker failed) is named after the workers killed or failed."""
        dead = handle.exit_code() == 0 and [h for h in self.workers
                                             if h is not handle and h.exit_code(0.2) not in (None, 0)]
        return _died(dead or [handle])

    def _dead_decode(self) -> str:  # one line naming the decode worker(s) that died, with exit codes
        return _died([h for h in self.decodes if h.exit_code(0.05) is not None] or self.decodes[:1])

    def process(self, req: SubmittedRequest) -> RequestResult | Dropped:
        """Run one request to completion (reload, then publish); not while a :class:`Driver` runs."""
        self.submit(req)
        res = self.next_result()
        assert res is not None  # (no timeout: it waits for the request)
        return res

    def _replace_chain(self, reason: str) -> None:
        """A worker died (``reason``): stop the others too (after their current store call, killed after the
        stop grace), report every request of the current run still under way as :class:`Lost`, and start
        every worker again with the same specs on new pipes (from the engine's spawner thread), sending them
        the run's concurrency, hold and drain. Survivors are restarted rather than re-wired: a running
        worker cannot take a new chain pipe, and a decode worker whose prefill died fails on its next send
        anyway. ``WorkerError`` when the new workers do not start, or once the engine stops: then it gives up at
        the next step (the start-up of new workers is abandoned), and :meth:`stop`, which waits for the chain
        lock, stops whatever is there."""
        with self._chain_lock:
            if self._stopping:
                raise WorkerError(reason)
            t, began = self.now(), time.monotonic()
            old = [*self.decodes, *self.prefills]
            gone = [h for h in old if h.exit_code(0.05) is not None]
            dead = [h for h in gone if h.process.exitcode != 0] or gone  # (not one that left after a peer died)
            stop_all(old, EMBEDDED_STOP_GRACE_S if self.endpoints.embedded else WORKER_STOP_GRACE_S)
            for conn in self._results:
                conn.close()
            self._results = []
            lost = [Lost(e.req, reason) for _seq, e in sorted(self._pending.items()) if e.run == self._run]
            for seq in self._pending:
                self._misses.forget(seq)
            self._pending.clear()
            self._lost.extend(lost)
            self.decodes, self.prefills = [], []
            spawner = self._spawner
            if spawner is None or self._stopping:  # (stop() waits for the lock: nothing to start)
                raise WorkerError(reason)
            spawner.submit(self._start_chain, self._abandon).result()  # (abandoned, it raises WorkerError)
            if self._stopping:  # (stop(), which waits for the lock, stops the new workers)
                raise WorkerError(reason)
            state = self._chain_state
            for h in self.workers:
                h.send(Begin(state.concurrency))
            for msg in state.decode_messages():
                for h in self.decodes:
                    h.send(msg)
            rep = WorkerReplacement(
                t=t, dead=tuple(h.name for h in dead) or ("unknown",),
                exit_codes=tuple(h.process.exitcode for h in dead),
                reason=reason, lost=len(lost), took_s=time.monotonic() - began,
                pids={h.name: h.pid for h in self.workers})
            self.replacements.append(rep)
        self._replaced(rep)

    # -- remote workers (kvtui.engine.remote.Coordinator admits them through these) ----------------------
    def free_remote_slot(self, role: str = "decode") -> int | None:
        """Take a free ``role`` relay slot for a joining worker; None when none is left or the engine is
        stopping."""
        with self._chain_lock:
            return None if self._stopping else self._slots.take(role)

    def release_remote_slot(self, slot: int, role: str = "decode") -> None:
        """Give back a slot whose worker never joined."""
        with self._chain_lock:
            self._slots.give_back(slot, role)

    def relay_ends(self, slot: int, role: str = "decode") -> list:
        """The parent's ends of ``role`` slot ``slot``'s chain pipes (:meth:`RemoteSlots.ends`)."""
        with self._chain_lock:
            return self._slots.ends(slot, role)

    def remote_chains(self, role: str) -> int:
        """How many chain connections a remote ``role`` worker opens (the local workers of the other role)."""
        return remote_chains(self.options, role)

    def remote_spec(self, slot: int, role: str = "decode") -> WorkerSpec:
        """What a remote ``role`` worker in ``slot`` runs (:func:`kvtui.engine.remote_slots.remote_spec`)."""
        return remote_spec(self.options, self.endpoints.as_dict(), slot, role)

    def add_remote(self, handle, results=None) -> None:
        """Route to the joined worker ``handle`` (a ``kvtui.engine.remote.RemoteHandle``; a prefill worker
        comes with its ``results`` connection) from the next request on, after sending it the run's
        concurrency (and a decode worker the hold and drain), then tell the :meth:`subscribe_remote`
        subscribers; a stopping engine, or a slot of an older chain, hangs up."""
        role = handle.spec.role
        with self._chain_lock:
            if self._stopping or not self._slots.taken(handle.slot, role):
                handle.finish_stop()
                return
            state = self._chain_state
            try:
                handle.send(Begin(state.concurrency))
                for msg in state.decode_messages() if role == "decode" else ():
                    handle.send(msg)
            except OSError:
                return
            if role == "decode":
                index = len(self.decodes)
                self.decodes = [*self.decodes, handle]
                self._decode_load.append(0)
                self._router.resize(len(self.decodes))
            else:
                index = len(self.prefills)
                self.prefills = [*self.prefills, handle]
                self._prefill_load.append(0)
                self._results = [*self._results, results]
                self.prefill_peers = [*self.prefill_peers, self.options.prefill_workers + handle.slot]
        self._joined(RemoteJoin(role, index, handle.name, handle.host, handle.pid))

    def worker_pids(self) -> dict[str, int]:
        """``{name: pid}`` of the local worker processes (a remote worker's pid is another machine's)."""
        return {h.name: h.pid for h in self.workers if not getattr(h, "remote", False)}

    def set_layout(self, layout: PageLayout) -> None:
        """Use page ``layout`` from the next submitted request on: every worker switches its connector and the
        parent its keyer, or none does; only while no request is under way (``Driver.wait_idle``), else
        ``RuntimeError``. ``WorkerError`` if a worker refuses or died: decode workers switch first, then
        prefill; those switched are switched back when one refuses, and the engine keeps its layout."""
        if self._pending:
            raise RuntimeError(f"{len(self._pending)} requests are still under way")
        old, switched = self.options.layout, []
        try:
            for h in [*self.decodes, *self.prefills]:
                h.call(SetLayout(layout), timeout_s=10)
                switched.append(h)
        except WorkerError as exc:
            stuck = []
            for h in switched:
                try:
                    h.call(SetLayout(old), timeout_s=10)
                except WorkerError as back:
                    stuck.append(f"{h.name} did not switch back to the old layout either: {back}")
            if stuck:
                raise WorkerError(f"{exc}; {'; '.join(stuck)}") from None
            raise
        with self._chain_lock:  # (set_verify may replace the options meanwhile)
            self.options = replace(self.options, layout=layout)

    def set_verify(self, mode: str) -> None:
        """Check the pages of later reloads ``full`` or ``sampled`` (:mod:`kvtui.core.verify`) in every local
        decode worker, and in workers started later; a reload under way finishes in the mode it began in (what
        ``kvtui bench`` alternates in its request-rate step). ``WorkerError`` if a worker refuses or died."""
        for h in self.decodes:
            h.call(SetVerify(mode), timeout_s=10)
        with self._chain_lock:  # (set_layout may replace the options meanwhile)
            self.options = replace(self.options, verify=mode)

    def restart_workers(self) -> None:
        """Kill every local worker: with ``replace_dead_workers`` the collector rebuilds them as new clients of
        the store (dummy clients do not return to a real client started again)."""
        for handle in self.workers:
            if not getattr(handle, "remote", False):
                handle.kill()

    def clear_store(self) -> int:
        """Remove every object in the store (global, also other clients'); returns the count removed. The miss
        reasons' key history starts afresh: a page removed here was not evicted."""
        prefill = self.prefill
        if prefill is None:
            raise WorkerError("no prefill worker runs (the engine has not started, or its workers are being rebuilt)")
        removed = int(prefill.call(RemoveAll()))
        with self._chain_lock:
            self._misses.reset()
        return removed

    def stop(self, meanwhile: Callable[[bool], None] | None = None) -> None:
        """Stop the workers, every process gone within ~1 s: every worker is asked to exit (after its current
        store call, abandoning what it had queued or under way: see ``workers.stop_all``; a remote one is hung
        up on), ``meanwhile(trouble)`` runs (the embedded cluster's stop: its master going away only makes a
        worker's last store call fail sooner), then a worker still in a store call is killed: after
        ``EMBEDDED_STOP_GRACE_S`` embedded (no store outlives an unfinished put), after
        ``workers.STOP_GRACE_S`` attached (a put cut short would keep its space in the shared store for
        minutes). ``trouble``: start-up failed or a worker of this machine died (one that ended with an exit code
        other than 0 before it was asked to, or was replaced): the logs are kept (:mod:`kvtui.runtime.logs`),
        else a folder kvtui made for them is removed. A worker that a SIGTERM (a user's, to the whole process
        group) or its parent's closed pipe ended leaves with 0: nothing failed. A worker replacement under way
        gives up first (its new workers' start-up abandoned) and the stop then stops whatever it left
        (:meth:`_take_chain_lock`). Safe to call twice, from any thread (``meanwhile`` runs once)."""
        self._stopping = True
        self._abandon.set()
        self._take_chain_lock()
        try:
            handles = [*self.decodes, *self.prefills]
            local = [h for h in handles if not getattr(h, "remote", False)]  # (a remote worker leaves when it likes)
            trouble = self._failed or bool(self.replacements) or any(h.exit_code(0) not in (None, 0) for h in local)
            for h in handles:
                h.ask_stop()
            grace = EMBEDDED_STOP_GRACE_S if self.endpoints.embedded else WORKER_STOP_GRACE_S
            deadline = time.monotonic() + grace
            if meanwhile is not None and not self._stopped:
                meanwhile(trouble)
            self._stopped = True
            for h in handles:
                h.finish_stop(deadline - time.monotonic())
            if self._logs is not None:
                self._logs.close(trouble, "the workers")
            self.decodes, self.prefills = [], []
            for conn in self._results:
                conn.close()
            self._results = []
            self._slots.close()
            self._pending.clear()
            self._lost.clear()
            if self._spawner is not None:
                self._spawner.shutdown(wait=False)
                self._spawner = None
        finally:
            self._chain_lock.release()

    def _take_chain_lock(self) -> None:
        """Take the chain lock for :meth:`stop` (``_stopping`` is set). Its holder lets go within a stop grace: a
        rebuild gives up at its next step, a submit or a hold ends its send. One send may not end: to a worker
        in a long store call whose pipe is full; after the grace the workers are killed, which ends it (a worker
        still in a store call is killed after the grace by the stop anyway)."""
        grace = EMBEDDED_STOP_GRACE_S if self.endpoints.embedded else WORKER_STOP_GRACE_S
        if self._chain_lock.acquire(timeout=grace):
            return
        for h in [*self.decodes, *self.prefills]:  # (the processes only: their handles change under the lock)
            h.kill()
        self._chain_lock.acquire()


def _died(handles) -> str:
    """``prefill worker died (exit code -9)`` for each of ``handles`` (worker handles), joined by "; "."""
    return "; ".join(f"{h.name} worker died (exit code {h.exit_code()})" for h in handles)
