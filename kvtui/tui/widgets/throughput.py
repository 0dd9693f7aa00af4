"""Throughput: current value and a Sparkline of recent history for each rate of ``frame.rates``/``series``."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Grid
from textual.widgets import Label, Sparkline

from kvtui.metrics.figures import WALL, WALL_TITLE
from kvtui.tui.fmt import fmt_mbps, fmt_pct, fmt_rate

_FORMAT = {"MB/s": fmt_mbps, "req/s": lambda v: fmt_rate(v, " req/s"), "tok/s": lambda v: fmt_rate(v, " tok/s"),
           "%": fmt_pct}
# (series key, label, formatter): the wall-clock figures of kvtui.metrics.figures, whose names and windows
# the README's figures table gives (the panel title says the window)
RATES = tuple((f.key, f.label, _FORMAT[f.unit]) for f in WALL)


class Throughput(Grid):
    """One line per rate: label, current value, sparkline (fed a fresh tuple each tick).

    The labels fill their grid column (``width: 1fr``): values are updated without a layout pass, so a
    content-sized label would keep the width of its first text and cut the unit off a longer one. The value
    column (13 cells; 12 below 80 columns) holds the longest value with its unit (``'12.3k tok/s'``,
    ``'1.23 GB/s'``) and a space; the label column (14) the longest label (``'publish write'``) and a space."""

    DEFAULT_CSS = """
    Throughput { grid-size: 3; grid-columns: 14 13 1fr; grid-rows: 1; height: auto; }
    Throughput > Label { width: 1fr; text-wrap: nowrap; text-overflow: ellipsis; }
    Throughput > .tp-label { padding-right: 1; }
    Throughput > .tp-value { text-align: right; padding-right: 1; }
    Throughput > Sparkline { height: 1; }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.border_title = WALL_TITLE
        self.values: dict[str, str] = {}
        self._value: dict[str, Label] = {}
        self._spark: dict[str, Sparkline] = {}

    def compose(self) -> ComposeResult:
        for key, label, _ in RATES:
            yield Label(label, classes=f"tp-label tp-{key}")
            yield Label("—", id=f"tp-value-{key}", classes=f"tp-value tp-{key}")
            yield Sparkline((), id=f"tp-spark-{key}", classes=f"tp-{key}")

    def on_mount(self) -> None:
        for key, _, _ in RATES:
            self._value[key] = self.query_one(f"#tp-value-{key}", Label)
            self._spark[key] = self.query_one(f"#tp-spark-{key}", Sparkline)

    def update_frame(self, frame) -> None:
        """Show ``frame.rates`` and ``frame.series``."""
        for key, _, fmt in RATES:
            text = fmt(float(frame.rates.get(key, 0.0)))
            if self.values.get(key) != text:
                self.values[key] = text
                self._value[key].update(text, layout=False)
            series = tuple(frame.series.get(key, ()))
            spark = self._spark[key]
            if spark.data != series:
                spark.data = series
