"""The Store panel's data: :class:`StoreSampler` reads the master's Prometheus ``/metrics`` (never
``is_exist``-style probes, which grant leases and would pin pages against eviction). Counter rates are computed
from deltas. With the masters of an HA cluster it asks each what it is (``/health``, a standby's OpLog lag) and
reads the serving leader's ``/metrics``: the panel's ``masters`` and ``leader``. A store with a disk tier adds the
tier's figures (:data:`TIER_GAUGES`, the disk's capacity), one that replicates hot keys the master's copies
(:data:`HOT_GAUGES`).
"""

from __future__ import annotations

import time
from typing import Literal

from kvtui.core.panels import MasterRow, StoreScrape
from kvtui.mooncake.ha import master_states
from kvtui.mooncake.net import http_get, parse_metrics

# Prometheus names of the Mooncake master's /metrics (served on its --metrics_port; upstream
# mooncake-store/src/master_metric_manager.cpp) → panel fields.
StoreGaugeKey = Literal["keys", "used_bytes", "capacity_bytes", "evicted_keys", "alloc_failures", "clients"]
StoreRateKey = Literal["put_rps", "get_rps"]
StoreTierKey = Literal["disk_used_bytes", "offloaded_keys", "disk_evicted_keys", "promoted_keys", "mem_cache_hits",
                       "disk_cache_hits"]
STORE_GAUGES: dict[str, StoreGaugeKey] = {"master_key_count": "keys", "master_allocated_bytes": "used_bytes",
                                           "master_total_capacity_bytes": "capacity_bytes",
                                           "master_evicted_key_count": "evicted_keys",
                                           "master_put_start_alloc_failures_total": "alloc_failures",
                                           "master_active_clients": "clients"}
STORE_COUNTERS: dict[str, StoreRateKey] = {"master_put_start_requests_total": "put_rps",
                                           "master_batch_put_start_items_total": "put_rps",
                                           "master_get_replica_list_requests_total": "get_rps",
                                           "master_batch_get_replica_list_items_total": "get_rps"}
# a store with a disk tier (kvtui.metrics.figures.STORE_DISK): on this wheel the master's DRAM evictions are its
# offloads (offload_on_evict), and its hit counters count a replica-descriptor query as a hit too
TIER_GAUGES: dict[str, StoreTierKey] = {"master_allocated_file_size_bytes": "disk_used_bytes",
                                        "master_evicted_key_count_mem": "offloaded_keys",
                                        "master_evict_disk_replica_requests_total": "disk_evicted_keys",
                                        "master_promotion_completed_total": "promoted_keys",
                                        "mem_cache_hit_nums_": "mem_cache_hits",
                                        "file_cache_hit_nums_": "disk_cache_hits"}
# hot-key replication (kvtui.metrics.figures.STORE_HOT): the master's only figures of it on this wheel
StoreHotKey = Literal["copies_started", "copies_done"]
HOT_GAUGES: dict[str, StoreHotKey] = {"master_copy_start_requests_total": "copies_started",
                                      "master_copy_end_requests_total": "copies_done"}
DISK_CAPACITY = "master_total_file_capacity_bytes"
NO_DISK_CAP = 2 << 40  # what DISK_CAPACITY says when the master knows no cap (2 TiB): no capacity


class StoreSampler:
    """Turns successive ``/metrics`` scrapes into the store panel (:class:`kvtui.core.panels.StoreScrape`).

    ``masters``: ``(name, admin URL)`` of every master of an HA cluster: each sample asks them all what they
    are (:func:`kvtui.mooncake.ha.master_states`, the panel's ``masters``) and scrapes the one serving (none
    serving: ``up`` False, a failover is under way); ``metrics_url`` is then unused. ``tiered``: the store has a
    disk tier (the panel gets its figures); ``disk_bytes``: its capacity when kvtui set it (its embedded store;
    0: the master's figure, unless it says it knows none). ``replicated``: the master replicates hot keys (the
    panel gets its copies, :data:`HOT_GAUGES`; without it, once the master says it copied one: an attached
    master's own setting)."""

    def __init__(self, metrics_url: str | None, masters: tuple[tuple[str, str], ...] = (), *, tiered: bool = False,
                 disk_bytes: int = 0, replicated: bool = False):
        self.url = metrics_url
        self.masters = tuple(masters)
        self.tiered, self.disk_bytes, self.replicated = tiered, int(disk_bytes), replicated
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
        m = parse_metrics(body)
        panel: StoreScrape = {"up": True, **(ha_part or {})}
        for name, field in STORE_GAUGES.items():
            value = m.value(name)
            if value is not None:
                panel[field] = int(value)
        if self.tiered:
            for name, tier_field in TIER_GAUGES.items():
                value = m.value(name)
                if value is not None:
                    panel[tier_field] = int(value)
            capacity = self.disk_bytes or int(m.value(DISK_CAPACITY) or 0)
            if capacity and capacity != NO_DISK_CAP:
                panel["disk_capacity_bytes"] = capacity
        hot = {field: int(v) for name, field in HOT_GAUGES.items() if (v := m.value(name)) is not None}
        if self.replicated or any(hot.values()):
            for hot_field, n in hot.items():
                panel[hot_field] = n
        counters = {name: v for name in STORE_COUNTERS if (v := m.value(name)) is not None}
        rates: dict[StoreRateKey, float] = {"put_rps": 0.0, "get_rps": 0.0}
        if self._prev is not None and self._scraped == url:
            t0, prev = self._prev
            dt = now - t0
            for name, rate in STORE_COUNTERS.items():
                if name in counters and name in prev and dt > 0:
                    rates[rate] += max(0.0, counters[name] - prev[name]) / dt
        panel["put_rps"], panel["get_rps"] = rates["put_rps"], rates["get_rps"]
        self._prev, self._scraped = (now, counters), url
        self.panel = panel
        return panel

    def _ask_masters(self) -> tuple[str | None, StoreScrape]:
        """The serving master's admin URL (None: none serves) and the panel's ``masters`` and ``leader``."""
        states = master_states(self.masters, lag=True)
        rows: list[MasterRow] = [s.as_row() for s in states]
        serving = next((s for s in states if s.serving), None)
        part: StoreScrape = {"masters": rows}
        leader = serving.leader if serving is not None else next((s.leader for s in states if s.leader), None)
        if leader:
            part["leader"] = leader
        return (serving.url if serving is not None else None), part
