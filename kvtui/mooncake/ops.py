"""The Mooncake cluster of one session as the layers above use it (:class:`MooncakeCluster`, a
:class:`kvtui.core.cluster_api.ClusterOps`): embedded (kvtui started it: :class:`~kvtui.mooncake.cluster.
EmbeddedCluster`) or attached (only its endpoints), with its store sampler and its failover watches."""

from __future__ import annotations

import json
import os
import signal as signals
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from kvtui.core.cluster_api import AckLedger
from kvtui.core.failover import FailoverReport
from kvtui.core.panels import StoreScrape
from kvtui.core.storeloss import KeyCensus
from kvtui.core.subscribers import Subscribers, Unsubscribe
from kvtui.mooncake import ha, tiers
from kvtui.mooncake.client import ClusterEndpoints
from kvtui.mooncake.cluster import ClusterOptions, EmbeddedCluster
from kvtui.mooncake.failover import FailoverHistory, FailoverWatch
from kvtui.mooncake.hosts import BRIDGE_ADDRESS, EmulatedHosts
from kvtui.mooncake.leaderwatch import LeaderChange, LeaderWatcher
from kvtui.mooncake.net import probe_tcp, split_hostport
from kvtui.mooncake.samplers import StoreSampler
from kvtui.runtime.procs import ManagedProcess, spawn

__all__ = ["MooncakeCluster"]


