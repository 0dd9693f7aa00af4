"""What the layers above the backend use of the store's cluster: :class:`ClusterOps`.

The request pipeline (:mod:`kvtui.engine`) moves pages; the backend (:mod:`kvtui.mooncake`) runs the store it
moves them through: masters, etcd, store nodes, emulated hosts. A live session, a soak and a bench reach the
backend only through :class:`ClusterOps` (:class:`kvtui.mooncake.ops.MooncakeCluster` for a real cluster,
embedded or attached; :class:`kvtui.testing.fake_engine.FakeCluster` in tests). Its read-only views
(:class:`ClusterSettings`, :class:`Endpoints`, :class:`ClusterProcess`) name what callers read, so core imports
nothing of the backend.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from kvtui.core.events import RequestResult
from kvtui.core.failover import FailoverReport
from kvtui.core.panels import StoreScrape
from kvtui.core.storeloss import KeyCensus
from kvtui.core.subscribers import Unsubscribe

__all__ = ["AckLedger", "KeyCensus", "ClusterOps", "ClusterProcess", "ClusterSettings", "Endpoints", "FailoverSeen",
           "FailoverWatcher", "LinkControl"]


class ClusterSettings(Protocol):
    """What callers read of how the cluster runs (``kvtui.mooncake.cluster.ClusterOptions``): ``store_nodes``
    (with the segment on store nodes), the master's ``eviction_high_watermark`` (0–1), ``lease_ttl_ms``,
    ``client_ttl_s`` (how long the master keeps a client that stopped answering, and its keys), ``disk_bytes`` (the
    embedded store's disk tier; 0: none) and ``isolation``: the one line on the cluster's network isolation (None
    when attached)."""

    @property
    def store_nodes(self) -> int: ...
    @property
    def eviction_high_watermark(self) -> float: ...
    @property
    def lease_ttl_ms(self) -> int: ...
    @property
    def client_ttl_s(self) -> int: ...
    @property
    def disk_bytes(self) -> int: ...
    @property
    def isolation(self) -> str | None: ...


class Endpoints(Protocol):
    """How to reach the cluster (``kvtui.mooncake.client.ClusterEndpoints``): the master's RPC ``HOST:PORT``,
    its ``metadata_url``, its admin HTTP base ``metrics_url`` (None: unknown), whether kvtui started it
    (``embedded``), its ``log_dir`` ("" when none), the standalone ``real_client`` of dummy workers (""
    when none), whether it is an HA cluster (``ha``: ``master`` is ``etcd://…``) and its ``masters``
    (``(name, admin URL)`` each; empty when unknown), its ``tiers`` (``("memory",)``, or ``("memory", "disk")``
    with a disk tier), whether its master gives hot keys a second memory replica (``replicate_hot``); ``as_dict()``
    its plain-data form."""

    @property
    def master(self) -> str: ...
    @property
    def metadata_url(self) -> str: ...
    @property
    def metrics_url(self) -> str | None: ...
    @property
    def embedded(self) -> bool: ...
    @property
    def log_dir(self) -> str: ...
    @property
    def real_client(self) -> str: ...
    @property
    def ha(self) -> bool: ...
    @property
    def masters(self) -> tuple[tuple[str, str], ...]: ...
    @property
    def tiers(self) -> tuple[str, ...]: ...
    @property
    def replicate_hot(self) -> bool: ...
    def as_dict(self) -> dict[str, Any]: ...


class ClusterProcess(Protocol):
    """One process of the embedded cluster (``kvtui.runtime.procs.ManagedProcess``): ``name`` (``master``,
    ``metadata``, ``store``, ``store-1``, ``etcd``, …), ``pid``, ``title`` for a message (``the master``),
    ``popen`` (its ``subprocess.Popen``: ``returncode``, ``wait``), ``alive()``."""

    @property
    def name(self) -> str: ...
    @property
    def pid(self) -> int: ...
    @property
    def title(self) -> str: ...
    @property
    def popen(self) -> Any: ...
    def alive(self) -> bool: ...


class AckLedger(Protocol):
    """The pages kvtui's workers were told are stored (``kvtui.engine.ledger.PublishedLedger``)."""

    def snapshot(self) -> dict[str, float]:
        """``{key: engine time its put was acknowledged}`` now (a copy)."""

    def forget(self, keys: Sequence[str], acked_before: float) -> int:
        """Drop those of ``keys`` last acknowledged before engine time ``acked_before`` (the store no longer
        has them); returns how many."""


class FailoverWatcher(Protocol):
    """One failover being measured (``kvtui.mooncake.failover.FailoverWatch``): :meth:`add` every finished
    request, :meth:`cleared` once the fault is over, :meth:`stop` to end it early; ``report`` fills as it goes,
    ``serving`` is set once a master serves again and ``done`` at the end."""

    @property
    def report(self) -> FailoverReport: ...
    @property
    def serving(self) -> Any: ...
    @property
    def done(self) -> Any: ...
    def add(self, r: RequestResult) -> None: ...
    def cleared(self) -> None: ...
    def stop(self) -> None: ...


class FailoverSeen(Protocol):
    """A failover kvtui did not cause, as the cluster saw it begin (``kvtui.mooncake.leaderwatch.LeaderChange``):
    ``text``, one line on what was seen; ``old_leader``, the master that stopped leading (None: unknown)."""

    @property
    def text(self) -> str: ...
    @property
    def old_leader(self) -> str | None: ...


class LinkControl(Protocol):
    """The emulated hosts' links (``kvtui.mooncake.hosts.EmulatedHosts``): take ``name``'s link down and up."""

    def cut(self, name: str) -> None: ...
    def restore(self, name: str) -> None: ...
    @property
    def hosts(self) -> Mapping[str, Any]: ...


class ClusterOps(Protocol):
    """The store's cluster as a session, a soak and a bench use it besides moving pages.

    Operations on processes (restart, signal) need a cluster kvtui started (``embedded``); on an attached
    cluster they raise ``RuntimeError`` saying so."""

    @property
    def endpoints(self) -> Endpoints: ...

    @property
    def settings(self) -> ClusterSettings: ...

    @property
    def embedded(self) -> bool:
        """kvtui started this cluster (and may restart, signal or fill it)."""

    @property
    def store_bytes(self) -> int | None:
        """The segment kvtui gave the embedded store (bytes), None when attached."""

    @property
    def links(self) -> LinkControl | None:
        """The emulated hosts' links (None without ``--hosts auto``)."""

    def pids(self) -> dict[str, int]:
        """``{name: pid}`` of every process of the embedded cluster (none when attached)."""

    def host_addresses(self) -> dict[str, str]:
        """``{process name: address}`` on the emulated hosts (``{}`` without them)."""

    def reachable(self) -> bool:
        """The store takes requests now: the master (an HA cluster: a serving leader with a segment mounted)
        and the real client of dummy workers accept a connection. No store call, no lease."""

    def sample_store(self) -> StoreScrape:
        """Scrape the master's ``/metrics`` once (:class:`~kvtui.core.panels.StoreScrape`; rates from the last
        scrape); call from one thread at a time."""

    def process(self, name: str) -> ClusterProcess | None:
        """The embedded cluster's process ``name`` (None: no such process, or attached)."""

    def store_names(self) -> list[str]:
        """The store nodes' names (``store``, or ``store-0`` …); empty when kvtui runs none."""

    def master_names(self) -> list[str]:
        """The masters' names: ``master``, or with ``--ha N`` ``master-0`` …"""

    def dead_process(self) -> ClusterProcess | None:
        """The first process of the embedded cluster that has exited (with ``--ha``, a dead master counts only
        when no master is left); None while all run, and always when attached."""

    def restart_master(self) -> None:
        """Start every dead master again on its ports (``RuntimeError`` when attached)."""

    def restart_store(self) -> bool:
        """Start every dead store node again (the first one when none is dead); returns True when the store's
        clients must be started again too (dummy clients never return to a new real client).
        ``RuntimeError`` without store nodes of kvtui's."""

    def leader(self) -> str | None:
        """The name of the master of kvtui's HA cluster that serves now (None: none does, or no HA cluster)."""

    def signal(self, name: str, sig: int) -> int:
        """Send signal ``sig`` to process ``name`` of the embedded cluster; returns its pid. SIGKILL waits until
        it is gone. ``RuntimeError`` when it does not run (or attached)."""

    def fill_store(self, *, object_bytes: int, min_object_bytes: int, max_bytes: int, hold_s: float,
                   timeout_s: float, on_start: Callable[[int], None] | None = None,
                   retry_refused_s: float | None = None, halt: Any = None) -> dict[str, Any]:
        """Fill the store with a separate client until a put is refused (objects of ``object_bytes``, then
        smaller ones down to ``min_object_bytes``, at most ``max_bytes``), hold it ``hold_s`` seconds, then remove
        what it put; returns its report. ``retry_refused_s``: a store with a disk tier, filled through DRAM until
        both tiers are full (DRAM refuses a put and the tier evicts; refused puts retried while DRAM waits for an
        offload; at most ``max_bytes``, for at most that many seconds; objects no larger than a disk bucket).
        ``halt`` (a ``threading.Event``) set: the filler stops filling and holding at once, removes what it put and
        leaves. ``on_start(pid)`` once it runs; ``RuntimeError`` when it fails or outlasts ``timeout_s``."""

    def census(self, keys: Sequence[str]) -> KeyCensus | None:
        """Where the master (an HA cluster: the one serving) lists each of ``keys`` now, memory and disk
        replicas, with its eviction counters (:class:`~kvtui.core.storeloss.KeyCensus`; no lease: it pins
        nothing). None when no master answers, or kvtui does not know its admin URL."""

    def subscribe_failovers(self, fn: Callable[[FailoverSeen], None], *, snapshots: bool = True) -> Unsubscribe:
        """Call ``fn(seen)`` (from a thread of the cluster's) whenever a failover kvtui did not cause begins: the
        leader of an HA cluster, embedded or attached, stopped serving while no watch of kvtui's ran
        (:meth:`watch_failover` it with ``seen`` to measure it). ``snapshots``: note the leader's keys every few
        seconds, so that such a failover's loss check knows what it held. Never called without an HA cluster;
        returns the function that unsubscribes."""

    def watch_failover(self, n: int, kind: str, *, clock: Callable[[], float], ledger: AckLedger | None,
                       log: Callable[[str, str], None], hit_rate_before: float | None,
                       on_serving: Callable[[str], None] | None = None,
                       on_done: Callable[[FailoverReport], None] | None = None,
                       seen: FailoverSeen | None = None) -> FailoverWatcher:
        """Start measuring failover ``n`` caused by a fault of ``kind`` that the caller injects right after this
        returns, or, with ``seen``, one that began without kvtui (``kind``
        :data:`kvtui.core.failover.EXTERNAL`); ``clock``: engine seconds; ``ledger``: the pages acknowledged;
        ``log(kind, text)``: event-log lines. The watch runs on a thread of its own; while it runs, no other
        failover is reported to :meth:`subscribe_failovers`' functions."""

    def stop(self, keep_logs: bool = False) -> None:
        """Stop every process of the embedded cluster (nothing when attached); safe to call twice."""
