"""The failover reports (F): every failover the session measured, each report whole, a fact a line (the event log
has room for one short line of each). Opaque, like the row-detail screen (see :mod:`kvtui.tui.screens.settings`)."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

NONE_YET = "no failover measured yet"


def report_text(reports: Sequence[Sequence[str]]) -> Text:
    """The screen's text: each report's lines (the first in bold), a blank line between two reports."""
    out = Text()
    if not reports:
        return Text(NONE_YET, style="dim")
    for i, lines in enumerate(reports):
        if i:
            out.append("\n\n")
        for j, line in enumerate(lines):
            if j:
                out.append("\n")
            out.append(line, style="bold" if j == 0 else "")
    return out


class FailoverScreen(ModalScreen[None]):
    """Shows ``reports``: the lines of each report (``kvtui.core.failover.FailoverReport.lines``); Esc, F or q
    closes it."""

    BINDINGS = [Binding("escape,F,q", "close", "Close")]

    def __init__(self, reports: Sequence[Sequence[str]]) -> None:
        super().__init__()
        self.reports = [list(r) for r in reports]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="failover-body"):
            yield Static(Text(f"Failovers ({len(self.reports)})", style="bold"), id="failover-title")
            yield Static(report_text(self.reports), id="failover-reports")
            yield Static(Text("the same reports are printed when the monitor exits  ·  esc / F closes",
                              style="dim"), id="failover-footer")

    def action_close(self) -> None:
        self.dismiss(None)
