"""Workers on other machines: the coordinator's listener (``kvtui run|watch --listen HOST:PORT --token T``)
and the remote side's join (``kvtui worker --role decode|prefill --join HOST:PORT --token T``).

A remote worker is the same :func:`kvtui.engine.worker.worker_main` as a local one, over TCP connections
instead of pipes (``multiprocessing.connection`` ``Client``/``Listener``: the same ``send``/``recv``/``poll``).
Every connection is authenticated with the token by ``multiprocessing``'s HMAC challenge
(``hmac.compare_digest``: constant time), each on a thread of its own and within ``HANDSHAKE_TIMEOUT_S``; a
wrong token is refused before any message is read, and logged.

Joining, step by step (:class:`Hello`, :class:`Welcome`, :class:`ChainHello`):

1. the worker connects its **command** connection and says :class:`Hello` (role, its host, pid, version);
2. the coordinator answers :class:`Welcome` with the :class:`~kvtui.engine.worker.WorkerSpec` to run and
   a free **slot** of its role, or :class:`Refused` (no slot left, unknown role, another version);
3. the worker connects one **chain** connection per local worker of the other role (a prefill worker one
   more for its results), each saying :class:`ChainHello`; the coordinator relays each chain connection to
   that local worker's pipe of that slot (provisioned when the engine started: ``start_mesh``'s ``relays``),
   so a running worker needs no new pipe; the relay copies whole messages both ways;
4. the worker runs ``worker_main`` on these connections and answers :class:`~kvtui.engine.protocol.Ready`;
   the engine adds it to the workers it routes to (:meth:`kvtui.engine.engine.Engine.add_remote`).

A remote worker that leaves (its connections close) is seen like a local one that died: the engine
rebuilds its local workers, the requests under way are run again (``Driver(rerun_lost=True)``) and the
remote one is dropped; it may join again. Both sides must use the same attached cluster (``--master``,
``--metadata``): the coordinator's endpoints are in the spec.
"""

from __future__ import annotations

import os
import selectors
import socket
import threading
from dataclasses import dataclass, field
from multiprocessing.connection import Client, Connection, Listener
from typing import Callable

from kvtui.engine.protocol import Failed, Ready
from kvtui.engine.worker import WorkerSpec
from kvtui.engine.workers import WorkerHandle
from kvtui.mooncake.client import route_address

HANDSHAKE_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class Hello:
    """Worker → coordinator, first message on the command connection."""

    role: str
    host: str
    pid: int
    version: str


@dataclass(frozen=True)
class Welcome:
    """Coordinator → worker: run ``spec`` (a ``WorkerSpec``) in ``slot``; connect ``chains`` chain
    connections (one per local worker of the other role), and with ``results`` (a prefill worker) one more
    for its results."""

    spec: object
    slot: int
    chains: int
    results: bool = False


@dataclass(frozen=True)
class Refused:
    """Coordinator → worker: it cannot join (one line)."""

    message: str


@dataclass(frozen=True)
class ChainHello:
    """Worker → coordinator, first message on a chain connection: its role and slot, and the index of the
    local worker it links to (-1: a prefill worker's results connection)."""

    slot: int
    index: int
    role: str = "decode"


class _RemoteProcess:
    """What the engine reads of a worker's process, for a remote one: alive until its command connection
    ends; no exit code of its own (-1 once gone)."""

    def __init__(self) -> None:
        self.gone = threading.Event()

    def is_alive(self) -> bool:
        return not self.gone.is_set()

    @property
    def exitcode(self) -> int | None:
        return None if self.is_alive() else -1

    def join(self, timeout: float | None = None) -> None:
        self.gone.wait(timeout)

    def kill(self) -> None:  # (the coordinator cannot signal another machine's process: it hangs up)
        self.gone.set()


