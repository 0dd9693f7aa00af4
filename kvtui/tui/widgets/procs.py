"""Processes panel: CPU % and RSS of each kvtui process (workers, store node) from ``frame.procs``."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.widget import Widget

from kvtui.tui.fmt import format_bytes


class ProcsPanel(Widget):
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
            self.procs = procs
            self.refresh(layout=True)

    def lines(self, width: int) -> list[Text]:
        """Header plus one line per process at ``width`` cells."""
        if not self.procs:
            return [Text("no process samples yet", self.get_component_rich_style("procs--dim", partial=True))]
        show_pid = width >= 34
        fixed = 7 + 11 + (8 if show_pid else 0)
        name_w = max(4, width - fixed)

        def row(name: str, pid: str, cpu: str, rss: str) -> str:
            return f"{name[:name_w]:<{name_w}}" + (f"{pid:>8}" if show_pid else "") + f"{cpu:>7}{rss:>11}"

        out = [Text(row("process", "pid", "cpu", "rss"), self.get_component_rich_style("procs--header", partial=True))]
        for p in self.procs:
            out.append(Text(row(str(p.get("name", "?")), str(p.get("pid", "")),
                                f"{float(p.get('cpu_percent', 0.0)):.1f}%", format_bytes(p.get("rss_bytes", 0)))))
        return out

    def get_content_height(self, container, viewport, width: int) -> int:
        return len(self.lines(width))

    def render(self) -> Text:
        text = Text("\n").join(self.lines(self.size.width))
        text.no_wrap, text.overflow = True, "ellipsis"
        return text
