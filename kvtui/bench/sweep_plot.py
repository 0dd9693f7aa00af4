"""The plot of a capacity sweep as an SVG or PNG file (``kvtui sweep --svg/--png``), with matplotlib's Agg
backend (no display needed): token hit rate against store capacity on a log axis, four curves (the real
Mooncake store, the offline LRU model and Belady's optimal cache at the same capacities, the unbounded cache's
ideal), each measured point marked; a sweep file without the optimal curve draws the other three. With
repeats the real store's line goes through each point's median and a band spans its lowest to highest repeat.
The curves' names and axis labels are :data:`kvtui.core.sweep.CURVES`, as on the sweep's screen.

A DRAM × disk sweep is drawn against the DRAM capacity instead, one colour per disk size (0: DRAM only), from
:func:`kvtui.core.sweep.tier_lines`: the real store solid through each point's median (a bar over its repeats'
range), the offline two-tier model dashed beside it, Belady's MIN at DRAM + disk a flat bar above each point (the
ceiling of that pair), and the unbounded ideal dotted."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from kvtui.core.sweep import (
    CURVES,
    X_LABEL,
    Y_LABEL,
    SweepResult,
    format_tokens,
    is_tiered,
    repeats_of,
    tier_lines,
)
from kvtui.core.units import format_bytes

if TYPE_CHECKING:
    from matplotlib.figure import Figure

REAL, LRU, MIN, IDEAL = CURVES

TIER_X_LABEL = "DRAM capacity (tokens, log scale)"
TIER_STYLES = {"real": "real Mooncake store", "model": "offline two-tier model\n(LRU DRAM → LRU disk)",
               "min": "optimal (Belady MIN)\nat DRAM + disk", "ideal": "unbounded ideal"}
"""The legend of a DRAM × disk plot's line styles (its colours are the disk sizes)."""
TIER_COLOURS = ("tab:gray", "tab:blue", "tab:green", "tab:red", "tab:purple", "tab:brown", "tab:olive", "tab:cyan")
"""A DRAM × disk plot's colour per disk size, in ascending order (DRAM only first; wraps past eight)."""


def _title(result: SweepResult, head: str = "") -> str:
    lease = result.store.get("lease_ttl_s")
    reps = repeats_of(result)
    return (f"{result.trace}: {head}{result.rows:,} rows · {format_bytes(result.page_bytes)} pages"
            + (f" · read lease {lease:g} s" if isinstance(lease, (int, float)) else "")
            + (f" · {reps} repeats" if reps > 1 else ""))


