"""Prefill and decode worker processes: each owns one store client and one connector.

The parent talks to a worker over a ``multiprocessing`` pipe with plain tuples and gets plain dicts back
(no Mooncake object ever crosses a process boundary). Commands:

``("reload", tokens, cacheable_tokens)`` → reload dict (``ReloadResult`` fields, codes as ``{code: n}``,
and ``rest_keys``: the keys of the pages after the reloaded run)
``("publish", tokens, cacheable_tokens, start_page)`` → publish dict (``PublishResult`` fields)
``("bench_reload", tokens, iterations)`` / ``("bench_raw_get", keys, iterations)`` → per-iteration timings
``("remove_all",)`` → count removed; ``("stop",)`` → closes the client and exits.
``("set_layout", layout_dict)`` → page bytes: later requests use that page layout (``PageLayout.as_dict()``);
an error answer while a request is queued or being published (the parent waits until none is).

**The request chain** (how the engine drives requests; no answer on the command pipe):
``("submit", seq, keys)`` to the decode worker, with the request's page keys (hashed by the parent, as an
LLM scheduler hashes blocks before its KV connector sees them); decode queues it and reloads it as soon
as fewer than ``limit`` requests are between their reload and the end of their publish (``("begin", n)``
starts a run with limit ``n``; default 1, so store calls of consecutive requests never overlap; at 1, with one
read stream, both workers run their store calls on the same CPU, see ``_Chain.pin``). It forwards
``("publish", seq, rest_keys, reload_dict, t_start, needs_ack)`` to the prefill worker over the peer pipe;
prefill publishes with the reload's probe answers (``known``), sends ``("ack", store_full)`` back to decode
(``store_full``: a put failed with NO_AVAILABLE_HANDLE, and decode waits 50 ms, doubling up to 1 s, before
its next reload), then
``("result", seq, reload_dict, publish_dict, t_start, t_end)`` on the results pipe to the parent (times
are ``time.monotonic()`` seconds, one clock for every process of the machine). When the reload's probe
already answered for every page left to publish and none is absent, prefill will make no store call, so
decode goes on at once (``needs_ack`` False) and prefill only reports. ``("hold", True|False)`` holds or
releases the queue; decode holds it by itself after a reload fails with RPC_FAIL / RPC_TIMEOUT, so requests
already submitted do not pile errors onto a dead master (the parent releases it when the master is back).
``("drain",)``: nothing more will be submitted; run what is queued and never hold again, or, if the queue
is held for a dead master, drop it: ``("dropped", seq)`` for each request goes the same way as a result (so
a run that ends, or stops, during an outage finishes at once instead of waiting for the master). The probe answers go to
prefill only when no earlier publish is still running (``in_flight`` 0): otherwise a page an earlier
request is publishing could be put twice and counted as published twice, so prefill probes again.
A failure is reported as ``("error", seq, message)`` on the same path and ends the worker.
"""

from __future__ import annotations

import os
import signal
import time
import traceback
from collections import deque
from dataclasses import dataclass

from kvtui.core.codes import BACKOFF_FIRST_S, BACKOFF_MAX_S, MASTER_DOWN_CODES, NO_SPACE
from kvtui.core.sched import pin_calling_thread


@dataclass(frozen=True)
class WorkerSpec:
    """Everything a worker needs, as plain data.

    ``role``: prefill | decode | mixed; ``endpoints``: ``ClusterEndpoints.as_dict()``; ``layout``:
    ``PageLayout.as_dict()``; ``segment_bytes``: segment this worker contributes (0 = none);
    ``read_streams``: concurrent reads per reload; ``max_batch_bytes``: bytes per store batch.
    """

    role: str
    endpoints: dict
    layout: dict
    model: str = "demo-model"
    scheme: str = "ollama"
    namespace: str | None = None
    segment_bytes: int = 0
    read_streams: int = 1
    max_batch_bytes: int = 256 << 20
    log_path: str | None = None


def _result_dict(res) -> dict:
    """A ``ReloadResult``/``PublishResult`` as plain data (a shallow copy: ``dataclasses.asdict`` deep-copies
    and costs more than a small store call)."""
    d = dict(vars(res))
    d["codes"] = {int(k): int(v) for k, v in res.codes.items()}
    if d.get("stop_state") is not None:
        d["stop_state"] = int(d["stop_state"])
    return d