class RemoteHandle(WorkerHandle):
    """The engine's handle of a remote worker: a :class:`~kvtui.engine.workers.WorkerHandle` (its ``send``,
    ``recv``, ``call``, ``exit_code``, ``ask_stop``) over the worker's command connection, with a
    :class:`_RemoteProcess` for a process; ``host``: the address it joined from; ``pid``: its pid there.
    Stopping hangs up on the command and chain connections (the remote worker exits on their end)."""

    def __init__(self, conn, spec, ready: Ready, host: str, slot: int, chains: list):  # (no process to start)
        self.spec, self.name, self.conn, self.pid = spec, spec.label, conn, ready.pid
        self.host, self.slot, self.chains = host, slot, chains
        self.remote = True
        self.process = _RemoteProcess()
        self._lock = threading.Lock()
        self._send_lock = threading.Lock()

    def finish_stop(self, timeout_s: float = 0.0) -> None:
        """Hang up: close the command and chain connections."""
        self.process.kill()
        for c in [self.conn, *self.chains]:
            try:
                c.close()
            except OSError:
                pass


@dataclass(frozen=True)
class _Direction:
    """One direction of a relayed pair, the selector's data for ``src``'s descriptor: what ``src`` receives
    goes to ``dst``; ``on_close`` (or None) is called when the pair is dropped; ``fds``: both connections'
    descriptors (to unregister both)."""

    src: Connection
    dst: Connection
    on_close: Callable[[], None] | None
    fds: tuple[int, int]


class Relay:
    """Copies whole messages between pairs of connections (a remote worker's chain connection and a local
    worker's relay pipe), both ways, on one thread; a pair whose either end closes is closed on both, and
    its ``on_close`` called."""

    def __init__(self) -> None:
        self._sel = selectors.DefaultSelector()
        self._new: list[tuple] = []
        self._lock = threading.Lock()
        self._wake_r, self._wake_w = socket.socketpair()
        self._sel.register(self._wake_r, selectors.EVENT_READ, None)
        self._stop = False
        self._thread = threading.Thread(target=self._run, name="kvtui-relay", daemon=True)
        self._thread.start()

    def add(self, a, b, on_close=None) -> None:
        """Relay between connections ``a`` and ``b`` from now on (registered by the relay's own thread)."""
        with self._lock:
            self._new.append((a, b, on_close))
        self._wake_w.send(b"x")

    def _drop(self, pair: _Direction) -> None:
        src, dst, on_close, fds = pair.src, pair.dst, pair.on_close, pair.fds
        for fd in fds:  # (registered by descriptor: a connection closed elsewhere can still be unregistered)
            try:
                self._sel.unregister(fd)
            except (KeyError, ValueError, OSError):
                pass
        for c in (src, dst):
            try:
                c.close()
            except OSError:
                pass
        if on_close is not None:
            on_close()

    def _run(self) -> None:
        while not self._stop:
            try:
                events = self._sel.select(0.5)
            except (OSError, ValueError):  # a descriptor closed under us: drop the pairs it belonged to
                events = []
                for key in list(self._sel.get_map().values()):
                    if key.data is not None and (key.data.src.closed or key.data.dst.closed):
                        self._drop(key.data)
            for key, _ in events:
                if key.data is None:
                    self._wake_r.recv(4096)
                    with self._lock:
                        new, self._new = self._new, []
                    for a, b, on_close in new:
                        fds = (a.fileno(), b.fileno())
                        self._sel.register(fds[0], selectors.EVENT_READ, _Direction(a, b, on_close, fds))
                        self._sel.register(fds[1], selectors.EVENT_READ, _Direction(b, a, on_close, fds))
                    continue
                if key.fd not in self._sel.get_map():  # (dropped with its partner in this round)
                    continue
                try:
                    key.data.dst.send_bytes(key.data.src.recv_bytes())
                except (EOFError, OSError, ValueError):
                    self._drop(key.data)
        for key in list(self._sel.get_map().values()):
            if key.data is not None:
                self._drop(key.data)

    def stop(self) -> None:
        """End the relay thread; the connections it holds are closed."""
        self._stop = True
        self._wake_w.send(b"x")
        self._thread.join(2)


