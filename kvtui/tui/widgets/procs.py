"""Processes panel: CPU % and RSS of each kvtui process (workers, store node) from ``frame.procs``."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text

from kvtui.tui.fmt import format_bytes
from kvtui.tui.widgets.lines import LinesPanel


def short_bytes(n: float) -> str:
    """``641728512`` → ``'612M'`` (binary units, no decimals below 10)."""
    n = float(n)
    for unit in ("B", "K", "M", "G"):
        if abs(n) < 1024:
            return f"{n:.0f}{unit}" if n >= 10 or unit == "B" else f"{n:.1f}{unit}"
        n /= 1024
    return f"{n:.1f}T"


class ProcsPanel(LinesPanel):
    """One line per process: name, pid (when there is room), CPU %, RSS."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {"procs--header", "procs--dim"}

    DEFAULT_CSS = """
    ProcsPanel { height: auto; }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.procs: tuple = ()
        self.border_title = "Processes"

    def update_frame(self, frame) -> None:
        procs = tuple(frame.procs or ())
        if procs != self.procs:
            relayout = len(procs) != len(self.procs)
            self.procs = procs
            self.refresh(layout=relayout)

    def lines(self, width: int) -> list[Text]:
        """Header plus one line per process at ``width`` cells."""
        if not self.procs:
            return [Text("no process samples yet", self.get_component_rich_style("procs--dim", partial=True))]
        wide = width >= 36
        fixed = (8 + 7 + 11) if wide else (6 + 7)
        name_w = max(4, width - fixed)

        def row(name: str, pid: str, cpu: str, rss: str) -> str:
            if len(name) > name_w:
                name = name.split()[0]
            if wide:
                return f"{name[:name_w]:<{name_w}}{pid:>8}{cpu:>7}{rss:>11}"
            return f"{name[:name_w]:<{name_w}}{cpu:>6}{rss:>7}"

        rss = format_bytes if wide else short_bytes
        out = [Text(row("process", "pid", "cpu", "rss"), self.get_component_rich_style("procs--header", partial=True))]
        for p in self.procs:
            out.append(Text(row(str(p.get("name", "?")), str(p.get("pid", "")),
                                f"{float(p.get('cpu_percent', 0.0)):.1f}%", rss(p.get("rss_bytes", 0)))))
        return out

