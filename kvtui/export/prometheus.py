"""The Prometheus exporter: serves the figures of the newest frame on ``http://HOST:PORT/metrics``.

Each scrape builds every family of :data:`kvtui.export.names.METRICS` from one frame of the source (a live
or observe session's ``frame()``), so a scrape is consistent within itself and its counters are the same
totals the monitor and the summary show: at the end of a run :meth:`PrometheusExporter.pin` fixes the
frame the summary was made from, and every later scrape returns exactly its values. Latency histograms come
from the whole-session HdrHistogram snapshots: cumulative counts at the ×2 bucket bounds of
:data:`~kvtui.export.names.LATENCY_BUCKETS_S` (a value falls in the bucket of its HdrHistogram bucket's
lower bound, 3 significant digits), ``_sum`` = mean × count (the mean of HdrHistogram bucket midpoints).

Built on ``prometheus-client`` (its HTTP server and text format) with a registry of its own: no process or
Python collectors, only kvtui's metrics.
"""

from __future__ import annotations

import math
import threading
from typing import TYPE_CHECKING, Callable

from kvtui.core.misses import NAMES, REASONS
from kvtui.core.pages import TIERS
from kvtui.export.names import LATENCY_BUCKETS_S, METRICS, MISS_SOURCES, Metric
from kvtui.metrics import figures as fig

if TYPE_CHECKING:
    from wsgiref.simple_server import WSGIServer

    from prometheus_client.metrics_core import Metric as PromMetric

MISS_REASON_NAMES = tuple(NAMES[r] for r in REASONS)
WORKER_INDEX = "0"  # the worker label's only value: each series is its role's total over every worker


class ExporterError(RuntimeError):
    """The exporter cannot listen where it was asked to (one line)."""


def parse_listen(text: str, default_host: str = "127.0.0.1") -> tuple[str, int]:
    """``[HOST:]PORT`` → ``(host, port)``; ``ValueError`` (one line) if the port is not 0–65535 or the text is
    malformed. ``[::1]:9400`` gives an IPv6 host; port 0 means "a free one" (the exporter's :attr:`port`)."""
    text = text.strip()
    host, sep, port = text.rpartition(":")
    if not sep:
        host, port = default_host, text
    host = host.strip("[]") or default_host
    try:
        n = int(port)
    except ValueError:
        raise ValueError(f"expected [HOST:]PORT, e.g. 9400 or 127.0.0.1:9400, got {text!r}") from None
    if not 0 <= n <= 65535:
        raise ValueError(f"port {n} is outside 0-65535")
    return host, n


def _value(frame, path: str) -> float | None:
    """The number at ``panel.key`` of ``frame`` (None when absent or not a number; booleans are 1 or 0)."""
    panel, _, key = path.strip().partition(".")
    d = getattr(frame, panel, None) or {}
    v = d.get(key) if isinstance(d, dict) else None
    if isinstance(v, bool):
        return 1.0 if v else 0.0
    if isinstance(v, (int, float)) and not (isinstance(v, float) and math.isnan(v)):
        return float(v)
    return None


def gauge_value(frame, m: Metric) -> float | None:
    """A gauge's value in ``frame`` (a ratio ``A / B`` is None when B is 0 or either is absent; an absent key
    gives the metric's ``default``: ``kvtui_master_outage`` is 0 until an outage)."""
    if "/" in m.source:
        a, b = (_value(frame, p) for p in m.source.split("/", 1))
        return a / b if a is not None and b else None
    v = _value(frame, m.source)
    return m.default if v is None else v


def histogram_buckets(snap) -> tuple[list[tuple[str, float]], float]:
    """``([(le, cumulative count)…, ("+Inf", count)], sum in seconds)`` of a latency snapshot (ms buckets)."""
    buckets = list(getattr(snap, "buckets", ()) or ())
    out, i, cum = [], 0, 0
    for le in LATENCY_BUCKETS_S:
        while i < len(buckets) and buckets[i][0] <= le * 1000 * (1 + 1e-9):
            cum += int(buckets[i][1])
            i += 1
        out.append((_le(le), float(cum)))
    count = int(getattr(snap, "count", 0) or 0)
    out.append(("+Inf", float(count)))
    return out, float(getattr(snap, "mean", 0.0) or 0.0) * count / 1000.0


def _le(v: float) -> str:
    return f"{v:.7g}"


class _Collector:
    """A ``prometheus-client`` collector over one frame per scrape."""

    def __init__(self, exporter: "PrometheusExporter"):
        self.exporter = exporter

    def describe(self):  # no families before a source is attached: registering must not call collect()
        return []

    def collect(self):
        frame = self.exporter.current_frame()
        if frame is None:
            return
        yield from families(frame)


