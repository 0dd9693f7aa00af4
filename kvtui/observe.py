"""Observe mode (``kvtui watch --observe``): the master's own metrics over time, with no workload.

:class:`ObserveSession` is the monitor's frame source and controller when kvtui only watches a running
cluster: it starts no worker and no store client, and writes nothing to the store. A sampler thread reads
the master's admin HTTP endpoints once a second: ``/metrics`` (Prometheus text: keys, bytes, request and
eviction counters), ``/get_segments_detail`` (each segment's size, use and status) and ``/health`` (role,
HA state) — none of them grants a read lease (unlike ``/query_key``), so watching never pins a page against
eviction. An HA cluster (``--master etcd://…`` with every master's ``--metrics-url``, comma-separated) is
watched through the master that serves: each sample asks every master what it is (role, ``/ha_status``, a
standby's OpLog lag), etcd which leader the masters agreed on, and reads the serving leader's endpoints; a
change of leader is an event, not a restart. The rates are deltas of the master's counters between two
samples (a counter that went down means a new master process: that interval gets no rate, and the event log
says the master restarted).

Frames carry the newest sample in ``store`` (:class:`~kvtui.core.panels.StoreScrape`, its observe keys) and
its history in ``rates`` / ``series`` (one point per sample, keys :data:`SERIES`), so an observe session
records and replays like any other; ``workload`` is ``{"kind": "observe", "name": MASTER}``, which the
monitor shows as the master's dashboard instead of the page grid.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from dataclasses import replace
from typing import Any

from kvtui.core.events import EngineEvent
from kvtui.core.text import plural
from kvtui.metrics.aggregate import Aggregator
from kvtui.metrics.frame import Frame
from kvtui.metrics.producer import FrameProducer
from kvtui.mooncake import ha
from kvtui.mooncake.net import Metrics, http_get, is_etcd, parse_etcd, parse_metrics
from kvtui.mooncake.samplers import STORE_GAUGES
from kvtui.runtime.processes import ProcessSampler
from kvtui.session.recording import Recording

# master gauges and cumulative counters shown as they are (Prometheus names, upstream
# mooncake-store/src/master_metric_manager.cpp) → StoreScrape keys
GAUGES = {**STORE_GAUGES, "master_soft_pin_key_count": "soft_pinned_keys",
          "master_put_start_discard_cnt": "put_discards", "master_put_start_release_cnt": "put_releases",
          "master_remove_failures_total": "remove_failures"}
# per-second rates: the sum of these counters' deltas ÷ seconds between two samples
RATES = {
    "put_rps": ("master_put_start_requests_total", "master_batch_put_start_items_total"),
    "get_rps": ("master_get_replica_list_requests_total", "master_batch_get_replica_list_items_total"),
    "evict_kps": ("master_evicted_key_count",),
    "alloc_fail_ps": ("master_put_start_alloc_failures_total",),
    "put_fail_ps": ("master_put_start_failures_total", "master_batch_put_start_failed_items_total"),
    "get_fail_ps": ("master_get_replica_list_failures_total", "master_batch_get_replica_list_failed_items_total"),
}
EVICT_ATTEMPTS, EVICT_OK = "master_attempted_evictions_total", "master_successful_evictions_total"
GETS_VALID, GETS_ALL = "valid_get_nums_", "total_get_nums_"  # hit ratio: Δvalid ÷ Δall
#: the keys of an observe frame's ``rates`` and ``series`` (one point per sample)
SERIES = ("keys", "used_bytes", "put_rps", "get_rps", "evict_kps", "alloc_fail_ps", "get_hit_ratio")
IDENTITY = "master_key_count"  # a /metrics without it is not a Mooncake master's
SEGMENTS_KEPT = 32


class NotAMaster(ValueError):
    """``--metrics-url`` does not answer, or answers but is not a Mooncake master's admin endpoint."""


