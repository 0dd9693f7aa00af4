"""The page grid: one row per recent request, one cell per KV page (a line-API widget).

Rows are drawn newest first (the newest request is always on the top line, whatever the height). Each cell
is one :class:`~kvtui.core.pages.PageState` with its own glyph (so the grid reads without colour) and its own
TCSS component class (``page-grid--hit`` … ``page-grid--computed``) for colour.

**Compression.** When the longest visible row has more pages than there are columns, every row is drawn at
the same scale of ``k`` pages per cell (``k = ceil(longest / columns)``), and the border subtitle says
``1 cell = k pages``. A compressed cell shows its *most severe* page, in this order::

    mismatch > failed > evicted > computed > published > present > partial > hit

so errors are never hidden, a cell is drawn as a hit only when every page in it was a hit, and the partial
tail only shows when its cell holds nothing worse than hits.
"""

from __future__ import annotations

import math
from typing import ClassVar, Sequence

from rich.segment import Segment
from rich.style import Style
from textual.strip import Strip
from textual.widget import Widget

from kvtui.core.pages import PageState as S
from kvtui.tui.widgets.styled import CachedStyles

# (state, glyph, component class, legend word, full description) in legend order.
STATES: tuple[tuple[int, str, str, str, str], ...] = (
    (S.HIT, "█", "page-grid--hit", "hit", "hit: reloaded from the store and verified (prefill skipped)"),
    (S.PUBLISHED, "▓", "page-grid--published", "published", "miss → computed and published"),
    (S.PRESENT, "▒", "page-grid--present", "present", "miss → computed, but a peer had already stored it"),
    (S.COMPUTED, "░", "page-grid--computed", "computed", "miss → computed, not published (decode role)"),
    (S.PARTIAL, "·", "page-grid--partial", "partial", "partial tail page: never cached, always computed"),
    (S.FAILED, "X", "page-grid--failed", "failed", "a store call failed (see the event log)"),
    (S.EVICTED, "E", "page-grid--evicted", "evicted", "evicted between probe and read"),
    (S.MISMATCH, "!", "page-grid--mismatch", "mismatch", "loaded bytes or size did not verify"),
)
SHORT = {S.HIT: "hit", S.PUBLISHED: "pub", S.PRESENT: "peer", S.COMPUTED: "comp", S.PARTIAL: "part",
         S.FAILED: "fail", S.EVICTED: "evict", S.MISMATCH: "mism"}  # legend words when the full ones need > 2 lines
GLYPH = {s[0]: s[1] for s in STATES}
CLASS = {s[0]: s[2] for s in STATES}
UNKNOWN_GLYPH = "?"
# Most severe first: the state a compressed cell shows (see module docstring).
SEVERITY: tuple[int, ...] = (S.MISMATCH, S.FAILED, S.EVICTED, S.COMPUTED, S.PUBLISHED, S.PRESENT, S.PARTIAL,
                             S.HIT)
_RANK = {s: i for i, s in enumerate(SEVERITY)}
_UNKNOWN_RANK = 0.5  # an unknown state value ranks just below mismatch


def _rank(state: int) -> float:
    return _RANK.get(state, _UNKNOWN_RANK)


def compress(states: bytes | Sequence[int], k: int) -> list[int]:
    """Cells of ``states`` at ``k`` pages per cell, each the most severe state of its pages."""
    if k <= 1:
        return list(states)
    return [min(states[i:i + k], key=_rank) for i in range(0, len(states), k)]


def scale_for(longest: int, columns: int) -> int:
    """Pages per cell so that ``longest`` pages fit in ``columns`` cells (at least 1)."""
    if columns <= 0:
        return max(1, longest)
    return max(1, math.ceil(longest / columns))