def join(address: tuple[str, int], token: str, role: str, timeout_s: float = HANDSHAKE_TIMEOUT_S):
    """The worker's side of joining (steps 1–3 of the module): ``(command connection, Welcome, chain
    connections, results connection or None)``. ``ConnectionRefusedError`` / ``OSError`` when nothing listens,
    ``PermissionError`` when the coordinator refuses the token or the worker, or the other side is no
    coordinator (one-line reason)."""
    from kvtui import __version__

    conn = _connect(address, token, timeout_s)
    conn.send(Hello(role, route_address(address[0]), os.getpid(), __version__))
    if not conn.poll(timeout_s):
        raise NotACoordinator(f"no answer within {timeout_s:.0f} s")
    try:
        answer = conn.recv()
    except EOFError:
        raise PermissionError("the coordinator closed the connection") from None
    if isinstance(answer, Refused):
        raise PermissionError(answer.message)
    if not isinstance(answer, Welcome):
        raise NotACoordinator(f"unexpected answer {type(answer).__name__}")
    chains = []
    for j in [*range(answer.chains), *([-1] if answer.results else [])]:
        c = _connect(address, token, timeout_s)
        c.send(ChainHello(answer.slot, j, role))
        chains.append(c)
    results = chains.pop() if answer.results else None
    return conn, answer, chains, results


class NotACoordinator(PermissionError):
    """What answers at the join address does not behave like a kvtui coordinator (no answer in time, another
    protocol, a closed connection): the message says what happened; the command says what to check."""


def _connect(address: tuple[str, int], token: str, timeout_s: float):
    """One authenticated connection, its handshake bounded by ``timeout_s``: something that accepts and stays
    silent, or is no kvtui, is refused instead of waited on for ever (the handshake runs on a daemon thread,
    left behind when it hangs: the command then exits)."""
    from multiprocessing import AuthenticationError

    out: dict = {}

    def connect() -> None:
        try:
            out["conn"] = Client(address, authkey=token.encode())
        except BaseException as exc:  # (handed to the caller)
            out["error"] = exc

    t = threading.Thread(target=connect, name="kvtui-join", daemon=True)
    t.start()
    t.join(timeout_s)
    if t.is_alive():
        raise NotACoordinator(f"no answer within {timeout_s:.0f} s")
    exc = out.get("error")
    if isinstance(exc, AuthenticationError):
        raise PermissionError("the coordinator refused the token")
    if isinstance(exc, EOFError):
        raise NotACoordinator("the other side closed the connection")
    if exc is not None:
        raise exc
    return out["conn"]


class TokenListener(Listener):
    """A :class:`Listener` with the ``token`` its :class:`Coordinator` checks."""

    token: str = ""


def open_listener(address: tuple[str, int], token: str) -> TokenListener:
    """A listener for remote workers on ``address`` (``(host, port)``); ``OSError`` when it cannot listen
    there (bound at once, before the engine starts). The token is checked per connection by the
    :class:`Coordinator` (so a peer that never answers the challenge holds up no one else)."""
    listener = TokenListener(address)
    listener.token = token
    return listener


@dataclass
class _Joining:
    """A welcomed worker whose chain connections are coming in: its command connection, its ``Hello``, the
    spec it runs, how many chain connections it opens (``want``: one per local worker of the other role, and
    a prefill worker's results connection) and those connected so far (``chains``: chain index → connection,
    -1 for the results connection)."""

    conn: Connection
    hello: Hello
    spec: WorkerSpec
    want: int
    chains: dict = field(default_factory=dict)


