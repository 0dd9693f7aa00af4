"""What the layers above the request pipeline use of it: :class:`RequestEngine`, what a
:class:`~kvtui.engine.driver.Driver` needs to run requests, and :class:`EngineAPI`, what a live session, a
soak and a bench need besides (layout and verify switches, clearing the store, the worker processes). The
store's cluster is another seam: :class:`kvtui.core.cluster_api.ClusterOps`.

:class:`kvtui.engine.engine.Engine` is the real engine; :class:`kvtui.testing.fake_engine.FakeEngine` a
store-less one for tests. Both satisfy these Protocols structurally.

Also here, because they are part of what an engine answers: :class:`Dropped` and :class:`Lost` (a request
that ends without a :class:`~kvtui.core.events.RequestResult`), :class:`WorkerReplacement` (one rebuild of
the workers after one died), :class:`RemoteJoin` (a worker on another machine joined), :class:`WorkerError`
and :class:`BadOption`.

The engine layer's own types (``EngineOptions``) live above this package; :class:`EngineSettings` is a
read-only view of the fields callers read, so core imports nothing of the engine layer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Callable, Protocol

from kvtui.core.cluster_api import AckLedger, Endpoints
from kvtui.core.events import RequestResult
from kvtui.core.layout import PageLayout
from kvtui.core.subscribers import Unsubscribe

__all__ = [
    "BadOption", "Dropped", "EngineAPI", "EngineSettings", "Lost", "RemoteJoin", "RequestEngine", "SubmittedRequest",
    "WorkerError", "WorkerReplacement",
]


class WorkerError(RuntimeError):
    """A worker failed to start, died, or answered a command with an error (one-line message)."""


class BadOption(ValueError):
    """An engine option out of its set: ``name`` (the ``EngineOptions`` field), the ``value`` given and the
    ``allowed`` values. The config layer phrases it with the flag's name."""

    def __init__(self, name: str, value: object, allowed: Sequence[object]):
        self.name, self.value, self.allowed = name, value, tuple(allowed)
        super().__init__(f"{name} must be one of {', '.join(map(str, self.allowed))}, got {value!r}")


class SubmittedRequest(Protocol):
    """What an engine reads of a request (a ``workload.Request``): ``tokens`` is a ``(n,)`` uint32 array of
    which the first ``cacheable_tokens`` are the cacheable full pages; ``arrival_s`` seconds from the
    workload's start (None: closed loop)."""

    @property
    def req_id(self) -> int: ...
    @property
    def tokens(self) -> Any: ...
    @property
    def arrival_s(self) -> float | None: ...
    @property
    def cacheable_tokens(self) -> int: ...
    @property
    def scenario(self) -> str: ...
    @property
    def labels(self) -> tuple[tuple[str, str], ...]: ...


@dataclass(frozen=True)
class Dropped:
    """A submitted request dropped without any store call (see :meth:`RequestEngine.drain`)."""

    req: SubmittedRequest


@dataclass(frozen=True)
class Lost(Dropped):
    """A submitted request that will never finish: a worker died while it was queued or under way, and the
    engine rebuilt its workers (``EngineSettings.replace_dead_workers``). A :class:`Dropped` to a caller that
    only frees its slot; ``reason``: the one-line cause."""

    reason: str = ""


@dataclass(frozen=True)
class WorkerReplacement:
    """One rebuild of the workers after one died: ``t`` engine seconds when the death was seen, the ``dead``
    workers' names (:func:`kvtui.core.topology.worker_name`) and their ``exit_codes`` (negative: the signal),
    ``lost`` requests (:class:`Lost`), ``took_s`` until every new worker was ready, their ``pids``
    (``{name: pid}``)."""

    t: float
    dead: tuple[str, ...]
    exit_codes: tuple[int | None, ...]
    reason: str
    lost: int
    took_s: float
    pids: dict[str, int]


@dataclass(frozen=True)
class RemoteJoin:
    """A worker on another machine joined (:mod:`kvtui.engine.remote`): its ``role`` (``prefill`` /
    ``decode``), ``index`` among the engine's workers of that role (which its requests' results carry),
    its ``name`` (``remote-decode-0``), the ``host`` it runs on and its ``pid`` there."""

    role: str
    index: int
    name: str
    host: str
    pid: int


