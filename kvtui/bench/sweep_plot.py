"""The plot of a capacity sweep as an SVG or PNG file (``kvtui sweep --svg/--png``), with matplotlib's Agg
backend (no display needed): token hit rate against store capacity on a log axis, four curves (the real
Mooncake store, the offline LRU model and Belady's optimal cache at the same capacities, the unbounded cache's
ideal), each measured point marked; a sweep file without the optimal curve draws the other three. With
repeats the real store's line goes through each point's median and a band spans its lowest to highest repeat.
The curves' names and axis labels are :data:`kvtui.core.sweep.CURVES`, as on the sweep's screen."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from kvtui.core.sweep import CURVES, X_LABEL, Y_LABEL, SweepResult, format_tokens, repeats_of
from kvtui.core.units import format_bytes

if TYPE_CHECKING:
    from matplotlib.figure import Figure

REAL, LRU, MIN, IDEAL = CURVES


def sweep_figure(result: SweepResult) -> Figure:
    """A matplotlib ``Figure`` of ``result``: one axes, log x (capacity, tokens), y the token hit rate (%),
    lines labelled :data:`REAL`, :data:`LRU`, :data:`MIN` (only when every point has it) and :data:`IDEAL`, in
    that order; with repeats, a band (a ``PolyCollection``, not a line) from each point's lowest to highest
    real rate, and a bar (a ``LineCollection``) at each point over the same range."""
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
    lease = result.store.get("lease_ttl_s")
    page = format_bytes(result.page_bytes)
    ax.set_title(f"{result.trace}: {result.rows:,} rows · {page} pages"
                 + (f" · read lease {lease:g} s" if isinstance(lease, (int, float)) else "")
                 + (f" · {reps} repeats" if reps > 1 else ""), fontsize=11)
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