class Coordinator:
    """Lets remote workers join (steps 2–4 of the module), on its own thread. ``engine``: the
    :class:`~kvtui.engine.engine.Engine` (started, with ``remote_slots`` relay slots); ``listener``: from
    :func:`open_listener`; ``on_event(kind, text)``: one line per join and refusal. Each connection's
    challenge and first message run on a thread of their own, closed after ``HANDSHAKE_TIMEOUT_S``."""

    def __init__(self, engine, listener: TokenListener, on_event):
        self.engine, self.on_event = engine, on_event
        self.listener = listener
        self.address = self.listener.address
        self._key = listener.token.encode()
        self.relay = Relay()
        self._pending: dict[tuple[str, int], _Joining] = {}  # (role, slot) → a worker whose chains are connecting
        self._lock = threading.Lock()
        self._stop = False
        self._thread = threading.Thread(target=self._accept, name="kvtui-listen", daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while not self._stop:
            try:
                conn = self.listener.accept()
            except OSError:
                return
            peer = self.listener.last_accepted
            threading.Thread(target=self._handshake, args=(conn, peer), name="kvtui-handshake", daemon=True).start()

    def _handshake(self, conn, peer) -> None:
        from multiprocessing import AuthenticationError
        from multiprocessing.connection import answer_challenge, deliver_challenge

        timer = threading.Timer(HANDSHAKE_TIMEOUT_S, conn.close)  # (a silent peer: its reads fail)
        timer.daemon = True
        timer.start()
        where = f" from {peer[0]}" if peer else ""
        try:
            deliver_challenge(conn, self._key)
            answer_challenge(conn, self._key)
            first = conn.recv() if conn.poll(HANDSHAKE_TIMEOUT_S) else None
        except AuthenticationError:
            self.on_event("error", f"refused a remote worker{where}: wrong token")
            conn.close()
            return
        except (EOFError, OSError) as exc:
            if not self._stop:
                self.on_event("error", f"a remote worker's handshake{where} failed ({exc or 'connection closed'})")
            return
        finally:
            timer.cancel()
        with self._lock:
            if isinstance(first, Hello):
                self._welcome(conn, first)
            elif isinstance(first, ChainHello):
                self._chain(conn, first)
            else:
                conn.close()

    def _welcome(self, conn, hello: Hello) -> None:
        from kvtui import __version__

        engine = self.engine
        why, role = None, hello.role
        if role not in ("decode", "prefill"):
            why = f"a worker is decode or prefill (asked: {role})"
        elif hello.version != __version__:
            why = f"the coordinator runs kvtui {__version__}, the worker {hello.version}"
        slot = engine.free_remote_slot(role) if why is None else None
        if why is None and slot is None:
            why = f"no free slot for another remote {role} worker"
        if why is not None:
            conn.send(Refused(why))
            conn.close()
            self.on_event("error", f"refused a remote worker from {hello.host}: {why}")
            return
        assert slot is not None  # (why is None: a free slot was found)
        spec = engine.remote_spec(slot, role)
        want = engine.remote_chains(role) + (role == "prefill")
        self._pending[(role, slot)] = _Joining(conn, hello, spec, want)
        conn.send(Welcome(spec, slot, engine.remote_chains(role), results=role == "prefill"))

    def _chain(self, conn, msg: ChainHello) -> None:
        entry = self._pending.get((msg.role, msg.slot))
        if entry is None:
            conn.close()
            return
        entry.chains[msg.index] = conn
        if len(entry.chains) < entry.want:
            return
        del self._pending[(msg.role, msg.slot)]
        threading.Thread(target=self._finish, args=(msg.role, msg.slot, entry), name="kvtui-join",
                         daemon=True).start()

    def _finish(self, role: str, slot: int, entry: _Joining) -> None:
        """Wire the relays, wait for the worker's Ready, hand it to the engine."""
        conn, hello = entry.conn, entry.hello
        results = entry.chains.pop(-1, None)
        chains = [entry.chains[j] for j in sorted(entry.chains)]
        gone = _RemoteProcess()  # (the handle's, set when a relay of it closes: the worker left)
        for c, p in zip(chains, self.engine.relay_ends(slot, role)):
            self.relay.add(c, p, gone.kill)
        try:
            ready = conn.recv() if conn.poll(30) else None
        except (EOFError, OSError):
            ready = None
        if not isinstance(ready, Ready):
            why = ready.message if isinstance(ready, Failed) else "no Ready within 30 s"
            self.on_event("error", f"a remote worker from {hello.host} failed to start: {why}")
            conn.close()
            self.engine.release_remote_slot(slot, role)
            return
        handle = RemoteHandle(conn, entry.spec, ready, hello.host, slot, chains + ([results] if results else []))
        handle.process = gone
        self.engine.add_remote(handle, results=results)
        self.on_event("info", f"remote worker {handle.name} joined from {hello.host} (pid {ready.pid} there)")

    def stop(self) -> None:
        """Stop listening and relaying."""
        self._stop = True
        try:
            self.listener.close()
        except OSError:
            pass
        self.relay.stop()
