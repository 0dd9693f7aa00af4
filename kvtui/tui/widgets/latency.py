"""Latency histograms (prefix reload, publish, probe) drawn from :class:`LatencySnapshot` buckets.

Buckets are log-spaced (×2 per bucket, ``snapshot.buckets`` = ``((upper_ms, count), …)``), drawn as vertical
bars, one column group per bucket, lowest latency on the left. Bars are coloured by percentile region (up to
the p50 bucket, up to p90, up to p99, beyond) and a marker line puts ``p50``/``p90``/``p99`` under their
buckets. The widget adapts to its height: with ``L`` lines per kind it draws a one-line form (``L == 1``), a
title and one bar row (``L == 2``), or a title, ``L - 2`` bar rows and the marker line.
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.widget import Widget

from kvtui.metrics.figures import LATENCY
from kvtui.metrics.latency import EMPTY, LatencySnapshot
from kvtui.tui.fmt import fmt_int, fmt_ms
from kvtui.tui.widgets.styled import CachedStyles

KINDS = tuple((f.key, f.label) for f in LATENCY)  # (Frame.latency key, label): kvtui.metrics.figures
BLOCKS = " ▁▂▃▄▅▆▇█"
REGIONS = ("latency--p50", "latency--p90", "latency--p99", "latency--tail")


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


def summary(snap: LatencySnapshot) -> str:
    """``'p50 1.20 ms  p90 3.40 ms  p99 8.10 ms  n 1,234'`` (or ``'no samples'``)."""
    if not snap.count:
        return "no samples"
    return f"p50 {fmt_ms(snap.p50)}  p90 {fmt_ms(snap.p90)}  p99 {fmt_ms(snap.p99)}  n {fmt_int(snap.count)}"


class LatencyPanel(CachedStyles, Widget):
    """Three histograms; :meth:`update_frame` picks ``frame.latency_window`` or ``frame.latency``."""

    COMPONENT_CLASSES: ClassVar[set[str]] = set(REGIONS) | {"latency--name", "latency--stats", "latency--marker"}

    DEFAULT_CSS = """
    LatencyPanel { height: 1fr; }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.snapshots: dict[str, LatencySnapshot] = {}
        self.window = True
        self.window_label = "recent"

    def update_frame(self, frame, *, window: bool, window_label: str) -> None:
        """Show the windowed (``window``) or whole-session latencies of ``frame``."""
        snaps = dict(frame.latency_window if window else frame.latency)
        title = f"Latency · {window_label if window else 'whole session'}"
        if self.border_title != title:
            self.border_title = title
        if snaps != self.snapshots or window != self.window:
            self.snapshots, self.window, self.window_label = snaps, window, window_label
            self.refresh()

    def _s(self, name: str):
        return self.style_of(name)

    def _bars(self, snap: LatencySnapshot, width: int, rows: int) -> tuple[list[Text], list[tuple[float, int]], int]:
        """Bar rows of ``snap`` in ``width`` cells; also the (merged) buckets and the column width per bucket."""
        buckets = merge_buckets(snap.buckets, width)
        if not buckets:
            return [Text("")] * rows, [], 1
        cw = max(1, min(4, width // len(buckets)))
        marks = [bucket_of(p, buckets) for p in (snap.p50, snap.p90, snap.p99)]
        region = [next((k for k, m in enumerate(marks) if i <= m), 3) for i in range(len(buckets))]
        lines = []
        for levels in bar_rows([c for _, c in buckets], rows):
            t = Text()
            for i, lv in enumerate(levels):  # one span per bucket: SVG screenshots place each run by itself
                t.append(BLOCKS[lv] * cw, self._s(REGIONS[region[i]]))
            lines.append(t)
        return lines, buckets, cw

    def _markers(self, snap: LatencySnapshot, buckets, cw: int, width: int) -> Text:
        cells = [" "] * width
        taken = [False] * width

        def place(text: str, col: int, shift: bool = True) -> None:
            """Put ``text`` at ``col`` (or further right) with a free cell on each side."""
            while col + len(text) <= width:
                if not any(taken[max(0, col - 1):col + len(text) + 1]):
                    cells[col:col + len(text)] = list(text)
                    taken[col:col + len(text)] = [True] * len(text)
                    return
                if not shift:
                    return
                col += 1

        for name, value in (("p50", snap.p50), ("p90", snap.p90), ("p99", snap.p99)):
            place("▲" + name, bucket_of(value, buckets) * cw)
        if buckets:
            lo = fmt_ms(buckets[0][0] / 2).replace(" ", "")
            hi = fmt_ms(buckets[-1][0]).replace(" ", "")
            place(hi, len(buckets) * cw - len(hi) + 1 if len(buckets) * cw + 1 <= width else width - len(hi), False)
            place(lo, 0, False)
        return Text("".join(cells), self._s("latency--marker"))

    def _one_line(self, name: str, snap: LatencySnapshot, width: int) -> Text:
        """``reload  ▁▃█▅▂  p50 1.2ms p99 8.1ms``: bars only when 4+ cells are left for them."""
        head = Text(f"{name:<8}", self._s("latency--name"))
        if not snap.count:
            return head + Text("no samples", self._s("latency--stats"))
        a, b = fmt_ms(snap.p50).replace(" ", ""), fmt_ms(snap.p99).replace(" ", "")
        options = [f" p50 {a} p99 {b}", f" p50 {a}"]
        stats = next((o for o in options if width - 8 - len(o) >= 4), None)
        if stats is None:
            return head + Text(next((o for o in options if 8 + len(o) <= width), options[-1]).lstrip(),
                               self._s("latency--stats"))
        bar_w = width - 8 - len(stats)
        bars = self._bars(snap, bar_w, 1)[0][0]
        bars.pad_right(max(0, bar_w - bars.cell_len))
        return head + bars + Text(stats, self._s("latency--stats"))

    def _block(self, name: str, snap: LatencySnapshot, width: int, lines: int) -> list[Text]:
        name_s, stats_s = self._s("latency--name"), self._s("latency--stats")
        if lines == 1:
            return [self._one_line(name, snap, width)]
        stats = summary(snap)
        if len(name) + 1 + len(stats) > width and snap.count:
            stats = stats.rsplit("  n ", 1)[0]
        title = Text(f"{name} ", name_s) + Text(stats, stats_s)
        if not snap.count:
            return [title] + [Text("")] * (lines - 1)
        rows = 1 if lines == 2 else lines - 2
        bars, buckets, cw = self._bars(snap, width, rows)
        out = [title] + bars
        if lines >= 3:
            out.append(self._markers(snap, buckets, cw, width))
        return out

    def render(self) -> Text:
        width, height = self.size
        per = max(1, height // len(KINDS))
        out: list[Text] = []
        for key, name in KINDS:
            out += self._block(name, self.snapshots.get(key, EMPTY), width, per)
        text = Text("\n", no_wrap=True, overflow="ellipsis").join(out[:max(height, 1)])
        text.no_wrap = True
        text.overflow = "ellipsis"
        return text
