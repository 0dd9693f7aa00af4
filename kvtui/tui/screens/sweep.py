"""The screen of a capacity sweep (``kvtui report SWEEP.json``): how the sweep ran, its hit-rate curve
(:class:`~kvtui.tui.widgets.sweep_curve.SweepCurve`), the table of its points and why their prompt tokens
missed."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Footer, Static

from kvtui.core.sweep import (
    TABLE_HEAD,
    TIER_HEAD,
    SweepResult,
    describe_sweep,
    is_tiered,
    misses_head,
    misses_rows,
    table_rows,
    tier_rows,
)
from kvtui.tui.widgets.sweep_curve import SweepCurve

TIER_CAPTION = ("DRAM, disk: tokens; hit rates: % of the prompt tokens; of it: read from DRAM, from disk; model: "
                "offline two-tier LRU; MIN: Belady's at DRAM + disk; gap: real − model (pp); refused: puts refused")
"""What a DRAM × disk sweep's columns are (the last line of the screen's head; :data:`kvtui.core.sweep.TIER_LEGEND`
at length)."""


def _table(head: tuple[str, ...], rows: list[tuple[str, ...]], title: str | None = None,
           wrap: tuple[str, ...] = ()) -> Table:
    """A Rich table of ``rows`` under ``head``; the ``wrap`` columns may take two lines where the screen is
    narrow, the others never wrap."""
    table = Table(box=None, padding=(0, 1), pad_edge=False, header_style="bold", expand=False, title=title,
                  title_justify="left", title_style="bold")
    for i, name in enumerate(head):
        words = [w for text in (name, *(row[i] for row in rows)) for w in text.split()] if name in wrap else []
        table.add_column(name, justify="left" if i == 0 else "right", no_wrap=name not in wrap,
                         min_width=max(map(len, words), default=None))  # (wrapped between words, never cut)
    for row in rows:
        table.add_row(*row)
    return table


def points_table(result: SweepResult) -> Table:
    """The points of ``result`` as a Rich table (the columns of :data:`kvtui.core.sweep.TABLE_HEAD`; a DRAM × disk
    sweep: :data:`~kvtui.core.sweep.TIER_HEAD`)."""
    if is_tiered(result):
        return _table(TIER_HEAD, tier_rows(result, two_lines=True))
    return _table(TABLE_HEAD, table_rows(result, two_lines=True), wrap=("optimal (MIN)", "held at end", "puts refused"))


def misses_table(result: SweepResult) -> Table | None:
    """Why the prompt tokens of each point missed (:func:`kvtui.core.sweep.misses_head`); None when the file
    has no miss reasons."""
    rows = misses_rows(result)
    return _table(misses_head(result), rows, "why the prompt tokens missed (share of the prompt tokens)") if rows \
        else None


class SweepScreen(Screen[None]):
    """``result``'s description, curve and table; ``q`` / ``escape`` quit."""

    BINDINGS = [Binding("q,escape", "app.quit", "Quit")]
    DEFAULT_CSS = """
    SweepScreen #sweep-head { padding: 0 1; color: $text-muted; }
    SweepScreen #sweep-curve { border: round $primary-darken-1; }
    SweepScreen #sweep-table { padding: 0 1; height: auto; max-height: 40%; }
    SweepScreen #sweep-misses { padding: 1 1 0 1; height: auto; max-height: 30%; }
    """

    def __init__(self, result: SweepResult) -> None:
        super().__init__()
        self.result = result

    def compose(self) -> ComposeResult:
        head = describe_sweep(self.result) + ([TIER_CAPTION] if is_tiered(self.result) else [])
        yield Static(Text("\n".join(head)), id="sweep-head")
        yield SweepCurve(self.result, id="sweep-curve")
        yield Static(points_table(self.result), id="sweep-table")
        why = misses_table(self.result)
        if why is not None:
            yield Static(why, id="sweep-misses")
        yield Footer()