def worker_main(conn, spec: WorkerSpec, peer=None, results=None) -> None:
    """Process entry point: set up, answer ``("ready", info)`` or ``("error", message)``, then serve.

    ``conn``: command pipe to the parent; ``peer``: the other worker's end of the request chain (decode ↔
    prefill); ``results``: prefill's write end of the results pipe to the parent (None for decode).
    """
    from kvtui.engine.procs import parent_death_signal

    parent_death_signal(signal.SIGTERM)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when we stop (a Ctrl-C or a hang-up of
    signal.signal(signal.SIGHUP, signal.SIG_IGN)  # the terminal reaches our process group too)
    stop = {"flag": False}

    def on_term(*_):
        stop["flag"] = True
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, on_term)
    if spec.log_path:
        from kvtui.engine.store import redirect_native_stderr

        redirect_native_stderr(spec.log_path)
    client = connector = None
    try:
        from kvtui.core.layout import PageLayout
        from kvtui.engine.connector import PagedKVConnector
        from kvtui.engine.keys import PageKeyer
        from kvtui.engine.store import StoreError, open_client

        layout = PageLayout(**spec.layout)
        try:
            client = open_client(spec.endpoints, segment_bytes=spec.segment_bytes)
        except StoreError as exc:
            conn.send(("error", str(exc)))
            return
        keyer = PageKeyer(spec.model, layout.page_tokens, spec.scheme, spec.namespace)
        connector = PagedKVConnector(client, layout, keyer, spec.role, read_streams=spec.read_streams,
                                     max_batch_bytes=spec.max_batch_bytes)
        conn.send(("ready", {"pid": os.getpid(), "role": spec.role}))
        _serve(conn, connector, client, peer, results)
    except (EOFError, BrokenPipeError, KeyboardInterrupt, SystemExit):
        pass
    except Exception as exc:  # report, then exit: the parent shows it as one line
        try:
            conn.send(("error", f"{spec.role} worker: {type(exc).__name__}: {exc}"))
        except OSError:
            pass
        traceback.print_exc()
    finally:
        if connector is not None:
            connector.close()
        if client is not None:
            client.close()


class _Chain:
    """This worker's part of the request chain (see the module docstring)."""

    def __init__(self, connector, peer, results):
        self.connector, self.peer, self.results = connector, peer, results
        self.queue: deque = deque()  # decode: (seq, keys) hashed, waiting for their turn
        self.limit = 1
        self.in_flight = 0  # decode: forwarded to prefill and not yet acknowledged
        self.held = False
        self.draining = False
        self.backoff_s = 0.0  # decode: after a full store, no reload before ``resume_at`` (monotonic s)
        self.resume_at = 0.0

    def pin(self) -> None:
        """One request at a time and one read stream: run this worker's store calls on the CPU the other
        worker uses too (they take turns), leaving the other CPUs to the store's transfer threads; otherwise
        on every CPU. On 2 cores this took the trace replay from ≈ 0.72 to 0.93–0.97 of the bare loop's rate
        (medians of ``kvtui bench --trace``): the calling thread keeps a core busy during a call, and it was
        preempted by the other worker and the parent about three times as often as the bare loop's."""
        pin_calling_thread(self.limit == 1 and self.connector.read_streams == 1)

    def submit(self, seq: int, keys: list[str]) -> None:
        self.queue.append((seq, keys))

    def drain(self) -> None:
        if self.held:
            while self.queue:
                seq, _keys = self.queue.popleft()
                self.peer.send(("dropped", seq))
        self.draining, self.held = True, False

    def _next_allowed(self) -> bool:
        """A request is waiting and nothing but a back-off keeps it from starting."""
        return bool(self.queue) and self.in_flight < self.limit and not self.held

    def can_reload(self) -> bool:
        return self._next_allowed() and time.monotonic() >= self.resume_at

    def wait_s(self) -> float | None:
        """How long the worker may block for messages: until a back-off ends, or without limit."""
        return max(0.0, self.resume_at - time.monotonic()) if self._next_allowed() else None

    def reload_next(self) -> None:
        seq, keys = self.queue.popleft()
        try:
            t_start = time.monotonic()
            alone = self.in_flight == 0  # no publish of an earlier request can change the store meanwhile
            res, rest = self.connector.reload_and_rest(None, keys=keys, probe_all=True)
            if any(c in res.codes for c in MASTER_DOWN_CODES) and not self.draining:
                self.held = True
            if not alone:
                res.rest_probe = []
            known = res.rest_probe
            needs_ack = len(known) < len(rest) or 0 in known  # will prefill call the store?
            self.peer.send(("publish", seq, rest, _result_dict(res), t_start, needs_ack))
        except Exception as exc:
            self.peer.send(("error", seq, f"decode worker: {type(exc).__name__}: {exc}"))
            raise
        self.in_flight += needs_ack

    def on_peer(self, msg) -> None:
        kind = msg[0]
        if kind == "ack":  # decode: prefill finished a publish
            self.in_flight -= 1
            if msg[1]:  # the store was full: back off before the next reload (puts are not retried)
                self.backoff_s = min(BACKOFF_MAX_S, max(BACKOFF_FIRST_S, self.backoff_s * 2))
                self.resume_at = time.monotonic() + self.backoff_s
            else:
                self.backoff_s = 0.0
        elif kind == "publish":  # prefill: publish the rest of a reloaded request
            _, seq, rest, reload, t_start, needs_ack = msg
            try:
                pub = self.connector.store_computed_prefix(None, 0, keys=rest, known=reload.pop("rest_probe", ()))
                t_end = time.monotonic()
            except Exception as exc:
                self.results.send(("error", seq, f"prefill worker: {type(exc).__name__}: {exc}"))
                raise
            if needs_ack:
                try:
                    self.peer.send(("ack", NO_SPACE in pub.codes))
                except OSError:  # decode is gone: this result still counts; its EOF is reported next
                    pass
            self.results.send(("result", seq, reload, _result_dict(pub), t_start, t_end))
        elif kind in ("error", "dropped"):  # prefill: relay the decode worker's failure or dropped request
            self.results.send(msg)


