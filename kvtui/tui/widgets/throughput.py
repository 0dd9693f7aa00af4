"""Throughput: current value and a sparkline of recent history for each rate of ``frame.rates``/``series``.

While the workload is paused the values read ``—`` (a rate of a stopped workload is no measurement). In a
trace replay the page hit rate's sparkline (:class:`HitChart`, two rows tall) also draws the ideal page hit
rate of the same requests (an unbounded cache, :data:`kvtui.metrics.figures.IDEAL_WALL`) as a dim area above
the achieved bars: its height is what the store's capacity and concurrency cost.
"""

from __future__ import annotations

from typing import ClassVar, cast

from rich.segment import Segment
from rich.style import Style
from textual.app import ComposeResult
from textual.containers import Grid
from textual.strip import Strip
from textual.widget import Widget
from textual.widgets import Label, Sparkline

from kvtui.metrics.figures import GPU_SAVED_WALL, HIT_RATE_WALL, IDEAL_WALL, WALL, WALL_TITLE
from kvtui.tui.fmt import fmt_mbps, fmt_pct, fmt_rate
from kvtui.tui.widgets.styled import CachedStyles

_FORMAT = {"MB/s": fmt_mbps, "req/s": lambda v: fmt_rate(v, " req/s"), "tok/s": lambda v: fmt_rate(v, " tok/s"),
           "%": fmt_pct}
# (series key, label, formatter): the wall-clock figures of kvtui.metrics.figures, which defines their names
# and windows (the panel title says the window)
RATES = tuple((f.key, f.label, _FORMAT[f.unit]) for f in WALL)
# the TTFT estimate's row (frame.ttft, an estimate: "~"); shown only when the frame has the panel
TTFT_ROW = (GPU_SAVED_WALL.key, "est GPU saved")
BLOCKS = " ▁▂▃▄▅▆▇█"
NO_VALUE = "—"


class HitChart(CachedStyles, Widget):
    """The page hit rate (0..1 per point, green bars) and, when given, the ideal hit rate of the same points
    as a dim area above them; the newest points that fit, right-aligned, on a fixed 0–100 % scale."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {"hit-chart--hit", "hit-chart--gap"}
    DEFAULT_CSS = """
    HitChart { height: 1; }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.data: tuple = ()
        self.ideal: tuple = ()

    def set_data(self, data: tuple, ideal: tuple = ()) -> None:
        if data != self.data or ideal != self.ideal:
            self.data, self.ideal = data, ideal
            self.refresh()

    def render_line(self, y: int) -> Strip:
        width, height = self.size
        if width <= 0 or height <= 0:
            return Strip.blank(max(0, width))
        data = self.data[-width:]
        ideal = self.ideal[-width:] if self.ideal else ()
        ideal = (0.0,) * (len(data) - len(ideal)) + tuple(ideal[-len(data):]) if data else ()
        plain = self.style_of("")
        hit_s, gap_s = plain + self.style_of("hit-chart--hit"), plain + self.style_of("hit-chart--gap")
        base = 8 * (height - 1 - y)  # eighths below this line
        segments = [Segment(" " * (width - len(data)), plain)]
        for i, v in enumerate(data):
            lo = max(0, min(8 * height, round(float(v) * 8 * height)))
            hi = max(lo, min(8 * height, round(float(ideal[i]) * 8 * height))) if ideal else lo
            if lo >= base + 8:
                segments.append(Segment("█", hit_s))
            elif lo > base:
                segments.append(Segment(BLOCKS[lo - base], hit_s + Style(bgcolor=gap_s.color) if hi > lo else hit_s))
            elif hi >= base + 8:
                segments.append(Segment("█", gap_s))
            elif hi > base:
                segments.append(Segment(BLOCKS[hi - base], gap_s))
            else:
                segments.append(Segment(" ", plain))
        return Strip(segments).adjust_cell_length(width, plain)


