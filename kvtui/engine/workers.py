"""Parent-side handles of the worker processes (spawned with ``multiprocessing``'s spawn context); the
messages they exchange are those of :mod:`kvtui.engine.protocol`."""

from __future__ import annotations

import multiprocessing as mp
import os
import select
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from kvtui.core.engine_api import WorkerError
from kvtui.engine.protocol import ANSWERED, Failed, Ok, Ready, Stop
from kvtui.engine.wire import decode, encode
from kvtui.engine.worker import WorkerSpec, worker_main
from kvtui.runtime.procs import start_shielded

if TYPE_CHECKING:
    from multiprocessing.connection import Connection

START_TIMEOUT_S = 30.0
CANCEL_POLL_S = 0.05  # a start-up that may be abandoned (``cancel``) checks it this often
STOP_GRACE_S = 0.8  # a worker asked to stop exits after its current store call (a 256 MiB batch, the
# largest, takes a fraction of a second); one still in a call after this long (a stalled transfer, a dead master:
# ~4.3 s a call) is SIGKILLed. The wait matters in a shared (attached) store: a put cut short keeps the space it
# was given until the master releases it (``put_start_release_timeout_sec``, 600 s by default), though its page
# never becomes readable


class WorkerProcess(Protocol):
    """What a :class:`WorkerHandle` uses of its worker's process (a local one, or a remote worker's stand-in)."""

    @property
    def exitcode(self) -> int | None: ...

    def is_alive(self) -> bool: ...

    def join(self, timeout: float | None = None) -> None: ...

    def kill(self) -> None: ...


