"""Prefill and decode worker processes: each owns one store client and one connector.

The parent talks to a worker over its command pipe, and the two workers run the request chain over the
chain pipe and the results pipe, with the typed messages of :mod:`kvtui.engine.protocol` (which documents
every message and pipe). This module is the worker's side: :func:`worker_main` sets up and serves,
:class:`_Chain` makes the chain's decisions and :class:`_Commands` answers the parent's commands.
"""

from __future__ import annotations

import os
import signal
import sys
import time
import traceback
import zlib
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from kvtui.core.codes import BACKOFF_FIRST_S, BACKOFF_MAX_S, MASTER_DOWN_CODES, NO_SPACE
from kvtui.core.sched import pin_calling_thread
from kvtui.engine.options import EngineOptions
from kvtui.engine.protocol import (
    ANSWERED,
    CHAIN,
    Ack,
    Begin,
    BenchRawGet,
    BenchReload,
    Drain,
    Failed,
    Hold,
    Keys,
    Ok,
    Publish,
    PublishRest,
    RawGetRun,
    Ready,
    Reload,
    RemoveAll,
    RequestDone,
    RequestDropped,
    RequestFailed,
    SetLayout,
    SetReadStreams,
    SetVerify,
    Stop,
    Submit,
    TimedReload,
)
from kvtui.mooncake.client import StoreError, enter_host, open_client, redirect_native_stderr
from kvtui.runtime.procs import exit_now, parent_death_signal

if TYPE_CHECKING:
    from multiprocessing.connection import Connection


@dataclass(frozen=True)
class WorkerSpec:
    """Everything a worker needs, as plain data: its ``role`` (prefill | decode | mixed), the run's ``options``
    (unchanged: :class:`~kvtui.engine.options.EngineOptions`; the layout a worker starts with is theirs), the
    cluster's ``endpoints`` (``ClusterEndpoints.as_dict()``), its ``name`` (:func:`kvtui.core.topology.worker_name`:
    its emulated host and log; "" for the role), the ``segment_bytes`` it contributes (0: none), whether it is
    ``remote`` (on another machine: it counts every worker that may run, so it never trusts a probe and never
    pins) and its native ``log_path``. The sample of ``verify sampled`` is seeded with the CRC-32 of the
    worker's name, so a run samples the same words again."""

    role: str
    options: EngineOptions
    endpoints: dict
    name: str = ""
    segment_bytes: int = 0
    remote: bool = False
    log_path: str | None = None

    @property
    def label(self) -> str:
        """The worker's name: ``name``, else its role."""
        return self.name or self.role

    @property
    def decode_workers(self) -> int:
        """Decode workers of the run (with more than one, another one's publish may change the store during a
        reload, so prefill always probes again)."""
        return self.options.decode_workers + (self.options.remote_slots if self.remote else 0)

    @property
    def prefill_workers(self) -> int:
        """Prefill workers of the run (only a run of one of each pins its workers to one CPU: ``_Chain.pin``)."""
        return self.options.prefill_workers + (self.options.remote_slots if self.remote else 0)

    @property
    def read_streams(self) -> int:
        """Concurrent reads per reload: the options' for a decode worker, 1 otherwise."""
        return self.options.read_streams if self.role != "prefill" else 1


_AT_LEAVE: list[Callable[[int], None]] = []  # at_leave's functions


def at_leave(fn: Callable[[int], None]) -> None:
    """Call ``fn(exit_code)`` when this worker process leaves (:func:`_leave`; the interpreter's own exit
    handlers do not run), e.g. to remove or name its log folder (``kvtui worker``)."""
    _AT_LEAVE.append(fn)


def _leave(code: int = 0) -> None:
    """End the worker process now, without closing its store client and without the interpreter's exit
    (whose Mooncake destructors close the client too): a close takes ~1 s for a client without a segment and
    ~2 s for a segment owner, and blocks ~4.3 s per call once the master is gone. Nothing is lost by it:
    a worker owns a segment only in an embedded cluster, whose master is stopped with the workers;
    a client without a segment leaves only its heartbeat, which the master drops after ``client_ttl``; an
    interrupted put leaves no readable page (the master discards it after ``put_start_discard_timeout_sec``,
    30 s by default). The :func:`at_leave` functions run first."""
    for fn in _AT_LEAVE:
        try:
            fn(code)
        except Exception:  # (leaving matters more)
            pass
    exit_now(code)