def families(frame) -> list[PromMetric]:
    """The metric families of ``frame`` (``prometheus_client.core`` objects), in :data:`METRICS` order."""
    from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily

    observe = (frame.workload or {}).get("kind") == "observe"
    out: list[PromMetric] = []
    tiers = fig.tiered(frame.totals or {})
    for m in METRICS:
        if m.when in ("workload", "hot") and observe:
            continue  # no workload: kvtui's own counters would only say 0
        if m.when == "hot" and not fig.replicated(frame.totals or {}):
            continue  # a store that does not replicate hot keys: no hit has a second replica to count
        worker = [m.role, WORKER_INDEX] if m.role else []
        if m.source.startswith("tiers."):  # one series per tier, on a store with a disk tier
            if tiers:
                out.append(_tier_family(frame, m))
        elif m.kind == "counter":
            fam = CounterMetricFamily(m.family, m.help, labels=list(m.labels))
            if m.source == "errors":
                for code, n in sorted((frame.errors or {}).items()):
                    fam.add_metric([str(code)], float(n))
            elif m.source in MISS_SOURCES:  # one series per reason, once requests carried reasons
                totals = frame.totals or {}
                for reason in MISS_REASON_NAMES:
                    key = MISS_SOURCES[m.source] + reason
                    if key in totals:
                        fam.add_metric([reason], float(totals[key]))
            else:
                v = _value(frame, m.source)
                fam.add_metric(worker, (v or 0.0) * m.scale)
            out.append(fam)
        elif m.kind == "histogram":
            hist = HistogramMetricFamily(m.family, m.help, labels=list(m.labels))
            key = m.source.partition(".")[2]
            buckets, total = histogram_buckets((frame.latency or {}).get(key))
            hist.add_metric(worker, buckets, total)
            out.append(hist)
        else:
            v = gauge_value(frame, m)
            if v is not None:
                gauge = GaugeMetricFamily(m.family, m.help)
                gauge.add_metric([], v)
                out.append(gauge)
    return out



def _tier_family(frame, m: Metric) -> PromMetric:
    """The family of tier metric ``m`` (a counter of the totals or the reload histogram), one series per tier."""
    from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily

    key = m.source.partition(".")[2]
    if m.kind == "histogram":
        hist = HistogramMetricFamily(m.family, m.help, labels=list(m.labels))
        for tier in TIERS:
            buckets, total = histogram_buckets((frame.latency or {}).get(fig.TIER_LATENCY_KEYS[tier]))
            hist.add_metric([tier], buckets, total)
        return hist
    fam = CounterMetricFamily(m.family, m.help, labels=list(m.labels))
    totals = frame.totals or {}
    for tier in TIERS:
        fam.add_metric([tier], float(totals.get(fig.TIER_TOTALS[key].format(tier=tier), 0.0)) * m.scale)
    return fam


class PrometheusExporter:
    """Serves ``/metrics`` on ``host:port`` from a frame source (``start`` binds, ``attach`` gives the source).

    Binding happens first, before anything else starts, so a busy port is a one-line error at once
    (:class:`ExporterError`). Until :meth:`attach`, scrapes return no metric. ``frame_fn``: called once per
    scrape from the HTTP server's thread; it returns the newest frame the session's producer built
    (``LiveSession.frame``, ``ObserveSession.frame``: reading it builds nothing, so a scrape changes nothing
    the monitor or a recording shows); :meth:`pin` replaces it by one fixed frame (the final one of a run)."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0):
        self.host, self.requested_port = host, port
        self.port = port
        self._frame_fn: Callable[[], object] | None = None
        self._pinned = None
        self._lock = threading.Lock()
        self._server: WSGIServer | None = None
        self._thread: threading.Thread | None = None
        self.scrapes = 0
        self.last_error: str | None = None

    @property
    def url(self) -> str:
        """``http://HOST:PORT/metrics``."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/metrics"

    def start(self) -> "PrometheusExporter":
        """Listen (``ExporterError`` if the address cannot be bound)."""
        from prometheus_client import CollectorRegistry, start_http_server

        registry = CollectorRegistry(auto_describe=False)
        registry.register(_Collector(self))
        try:
            self._server, self._thread = start_http_server(self.requested_port, addr=self.host, registry=registry)
        except OSError as exc:
            raise ExporterError(f"cannot listen on {self.host}:{self.requested_port} "
                                f"({exc.strerror or exc})") from None
        self.port = self._server.server_address[1]
        return self

    def attach(self, frame_fn: Callable[[], object]) -> None:
        """Serve the frames of ``frame_fn`` from now on."""
        with self._lock:
            self._frame_fn, self._pinned = frame_fn, None

    def pin(self, frame) -> None:
        """Serve exactly ``frame`` from now on (the frame a run's summary was made from)."""
        with self._lock:
            self._pinned = frame

    def current_frame(self):
        """The frame of this scrape: the pinned one, else a fresh one from the source (None before attach or
        when the source fails: the scrape then has no metric, and :attr:`last_error` says why)."""
        with self._lock:
            pinned, fn = self._pinned, self._frame_fn
        self.scrapes += 1
        if pinned is not None:
            return pinned
        if fn is None:
            return None
        try:
            return fn()
        except Exception as exc:  # the source is another component: a failed scrape must not kill the server
            self.last_error = f"{type(exc).__name__}: {exc}"
            return None

    def stop(self) -> None:
        """Stop serving and free the port (safe to call twice)."""
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()
        if self._thread is not None:
            self._thread.join(2)
            self._thread = None
