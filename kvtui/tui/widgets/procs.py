"""Processes panel: CPU % and RSS of each kvtui process (workers, store node) from ``frame.procs``, with
its emulated host's address (or its last part) after the name when it has one and there is room
(``--hosts auto``).

The workers come first (prefill, decode; several of a role as ``decode-0``, ``decode-1``, …), then the store node, the
master (an HA cluster's masters, ``master-0`` …, each with its role: ``leader``, ``standby``, ``warm-up``, ``down``),
etcd, the monitor and the metadata server, so a short panel keeps the processes that do the work (an attached HA
cluster's masters, not processes kvtui samples, have a row each with their role and ``—`` for CPU and RSS); names are
shortened to fit (``metadata`` → ``meta``), never cut mid-word. When the panel has no line to spare, the column header
moves into its title and the subtitle says how many processes are not shown.
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text

from kvtui.core.topology import role_of
from kvtui.tui.fmt import format_bytes
from kvtui.tui.widgets.lines import LinesPanel

ORDER = ("prefill", "decode", "store", "master", "mooncake", "etcd", "kvtui", "metadata")  # by importance
SHORT = {"metadata": "meta", "mooncake": "master", "prefill": "prefill", "decode": "decode", "kvtui": "kvtui",
         "master": "master", "store": "store"}
TITLE = "Processes"
ROLE_SHORT = {"leader": "lead", "standby": "stby", "warm-up": "warm", "candidate": "cand", "catch-up": "ctch",
              "down": "down"}


def short_bytes(n: float) -> str:
    """``641728512`` → ``'612M'`` (binary units, no decimals below 10)."""
    n = float(n)
    for unit in ("B", "K", "M", "G"):
        if abs(n) < 1024:
            return f"{n:.0f}{unit}" if n >= 10 or unit == "B" else f"{n:.1f}{unit}"
        n /= 1024
    return f"{n:.1f}T"


def _rank(row: dict) -> int:
    words = str(row.get("name", "")).lower().split()
    first = role_of(words[0]) if words else ""  # (decode-1 ranks as decode)
    return ORDER.index(first) if first in ORDER else len(ORDER)


def ordered(procs) -> list[dict]:
    """``procs`` by importance (:data:`ORDER`; unknown names last, in their order)."""
    return sorted(procs, key=_rank)


def fit_name(name: str, width: int) -> str:
    """``name`` in at most ``width`` cells: whole, its first word, that word's short form (a numbered
    worker's: ``decode-2`` → ``dec-2`` → ``d2``), else cut."""
    if len(name) <= width:
        return name
    first = name.split()[0] if name.split() else name
    role = role_of(first)
    index = first[len(role) + 1:] if role != first else ""
    numbered = (f"{role[:3]}-{index}", f"{role[0]}{index}") if index else ()  # decode-2 → dec-2 → d2
    for option in (first, SHORT.get(first.lower(), first), *numbered):
        if len(option) <= width:
            return option
    return first[:width]


def host_names(procs, width: int) -> list[str]:
    """Each process's name with its emulated host's address, in one form for every row: the whole address
    where every row's fits in ``width`` cells (``store 10.77.0.11``), else its last part (``store .11``),
    on the rows where that fits."""
    names = [str(p.get("name", "?")) for p in procs]
    hosts = [p.get("host") for p in procs]
    if not any(hosts):
        return names
    short = [f"{n} .{h.rsplit('.', 1)[-1]}" if h else n for n, h in zip(names, hosts)]
    for shown in ([f"{n} {h}" if h else n for n, h in zip(names, hosts)], short):
        if all(len(x) <= width for x in shown):
            return shown
    return [s if len(s) <= width else n for s, n in zip(short, names)]  # (a long name keeps its cells)


def with_roles(procs, names: list[str], width: int) -> list[str]:
    """``names`` (one per row of ``procs``) with each HA master's role after it, in the first form that fits in
    ``width`` cells on every such row: ``master-0 leader``, ``master-0 lead``, ``mas-0 leader``, ``mas-0 lead``,
    ``m0 leader``, ``m0 lead``; else, row by row, the first that fits, or the name alone."""
    choices: list[list[str]] = []
    for name, p in zip(names, procs):
        role = p.get("role")
        if not role:
            choices.append([])
            continue
        base = role_of(name)
        index = name[len(base) + 1:] if base != name else ""
        forms = [name] + ([f"{base[:3]}-{index}", f"{base[0]}{index}"] if index else [name, name])
        choices.append([f"{n} {r}" for n in forms for r in (role, ROLE_SHORT.get(role, role))])
    for k in range(6):
        if all(len(c[k]) <= width for c in choices if c):
            return [c[k] if c else n for c, n in zip(choices, names)]
    return [next((o for o in c if len(o) <= width), n) for c, n in zip(choices, names)]


class ProcsPanel(LinesPanel):
    """One line per process: name, pid (when there is room), CPU %, RSS."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {"procs--header", "procs--dim"}

    DEFAULT_CSS = """
    ProcsPanel { height: auto; }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.procs: tuple = ()
        self.border_title = TITLE

    def update_frame(self, frame) -> None:
        procs = tuple(ordered(frame.procs or ()))
        if procs != self.procs:
            relayout = len(procs) != len(self.procs)
            self.procs = procs
            self.refresh(layout=relayout)

    def needed(self) -> int:
        """Lines the panel needs for every process and the column header."""
        return len(self.procs) + 1 if self.procs else 1

    def lines(self, width: int, height: int | None = None) -> list[Text]:
        """Header plus one line per process at ``width`` cells; within ``height`` lines (when given) the
        header goes first, then the least important processes."""
        if not self.procs:
            return [Text("no process samples yet", self.get_component_rich_style("procs--dim", partial=True))]
        wide = width >= 36
        fixed = (8 + 7 + 11) if wide else (6 + 7)
        name_w = max(4, width - fixed)

        def row(name: str, pid: str, cpu: str, rss: str) -> str:
            name = fit_name(name, name_w)
            if wide:
                return f"{name:<{name_w}}{pid:>8}{cpu:>7}{rss:>11}"
            return f"{name:<{name_w}}{cpu:>6}{rss:>7}"

        rss = format_bytes if wide else short_bytes
        names = with_roles(self.procs, host_names(self.procs, name_w), name_w)
        rows = [Text(row(name, "", "—", "—") if p.get("remote") else
                     row(name, str(p.get("pid", "")), f"{float(p.get('cpu_percent', 0.0)):.1f}%",
                         rss(p.get("rss_bytes", 0)))) for name, p in zip(names, self.procs)]
        header = Text(row("process", "pid", "cpu", "rss"), self.get_component_rich_style("procs--header", partial=True))
        room = len(rows) + 1 if height is None else height
        keep_header = room > len(rows)
        shown = rows[:room - 1] if keep_header else rows[:room]
        title = TITLE if keep_header else f"{TITLE} cpu rss"
        hidden = len(rows) - len(shown)
        subtitle = f"+{hidden} not shown" if hidden else ""
        if height is not None and (self.border_title != title or self.border_subtitle != subtitle):
            self.border_title, self.border_subtitle = title, subtitle
        return ([header] if keep_header else []) + shown

    def get_content_height(self, container, viewport, width: int) -> int:
        return len(self.lines(width))

    def render(self) -> Text:
        text = Text("\n").join(self.lines(self.size.width, self.size.height))
        text.no_wrap, text.overflow = True, "ellipsis"
        return text
