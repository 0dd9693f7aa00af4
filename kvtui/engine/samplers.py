"""Slow-changing panels, sampled on a background thread at ~1 Hz so no view ever waits on them.

* :class:`StoreSampler` reads the master's Prometheus ``/metrics`` (never ``is_exist``-style probes, which
  grant leases and would pin pages against eviction). Counter rates are computed from deltas. With the masters
  of an HA cluster it asks each what it is (``/health``, a standby's OpLog lag) and reads the serving leader's
  ``/metrics``: the panel's ``masters`` and ``leader``.
* :class:`ProcessSampler` reads CPU % and RSS of every process kvtui runs with psutil.
"""

from __future__ import annotations

import threading
import time
from typing import Literal

import psutil

from kvtui.core.panels import MasterRow, ProcRow, StoreScrape
from kvtui.engine.cluster import http_get

# Prometheus names of the Mooncake master's /metrics (served on its --metrics_port; upstream
# mooncake-store/src/master_metric_manager.cpp) → panel fields.
StoreGaugeKey = Literal["keys", "used_bytes", "capacity_bytes", "evicted_keys", "alloc_failures", "clients"]
StoreRateKey = Literal["put_rps", "get_rps"]
STORE_GAUGES: dict[str, StoreGaugeKey] = {"master_key_count": "keys", "master_allocated_bytes": "used_bytes",
                                           "master_total_capacity_bytes": "capacity_bytes",
                                           "master_evicted_key_count": "evicted_keys",
                                           "master_put_start_alloc_failures_total": "alloc_failures",
                                           "master_active_clients": "clients"}
STORE_COUNTERS: dict[str, StoreRateKey] = {"master_put_start_requests_total": "put_rps",
                                           "master_batch_put_start_items_total": "put_rps",
                                           "master_get_replica_list_requests_total": "get_rps",
                                           "master_batch_get_replica_list_items_total": "get_rps"}


def parse_prometheus(text: str) -> dict[str, float]:
    """Unlabelled samples of a Prometheus text exposition: ``{name: value}`` (labelled lines are summed)."""
    out: dict[str, float] = {}
    for line in text.splitlines():
        if not line or line[0] == "#":
            continue
        parts = line.rsplit(" ", 1)
        if len(parts) != 2:
            continue
        name = parts[0].split("{", 1)[0]
        try:
            value = float(parts[1])
        except ValueError:
            continue
        out[name] = out.get(name, 0.0) + value if "{" in parts[0] else value
    return out


class StoreSampler:
    """Turns successive ``/metrics`` scrapes into the store panel (:class:`kvtui.core.panels.StoreScrape`).

    ``masters``: ``(name, admin URL)`` of every master of an HA cluster: each sample asks them all what they
    are (:func:`kvtui.engine.ha.master_states`, the panel's ``masters``) and scrapes the one serving (none
    serving: ``up`` False, a failover is under way); ``metrics_url`` is then unused."""

    def __init__(self, metrics_url: str | None, masters: tuple[tuple[str, str], ...] = ()):
        self.url = metrics_url
        self.masters = tuple(masters)
        self._prev: tuple[float, dict[str, float]] | None = None
        self._scraped: str | None = None  # the URL the counters of _prev came from (a new leader: new counters)
        self.panel: StoreScrape = {"up": None} if metrics_url or masters else {}

    def sample(self) -> StoreScrape:
        """Scrape once; returns the panel (``up`` False when the master does not answer)."""
        url, ha_part = self.url, None
        if self.masters:
            url, ha_part = self._ask_masters()
        if not url:
            if self.masters:  # (none serves: a failover is under way)
                self.panel = {**self.panel, "up": False, **(ha_part or {})}
            return self.panel
        status, body = http_get(url + "/metrics", timeout_s=0.8)
        now = time.monotonic()
        if status != 200:
            self.panel = {**self.panel, "up": False, **(ha_part or {})}
            return self.panel
        m = parse_prometheus(body)
        panel: StoreScrape = {"up": True, **(ha_part or {})}
        for name, field in STORE_GAUGES.items():
            if name in m:
                panel[field] = int(m[name])
        rates: dict[StoreRateKey, float] = {"put_rps": 0.0, "get_rps": 0.0}
        if self._prev is not None and self._scraped == url:
            t0, prev = self._prev
            dt = now - t0
            for name, rate in STORE_COUNTERS.items():
                if name in m and name in prev and dt > 0:
                    rates[rate] += max(0.0, m[name] - prev[name]) / dt
        panel["put_rps"], panel["get_rps"] = rates["put_rps"], rates["get_rps"]
        self._prev, self._scraped = (now, m), url
        self.panel = panel
        return panel

    def _ask_masters(self) -> tuple[str | None, StoreScrape]:
        """The serving master's admin URL (None: none serves) and the panel's ``masters`` and ``leader``."""
        from kvtui.engine.ha import master_states

        states = master_states(self.masters, lag=True)
        rows: list[MasterRow] = [s.as_row() for s in states]
        serving = next((s for s in states if s.serving), None)
        part: StoreScrape = {"masters": rows}
        leader = serving.leader if serving is not None else next((s.leader for s in states if s.leader), None)
        if leader:
            part["leader"] = leader
        return (serving.url if serving is not None else None), part


