"""The hit-rate curve of a capacity sweep (``kvtui report SWEEP.json``): lines over a log capacity axis, the real
Mooncake store, the offline LRU model and Belady's optimal cache at the same capacities, and the unbounded
cache's ideal; with repeats, the real store's lowest and highest repeat marked ``-`` above and below its median.
A DRAM × disk sweep is drawn against the DRAM capacity, one colour per disk size
(:func:`kvtui.core.sweep.tier_lines`): the real store a line with ``●`` points, the two-tier model a line with
``□`` points, Belady's MIN at DRAM + disk a ``▔`` mark, and the ideal.

Drawn with textual-plotext (Plotext in a Textual widget, text cells only, so it shows in any terminal and in
an SVG screenshot). It reads only a :class:`~kvtui.core.sweep.SweepResult`.
"""

from __future__ import annotations

import math

from textual_plotext import PlotextPlot

from kvtui.core.sweep import CURVES, X_LABEL, Y_LABEL, SweepResult, format_tokens, is_tiered, repeats_of, tier_lines

REAL, LRU, MIN, IDEAL = CURVES
TIER_COLOURS = ("gray+", "cyan", "green", "magenta", "red", "blue+", "orange+")
"""The colour of each disk size of a DRAM × disk sweep, ascending (DRAM only first; wraps)."""


def y_top(result: SweepResult) -> float:
    """The top of the hit-rate axis (%): 20 % above the highest curve, in tens, at most 100."""
    highest = max([result.ideal_token_hit_rate] + [max(p.real_range()[1], p.lru_token_hit_rate,
                                                       p.model_token_hit_rate or 0.0)
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

    def tier_series(self) -> dict[str, tuple[list[int], list[float]]]:
        """A DRAM × disk sweep's curves as drawn: ``{"real · DRAM only": (DRAM capacities, rates in %),
        "model · DRAM only": …, "MIN · DRAM only": …, "real · + 8M disk": …}`` (a figure the file lacks left
        out)."""
        out: dict[str, tuple[list[int], list[float]]] = {}
        for line in tier_lines(self.result):
            for what, ys in (("real", line.real), ("model", line.model), ("MIN", line.best)):
                pts = [(x, y) for x, y in zip(line.capacities, ys) if y is not None]
                out[f"{what} · {line.name}"] = ([x for x, _ in pts], [y for _, y in pts])
        return out

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
        if is_tiered(self.result):
            self._draw_tiers()
            return
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
        self._axes(caps, X_LABEL, f"hit rate against store capacity · {self.result.trace}, {self.result.rows:,} rows")

    def _axes(self, caps: list[int], xlabel: str, title: str) -> None:
        """Ticks at ``caps`` (tokens, on log10), the hit-rate axis, labels and ``title``; then refresh."""
        plt = self.plt
        if caps:
            plt.xticks([math.log10(c) for c in caps], [format_tokens(c) for c in caps])
            lo, hi = math.log10(caps[0]), math.log10(caps[-1])
            pad = max(0.02, (hi - lo) * 0.03)
            plt.xlim(lo - pad, hi + pad)
        top = y_top(self.result)
        plt.ylim(0, top)
        step = 10 if top <= 60 else 20
        plt.yticks(list(range(0, int(top) + 1, step)))
        plt.xlabel(xlabel)
        plt.ylabel(Y_LABEL)
        plt.title(title)
        self.refresh()

    def _draw_tiers(self) -> None:
        """A DRAM × disk sweep (module docstring): per disk size, its model, its MIN marks, then its real store
        on top, each in the disk size's colour; the ideal first, beneath them."""
        plt = self.plt
        lines = tier_lines(self.result)
        caps = sorted({c for line in lines for c in line.capacities})
        if caps:
            ideal = 100 * self.result.ideal_token_hit_rate
            plt.plot([math.log10(caps[0]), math.log10(caps[-1])], [ideal, ideal], label=IDEAL, color="orange",
                     marker="braille")
        series = self.tier_series()
        for k, line in enumerate(lines):
            colour = TIER_COLOURS[k % len(TIER_COLOURS)]
            for what, marker in (("model", "x"), ("MIN", "-"), ("real", "●")):
                xs, ys = series[f"{what} · {line.name}"]
                if not xs:
                    continue
                logs = [math.log10(x) for x in xs]
                if what != "MIN":
                    plt.plot(logs, ys, label=f"{what} · {line.name}" if what == "real" else None, color=colour,
                             marker="braille")
                plt.scatter(logs, ys, color=colour, marker=marker)
            if repeats_of(self.result) > 1:
                for bound in (line.low, line.high):
                    plt.scatter([math.log10(x) for x in line.capacities], list(bound), color=colour, marker="-")
        self._axes(caps, "DRAM capacity (tokens, log scale)",
                   f"hit rate against DRAM capacity, per disk size (● real store, □ two-tier model, ▔ MIN at "
                   f"DRAM + disk) · {self.result.trace}, {self.result.rows:,} rows")