class WorkerHandle:
    """One worker process and its command pipe. ``call`` sends a command (a :mod:`kvtui.engine.protocol`
    message) and waits for the answer's payload; ``send`` sends one without waiting.

    ``peers`` / ``results`` / ``reports``: the worker's ends of the request chain's pipes (see
    :mod:`kvtui.engine.protocol`; ``reports``: a decode worker's own write ends of the prefill workers' results
    pipes); they are handed to the child and closed here. ``name``: the worker's name (``spec.label``).
    """

    def __init__(self, spec: WorkerSpec, peers=(), results=None, reports=()):
        self.spec = spec
        self.name = spec.label
        ctx = mp.get_context("spawn")
        self.conn, child = ctx.Pipe()
        process = ctx.Process(target=worker_main, args=(child, spec, list(peers), results, list(reports)),
                              name=f"kvtui-{self.name}", daemon=True)
        self.process: WorkerProcess = process
        start_shielded(process)  # (a Ctrl-C while it imports: no traceback from the child)
        for end in (child, *peers, results, *reports):
            if end is not None:
                end.close()
        assert process.pid is not None  # (started)
        self.pid = process.pid
        self._lock = threading.Lock()  # one command/answer at a time when several threads share the worker
        self._send_lock = threading.Lock()  # one writer at a time on the pipe (``call`` and ``send``)

    def wait_ready(self, timeout_s: float = START_TIMEOUT_S, cancel: threading.Event | None = None) -> Ready:
        """Wait for the worker's set-up; ``WorkerError`` with its reason if it fails, or once ``cancel`` is set
        (the start-up is abandoned: the engine stops)."""
        deadline = time.monotonic() + timeout_s
        while not self.conn.poll(timeout_s if cancel is None else
                                 max(0.0, min(CANCEL_POLL_S, deadline - time.monotonic()))):
            if cancel is not None and cancel.is_set():
                raise WorkerError(f"{self.name} worker: start-up abandoned (the engine stops)")
            if cancel is None or time.monotonic() >= deadline:
                raise WorkerError(f"{self.name} worker did not start within {timeout_s:.0f} s")
        try:
            msg = decode(self.conn.recv_bytes())
        except EOFError:
            raise WorkerError(f"{self.name} worker exited during set-up (code {self.exit_code()})") from None
        if not isinstance(msg, Ready):
            raise WorkerError(msg.message if isinstance(msg, Failed) else f"unexpected {type(msg).__name__}")
        return msg

    def send(self, msg) -> None:
        """Send a command without waiting (answers of answered commands arrive in order; read them with
        :meth:`recv`). ``OSError`` when the worker is gone."""
        with self._send_lock:
            self.conn.send_bytes(encode(msg))  # (kvtui.engine.wire: Submit as compact bytes)

    def recv(self, timeout_s: float | None = None):
        """The next answer's payload (:class:`~kvtui.engine.protocol.Ok`); ``WorkerError`` on a
        :class:`~kvtui.engine.protocol.Failed` answer, a dead worker, or no answer within ``timeout_s``."""
        if timeout_s is not None and not self.conn.poll(timeout_s):
            raise WorkerError(f"{self.name} worker did not answer within {timeout_s:.0f} s")
        try:
            msg = decode(self.conn.recv_bytes())
        except (EOFError, OSError):
            raise WorkerError(f"{self.name} worker died (exit code {self.exit_code()})") from None
        if not isinstance(msg, Ok):
            raise WorkerError(msg.message if isinstance(msg, Failed) else f"unexpected {type(msg).__name__}")
        return msg.payload

    def exit_code(self, wait_s: float = 1.0) -> int | None:
        """The process's exit code (negative: killed by that signal), waiting up to ``wait_s`` for it to end."""
        self.process.join(wait_s)
        return self.process.exitcode

    def call(self, msg, timeout_s: float | None = None):
        """Send ``msg`` (one of :data:`~kvtui.engine.protocol.ANSWERED`) and return the answer's payload
        (thread-safe). ``TypeError`` for a command that gets no answer."""
        if not isinstance(msg, ANSWERED):
            raise TypeError(f"{type(msg).__name__} gets no answer: use send()")
        with self._lock:
            self.send(msg)
            return self.recv(timeout_s)

    def stop(self, timeout_s: float = STOP_GRACE_S) -> None:
        """Ask the worker to exit; kill it if it has not within ``timeout_s``."""
        self.ask_stop()
        self.finish_stop(timeout_s)

    def kill(self) -> None:
        """SIGKILL the worker process now (nothing of it is kept: see ``worker._leave``)."""
        if self.process.is_alive():
            self.process.kill()

    def ask_stop(self) -> None:
        """Send :class:`~kvtui.engine.protocol.Stop`: the worker exits once its current store call returns,
        dropping whatever it had queued, without closing its store client (see
        :func:`kvtui.engine.worker.worker_main`)."""
        if self.process.is_alive() and self._send_lock.acquire(timeout=0.2):  # never interleave with a send
            try:
                if select.select([], [self.conn], [], 0.2)[1]:  # a worker stuck with a full pipe: it gets killed
                    self.conn.send(Stop())
            except (OSError, ValueError):
                pass
            finally:
                self._send_lock.release()

    def finish_stop(self, timeout_s: float = STOP_GRACE_S) -> None:
        """Wait up to ``timeout_s`` for the exit :meth:`ask_stop` asked for, then SIGKILL (a SIGTERM would
        wait as long: Python runs signal handlers only between store calls)."""
        self.process.join(max(0.0, timeout_s))
        if self.process.is_alive():
            self.process.kill()
            self.process.join(2)
        self.conn.close()


def stop_all(handles: list[WorkerHandle], timeout_s: float = STOP_GRACE_S) -> None:
    """Stop several workers at once: ask all, wait for all until one shared deadline ``timeout_s`` from now,
    then kill those still in a store call (one blocked on a dead master does not delay the others). Requests
    they had under way are abandoned: a put is all-or-nothing per page (a page becomes readable only when
    its put completed), so the store holds no half-written page. Returns within ``timeout_s`` + ~0.2 s."""
    for h in handles:
        h.ask_stop()
    deadline = time.monotonic() + timeout_s
    for h in handles:
        h.finish_stop(deadline - time.monotonic())


def _writer_copy(conn):
    """A second write end of the pipe ``conn`` writes (its file descriptor duplicated), to hand to another
    process: the pipe then ends for its reader once every copy is closed."""
    from multiprocessing.connection import Connection

    return Connection(os.dup(conn.fileno()), readable=False, writable=True)