def check_master(metrics_url: str, timeout_s: float = 2.0) -> None:
    """``NotAMaster`` (one line) unless ``metrics_url/metrics`` answers 200 with the master's metrics."""
    if not metrics_url.startswith(("http://", "https://")):
        raise NotAMaster(f"--metrics-url must be an http:// URL such as http://HOST:9003, got {metrics_url!r}")
    status, body = http_get(metrics_url.rstrip("/") + "/metrics", timeout_s=timeout_s)
    if status == 0:
        raise NotAMaster(f"--metrics-url: nothing answers at {metrics_url}/metrics ({body})")
    if status != 200 or IDENTITY not in parse_metrics(body):
        raise NotAMaster(f"--metrics-url {metrics_url} is not a Mooncake master's admin endpoint (its /metrics "
                         f"answered {status} without {IDENTITY})")


def _segments(base: str, labelled: dict[str, dict[str, float]]) -> list[dict]:
    """Segments from ``/get_segments_detail`` (name, used / capacity bytes, status), else from the
    ``segment_*_bytes{segment=…}`` samples of ``/metrics``."""
    status, body = http_get(base + "/get_segments_detail", timeout_s=0.8)
    out: list[dict] = []
    if status == 200:
        try:
            for s in json.loads(body).get("segments", [])[:SEGMENTS_KEPT]:
                out.append({"name": str(s.get("segment_name", "?")),
                            "used_bytes": int(s.get("allocator_used_bytes", 0)),
                            "capacity_bytes": int(s.get("allocator_capacity_bytes") or s.get("size_bytes") or 0),
                            "status": str(s.get("status", ""))})
            return out
        except (ValueError, AttributeError, TypeError):
            out = []
    used, cap = labelled.get("segment_allocated_bytes", {}), labelled.get("segment_total_capacity_bytes", {})
    return [{"name": n, "used_bytes": int(used.get(n, 0)), "capacity_bytes": int(cap.get(n, 0)), "status": ""}
            for n in sorted(cap)[:SEGMENTS_KEPT]]


def _labelled(metrics: Metrics, names: tuple[str, ...]) -> dict[str, dict[str, float]]:
    """``{name: {segment label: value}}`` of the samples of ``names`` labelled with a segment."""
    return {name: found for name in names if (found := metrics.by_label(name, "segment"))}


