"""Latency histograms (prefix reload, publish, probe) on one shared log-scale axis.

Buckets are log-spaced (×2 per bucket, ``snapshot.buckets`` = ``((upper_ms, count), …)``). All three
histograms are drawn over the same range of buckets (the union of their non-empty ranges) with the same
columns per bucket, so a bar at one column means the same latency in each; one tick row under the last
histogram labels that axis (``250µs 1ms 4ms …``). Bars are coloured by percentile region (up to the p50
bucket, up to p90, up to p99, beyond); an axis row under each histogram puts ▲ at its p50, p90 and p99
(placed by log interpolation inside their bucket), in the colours of the ``p50 … p99`` labels of its title,
which always shows the sample count (``n 1,234``, or ``no samples yet``). The reload histogram has only
reloads that read pages; the requests whose probe found no leading page (``probe-only``, no read) and those
whose read loaded no usable page are counted beside it, over the same window.

On a store with a disk tier the reload's parts come right under it (``└ mem``, ``└ disk``: each reload's time
in each tier it loaded a page from, :data:`kvtui.metrics.figures.TIER_RELOAD`), on the same axis, when the panel
has a line for each of them (the header says the split at any size).

The widget adapts to its height: with ``L`` lines per kind it draws one line per kind (``L == 1``: name,
bars, count and p50), a title and a bar row (``L == 2``), or a title, ``L - 2`` bar rows and the marker axis.
"""

from __future__ import annotations

import math
from typing import ClassVar

from rich.text import Text
from textual.widget import Widget

from kvtui.metrics.figures import LATENCY, PROBE_ONLY, TIER_LATENCY_KEYS, UNUSABLE
from kvtui.metrics.latency import EMPTY, LatencySnapshot
from kvtui.tui.fmt import fmt_count, fmt_int, fmt_ms
from kvtui.tui.widgets.styled import CachedStyles

KINDS = tuple((f.key, f.label) for f in LATENCY)  # (Frame.latency key, label): kvtui.metrics.figures
TIER_KINDS = ((TIER_LATENCY_KEYS["memory"], "└ mem"), (TIER_LATENCY_KEYS["disk"], "└ disk"))  # a disk tier's rows
BLOCKS = " ▁▂▃▄▅▆▇█"
REGIONS = ("latency--p50", "latency--p90", "latency--p99", "latency--tail")
BASE_MS = 0.0625  # bucket j holds (BASE_MS · 2^(j-1), BASE_MS · 2^j] ms (kvtui.metrics.latency)
ONE_MS_EXP = 4  # BASE_MS · 2^4 = 1 ms: the tick labels are anchored there
NAME_W = 8


def merge_buckets(buckets: tuple, columns: int) -> list[tuple[float, int]]:
    """Merge neighbouring bucket pairs until there are at most ``columns`` (each keeps its upper bound)."""
    out = [(float(u), int(c)) for u, c in buckets]
    while len(out) > max(1, columns):
        out = [(out[min(i + 1, len(out) - 1)][0], sum(c for _, c in out[i:i + 2])) for i in range(0, len(out), 2)]
    return out


def bucket_of(value: float, buckets: list[tuple[float, int]]) -> int:
    """Index of the bucket holding ``value`` (HdrHistogram values may overshoot a bound by its precision)."""
    for i, (upper, _) in enumerate(buckets):
        if value <= upper * 1.01:
            return i
    return len(buckets) - 1


def bar_rows(counts: list[int], rows: int) -> list[list[int]]:
    """Eighth-block levels (0..8) per row (top row first) for bars scaled to the largest count."""
    top = max(counts, default=0)
    if top <= 0 or rows <= 0:
        return [[0] * len(counts) for _ in range(max(rows, 0))]
    eighths = [max(1, round(c / top * rows * 8)) if c else 0 for c in counts]
    return [[min(8, max(0, e - (rows - 1 - r) * 8)) for e in eighths] for r in range(rows)]


def _exp(upper_ms: float) -> int:
    """Bucket index ``j`` of a bucket's upper bound ``BASE_MS · 2^j``."""
    return int(round(math.log2(upper_ms / BASE_MS)))