def start_mesh(prefills: list[WorkerSpec], decodes: list[WorkerSpec], log_dir: str | None = None, relays: int = 0,
               cancel: threading.Event | None = None):
    """Start N prefill and M decode workers joined by a full mesh of request chains
    (:mod:`kvtui.engine.protocol`): a chain pipe between every decode and every prefill worker, and a
    results pipe from each prefill worker to the parent. Returns ``(prefill handles, decode handles,
    results read ends, relay ends)``, the results ends in prefill order. ``relays`` slots per role for
    workers on other machines (:mod:`kvtui.engine.remote`): each prefill worker gets one more chain pipe per
    decode slot, each decode worker one more per prefill slot (after its N), and the parent keeps their other
    ends: ``relay ends["decode"][slot][prefill]`` and ``relay ends["prefill"][slot][decode]``. The workers
    hold their own ends (closed here). ``WorkerError`` when any does not start, or once ``cancel`` is set (all are
    stopped then)."""
    ctx = mp.get_context("spawn")
    n, m = len(prefills), len(decodes)
    # chain[d][p] = (decode's end, prefill's end); rows m.. are remote decode slots, columns n.. remote prefill
    # slots (no pipe between two remote slots: a remote decode worker publishes through a local prefill worker)
    chain = [[ctx.Pipe() if d < m or p < n else None for p in range(n + relays)] for d in range(m + relays)]

    def end(d: int, p: int, side: int) -> Connection:
        pipe = chain[d][p]
        assert pipe is not None  # (every pair with a local worker has a pipe)
        return pipe[side]

    pairs = [ctx.Pipe(duplex=False) for _p in prefills]  # (parent's read end, prefill's write end)
    # one prefill and one decode worker, none remote: decode reports the requests prefill has nothing to do
    # for on prefill's results pipe itself (kvtui.engine.worker, _Chain._report), through a copy of its write end
    direct = n == 1 and m == 1 and relays == 0
    reports = [[_writer_copy(pairs[p][1]) for p in range(n)] if direct else [] for _d in range(m)]
    ends: list[tuple[list[Connection], Connection | None, list[Connection]]]
    ends = [([end(d, p, 1) for d in range(m + relays)], pairs[p][1], []) for p in range(n)]
    ends += [([end(d, p, 0) for p in range(n + relays)], None, reports[d]) for d in range(m)]
    kept = [end(d, p, 0) for d in range(m, m + relays) for p in range(n)]
    kept += [end(d, p, 1) for d in range(m) for p in range(n, n + relays)]
    try:
        handles = start_workers([*prefills, *decodes], log_dir=log_dir, ends=ends, cancel=cancel)
    except BaseException:
        for c in [read for read, _write in pairs] + kept:
            c.close()
        raise
    finally:
        keep = {id(c) for c in kept}
        for row in chain:
            for pipe in row:
                for c in pipe or ():
                    if id(c) not in keep:
                        c.close()  # (a second close does nothing)
        for _read, write in pairs:
            write.close()
        for c in (c for row in reports for c in row):
            c.close()
    relay_ends = {"decode": [[end(m + s, p, 0) for p in range(n)] for s in range(relays)],
                  "prefill": [[end(d, n + s, 1) for d in range(m)] for s in range(relays)]}
    return handles[:n], handles[n:], [read for read, _write in pairs], relay_ends


def start_workers(specs: list[WorkerSpec], log_dir: str | None = None,
                  ends: list[tuple] | None = None, cancel: threading.Event | None = None) -> list[WorkerHandle]:
    """Start the workers in parallel and wait until every one is ready (stopping all on any failure; killing
    them at once when ``cancel`` was set: the start-up is abandoned).

    ``ends``: per worker, ``(peers, results, reports)`` pipe ends to hand over (see :class:`WorkerHandle`).
    """
    handles: list[WorkerHandle] = []
    try:
        for i, spec in enumerate(specs):
            if log_dir and not spec.log_path:
                spec = replace(spec, log_path=str(Path(log_dir) / f"{spec.label}.log"))
            peers, results, reports = ends[i] if ends else ((), None, ())
            handles.append(WorkerHandle(spec, peers, results, reports))
        for h in handles:
            h.wait_ready(cancel=cancel)
    except BaseException:
        stop_all(handles, 0.0 if cancel is not None and cancel.is_set() else STOP_GRACE_S)
        raise
    return handles