class EngineSettings(Protocol):
    """What callers read of how an engine runs (``kvtui.engine.options.EngineOptions``): the page
    ``layout``, the ``store_bytes`` of the segment (bytes), where it lives (``segment_on``: ``store``,
    ``prefill`` or ``decode``), the workers (``prefill_workers`` × ``decode_workers`` local ones, up to
    ``remote_slots`` remote decode workers more), the ``route`` of requests to decode workers, the
    ``concurrency`` per decode worker, whether dead workers are rebuilt, how loaded pages are checked
    (``verify``: ``full`` or ``sampled``, :mod:`kvtui.core.verify`)."""

    @property
    def layout(self) -> PageLayout: ...
    @property
    def model(self) -> str: ...
    @property
    def store_bytes(self) -> int: ...
    @property
    def segment_on(self) -> str: ...
    @property
    def concurrency(self) -> int: ...
    @property
    def prefill_workers(self) -> int: ...
    @property
    def decode_workers(self) -> int: ...
    @property
    def remote_slots(self) -> int: ...
    @property
    def route(self) -> str: ...
    @property
    def replace_dead_workers(self) -> bool: ...
    @property
    def verify(self) -> str: ...


class RequestEngine(Protocol):
    """What a :class:`~kvtui.engine.driver.Driver` uses of an engine to run requests.

    A run: :meth:`begin_run`, then :meth:`submit` requests (one thread) while :meth:`next_result` takes
    their results (another thread), :meth:`hold` / :meth:`drain` as the run goes; ``WorkerError`` from any
    of them when a worker died and dead workers are not rebuilt."""

    @property
    def options(self) -> EngineSettings: ...

    def now(self) -> float:
        """Seconds since the engine started (the clock of results, events and replacements)."""

    def begin_run(self, concurrency: int) -> None:
        """Start a run of up to ``concurrency`` requests under way per decode worker; a hold or drain left
        by an earlier run is cleared, and results of requests an earlier run submitted are discarded."""

    def submit(self, req: SubmittedRequest) -> None:
        """Route ``req`` to a worker; its result comes from :meth:`next_result`."""

    def next_result(self, timeout_s: float | None = None) -> RequestResult | Dropped | None:
        """The next finished request of the current run (a :class:`Dropped` / :class:`Lost` when it ended
        without a result); None after ``timeout_s`` without one. One thread calls it."""

    def hold(self, held: bool) -> None:
        """Hold (True) or release (False) the submitted requests whose store calls have not started."""

    def drain(self) -> None:
        """Nothing more will be submitted in this run: run what is submitted, or, while held, drop it
        unrun (each a :class:`Dropped` from :meth:`next_result`)."""

    def subscribe_replacement(self, fn: Callable[[WorkerReplacement], None]) -> Unsubscribe:
        """Call ``fn`` with every :class:`WorkerReplacement` from now on (from the thread calling
        :meth:`next_result`, after the earlier subscribers); returns the function that unsubscribes."""


class EngineAPI(RequestEngine, Protocol):
    """What a live session, a soak and a bench use of a started engine besides running requests."""

    @property
    def endpoints(self) -> Endpoints | None:
        """The cluster the workers are clients of."""

    @property
    def replacements(self) -> Sequence[WorkerReplacement]:
        """Every rebuild of the workers so far, oldest first."""

    @property
    def published(self) -> AckLedger | None:
        """The keys whose put was acknowledged (``kvtui.engine.ledger.PublishedLedger``), kept for the loss
        checks of an HA cluster's failovers and, when the options ask (``ack_ledger``), of a soak's store faults;
        None otherwise."""

    def worker_pids(self) -> dict[str, int]:
        """``{name: pid}`` of the local worker processes (prefill first)."""

    def set_layout(self, layout: PageLayout) -> None:
        """Use ``layout`` from the next submitted request on, on every worker or none (``WorkerError`` when
        one refuses); ``RuntimeError`` while requests are under way."""

    def clear_store(self) -> int:
        """Remove every object of the store; returns how many."""

    def restart_workers(self) -> None:
        """Kill every local worker so that they are rebuilt (``replace_dead_workers``) as new clients of the
        store: what dummy clients need after their real client was started again."""

    def subscribe_remote(self, fn: Callable[[RemoteJoin], None]) -> Unsubscribe:
        """Call ``fn`` with a :class:`RemoteJoin` each time a remote worker joins (from the thread that
        admits it, after the earlier subscribers); returns the function that unsubscribes."""

    def stop(self, meanwhile: Callable[[bool], None] | None = None) -> None:
        """Stop the workers (safe to call twice); ``meanwhile(trouble)`` runs once they were asked to stop
        and before the last is killed (the cluster's own stop: ``trouble`` is True when a worker died or
        start-up failed, so logs are kept)."""