def tick_text(ms: float) -> str:
    """A tick label without spaces: ``'250µs'``, ``'1ms'``, ``'16ms'``, ``'1s'``."""
    if ms >= 1000:
        return f"{ms / 1000:.3g}s"
    if ms >= 1:
        return f"{ms:.3g}ms"
    return f"{ms * 1000:.3g}µs"


class Axis:
    """The shared x-axis: buckets ``j_lo … j_hi`` merged ``f`` at a time into ``n`` columns groups of ``cw``
    cells, over ``width`` cells."""

    def __init__(self, snaps: list[LatencySnapshot], width: int) -> None:
        exps = [_exp(u) for s in snaps if s.count for u, _ in s.buckets]
        self.width = max(1, width)
        self.empty = not exps
        self.j_lo, j_hi = (min(exps), max(exps)) if exps else (ONE_MS_EXP, ONE_MS_EXP)
        nb = j_hi - self.j_lo + 1
        self.f = 1
        while math.ceil(nb / self.f) > self.width:
            self.f *= 2
        self.n = math.ceil(nb / self.f)
        self.cw = max(1, min(8, self.width // self.n))

    @property
    def used(self) -> int:
        """Cells the buckets take."""
        return self.n * self.cw

    def counts(self, snap: LatencySnapshot) -> list[int]:
        """``snap``'s counts per column group."""
        out = [0] * self.n
        for u, c in snap.buckets:
            m = (_exp(u) - self.j_lo) // self.f
            if 0 <= m < self.n:
                out[m] += int(c)
        return out

    def col(self, ms: float) -> int:
        """The cell of latency ``ms`` (log interpolation; clipped to the used cells)."""
        if ms <= 0:
            return 0
        pos = (math.log2(ms / BASE_MS) - (self.j_lo - 1)) / self.f  # in column groups from the left edge
        return max(0, min(self.used - 1, int(pos * self.cw)))

    def group_of(self, ms: float) -> int:
        return min(self.n - 1, self.col(ms) // self.cw)

    def ticks(self) -> list[tuple[int, str]]:
        """(cell, label) of the labelled boundaries, anchored at 1 ms and spaced so that no two labels
        touch; :meth:`label_start` is where a label is drawn."""
        labels = [(m * self.cw, tick_text(BASE_MS * 2.0 ** (self.j_lo - 1 + m * self.f))) for m in range(self.n + 1)]
        longest = max(len(t) for _, t in labels)
        every = max(1, math.ceil((longest + 1) / self.cw))
        phase = (ONE_MS_EXP - (self.j_lo - 1)) // self.f % every
        out: list[tuple[int, str]] = []
        end = -2  # the last cell taken by a label
        for m, (col, text) in enumerate(labels):
            start = self.label_start(col, text)
            if m % every == phase and start > end + 1 and start + len(text) <= self.width:
                out.append((col, text))
                end = start + len(text) - 1
        return out

    def label_start(self, col: int, text: str) -> int:
        """The first cell of a tick label: centred on its boundary, the left edge's starting there."""
        return max(0, col - (len(text) // 2 if col else 0))


def summary(snap: LatencySnapshot) -> str:
    """``'n 1,234  p50 1.20 ms  p90 3.40 ms  p99 8.10 ms'`` (or ``'no samples yet'``)."""
    if not snap.count:
        return "no samples yet"
    return f"n {fmt_int(snap.count)}  p50 {fmt_ms(snap.p50)}  p90 {fmt_ms(snap.p90)}  p99 {fmt_ms(snap.p99)}"


class LatencyPanel(CachedStyles, Widget):
    """Three histograms; :meth:`update_frame` picks ``frame.latency_window`` or ``frame.latency``."""

    COMPONENT_CLASSES: ClassVar[set[str]] = set(REGIONS) | {"latency--name", "latency--stats", "latency--marker",
                                                            "latency--axis"}

    DEFAULT_CSS = """
    LatencyPanel { height: 1fr; }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.snapshots: dict[str, LatencySnapshot] = {}
        self.window = True
        self.window_label = "recent"
        self.reload_counts: tuple[int, int] = (0, 0)  # (probe-only, no usable page) over the same window

    @property
    def kinds(self) -> tuple[tuple[str, str], ...]:
        """The rows drawn, ``(Frame.latency key, label)``: :data:`KINDS`, with the reload's tier parts under it
        when the snapshots have them (a store with a disk tier) and the panel has a line for every row, the tick
        row and the probe-only count (below that the three kinds keep theirs)."""
        if TIER_KINDS[0][0] in self.snapshots and self.size.height >= len(KINDS) + len(TIER_KINDS) + 2:
            return KINDS[:1] + TIER_KINDS + KINDS[1:]
        return KINDS

    def update_frame(self, frame, *, window: bool, window_label: str) -> None:
        """Show the windowed (``window``) or whole-session latencies of ``frame``."""
        snaps = dict(frame.latency_window if window else frame.latency)
        totals = (getattr(frame, "window_totals", None) or {}) if window else frame.totals
        counts = (int(totals.get(PROBE_ONLY.key, 0)), int(totals.get(UNUSABLE.key, 0)))
        title = f"Latency · {window_label if window else 'whole session'}"
        if self.border_title != title:
            self.border_title = title
        if snaps != self.snapshots or window != self.window or counts != self.reload_counts:
            self.snapshots, self.window, self.window_label, self.reload_counts = snaps, window, window_label, counts
            self.refresh()

    def _s(self, name: str):
        return self.style_of(name)

    def _regions(self, snap: LatencySnapshot, axis: Axis) -> list[int]:
        """Percentile region (0 p50, 1 p90, 2 p99, 3 beyond) of each column group."""
        marks = [axis.group_of(p) for p in (snap.p50, snap.p90, snap.p99)]
        return [next((k for k, m in enumerate(marks) if i <= m), 3) for i in range(axis.n)]

    def _bars(self, snap: LatencySnapshot, axis: Axis, rows: int) -> list[Text]:
        if not snap.count:
            return [Text(" " * axis.used) for _ in range(rows)]
        region = self._regions(snap, axis)
        out = []
        for levels in bar_rows(axis.counts(snap), rows):
            t = Text()
            for i, lv in enumerate(levels):  # one span per bucket: SVG screenshots place each run by itself
                t.append(BLOCKS[lv] * axis.cw, self._s(REGIONS[region[i]]))
            out.append(t)
        return out

    def _marker_axis(self, snap: LatencySnapshot, axis: Axis) -> Text:
        """``──▲──┴──▲───▲──``: the axis line with the tick positions and the p50 / p90 / p99 markers."""
        line = self._s("latency--axis")
        cells = [["─", line] for _ in range(axis.used)]
        for col, _ in axis.ticks():
            if col < axis.used:
                cells[col][0] = "┴"
        if snap.count:
            for k, value in enumerate((snap.p50, snap.p90, snap.p99)):
                cells[axis.col(value)] = ["▲", self._s(REGIONS[k])]
        out = Text()
        for ch, style in cells:
            out.append(ch, style)
        return out

    def _tick_row(self, axis: Axis, width: int, offset: int = 0) -> Text:
        cells = [" "] * width
        for col, text in axis.ticks():
            start = offset + axis.label_start(col, text)
            if start + len(text) <= width:
                cells[start:start + len(text)] = list(text)
        return Text("".join(cells), self._s("latency--axis"))

    _LEVELS = ((3, "  ", True), (3, " ", False), (2, " ", False), (1, " ", False))  # (percentiles, gap, "2.8 ms")

    def _title_parts(self, name: str, snap: LatencySnapshot, width: int, extra: str, least: int = 0):
        """``(level, separator, [(label, value)])`` of a title: the first of :attr:`_LEVELS` from ``least`` on
        that fits ``width``."""
        ps = [("p50", snap.p50), ("p90", snap.p90), ("p99", snap.p99)]
        for level, (keep, sep, unit_space) in enumerate(self._LEVELS):
            if level < least:
                continue
            shown = [ps[0], ps[2], ps[1]][:keep] if keep < 3 else ps
            shown = sorted(shown, key=lambda p: p[0])
            parts = [(label, fmt_ms(v) if unit_space else fmt_ms(v).replace(" ", "")) for label, v in shown]
            count = f"n {fmt_int(snap.count)}"
            length = (len(name) + 1 + len(count) + len(extra)
                      + sum(len(sep) + len(label) + 1 + len(v) for label, v in parts))
            if length <= width or level == len(self._LEVELS) - 1:
                return level, sep, parts
        raise AssertionError("unreachable: the last level always fits")

    def _title(self, key: str, name: str, snap: LatencySnapshot, width: int, extra: str, least: int = 0) -> Text:
        """``reload  n 1,234  p50 2.81 ms  p90 5.56 ms  p99 9.09 ms`` with p-labels in their region colours;
        ``least``: the most spacious level it may use (the panel's rows share one, so units read alike)."""
        head = Text(f"{name} ", self._s("latency--name"))
        stats = self._s("latency--stats")
        if not snap.count:
            return head + Text("no samples yet", stats) + (Text(" ") + Text(extra.lstrip(), stats) if extra else Text())
        _level, sep, parts = self._title_parts(name, snap, width, extra, least)
        count = f"n {fmt_int(snap.count)}"
        t = head + Text(count + sep, stats)
        for i, (label, v) in enumerate(parts):
            k = ("p50", "p90", "p99").index(label)  # (no span starts with a space: SVG renderers drop those)
            t += Text(label + " ", self._s(REGIONS[k])) + Text(v + (sep if i < len(parts) - 1 else ""), stats)
        return t + (Text(" ") + Text(extra.lstrip(), stats) if extra else Text())

    def _probe_only_text(self) -> str:
        probe_only, unusable = self.reload_counts
        text = f"+{fmt_int(probe_only)} probe-only (no read)"
        return text + (f", {fmt_int(unusable)} no usable page" if unusable else "")

    def render(self) -> Text:
        width, height = self.size
        kinds = self.kinds
        snaps = [self.snapshots.get(key, EMPTY) for key, _ in kinds]
        tick = 1 if height >= 4 else 0
        separate = height >= 5  # a line of its own for the probe-only count (else in the reload title)
        per = max(1, (height - tick - separate) // len(kinds))
        out: list[Text] = []
        if per == 1:
            out += self._compact(kinds, snaps, width, tick, separate)
        else:
            axis = Axis(snaps, width)
            extras = [f"  {self._probe_only_text()}" if i == 0 and not separate else "" for i in range(len(kinds))]
            # one level for every row: "934µs" beside "525 µs" read as two styles
            least = max((self._title_parts(name, snap, width, extra)[0]
                         for (_key, name), snap, extra in zip(kinds, snaps, extras) if snap.count), default=0)
            for i, ((key, name), snap) in enumerate(zip(kinds, snaps)):
                title = self._title(key, name, snap, width, extras[i], least)
                out.append(title)
                rows = 1 if per == 2 else per - 2
                out += self._bars(snap, axis, rows)
                if per >= 3:
                    out.append(self._marker_axis(snap, axis))
            if tick:
                out.append(self._tick_row(axis, width))
            if separate:
                out.append(Text(f"reload {self._probe_only_text()}", self._s("latency--stats")))
        text = Text("\n", no_wrap=True, overflow="ellipsis").join(out[:max(height, 1)])
        text.no_wrap = True
        text.overflow = "ellipsis"
        return text

    def _compact(self, kinds: tuple[tuple[str, str], ...], snaps: list[LatencySnapshot], width: int, tick: int,
                 separate: bool) -> list[Text]:
        """One line per kind (``reload ▂▅█▃ n 1.2k p50 2.8ms``), the bars on the shared axis, then the ticks."""
        stats = [f" n {fmt_count(s.count)} p50 {fmt_ms(s.p50).replace(' ', '')}" if s.count else "" for s in snaps]
        stats_w = max(len(s) for s in stats)
        axis = Axis(snaps, max(4, width - NAME_W - stats_w))
        out = []
        for (_key, name), snap, st in zip(kinds, snaps, stats):
            head = Text(f"{name:<{NAME_W}}", self._s("latency--name"))
            if not snap.count:
                out.append(head + Text("no samples yet", self._s("latency--stats")))
                continue
            bars = self._bars(snap, axis, 1)[0]
            bars.pad_right(max(0, width - NAME_W - stats_w - bars.cell_len))
            out.append(head + bars + Text(st, self._s("latency--stats")))
        if tick:
            out.append(self._tick_row(axis, width, NAME_W))
        if separate:
            out.append(Text(f"reload {self._probe_only_text()}", self._s("latency--stats")))
        return out