def _exit(*_) -> None:
    _leave(0)


def worker_main(conn, spec: WorkerSpec, peers=(), results=None, reports=()) -> None:
    """Process entry point: set up, answer :class:`Ready` or :class:`Failed`, then serve until :class:`Stop`
    (or the parent's end of a pipe closes, or SIGTERM), then leave at once (:func:`_leave`: requests queued
    or under way are dropped, the store client is not closed). Never returns.

    ``conn``: command pipe to the parent; ``peers``: this worker's ends of its chain pipes (decode: one per
    prefill worker, in prefill order; prefill: one per decode worker); ``results``: prefill's write end of
    its results pipe to the parent (None for decode); ``reports``: decode's own write ends of the prefill
    workers' results pipes, in prefill order, for the requests it reports itself (see ``_Chain.reload_next``;
    empty: every request goes through prefill).
    """
    from kvtui.engine.wire import Wire

    conn, peers = Wire(conn), [Wire(p) for p in peers]  # (the per-request messages as compact bytes)
    results = Wire(results) if results is not None else None
    reports = [Wire(r) for r in reports]
    # SIGKILL: a worker blocked in a store call (a cut link, a stopped master) would act on a SIGTERM only
    # once the call returned, and a worker whose parent is gone has nothing to finish (see _leave)
    parent_death_signal(signal.SIGKILL)
    try:
        enter_host(spec.endpoints, spec.label)  # (emulated hosts: before any thread starts)
    except OSError as exc:  # the host's namespace is gone: kvtui is stopping (or was killed) during start-up
        try:
            conn.send(Failed(f"{spec.label} worker: cannot enter its emulated host ({exc})"))
        except OSError:
            pass
        _leave(1)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when we stop (a Ctrl-C or a hang-up of
    signal.signal(signal.SIGHUP, signal.SIG_IGN)  # the terminal reaches our process group too)
    signal.signal(signal.SIGTERM, _exit)
    if spec.log_path:
        redirect_native_stderr(spec.log_path)
    code = 0
    try:
        from kvtui.engine.connector import PagedKVConnector
        from kvtui.engine.keys import PageKeyer

        o = spec.options
        layout = o.layout
        try:
            client = open_client(spec.endpoints, segment_bytes=spec.segment_bytes, role=spec.label,
                                 dummy=not spec.segment_bytes)
        except StoreError as exc:
            print(f"{spec.label} worker: {exc}", file=sys.stderr, flush=True)  # (a remote one's terminal)
            conn.send(Failed(str(exc)))
            _leave(1)
        keyer = PageKeyer(o.model, layout.page_tokens, o.scheme, o.namespace)
        connector = PagedKVConnector(client, layout, keyer, spec.role, read_streams=spec.read_streams,
                                     verify=o.verify, sample_seed=zlib.crc32(spec.label.encode()))
        chain = _Chain(connector, list(peers), results,
                       shared=spec.decode_workers > 1, pair=spec.decode_workers == spec.prefill_workers == 1,
                       segment=client.segment_name() if spec.segment_bytes else "", reports=reports)
        conn.send(Ready(os.getpid(), spec.role))
        _serve(conn, chain, _Commands(chain, client))
    except (EOFError, BrokenPipeError, KeyboardInterrupt, SystemExit):
        pass
    except StoreError as exc:  # the store failed under us: one line for the parent, no traceback
        try:
            conn.send(Failed(f"{spec.label} worker: {exc}"))
        except OSError:
            pass
        code = 1
    except Exception as exc:  # report, then exit: the parent shows it as one line
        try:
            conn.send(Failed(f"{spec.label} worker: {type(exc).__name__}: {exc}"))
        except OSError:
            pass
        traceback.print_exc()
        code = 1
    _leave(code)


class _Chain:
    """This worker's part of the request chain (:mod:`kvtui.engine.protocol`): decode's queue, its limit
    of requests in flight, hold, drain and back-off; prefill's publish, ack and report. ``peers``: the chain
    pipe ends (see :func:`worker_main`); ``shared``: other decode workers publish into the same store;
    ``pair``: the run has this worker and one other (one prefill, one decode); ``segment``: the name of this
    worker's own segment ("" without one). Placement: a page is published into the segment of the decode
    worker that reloaded its request when that worker has one, else into the prefill worker's own, else
    where Mooncake's allocator picks; a decode worker with a segment counts the bytes it reloaded from it
    (``ReloadResult.bytes_local``: all of them when it is the only decode worker, else one
    ``batch_get_replica_desc`` of the reloaded keys says)."""

    def __init__(self, connector, peers: list, results, shared: bool = False, pair: bool = True, segment: str = "",
                 reports: list | None = None):
        self.connector, self.peers, self.results, self.shared, self.pair = connector, peers, results, shared, pair
        self.segment = segment
        self.reports: list = list(reports or [])  # decode: write ends of the prefill workers' results pipes
        self.queue: deque = deque()  # decode: (seq, keys, prefill index) hashed, waiting for their turn
        self.limit = 1
        self.in_flight = 0  # decode: forwarded to prefill and not yet acknowledged
        self.held = False
        self.draining = False
        self.backoff_s = 0.0  # decode: after a full store, no reload before ``resume_at`` (monotonic s)
        self.resume_at = 0.0

    def pin(self) -> None:
        """One request at a time and one read stream: run this worker's store calls on the CPU the other
        worker uses too (they take turns), leaving the other CPUs to the store's transfer threads; otherwise
        on every CPU. Why: the calling thread keeps a core busy during a call; unpinned, the other worker and
        the parent preempt it far more often than the bare loop's calling thread is preempted (``kvtui bench
        --trace`` compares the two). With more workers than one of each, requests of different decode workers run at
        once: never pinned."""
        pin_calling_thread(self.pair and self.limit == 1 and self.connector.read_streams == 1)

    def submit(self, seq: int, keys: list[str], prefill: int = 0) -> None:
        self.queue.append((seq, keys, prefill))

    def drain(self) -> None:
        if self.held:
            while self.queue:
                seq, _keys, prefill = self.queue.popleft()
                self.peers[prefill].send(RequestDropped(seq))
        self.draining, self.held = True, False

    def on_command(self, msg) -> None:
        """A chain command from the parent (:data:`~kvtui.engine.protocol.CHAIN`)."""
        match msg:
            case Submit(seq, keys, prefill):
                self.submit(seq, keys, prefill)
            case Hold(held):
                self.held = bool(held) and not self.draining
            case Drain():
                self.drain()
            case Begin(concurrency):  # a new run: its concurrency; no hold or drain left from an earlier run
                self.limit, self.held, self.draining = max(1, int(concurrency)), False, False
                self.pin()

    def _next_allowed(self) -> bool:
        """A request is waiting and nothing but a back-off keeps it from starting."""
        return bool(self.queue) and self.in_flight < self.limit and not self.held

    def can_reload(self) -> bool:
        return self._next_allowed() and time.monotonic() >= self.resume_at

    def wait_s(self) -> float | None:
        """How long the worker may block for messages: until a back-off ends, or without limit."""
        return max(0.0, self.resume_at - time.monotonic()) if self._next_allowed() else None

    def reload_next(self) -> None:
        seq, keys, prefill = self.queue.popleft()
        peer = self.peers[prefill]
        try:
            t_start = time.monotonic()
            alone = self.in_flight == 0 and not self.shared  # no publish can change the store meanwhile
            res, rest = self.connector.reload_and_rest(None, keys=keys, probe_all=True)
            if any(c in res.codes for c in MASTER_DOWN_CODES) and not self.draining:
                self.held = True
            known, res.rest_probe = (res.rest_probe if alone else []), []
            needs_ack = len(known) < len(rest) or 0 in known  # will prefill call the store?
            if self.segment and res.pages_hit:
                self._count_local(res, keys[:res.pages_hit])
            if not needs_ack and self._report(seq, res, rest, known, t_start, prefill):
                return
            peer.send(PublishRest(seq, rest, known, res, t_start, needs_ack, self.segment))
        except Exception as exc:
            peer.send(RequestFailed(seq, f"decode worker: {type(exc).__name__}: {exc}"))
            raise
        self.in_flight += needs_ack

    def _report(self, seq: int, res, rest: list[str], known: list[int], t_start: float, prefill: int) -> bool:
        """Report request ``seq`` to the parent from here when prefill would call no store for it (every page
        after the reloaded run answered present or failed by the reload's probe): its :class:`RequestDone`
        goes on prefill's results pipe (``reports``), so prefill is not woken for it. Only one request at a
        time (concurrency 1: every earlier request of this worker has been reported, by prefill before its
        :class:`Ack` or from here, so the parent reads them in order) and only in a message the pipe writes
        at once (at most ``PIPE_BUF`` bytes: prefill, idle meanwhile, is its only other writer). Why: when the
        workers share one CPU (:meth:`pin`), prefill's relay of such a request would run there between decode's
        reloads, and most requests of a synthetic trace are of this kind. True when reported; False: send it
        to prefill."""
        if self.limit != 1 or self.in_flight or prefill >= len(self.reports) or self.reports[prefill] is None:
            return False
        publish = self.connector.settle_known(rest, known)
        if publish is None:
            return False
        return self.reports[prefill].send_atomic(RequestDone(seq, res, publish, t_start, time.monotonic()))

    def peer_gone(self, peer) -> None:
        """Prefill worker ``peer`` is gone: close this worker's end of its results pipe, so the parent sees the
        pipe end (its only other writer was that worker) and reports it."""
        i = self.peers.index(peer)
        if i < len(self.reports) and self.reports[i] is not None:
            self.reports[i].close()
            self.reports[i] = None

    def _count_local(self, res, keys: list[str]) -> None:
        """Set ``res.bytes_local``: the reloaded bytes that came from this worker's own segment."""
        if not self.shared:
            res.bytes_local = res.bytes_loaded
            return
        where = self.connector.store.replica_segments(keys, prefer=self.segment)
        res.bytes_local = self.connector.page_bytes * sum(w == self.segment for w in where)

    def on_peer(self, msg, peer) -> None:
        """A message from another worker on its chain pipe ``peer``."""
        match msg:
            case Ack(store_full):  # decode: prefill finished a publish
                self.in_flight -= 1
                if store_full:  # back off before the next reload (puts are not retried)
                    self.backoff_s = min(BACKOFF_MAX_S, max(BACKOFF_FIRST_S, self.backoff_s * 2))
                    self.resume_at = time.monotonic() + self.backoff_s
                else:
                    self.backoff_s = 0.0
            case PublishRest():  # prefill: publish the rest of a reloaded request
                self._publish(msg, peer)
            case RequestFailed() | RequestDropped():  # prefill: relay decode's failure or dropped request
                self.results.send(msg)
            case _:
                raise TypeError(f"unexpected chain message {type(msg).__name__}")

    def _publish(self, msg: PublishRest, peer) -> None:
        try:
            pub = self.connector.store_computed_prefix(None, 0, keys=msg.rest_keys, known=msg.known,
                                                       segment=msg.segment or self.segment)
            t_end = time.monotonic()
        except Exception as exc:
            self.results.send(RequestFailed(msg.seq, f"prefill worker: {type(exc).__name__}: {exc}"))
            raise
        self.results.send(RequestDone(msg.seq, msg.reload, pub, msg.t_start, t_end))
        if msg.needs_ack:
            try:
                peer.send(Ack(NO_SPACE in pub.codes))
            except OSError:  # decode is gone: this result still counts; its EOF is reported next
                pass


class _Refused(Exception):
    """A command this worker cannot run now; answered as :class:`Failed`, the worker goes on."""


class _Commands:
    """The answered commands (:data:`~kvtui.engine.protocol.ANSWERED`): one method per message type,
    each returning the payload of its :class:`Ok` answer."""

    def __init__(self, chain: _Chain, client):
        self.chain, self.client = chain, client

    def answer(self, msg) -> Ok | Failed:
        from kvtui.engine.connector import RoleError

        try:
            return Ok(self._HANDLERS[type(msg)](self, msg))
        except (RoleError, _Refused) as exc:
            return Failed(str(exc))

    def reload(self, msg: Reload):
        return self.chain.connector.reload_and_rest(msg.tokens, msg.cacheable_tokens)[0]

    def publish(self, msg: Publish):
        return self.chain.connector.store_computed_prefix(msg.tokens, msg.start_page, msg.cacheable_tokens,
                                                          segment=self.chain.segment)

    def bench_reload(self, msg: BenchReload) -> list[TimedReload]:
        connector = self.chain.connector
        pin_calling_thread(False)  # a measurement on its own, not turns with prefill: every CPU
        out = []
        for _ in range(msg.iterations):
            t0 = time.perf_counter()
            res, _pages = connector.load_cached_prefix(msg.tokens)
            out.append(TimedReload((time.perf_counter() - t0) * 1e3, res))
        self.chain.pin()  # back to the chain's setting
        return out

    def bench_raw_get(self, msg: BenchRawGet) -> list[RawGetRun]:
        connector, keys = self.chain.connector, msg.keys
        pin_calling_thread(False)
        pb = connector.page_bytes
        buf = connector.buffer(len(keys))
        ptrs = [buf[i].ctypes.data for i in range(len(keys))]
        out = []
        for _ in range(msg.iterations):
            t0 = time.perf_counter()
            rcs = self.client.batch_get_into(keys, ptrs, [pb] * len(keys))
            out.append(RawGetRun((time.perf_counter() - t0) * 1e3, all(r == pb for r in rcs)))
        self.chain.pin()
        return out

    def keys(self, msg: Keys) -> list[str]:
        return self.chain.connector.keys_for(msg.tokens, msg.cacheable_tokens)

    def set_read_streams(self, msg: SetReadStreams) -> int:
        self.chain.connector.set_read_streams(msg.n)
        self.chain.pin()  # before the read threads start: they inherit this thread's CPUs
        return msg.n

    def set_verify(self, msg: SetVerify) -> str:
        self.chain.connector.set_verify(msg.mode)
        return msg.mode

    def remove_all(self, _msg: RemoveAll) -> int:
        return self.client.remove_all(True)

    def set_layout(self, msg: SetLayout) -> int:
        chain = self.chain
        if chain.queue or chain.in_flight:
            raise _Refused(f"cannot change the page layout with {len(chain.queue) + chain.in_flight} "
                           "requests under way")
        old, chain.connector = chain.connector, chain.connector.with_layout(msg.layout)
        old.close()
        return chain.connector.page_bytes

    def stop(self, _msg: Stop) -> None:
        return None

    _HANDLERS: dict[type, Callable[..., Any]] = {
        Reload: reload, Publish: publish, BenchReload: bench_reload, BenchRawGet: bench_raw_get, Keys: keys,
        SetReadStreams: set_read_streams, SetVerify: set_verify, RemoveAll: remove_all, SetLayout: set_layout,
        Stop: stop}


def _serve(conn, chain: _Chain, commands: _Commands) -> None:
    """Serve the command pipe and the chain pipe until :class:`Stop`. A command waiting goes before the next
    reload and before the other worker's messages, so a :class:`Hold` / :class:`Drain` / :class:`Stop` is
    seen as soon as the current store call returns (decode with requests queued, prefill with publishes
    queued); a reload that an :class:`Ack` made possible goes before the next chain message, except in a
    decode worker that reports requests itself (``_Chain.reports``): there a prefill worker's message, or the
    end of its pipe, goes before the next reload, so a dead prefill worker is seen at once."""
    import selectors

    peers, results = set(chain.peers), chain.results  # (the peers still connected)
    sources = selectors.DefaultSelector()  # registered once: ``connection.wait`` builds a selector per call
    sources.register(conn, selectors.EVENT_READ)
    for peer in peers:
        sources.register(peer, selectors.EVENT_READ)
    command = selectors.DefaultSelector()  # the command pipe alone (``conn.poll(0)`` builds one per call)
    command.register(conn, selectors.EVENT_READ)
    if chain.reports:  # a decode worker that reports requests itself: a prefill worker's end (or Ack) is seen
        for peer in peers:  # before the next reload, so its results pipe is closed at once (see _Chain.peer_gone)
            command.register(peer, selectors.EVENT_READ)
    while True:
        if chain.can_reload() and not command.select(0):
            chain.reload_next()
            continue
        ready = [cast("Connection", key.fileobj) for key, _ in sources.select(chain.wait_s())]
        if conn in ready:
            msg = conn.recv()
            if isinstance(msg, CHAIN):
                chain.on_command(msg)
            elif isinstance(msg, ANSWERED):
                conn.send(commands.answer(msg))
                if isinstance(msg, Stop):
                    return
            else:
                conn.send(Failed(f"unknown command {type(msg).__name__}"))
            continue
        for peer in ready:  # one message from each ready peer, then the commands and reloads again
            if peer not in peers:
                continue
            try:
                chain.on_peer(peer.recv(), peer)
            except (EOFError, OSError):  # that worker is gone: say so once, keep answering the parent
                sources.unregister(peer)
                if chain.reports:
                    command.unregister(peer)
                    chain.peer_gone(peer)
                peers.discard(peer)
                if results is not None:
                    results.send(RequestFailed(None, "decode worker died"))