class MooncakeCluster:
    """A started cluster: :meth:`start` an embedded one from its options, or :meth:`attach` to ``endpoints``;
    :meth:`stop` always. Satisfies :class:`~kvtui.core.cluster_api.ClusterOps`.

    ``options``: the embedded cluster's (an attached one: the defaults, ``isolation`` None)."""

    def __init__(self, options: ClusterOptions, endpoints: ClusterEndpoints,
                 embedded: EmbeddedCluster | None = None) -> None:
        self.options = options
        self._endpoints = endpoints
        self._cluster = embedded
        self._sampler = StoreSampler(endpoints.metrics_url, endpoints.masters, tiered="disk" in endpoints.tiers,
                                     disk_bytes=options.disk_bytes if embedded is not None else 0,
                                     replicated=endpoints.replicate_hot)
        self._history = FailoverHistory()  # what the failover watches share (they run one at a time)
        self._changes: Subscribers[[LeaderChange]] = Subscribers()  # told of failovers kvtui did not cause
        self._leaders: LeaderWatcher | None = None  # (HA: started by the first subscriber, stopped by stop())
        self._stopped = False
        self._fills = 0  # filler runs so far (each writes a report file of its own)

    @classmethod
    def start(cls, options: ClusterOptions) -> MooncakeCluster:
        """Start an embedded cluster of ``options`` (``ClusterError``, one line, when it does not start;
        whatever started is stopped first)."""
        cluster = EmbeddedCluster(options)
        endpoints = cluster.start()
        return cls(options, endpoints, cluster)

    @classmethod
    def attach(cls, endpoints: ClusterEndpoints) -> MooncakeCluster:
        """An attached cluster at ``endpoints`` (already checked by ``kvtui.mooncake.cluster.attach``)."""
        return cls(ClusterOptions(isolation=None), endpoints)

    # -- what it is ------------------------------------------------------------------------------------------
    @property
    def endpoints(self) -> ClusterEndpoints:
        return self._endpoints

    @property
    def settings(self) -> ClusterOptions:
        return self.options

    @property
    def embedded(self) -> bool:
        return self._cluster is not None

    @property
    def store_bytes(self) -> int | None:
        return self.options.store_bytes if self._cluster is not None else None

    @property
    def links(self) -> EmulatedHosts | None:
        return self._cluster.emulated if self._cluster is not None else None

    @property
    def disk_folder(self) -> str | None:
        """The folder an embedded store's disk tier writes its files under (None: no disk tier)."""
        disk = self._cluster.disk if self._cluster is not None else None
        return disk.folder if disk is not None else None

    def pids(self) -> dict[str, int]:
        return {p.name: p.pid for p in self._cluster.processes} if self._cluster is not None else {}

    def host_addresses(self) -> dict[str, str]:
        hosts = {h.name: h.address for h in self._endpoints.hosts}
        if not hosts:
            return {}
        return {"kvtui": BRIDGE_ADDRESS, **hosts, "metadata": hosts["master"]}

    def process(self, name: str) -> ManagedProcess | None:
        return self._cluster.process(name) if self._cluster is not None else None

    def store_names(self) -> list[str]:
        if self._cluster is None or self.options.segment_on != "store":
            return []
        return self._cluster.store_names()

    def master_names(self) -> list[str]:
        if self._cluster is not None:
            return self._cluster.master_names()
        return [name for name, _url in self._endpoints.masters] or ["master"]

    # -- health ----------------------------------------------------------------------------------------------
    def reachable(self) -> bool:
        """True if the master's RPC port accepts a TCP connection (no store call, no lease), and so does the
        standalone real client's of dummy workers (while it is down their calls answer RPC_FAIL too). For an
        HA cluster: :func:`kvtui.mooncake.ha.leader_ready`, and kvtui's real client says it reaches the
        leader."""
        ep = self._endpoints
        if ep.ha:
            if not ha.leader_ready(ep.master, ep.masters):
                return False
            if self._cluster is not None and not self._cluster.store_reaches_master():
                return False
        return all(probe_tcp(*split_hostport(a), timeout_s=0.5) for a in (ep.master if not ep.ha else "",
                                                                          ep.real_client) if a)

    def sample_store(self) -> StoreScrape:
        return self._sampler.sample()

    def dead_process(self) -> ManagedProcess | None:
        if self._cluster is None:
            return None
        procs = self._cluster.processes
        masters = set(self._cluster.master_names()) if self.options.ha else set()
        survivor = any(p.alive() for p in procs if p.name in masters)
        return next((p for p in procs if not p.alive() and not (p.name in masters and survivor)), None)

    # -- operations ------------------------------------------------------------------------------------------
    def _embedded(self, what: str) -> EmbeddedCluster:
        if self._cluster is None:
            raise RuntimeError(f"{what} belongs to an attached cluster; kvtui does not act on it")
        return self._cluster

    def restart_master(self) -> None:
        self._embedded("the master").restart_master()

    def restart_store(self) -> bool:
        cluster = self._cluster
        if cluster is None or self.options.segment_on != "store":
            raise RuntimeError("kvtui runs no store node here (attached cluster, or the segment is on a worker)")
        names = cluster.store_names()
        for name in [n for n in names if not ((p := cluster.process(n)) is not None and p.alive())] or names[:1]:
            cluster.restart_store(name)
        return bool(self._endpoints.real_client)

    def leader(self) -> str | None:
        if self._cluster is None or not self.options.ha:
            return None
        return next((s.name for s in ha.master_states(self._endpoints.masters) if s.serving), None)

    def signal(self, name: str, sig: int) -> int:
        proc = self._embedded(name).process(name)
        if proc is None or not proc.alive():
            raise RuntimeError(f"{name} is not running")
        os.kill(proc.pid, sig)
        if sig == signals.SIGKILL:
            proc.popen.wait(10)
        return proc.pid

    def fill_store(self, *, object_bytes: int, min_object_bytes: int, max_bytes: int, hold_s: float,
                   timeout_s: float, on_start: Callable[[int], None] | None = None,
                   retry_refused_s: float | None = None, halt: threading.Event | None = None) -> dict[str, Any]:
        """Fill the store with a separate client (:mod:`kvtui.mooncake.filler`, a process of its own without a
        segment) until a put is refused, hold it ``hold_s`` seconds, then remove its objects; returns its report
        (``objects``, ``bytes`` …, with its ``pid``, ``exit_code`` and ``object_bytes``). ``retry_refused_s``: a
        store with a disk tier: refused puts are retried after a short back-off (DRAM waits for an offload) until
        both tiers are full (DRAM refuses a put and the tier evicts), ``max_bytes`` are stored or that many seconds
        passed (objects no larger than a disk bucket). ``halt`` set: the filler stops filling and holding, removes
        its objects and leaves. ``on_start(pid)``: called once it runs.
        ``RuntimeError`` when it fails or outlasts ``timeout_s``."""
        ep = self._endpoints
        log_dir = Path(ep.log_dir or "/tmp")
        self._fills += 1
        report = log_dir / f"filler-{os.getpid()}-{self._fills}.json"
        disk = self._cluster.disk if self._cluster is not None else None
        if retry_refused_s is not None and disk is not None:  # (a larger object is never offloaded: only refused)
            object_bytes = min_object_bytes = min(object_bytes, disk.bucket_bytes(len(self.store_names()) or 1))
        argv = [sys.executable, "-m", "kvtui.mooncake.filler", "--endpoints", json.dumps(ep.as_dict()),
                "--object-bytes", str(object_bytes), "--min-object-bytes", str(min_object_bytes), "--max-bytes",
                str(max_bytes), "--hold-s", str(hold_s), "--report", str(report)]
        if retry_refused_s is not None:
            argv += ["--retry-refused", "--max-fill-s", str(retry_refused_s)]
        proc = spawn("filler", argv, log_dir / "filler.log")
        if on_start is not None:
            on_start(proc.pid)
        deadline, told = time.monotonic() + timeout_s, False
        while (code := proc.popen.poll()) is None:
            if time.monotonic() > deadline:
                proc.stop(0.5)
                raise RuntimeError(f"the filler did not finish within {timeout_s:g} s")
            if halt is not None and halt.is_set() and not told:  # (it removes what it stored, then leaves)
                os.kill(proc.pid, signals.SIGUSR1)
                told = True
            time.sleep(0.05)
        try:
            out = json.loads(report.read_text())
            report.unlink()
        except (OSError, ValueError):
            out = {}
        out.update(pid=proc.pid, exit_code=code, object_bytes=object_bytes)
        if code != 0 or "error" in out:
            raise RuntimeError(f"the filler failed (exit code {code}): {out.get('error', 'see filler.log')}")
        return out

    def census(self, keys: Sequence[str]) -> KeyCensus | None:
        """Where the master lists each of ``keys`` (:func:`kvtui.mooncake.tiers.key_replicas`), with its eviction
        counters read just before (:func:`kvtui.mooncake.tiers.eviction_counts`); an HA cluster's serving master."""
        ep = self._endpoints
        url = ha.serving_url(ep.masters) if ep.ha else ep.metrics_url
        if not url:
            return None
        counts = tiers.eviction_counts(url)
        replicas = tiers.key_replicas(url, keys)
        if replicas is None:
            return None
        return KeyCensus(replicas, offloads=counts["master_evicted_key_count"] if counts else None,
                         disk_evictions=counts["master_evict_disk_replica_requests_total"] if counts else None)

    def subscribe_failovers(self, fn: Callable[[LeaderChange], None], *, snapshots: bool = True) -> Unsubscribe:
        """Call ``fn(change)`` from the leader watcher's thread for every failover kvtui did not cause
        (:class:`~kvtui.mooncake.leaderwatch.LeaderChange`); ``snapshots``: list the leader's keys every few
        seconds, for the loss check of such a failover. Starts the watcher (an HA cluster only; otherwise
        ``fn`` is never called)."""
        unsubscribe = self._changes.subscribe(fn)
        if self._endpoints.ha and not self._stopped:
            if self._leaders is None:
                self._leaders = LeaderWatcher(self._endpoints.master, self._endpoints.masters, self._changes)
                self._history.etcd_silent_s = self._leaders.etcd_silent_s
                self._leaders.start()
            self._leaders.snapshots = self._leaders.snapshots or snapshots
        return unsubscribe

    def watch_failover(self, n: int, kind: str, *, clock: Callable[[], float], ledger: AckLedger | None,
                       log: Callable[[str, str], None], hit_rate_before: float | None,
                       on_serving: Callable[[str], None] | None = None,
                       on_done: Callable[[FailoverReport], None] | None = None,
                       seen: object | None = None) -> FailoverWatch:
        leaders = self._leaders
        if leaders is not None:
            leaders.pause()

        def done(report: FailoverReport) -> None:
            if leaders is not None:
                leaders.resume()
            if on_done is not None:
                on_done(report)

        watch = FailoverWatch(n, kind, self._endpoints, clock, ledger, log, on_serving=on_serving, on_done=done,
                              history=self._history)
        if isinstance(seen, LeaderChange):
            watch.begin_seen(seen, hit_rate_before)
        else:
            watch.begin(hit_rate_before)
        watch.start()
        return watch

    def stop(self, keep_logs: bool = False) -> None:
        if self._stopped:
            return
        self._stopped = True
        if self._leaders is not None:
            self._leaders.stop()
        if self._cluster is not None:
            self._cluster.stop(keep_logs=keep_logs)