def _serve(conn, connector, client, peer=None, results=None) -> None:
    import selectors

    from kvtui.engine.connector import RoleError

    chain = _Chain(connector, peer, results)
    sources = selectors.DefaultSelector()  # registered once: ``connection.wait`` builds a selector per call
    sources.register(conn, selectors.EVENT_READ)
    if peer is not None:
        sources.register(peer, selectors.EVENT_READ)
    while True:
        if chain.can_reload():
            chain.reload_next()
            continue
        ready = [key.fileobj for key, _ in sources.select(chain.wait_s())]
        if peer is not None and peer in ready:
            try:
                chain.on_peer(peer.recv())
            except (EOFError, OSError):  # the other worker is gone: say so once, keep answering the parent
                sources.unregister(peer)
                peer = None
                if results is not None:
                    results.send(("error", None, "decode worker died"))
            continue  # a reload this made possible goes before the next command
        if conn not in ready:
            continue
        msg = conn.recv()
        cmd = msg[0]
        if cmd == "submit":
            chain.submit(*msg[1:])
            continue
        if cmd == "hold":
            chain.held = bool(msg[1]) and not chain.draining
            continue
        if cmd == "drain":
            chain.drain()
            continue
        if cmd == "begin":  # a new run: its concurrency; no hold or drain left from an earlier run
            chain.limit, chain.held, chain.draining = max(1, int(msg[1])), False, False
            chain.pin()
            continue
        if cmd == "set_layout":
            from kvtui.core.layout import PageLayout

            if chain.queue or chain.in_flight:
                conn.send(("error", f"cannot change the page layout with {len(chain.queue) + chain.in_flight} "
                                    "requests under way"))
                continue
            old, connector = connector, connector.with_layout(PageLayout(**msg[1]))
            old.close()
            chain.connector = connector
            conn.send(("ok", connector.page_bytes))
            continue
        try:
            if cmd == "stop":
                conn.send(("ok", None))
                return
            if cmd == "reload":
                _, tokens, cacheable = msg
                res, rest = connector.reload_and_rest(tokens, cacheable)
                conn.send(("ok", {**_result_dict(res), "rest_keys": rest}))
            elif cmd == "publish":
                _, tokens, cacheable, start = msg
                conn.send(("ok", _result_dict(connector.store_computed_prefix(tokens, start, cacheable))))
            elif cmd == "bench_reload":
                _, tokens, iterations = msg
                pin_calling_thread(False)  # a measurement on its own, not turns with prefill: every CPU
                out = []
                for _ in range(iterations):
                    t0 = time.perf_counter()
                    res, _pages = connector.load_cached_prefix(tokens)
                    wall = (time.perf_counter() - t0) * 1e3
                    out.append({"wall_ms": wall, **_result_dict(res)})
                conn.send(("ok", out))
                chain.pin()  # back to the chain's setting
            elif cmd == "bench_raw_get":
                _, keys, iterations = msg
                pin_calling_thread(False)
                pb = connector.page_bytes
                buf = connector.buffer(len(keys))
                ptrs = [buf[i].ctypes.data for i in range(len(keys))]
                out = []
                for _ in range(iterations):
                    t0 = time.perf_counter()
                    rcs = client.batch_get_into(keys, ptrs, [pb] * len(keys))
                    out.append({"wall_ms": (time.perf_counter() - t0) * 1e3, "ok": all(r == pb for r in rcs)})
                conn.send(("ok", out))
                chain.pin()
            elif cmd == "keys":
                _, tokens, cacheable = msg
                conn.send(("ok", connector.keys_for(tokens, cacheable)))
            elif cmd == "set_read_streams":
                _, n = msg
                connector.set_read_streams(n)
                chain.pin()  # before the read threads start: they inherit this thread's CPUs
                conn.send(("ok", n))
            elif cmd == "remove_all":
                conn.send(("ok", client.remove_all(True)))
            else:
                conn.send(("error", f"unknown command {cmd!r}"))
        except RoleError as exc:
            conn.send(("error", str(exc)))

