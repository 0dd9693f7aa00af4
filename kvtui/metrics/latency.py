"""Latency recording with HdrHistogram (microsecond resolution, 3 significant digits)."""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass

import numpy as np
from hdrh.histogram import HdrHistogram

from kvtui.metrics.summary import LatencySummary

_MAX_US = 3_600_000_000  # one hour


@dataclass(frozen=True)
class LatencySnapshot:
    """A latency distribution at one moment. Times in ms.

    ``buckets``: ``((upper_ms, count), ...)`` over log-spaced (×2) bucket bounds from 0.0625 ms;
    ``p50``/``p90``/``p99``/``max``/``mean`` are HdrHistogram's values (0 when empty).
    """

    count: int
    p50: float
    p90: float
    p99: float
    max: float
    mean: float
    min: float
    buckets: tuple[tuple[float, int], ...]

    def as_dict(self) -> LatencySummary:
        """The JSON summary form: count, min, p50, p90, p99, mean, max (ms)."""
        return {"count": self.count, "min": self.min, "p50": self.p50, "p90": self.p90, "p99": self.p99,
                "mean": self.mean, "max": self.max}


EMPTY = LatencySnapshot(0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, ())


class LatencyRecorder:
    """Records latencies (ms) into an HdrHistogram; :meth:`snapshot` summarises them."""

    def __init__(self) -> None:
        self.hist = HdrHistogram(1, _MAX_US, 3)

    def record(self, ms: float) -> None:
        """Record one latency in milliseconds (clamped to 1 µs .. 1 h)."""
        us = int(round(ms * 1000.0))
        self.hist.record_value(min(max(us, 1), _MAX_US))

    def merge(self, other: "LatencyRecorder") -> None:
        """Add another recorder's values."""
        self.hist.add(other.hist)

    def reset(self) -> None:
        """Forget every value. (HdrHistogram's own ``reset`` zeroes its 23,552 counters in a Python loop; this
        does the same state change with one vectorised fill.)"""
        h = self.hist
        np.ctypeslib.as_array(h.counts)[:] = 0
        h.total_count = 0
        h.min_value = sys.maxsize
        h.max_value = 0
        h.start_time_stamp_msec = sys.maxsize
        h.end_time_stamp_msec = 0

    @property
    def count(self) -> int:
        """Values recorded."""
        return int(self.hist.get_total_count())

    def snapshot(self) -> LatencySnapshot:
        """Percentiles and log-spaced buckets of what was recorded (vectorised over HdrHistogram's counts).

        A percentile is the highest value equivalent to the bucket where the cumulative count first reaches
        ``ceil(p/100 · count)`` (HdrHistogram's definition, within its 3-significant-digit precision).
        """
        h = self.hist
        n = h.get_total_count()
        if n == 0:
            return EMPTY
        counts = np.ctypeslib.as_array(h.counts)
        idx = np.nonzero(counts)[0]
        cnt = counts[idx].astype(np.int64)
        b = (idx >> h.sub_bucket_half_count_magnitude) - 1
        s = (idx & (h.sub_bucket_half_count - 1)) + h.sub_bucket_half_count
        neg = b < 0
        s[neg] -= h.sub_bucket_half_count
        b[neg] = 0
        shift = (b + h.unit_magnitude).astype(np.int64)
        lo_us = s.astype(np.int64) << shift
        hi_us = lo_us + (np.int64(1) << shift) - 1
        cum = np.cumsum(cnt)
        total = int(cum[-1])

        def pct(p: float) -> float:
            target = max(1, math.ceil(p / 100.0 * total))
            return float(hi_us[int(np.searchsorted(cum, target))]) / 1000.0

        mean = float((cnt * (lo_us + hi_us) / 2).sum() / total) / 1000.0
        k = np.maximum(0, np.ceil(np.log2(np.maximum(lo_us / 1000.0, 1e-9) / 0.0625))).astype(np.int64)
        per = np.bincount(k, weights=cnt).astype(np.int64)
        first = int(k.min())
        buckets = tuple((0.0625 * 2.0**j, int(per[j])) for j in range(first, len(per)))
        return LatencySnapshot(count=total, p50=pct(50), p90=pct(90), p99=pct(99), max=float(hi_us[-1]) / 1000.0,
                               mean=mean, min=float(lo_us[0]) / 1000.0, buckets=buckets)