class PageGrid(CachedStyles, Widget):
    """Recent requests × pages. Feed it with :meth:`set_rows` (``PageRow`` s, newest last)."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {s[2] for s in STATES} | {
        "page-grid--label", "page-grid--legend", "page-grid--unknown", "page-grid--empty"}

    DEFAULT_CSS = """
    PageGrid { height: 1fr; }
    """

    def __init__(self, *, legend: bool = True, name: str | None = None, id: str | None = None,
                 classes: str | None = None) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.rows: tuple = ()
        self.show_legend = legend
        self.scale = 1
        self._strips: list[Strip] | None = None
        self.border_title = "Page grid · newest first"

    # -- data ----------------------------------------------------------------------------------------------
    def set_rows(self, rows: tuple) -> None:
        """Show ``rows`` (``PageRow`` s, newest last); repaints only when they changed."""
        if rows is self.rows or rows == self.rows:
            return
        self.rows = tuple(rows)
        self._invalidate()

    def _invalidate(self) -> None:
        self._strips = None
        self._update_scale()
        self.refresh()

    def on_resize(self) -> None:
        self._invalidate()

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._strips = None

    # -- geometry ------------------------------------------------------------------------------------------
    def legend_lines(self, width: int | None = None, height: int | None = None) -> list[list[tuple[str, int]]]:
        """The legend packed into lines of ``width`` cells: each line a list of (text, state) pairs. Short
        words when the full ones need more than 2 lines; no legend when fewer than 3 grid rows would remain."""
        width = self.size.width if width is None else width
        height = self.size.height if height is None else height
        if not self.show_legend or width <= 0:
            return []
        for short in (False, True):
            lines: list[list[tuple[str, int]]] = [[]]
            used = 0
            for state, glyph, _, text, _ in STATES:
                item = f"{glyph} {SHORT[state] if short else text}"
                need = len(item) + (2 if used else 0)
                if used and used + need > width:
                    lines.append([])
                    used, need = 0, len(item)
                lines[-1].append((item, state))
                used += need
            if len(lines) <= 2:
                break
        return lines if height - len(lines) >= 3 else []

    def _label_width(self, rows: Sequence) -> int:
        if self.size.width < 24 or not rows:
            return 0
        return len(str(max(r.req_id for r in rows))) + 2  # "#" + id + space

    def _visible(self) -> list:
        height = self.size.height
        legend = len(self.legend_lines())
        n = max(0, height - legend)
        return list(reversed(self.rows[-n:])) if n else []

    def _update_scale(self) -> None:
        visible = self._visible()
        columns = self.size.width - self._label_width(visible)
        longest = max((len(r.states) for r in visible), default=0)
        self.scale = scale_for(longest, columns)
        if self.border_subtitle != self.scale_note:
            self.border_subtitle = self.scale_note

    @property
    def scale_note(self) -> str:
        """What one cell stands for, e.g. ``'1 cell = 4 pages (worst shown)'``."""
        if self.scale == 1:
            return "1 cell = 1 page"
        return f"1 cell = {self.scale} pages" + (" (worst shown)" if self.size.width >= 40 else "")

    # -- rendering -----------------------------------------------------------------------------------------
    def _style(self, name: str) -> Style:
        return self.style_of(name, partial=False)

    def _row_strip(self, row, label_w: int, width: int) -> Strip:
        segments: list[Segment] = []
        if label_w:
            segments.append(Segment(f"#{row.req_id}".rjust(label_w - 1) + " ", self._style("page-grid--label")))
        cells = compress(row.states, self.scale)
        if not cells:
            segments.append(Segment("(no pages)", self._style("page-grid--empty")))
        start = 0
        while start < len(cells):
            state = cells[start]
            end = start
            while end < len(cells) and cells[end] == state:
                end += 1
            if state in GLYPH:
                segments.append(Segment(GLYPH[state] * (end - start), self._style(CLASS[state])))
            else:
                segments.append(Segment(UNKNOWN_GLYPH * (end - start), self._style("page-grid--unknown")))
            start = end
        return Strip(segments).adjust_cell_length(width, self._style(""))

    def _legend_strip(self, items: list[tuple[str, int]], width: int) -> Strip:
        segments: list[Segment] = []
        for i, (text, state) in enumerate(items):
            if i:
                segments.append(Segment("  ", self._style("")))
            glyph, rest = text.split(" ", 1)
            segments.append(Segment(glyph, self._style(CLASS[state])))
            segments.append(Segment(" " + rest, self._style("page-grid--legend")))
        return Strip(segments).adjust_cell_length(width, self._style(""))

    def _build(self) -> list[Strip]:
        width, height = self.size
        if width <= 0 or height <= 0:
            return []
        visible = self._visible()
        self._update_scale()
        label_w = self._label_width(visible)
        strips = [self._row_strip(r, label_w, width) for r in visible]
        if not self.rows and height > 0:
            strips = [Strip([Segment("waiting for requests…", self._style("page-grid--empty"))])
                      .adjust_cell_length(width, self._style(""))]
        legend = [self._legend_strip(items, width) for items in self.legend_lines()]
        blank = Strip.blank(width, self._style(""))
        strips = strips[: height - len(legend)]
        strips += [blank] * (height - len(legend) - len(strips))
        return strips + legend

    def render_line(self, y: int) -> Strip:
        if self._strips is None or len(self._strips) != self.size.height:
            self._strips = self._build()
        if 0 <= y < len(self._strips):
            return self._strips[y]
        return Strip.blank(self.size.width, self._style(""))