def tier_figure(result: SweepResult) -> Figure:
    """A matplotlib ``Figure`` of a DRAM × disk sweep (module docstring): one axes, log x (DRAM capacity, tokens),
    y the token hit rate (%); per disk size (:func:`~kvtui.core.sweep.tier_lines`) a solid line labelled with
    its name (the real store), a dashed one (the model) and a marker-only line of MIN bars, each in the disk
    size's colour, and a dotted ideal; a second legend says the styles. The MIN bars of disk sizes that share a
    DRAM capacity are spread a little along x so that equal ones stay visible."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D
    from matplotlib.ticker import FixedLocator, NullLocator

    fig = Figure(figsize=(8, 4.8), dpi=100, layout="constrained")
    ax = fig.add_subplot()
    lines = tier_lines(result)
    reps = repeats_of(result)
    caps = sorted({c for line in lines for c in line.capacities})
    tops = [100 * result.ideal_token_hit_rate, 10.0]
    for k, line in enumerate(lines):
        colour = TIER_COLOURS[k % len(TIER_COLOURS)]
        xs = list(line.capacities)
        ax.plot(xs, line.real, marker="o", color=colour, linewidth=2, label=line.name, zorder=3)
        if reps > 1:
            ax.vlines(xs, line.low, line.high, color=colour, linewidth=5, alpha=0.45, zorder=2)
        model = [(x, y) for x, y in zip(xs, line.model) if y is not None]
        if model:
            ax.plot(*zip(*model), marker="s", markersize=6, markerfacecolor="none", color=colour, linestyle="--",
                    linewidth=1.4, zorder=2)
        best = [(x * 10 ** ((k - (len(lines) - 1) / 2) * 0.012), y) for x, y in zip(xs, line.best) if y is not None]
        if best:
            ax.plot(*zip(*best), marker="_", markersize=16, markeredgewidth=2.5, color=colour, linestyle="none",
                    zorder=4)
        tops += [*line.high, *(y for y in line.model if y is not None), *(y for y in line.best if y is not None)]
    if caps:
        ax.axhline(100 * result.ideal_token_hit_rate, color="black", linestyle=":", linewidth=1, alpha=0.7)
    ax.set_xscale("log")
    if caps:
        ax.xaxis.set_major_locator(FixedLocator(caps))
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_xticklabels([format_tokens(c) for c in caps])
        if len(caps) > 1:
            ax.set_xlim(caps[0] / 1.25, caps[-1] * 1.25)
    ax.set_ylim(0, min(100.0, max(tops) * 1.15))
    ax.set_xlabel(TIER_X_LABEL)
    ax.set_ylabel(Y_LABEL)
    ax.grid(True, which="major", alpha=0.3)
    fig.suptitle(_title(result, "DRAM × disk · "), fontsize=11)
    disks = ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), title="disk tier", fontsize=9, title_fontsize=9,
                      alignment="left")
    ax.add_artist(disks)
    styles = [Line2D([], [], color="black", marker="o", linewidth=2, label=TIER_STYLES["real"]
                     + (f",\nmedian of {reps} repeats\n(bar: lowest–highest)" if reps > 1 else "")),
              Line2D([], [], color="black", marker="s", markerfacecolor="none", linestyle="--",
                     label=TIER_STYLES["model"]),
              Line2D([], [], color="black", marker="_", markersize=16, markeredgewidth=2.5, linestyle="none",
                     label=TIER_STYLES["min"]),
              Line2D([], [], color="black", linestyle=":", label=TIER_STYLES["ideal"])]
    ax.legend(handles=styles, loc="lower left", bbox_to_anchor=(1.01, 0.0), fontsize=9)
    return fig


def sweep_figure(result: SweepResult) -> Figure:
    """A matplotlib ``Figure`` of ``result`` (a DRAM × disk sweep: :func:`tier_figure`): one axes, log x
    (capacity, tokens), y the token hit rate (%), lines labelled :data:`REAL`, :data:`LRU`, :data:`MIN` (only
    when every point has it) and :data:`IDEAL`, in that order; with repeats, a band (a ``PolyCollection``, not a
    line) from each point's lowest to highest real rate, and a bar (a ``LineCollection``) at each point over the
    same range."""
    if is_tiered(result):
        return tier_figure(result)
    import matplotlib

    matplotlib.use("Agg", force=True)
    from matplotlib.figure import Figure
    from matplotlib.ticker import FixedLocator, NullLocator

    fig = Figure(figsize=(8, 4.8), dpi=100, layout="constrained")
    ax = fig.add_subplot()
    caps = [p.capacity_tokens for p in result.points]
    real = [100 * p.real_token_hit_rate for p in result.points]
    lru = [100 * p.lru_token_hit_rate for p in result.points]
    ideal = [100 * result.ideal_token_hit_rate] * len(caps)
    reps = repeats_of(result)
    label = REAL if reps < 2 else f"{REAL} (median of {reps} repeats)"
    ax.plot(caps, real, marker="o", color="tab:green", label=label, zorder=3)  # on top where the two agree
    ranges = [p.real_range() for p in result.points]
    if reps > 1:
        lows, highs = [100 * lo for lo, _ in ranges], [100 * hi for _, hi in ranges]
        ax.fill_between(caps, lows, highs, color="tab:green", alpha=0.2, linewidth=0,
                        label="real store: lowest to highest repeat")
        ax.vlines(caps, lows, highs, color="tab:green", linewidth=4, alpha=0.5)  # (visible where the band is thin)
    ax.plot(caps, lru, marker="s", markersize=9, markerfacecolor="none", color="tab:blue", linestyle="--",
            label=LRU)
    best = [100 * p.min_token_hit_rate for p in result.points if p.min_token_hit_rate is not None]
    if caps and len(best) == len(caps):
        ax.plot(caps, best, marker="^", color="tab:purple", linestyle="-.", label=MIN)
    ax.plot(caps, ideal, color="tab:orange", linestyle=":", label=IDEAL)
    ax.set_xscale("log")
    if caps:
        ax.xaxis.set_major_locator(FixedLocator(caps))
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_xticklabels([format_tokens(c) for c in caps])
    highest = max([100 * result.ideal_token_hit_rate, *real, *lru, *best, *(100 * hi for _, hi in ranges), 10.0])
    ax.set_ylim(0, min(100.0, highest * 1.15))
    ax.set_xlabel(X_LABEL)
    ax.set_ylabel(Y_LABEL)
    ax.grid(True, which="major", alpha=0.3)
    ax.set_title(_title(result), fontsize=11)
    ax.legend(loc="lower right")
    return fig


def save_plot(result: SweepResult, path: str, fmt: str | None = None) -> None:
    """Write the plot of ``result`` to ``path`` as ``fmt`` (``svg`` or ``png``, 800×480 px; None: PNG when the
    name ends in ``.png``, else SVG), through a temporary file beside it, renamed when complete (nothing half
    written)."""
    fig = sweep_figure(result)
    target = Path(path)
    fmt = fmt or ("png" if target.suffix.lower() == ".png" else "svg")
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=str(target.resolve().parent))
    try:
        with os.fdopen(fd, "wb") as f:
            fig.savefig(f, format=fmt, metadata={"Date": None} if fmt == "svg" else None)
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