class ProcessSampler:
    """CPU % (of one core) and RSS bytes of named processes; call :meth:`sample` about once a second.
    ``hosts``: ``{name: address}`` of processes on emulated hosts (:mod:`kvtui.engine.hosts`)."""

    def __init__(self, pids: dict[str, int], hosts: dict[str, str] | None = None):
        self._procs: dict[str, psutil.Process] = {}
        self.hosts = dict(hosts or {})
        self.set_pids(pids)

    def set_pids(self, pids: dict[str, int]) -> None:
        """Track these ``{name: pid}`` (kvtui itself is always included)."""
        import os

        pids = {"kvtui": os.getpid(), **pids}
        procs = {}
        for name, pid in pids.items():
            try:
                p = psutil.Process(pid)
                p.cpu_percent(None)  # prime: the first call always returns 0
                procs[name] = p
            except psutil.Error:
                pass
        self._procs = procs

    def sample(self) -> tuple[ProcRow, ...]:
        """One :class:`kvtui.core.panels.ProcRow` per process: ``({"name", "pid", "cpu_percent", "rss_bytes",
        "alive"}, ...)``, with ``"host"`` for a process on an emulated host."""
        rows: list[ProcRow] = []
        for name, p in self._procs.items():
            row: ProcRow
            try:
                with p.oneshot():
                    row = {"name": name, "pid": p.pid, "cpu_percent": p.cpu_percent(None),
                           "rss_bytes": p.memory_info().rss, "alive": p.is_running()}
            except psutil.Error:
                row = {"name": name, "pid": p.pid, "cpu_percent": 0.0, "rss_bytes": 0, "alive": False}
            if name in self.hosts:
                row["host"] = self.hosts[name]
            rows.append(row)
        return tuple(rows)


class PanelThread:
    """Runs the samplers every ``interval_s`` on a daemon thread; :attr:`store` / :attr:`procs` hold the latest."""

    def __init__(self, store: StoreSampler, procs: ProcessSampler, interval_s: float = 1.0):
        self.store_sampler, self.proc_sampler = store, procs
        self.interval_s = interval_s
        self.store: StoreScrape = store.panel
        self.procs: tuple[ProcRow, ...] = ()
        self._stop = threading.Event()
        self._sampling = threading.Lock()
        self._thread = threading.Thread(target=self._loop, name="kvtui-panels", daemon=True)

    def start(self) -> "PanelThread":
        """Start sampling."""
        self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.is_set():
            with self._sampling:  # (refresh_store may sample from another thread)
                self.store = self.store_sampler.sample()
            self.procs = self.proc_sampler.sample()
            self._stop.wait(self.interval_s)

    def refresh_store(self) -> StoreScrape:
        """Sample the store now, on the caller's thread (≤ 0.8 s), and keep it as :attr:`store`: a final frame
        then shows the store as the run left it (keys, bytes, evictions), not as the last periodic scrape (up
        to ``interval_s`` old) saw it. The put and get rates stay those of the last full interval: over the
        fraction of a second since that scrape they would be noise."""
        before = self.store
        with self._sampling:
            store = StoreScrape(**self.store_sampler.sample())
        for rate in ("put_rps", "get_rps"):
            if rate in before:
                store[rate] = before[rate]
        self.store = store
        return store

    def stop(self) -> None:
        """Stop sampling (returns within one interval)."""
        self._stop.set()
        self._thread.join(self.interval_s + 1)
