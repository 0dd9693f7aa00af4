"""The hit-rate curve of a capacity sweep (``kvtui report SWEEP.json``): lines over a log capacity axis, the real
Mooncake store, the offline LRU model and Belady's optimal cache at the same capacities, and the unbounded
cache's ideal; with repeats, the real store's lowest and highest repeat marked ``-`` above and below its median.

Drawn with textual-plotext (Plotext in a Textual widget, text cells only, so it shows in any terminal and in
an SVG screenshot). It reads only a :class:`~kvtui.core.sweep.SweepResult`.
"""

from __future__ import annotations

import math

from textual_plotext import PlotextPlot

from kvtui.core.sweep import CURVES, X_LABEL, Y_LABEL, SweepResult, format_tokens, repeats_of

REAL, LRU, MIN, IDEAL = CURVES


def y_top(result: SweepResult) -> float:
    """The top of the hit-rate axis (%): 20 % above the highest curve, in tens, at most 100."""
    highest = max([result.ideal_token_hit_rate] + [max(p.real_range()[1], p.lru_token_hit_rate)
                                                  for p in result.points])
    return float(min(100, max(10, math.ceil(highest * 120 / 10) * 10)))


class SweepCurve(PlotextPlot):
    """The curve of ``result`` (one point per capacity; a sweep of no point shows its axes only)."""

    DEFAULT_CSS = """
    SweepCurve { height: 1fr; min-height: 12; }
    """

    def __init__(self, result: SweepResult, *, id: str | None = None) -> None:  # noqa: A002 - Textual's name
        super().__init__(id=id)
        self.result = result

    def on_mount(self) -> None:
        super().on_mount()
        self.draw()

    def series(self) -> dict[str, tuple[list[int], list[float]]]:
        """``{curve name: (capacities in tokens, hit rates in %)}``, the curves as drawn (the optimal one only
        at the points that have it: none in a sweep file written without it)."""
        r = self.result
        caps = [p.capacity_tokens for p in r.points]
        best = [p for p in r.points if p.min_token_hit_rate is not None]
        return {REAL: (caps, [100 * p.real_token_hit_rate for p in r.points]),
                LRU: (caps, [100 * p.lru_token_hit_rate for p in r.points]),
                MIN: ([p.capacity_tokens for p in best], [100 * (p.min_token_hit_rate or 0.0) for p in best]),
                IDEAL: (caps, [100 * r.ideal_token_hit_rate] * len(caps))}

    def real_ranges(self) -> tuple[list[int], list[float], list[float]]:
        """``(capacities, lowest, highest)`` real rates (%) of the repeats; empty lists without repeats."""
        if repeats_of(self.result) < 2:
            return [], [], []
        points = self.result.points
        ranges = [p.real_range() for p in points]
        return [p.capacity_tokens for p in points], [100 * lo for lo, _ in ranges], [100 * hi for _, hi in ranges]

    def draw(self) -> None:
        """(Re)build the plot from :attr:`result`. The x axis is log10 of the capacity, ticked at each point's
        capacity (Plotext's own log scale leaves the last segment of a line undrawn); the real store is drawn
        last, on top where the curves agree, and each measured point gets a marker."""
        plt = self.plt
        plt.clear_figure()
        caps = [p.capacity_tokens for p in self.result.points]
        styles = {REAL: "green", LRU: "cyan", MIN: "magenta", IDEAL: "orange"}
        series = self.series()
        for name in (IDEAL, MIN, LRU, REAL):
            xs, ys = series[name]
            if xs:
                plt.plot([math.log10(x) for x in xs], ys, label=name, color=styles[name], marker="braille")
        for name in (LRU, REAL):
            xs, ys = series[name]
            if xs:
                plt.scatter([math.log10(x) for x in xs], ys, color=styles[name], marker="●")
        xs, lows, highs = self.real_ranges()
        for ys in (lows, highs):
            if xs:
                plt.scatter([math.log10(x) for x in xs], ys, color=styles[REAL], marker="-")
        if caps:
            plt.xticks([math.log10(c) for c in caps], [format_tokens(c) for c in caps])
            lo, hi = math.log10(caps[0]), math.log10(caps[-1])
            pad = max(0.02, (hi - lo) * 0.03)
            plt.xlim(lo - pad, hi + pad)
        top = y_top(self.result)
        plt.ylim(0, top)
        step = 10 if top <= 60 else 20
        plt.yticks(list(range(0, int(top) + 1, step)))
        plt.xlabel(X_LABEL)
        plt.ylabel(Y_LABEL)
        plt.title(f"hit rate against store capacity · {self.result.trace}, {self.result.rows:,} rows")
        self.refresh()