class MasterSampler:
    """One sample of the master's admin endpoints per :meth:`sample` (the observe panel); events (outage,
    back, restarted, a new leader) go to ``log(kind, text)``. ``masters``: ``(name, admin URL)`` of every
    master of an HA cluster (then the serving one is sampled, ``metrics_url`` is unused); ``etcd``: its etcd
    endpoints (the leader's address as the masters agreed it, ``master_view``)."""

    def __init__(self, metrics_url: str, log, clock=time.monotonic, masters: tuple[tuple[str, str], ...] = (),
                 etcd: tuple[tuple[str, int], ...] = ()):
        self.url = metrics_url.rstrip("/")
        self.log, self._clock = log, clock
        self.masters, self.etcd = tuple(masters), tuple(etcd)
        self._prev: tuple[float, dict[str, float]] | None = None
        self.panel: dict = {"up": None}
        self.down_since: float | None = None
        self.serving: str | None = None  # the name of the master sampled last (HA)

    def _ha(self) -> tuple[str | None, dict]:
        """HA: the serving master's admin URL (None: none serves) and the panel's ``masters`` and ``leader``."""
        states = ha.master_states(self.masters, lag=True)
        serving = next((st for st in states if st.serving), None)
        part: dict = {"masters": [st.as_row() for st in states]}
        leader = ha.master_view(self.etcd, timeout_s=0.5) if self.etcd else None
        leader = leader or (serving.leader if serving is not None else None)
        if leader:
            part["leader"] = leader
        if serving is not None and serving.name != self.serving:
            if self.serving is not None:
                self.log("outage", f"{serving.name} is the leader now ({serving.url}"
                                   + (f", RPC {leader})" if leader else ")"))
            self._prev = None  # (another master's counters)
            self.serving = serving.name
        return (serving.url if serving is not None else None), part

    def sample(self) -> dict:
        """Scrape once; returns the panel (``up`` False, the rest kept, while the master does not answer)."""
        url, part = self.url, dict[str, Any]()  # (HA: the serving master's, and the masters' rows)
        if self.masters:
            found, part = self._ha()
            url = found or ""
        status, body = http_get(url + "/metrics", timeout_s=0.8) if url else (0, "no master serves")
        now = self._clock()
        if status != 200:
            if self.down_since is None:
                self.down_since = now
                self.log("outage", "no master serves (a failover is under way, or every master is down); watching "
                                   "for one" if self.masters and not url else
                                   f"master's /metrics at {url} does not answer "
                                   f"({body if status == 0 else f'HTTP {status}'}); watching for it")
            self.panel = {**self.panel, "up": False, **{k: 0.0 for k in RATES}, **part}
            return self.panel  # (the last good sample stays: a master that comes back is compared with it)
        metrics = parse_metrics(body)
        m = metrics.unlabelled()
        panel: dict = {"up": True, **part}
        for name, key in GAUGES.items():
            if name in m:
                panel[key] = int(m[name])
        restarted = self._prev is not None and any(m.get(n, 0.0) < self._prev[1].get(n, 0.0) for ns in RATES.values()
                                                   for n in ns)
        if self.down_since is not None:
            self.log("info", (f"{self.serving} serves after {now - self.down_since:.1f} s" if self.masters else
                              f"master answers again after {now - self.down_since:.1f} s"))
            self.down_since = None
        if restarted:
            self.log("outage", "the master's counters restarted: a new master process (it lost every key)")
        rates = {k: 0.0 for k in RATES}
        if self._prev is not None and not restarted and now > self._prev[0]:
            t0, prev = self._prev
            dt = now - t0
            for key, names in RATES.items():
                rates[key] = sum(max(0.0, m.get(n, 0.0) - prev.get(n, 0.0)) for n in names) / dt
            tried = m.get(EVICT_ATTEMPTS, 0.0) - prev.get(EVICT_ATTEMPTS, 0.0)
            done = m.get(EVICT_OK, 0.0) - prev.get(EVICT_OK, 0.0)
            rates["evict_fail_ps"] = max(0.0, tried - done) / dt
            gets = m.get(GETS_ALL, 0.0) - prev.get(GETS_ALL, 0.0)
            if gets > 0:
                rates["get_hit_ratio"] = max(0.0, m.get(GETS_VALID, 0.0) - prev.get(GETS_VALID, 0.0)) / gets
        panel.update(rates)
        panel["segments"] = _segments(url, _labelled(metrics, ("segment_allocated_bytes",
                                                               "segment_total_capacity_bytes")))
        hs, hbody = http_get(url + "/health", timeout_s=0.8)
        try:
            h = json.loads(hbody) if hs == 200 else {}
        except ValueError:
            h = {}
        panel["health"] = {k: h[k] for k in ("status", "role", "ha_state", "service_ready") if k in h} or (
            {"status": f"HTTP {hs}"} if hs else {})
        self._prev = (now, m)
        self.panel = panel
        return panel


