"""The ``?`` help screen: every key of the monitor (built from the app's bindings) and how to read the grid."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from kvtui.core.knobs import KNOBS
from kvtui.tui.widgets.page_grid import REASON_CELLS, STATES

GRID_HELP = (
    "Page grid: newest request on top, one cell per KV page, under a page-index ruler. When the prompts have "
    "few pages each page takes several columns (a blank column between pages); when a row is longer than the "
    "width, every row is drawn at k pages per cell (the grid's subtitle says \"1 cell = k pages\") and a cell "
    "shows its most severe page: mismatch > failed > evicted > computed > published > present > partial > disk "
    "hit > hit, so a cell is a hit only if all its pages were hits. On a store with a disk tier (--disk-size) a "
    "page reloaded from disk is ▆ and one reloaded from memory █: the page had left DRAM for the disk tier and "
    "still hit (a miss says evicted only when the page left both tiers). A row's label gives its request id, its "
    "prefix group (sys N: system prompt N; shot N: few-shot template N; conv N: conversation N; pfx N: a trace's "
    "prefix group) and its prompt length; rows of a group seen more than once carry a ▌ marker in the group's colour: "
    "later rows of a group hit the pages its first row published. ↑ ↓ move a cursor, Enter or a click shows a "
    "row's details (keys, every page's state, its misses by reason, reload and publish times, bytes, the trace's "
    "ideal). The grid's title says why the session's pages missed, as shares of the prompt tokens: first use "
    "(no earlier request had the page), evicted (it was in the store earlier), never stored (its put failed), "
    "after a break (present, but after the request's first miss), in flight (another request was computing it)."
)
HEADER_HELP = (
    "Header: \"page hits 74.7 % session · 75.0 % last 30 s\" (the whole session, and the last 30 s whatever w "
    "shows in the Latency panel; — while paused or idle). " + "".join(
        f"In {scenario} the header says \"{knob.chip_label(scenario, False)}\": {means}. "
        for knob in KNOBS.values() for scenario, _, means in knob.scenario_notes) +
    "A trace replay shows its row, its trace clock (position / length), its speed (- + ) and "
    "ETA (~: an estimate from the request rate at max), and the ideal hit rate of the rows so far: an unbounded "
    "cache, the rule of kvtui trace-stats. The gap between it and prefill skipped is what the store's capacity "
    "and concurrency cost. Beside it \"aiperf\": aiperf analyze-trace's hit rate over the same rows, the mean of "
    "each request's block hit share (every request weighs the same; ideal weighs every token). Badges (● REC, "
    "PAUSED, FROZEN) have fixed places at the right."
)


class HelpScreen(ModalScreen[None]):
    """Lists ``keys``: ``(key, description)`` pairs; ``palette``: what the command palette offers."""

    BINDINGS = [Binding("escape,question_mark,q", "close", "Close help")]

    def __init__(self, keys: list[tuple[str, str]],
                 palette: str = "set overlap %, rate, pool by value") -> None:
        super().__init__()
        self.keys, self.palette = keys, palette

    def compose(self) -> ComposeResult:
        table = Table.grid(padding=(0, 2))
        table.add_column(style="bold", no_wrap=True)
        table.add_column()
        for key, desc in self.keys:
            table.add_row(key, desc)
        legend = Text()
        for _, glyph, _, _, description in STATES:
            legend.append(f"  {glyph}  {description}\n")
        for _, glyph, _, _, _, description in REASON_CELLS:
            legend.append(f"  {glyph}  {description}\n")
        with VerticalScroll(id="help-body"):
            yield Static(Text("kvtui — keys", style="bold"), id="help-title")
            yield Static(table, id="help-keys")
            yield Static(Text("\n" + GRID_HELP), id="help-grid")
            yield Static(Text("\n" + HEADER_HELP), id="help-header")
            yield Static(legend, id="help-legend")
            yield Static(Text(f"ctrl+p: command palette ({self.palette})  ·  esc / ? closes",
                              style="dim"), id="help-footer")

    def action_close(self) -> None:
        self.dismiss(None)
