"""The screen of a capacity sweep (``kvtui report SWEEP.json``): how the sweep ran, its hit-rate curve
(:class:`~kvtui.tui.widgets.sweep_curve.SweepCurve`) and the table of its points."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Footer, Static

from kvtui.core.sweep import TABLE_HEAD, SweepResult, describe_sweep, table_rows
from kvtui.tui.widgets.sweep_curve import SweepCurve


def points_table(result: SweepResult) -> Table:
    """The points of ``result`` as a Rich table (the columns of :data:`kvtui.core.sweep.TABLE_HEAD`)."""
    table = Table(box=None, padding=(0, 1), header_style="bold", expand=False)
    for i, head in enumerate(TABLE_HEAD):
        table.add_column(head, justify="left" if i == 0 else "right", no_wrap=True)
    for row in table_rows(result):
        table.add_row(*row)
    return table


class SweepScreen(Screen[None]):
    """``result``'s description, curve and table; ``q`` / ``escape`` quit."""

    BINDINGS = [Binding("q,escape", "app.quit", "Quit")]
    DEFAULT_CSS = """
    SweepScreen #sweep-head { padding: 0 1; color: $text-muted; }
    SweepScreen #sweep-curve { border: round $primary-darken-1; }
    SweepScreen #sweep-table { padding: 0 1; height: auto; max-height: 40%; }
    """

    def __init__(self, result: SweepResult) -> None:
        super().__init__()
        self.result = result

    def compose(self) -> ComposeResult:
        yield Static(Text("\n".join(describe_sweep(self.result))), id="sweep-head")
        yield SweepCurve(self.result, id="sweep-curve")
        yield Static(points_table(self.result), id="sweep-table")
        yield Footer()