class Throughput(Grid):
    """One line per rate: label, current value, sparkline (fed a fresh tuple each tick).

    The labels fill their grid column (``width: 1fr``): values are updated without a layout pass, so a
    content-sized label would keep the width of its first text and cut the unit off a longer one. The value
    column (13 cells; 12 below 80 columns) holds the longest value with its unit (``'12.3k tok/s'``,
    ``'1.23 GB/s'``) and a space; the label column (14) the longest label (``'publish write'``) and a space.
    The ideal row shows only for a trace (class ``-trace``); the hit-rate chart then spans both rows."""

    DEFAULT_CSS = """
    Throughput { grid-size: 3; grid-columns: 14 13 1fr; grid-rows: 1; height: auto; }
    Throughput > Label { width: 1fr; text-wrap: nowrap; text-overflow: ellipsis; }
    Throughput > .tp-label { padding-right: 1; }
    Throughput > .tp-value { text-align: right; padding-right: 1; }
    Throughput > Sparkline { height: 1; }
    Throughput .tp-ideal_hit_rate { display: none; }
    Throughput.-trace .tp-ideal_hit_rate { display: block; }
    Throughput.-trace #tp-spark-hit_rate { row-span: 2; height: 2; }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.border_title = WALL_TITLE
        self.values: dict[str, str] = {}
        self._value: dict[str, Label] = {}
        self._spark: dict[str, Sparkline | HitChart] = {}

    def compose(self) -> ComposeResult:
        for key, label, _ in RATES:
            yield Label(label, classes=f"tp-label tp-{key}")
            yield Label(NO_VALUE, id=f"tp-value-{key}", classes=f"tp-value tp-{key}")
            if key == HIT_RATE_WALL.key:
                yield HitChart(id=f"tp-spark-{key}", classes=f"tp-{key}")
            elif key != IDEAL_WALL.key:  # (the hit-rate chart spans the ideal row's third column)
                yield Sparkline((), id=f"tp-spark-{key}", classes=f"tp-{key}")
        for widget in (Label(TTFT_ROW[1], classes="tp-label tp-ttft"),
                       Label(NO_VALUE, id="tp-value-ttft", classes="tp-value tp-ttft"), Label("", classes="tp-ttft")):
            widget.display = False
            yield widget

    def on_mount(self) -> None:
        for key, _, _ in RATES:
            self._value[key] = self.query_one(f"#tp-value-{key}", Label)
            if key != IDEAL_WALL.key:
                self._spark[key] = cast("Sparkline | HitChart", self.query_one(f"#tp-spark-{key}"))

    def update_frame(self, frame) -> None:
        """Show ``frame.rates`` and ``frame.series`` (``—`` while the workload is paused)."""
        trace = (frame.workload or {}).get("kind") == "trace"
        self.set_class(trace, "-trace")
        paused = bool((frame.status or {}).get("paused"))
        for key, _, fmt in RATES:
            text = NO_VALUE if paused else fmt(float(frame.rates.get(key, 0.0)))
            if self.values.get(key) != text:
                self.values[key] = text
                self._value[key].update(text, layout=False)
            if key == IDEAL_WALL.key:
                continue
            series = tuple(frame.series.get(key, ()))
            spark = self._spark[key]
            if isinstance(spark, HitChart):
                spark.set_data(series, tuple(frame.series.get(IDEAL_WALL.key, ())) if trace else ())
            elif spark.data != series:
                spark.data = series
        tt = frame.ttft or {}
        text = ("off" if tt.get("off") else NO_VALUE if paused else f"~{float(tt.get(TTFT_ROW[0], 0.0)):.2f} s/s") \
            if tt else ""
        if self.values.get(TTFT_ROW[0]) != text:
            self.values[TTFT_ROW[0]] = text
            for widget in self.query(".tp-ttft"):
                widget.display = bool(tt)
            self.query_one("#tp-value-ttft", Label).update(text or NO_VALUE)