class ObserveSession:
    """Watches a cluster through its master's admin endpoints: the monitor's ``FrameSource`` and (a
    subset of) its ``Controller``. ``metrics_url``: the master's admin base (``http://HOST:PORT``);
    ``master``: its RPC address (shown only), or an HA cluster's ``etcd://…`` (asked for the leader);
    ``masters``: ``(name, admin URL)`` of an HA cluster's masters (the serving one is sampled);
    ``interval_s``: seconds between samples; ``history``: points kept per series. ``pause`` / ``resume``
    stop and restart sampling; the workload controls say there is no workload; ``clear_store`` is refused
    (observe mode never writes to the store). Frames come from one
    :class:`~kvtui.metrics.producer.FrameProducer`, as a live session's do."""

    def __init__(self, metrics_url: str, master: str | None = None, *, interval_s: float = 1.0,
                 history: int = 300, header: dict | None = None, aggregator: Aggregator | None = None,
                 masters: tuple[tuple[str, str], ...] = ()):
        self.metrics_url, self.master = metrics_url.rstrip("/"), master
        self.interval_s = interval_s
        self.agg = aggregator or Aggregator()
        etcd = parse_etcd(master) if master and is_etcd(master) else ()
        self.sampler = MasterSampler(self.metrics_url, self.log, masters=masters, etcd=etcd)
        self.procs = ProcessSampler({})
        self.header = {"command": "watch", "store_mode": "observe", "master": master, "metrics_url": metrics_url,
                       **(header or {})}
        self._lock = threading.Lock()
        self._series: dict[str, deque[float]] = {k: deque(maxlen=history) for k in SERIES}
        self._seq = 0
        self._store: dict = {"up": None}
        self._proc_rows: tuple = ()
        self.paused = False
        self.producer = FrameProducer(self._build_frame, name="kvtui-observe-frames")
        self.recording = Recording(self.producer, self.recording_header, self.agg.begin_span, self.log)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="kvtui-observe", daemon=True)
        self.estimator = None  # (no request is estimated here)

    def log(self, kind: str, text: str) -> None:
        """Add an event-log line of ``kind`` (``info``, ``control``, ``error``) at the session's time now."""
        self.agg.event(EngineEvent(kind, self.agg.now(), text))

    @property
    def workload(self) -> dict:
        """The ``frame.workload`` of observe mode."""
        return {"kind": "observe", "name": self.master or self.metrics_url}

    def start(self) -> "ObserveSession":
        """Start sampling (the first sample is taken before this returns)."""
        self.sample_once()
        self._thread.start()
        through = (f"the admin endpoints of its {plural(len(self.sampler.masters), 'master')}" if self.sampler.masters
                   else self.metrics_url)
        self.log("info", f"observing {self.master or self.metrics_url} through {through}: no workload, "
                          "nothing written to the store")
        return self

    def sample_once(self) -> None:
        """Take one sample now (the sampler thread calls this every ``interval_s``)."""
        panel = self.sampler.sample()
        rows = self.procs.sample()
        with self._lock:
            self._store, self._proc_rows = panel, rows
            for k in SERIES:
                self._series[k].append(float(panel.get(k, 0.0) or 0.0))
            self._seq += 1

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            if not self.paused:
                self.sample_once()

    def frame(self) -> Frame:
        """The newest frame the producer built."""
        return self.producer.latest()

    def want(self, consumer: str, hz: float) -> None:
        """``consumer`` (the monitor, an exporter) needs ``hz`` frames a second from now on."""
        self.producer.want(consumer, hz)

    def unwant(self, consumer: str) -> None:
        """``consumer`` needs no more frames."""
        self.producer.unwant(consumer)

    def toggle_recording(self) -> tuple[bool, str | None]:
        """Ctrl+R: start or stop recording (:meth:`kvtui.session.recording.Recording.toggle`)."""
        return self.recording.toggle()

    def _build_frame(self) -> Frame:
        """A new frame: the latest sample, the history of :data:`SERIES`, kvtui's own process."""
        with self._lock:
            store, procs, seq = dict(self._store), self._proc_rows, self._seq
            series = {k: tuple(v) for k, v in self._series.items()}
        status = {"mode": "live", "store_mode": "attached", "store_up": store.get("up"), "paused": self.paused,
                  "layout": "", "finished": False}
        if store.get("up") is False:
            status["outage"] = True
        path = self.recording.path
        if path is not None:
            status.update(recording=True, record_path=path)
        f = self.agg.frame(store=store, procs=procs, workload=self.workload, status=status)
        rates = {k: (v[-1] if v else 0.0) for k, v in series.items()}
        return replace(f, rates=rates, series=series, series_seq=seq)

    def final_frame(self) -> Frame:
        """The last frame: every reader sees it from now on."""
        final = self.producer.finish()
        assert final is not None
        return final

    # -- Controller -------------------------------------------------------------------------------------
    def send(self, control) -> None:
        """Observe mode has no workload: every knob control is refused with an event-log line."""
        self.log("control", "observe mode: no workload to change")

    def pause(self) -> None:
        """Stop sampling (the frames keep the last sample)."""
        self.paused = True
        self.log("control", "sampling paused")

    def resume(self) -> None:
        """Sample again."""
        self.paused = False
        self.log("control", "sampling resumed")

    def clear_store(self) -> int:
        """Refused: observe mode never writes to the store (``RuntimeError``)."""
        raise RuntimeError("observe mode writes nothing to the store")

    def recording_header(self) -> dict:
        """The header of a file recorded from now: the session's, with the observed master as workload."""
        return {**self.header, "workload": self.workload, "workload_now": self.workload}

    def stop(self, final: Frame | None = None) -> None:
        """Stop sampling and recording (safe to call twice)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(self.interval_s + 2)
        if final is None and self.recording.path is not None:
            final = self.final_frame()
        self.recording.stop(final)
        self.producer.stop()
