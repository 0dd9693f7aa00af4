"""The page grid: one row per recent request, one cell per KV page (a line-API widget).

Rows are drawn newest first (the newest request is always on the top line, whatever the height), under a
page-index ruler (``page 0 8 16 …``) and above a legend. Each cell is one
:class:`~kvtui.core.pages.PageState` with its own glyph **and** colour (TCSS component class
``page-grid--hit`` …), so the grid reads without colour too: █ hit, ▓ published, ▒ already present, ░
computed, · partial tail, X failed, E evicted, ! mismatch; on a store with a disk tier ▆ a hit read from disk
(█ then says from memory). The legend names the disk hit only on such a store (:meth:`PageGrid.set_tiered`) or
when a row shown has one.

**Miss reasons.** A missed full page that was computed (published, present or computed) and whose request
carries a miss reason (:attr:`PageRow.reasons <kvtui.metrics.frame.PageRow>`, :mod:`kvtui.core.misses`) other
than *first use* is drawn with the reason's glyph and colour instead: e evicted earlier (a capacity miss),
n never stored, b after a break, f in flight. First-use misses keep their state's glyph (a cache of any size
would have missed them), and so do failed, evicted-between-probe-and-read and mismatched pages (the error
says more). The legend names only the reasons on the rows shown (short words ``gone``, ``never``, ``break``,
``flight`` when the full ones need more than 2 lines).

**Width.** When the longest visible row has fewer pages than there are columns, every page gets ``w =
columns // pages`` columns (from 3 on, the last one a blank separator, so pages can be counted); when it
has more, every row is drawn at ``k = ceil(longest / columns)`` pages per cell and the subtitle says ``1
cell = k pages``. A compressed cell shows its *most severe* page, in this order::

    mismatch > failed > evicted > e > n > b > f > computed > published > present > partial > disk hit > hit

so errors are never hidden, a cell is drawn as a hit only when every page in it was a hit (a disk hit when one
of them came from disk), and the partial tail only shows when its cell holds nothing worse than hits.

**Labels.** Each row starts with its request id, then (as the width allows) its prefix group (``sys 3``,
``conv 12``, ``pfx 978``: :func:`kvtui.metrics.aggregate.prefix_group`) and its prompt length. Rows of a group
seen more than once on screen carry a marker ``▌`` and a group name in that group's colour: rows that share
a prefix are why later ones hit. ↑/↓ move a cursor, Enter or a click opens the row's details
(:class:`RowSelected`).

**Title.** Once requests carry miss reasons (:mod:`kvtui.core.misses`) the title says why the session's pages
missed: each reason that has any, with its share of the prompt tokens (:data:`kvtui.metrics.figures.MISS_SHARE`),
``Page grid · newest first · missed: first use 87.2 % · evicted 5.5 %``, in the longest of shorter forms that
fits the width (``missed first 87 % · evicted 6 %``, then only the reasons of 0.5 % or more and ``…``), else
not at all; the row details give a request's.
"""

from __future__ import annotations

import math
import zlib
from collections import Counter
from typing import TYPE_CHECKING, ClassVar, Sequence

from rich.segment import Segment
from rich.style import Style
from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message
from textual.strip import Strip
from textual.widget import Widget

from kvtui.core.misses import LABELS as MISS_LABELS, NAMES as MISS_NAMES, REASONS, MissReason as R
from kvtui.core.pages import PageState as S
from kvtui.core.text import plural
from kvtui.tui.fmt import fmt_count, fmt_pct, format_bytes
from kvtui.tui.widgets.styled import CachedStyles

if TYPE_CHECKING:
    from kvtui.metrics.frame import PageRow

# (state, glyph, component class, legend word, full description) in legend order.
STATES: tuple[tuple[int, str, str, str, str], ...] = (
    (S.HIT, "█", "page-grid--hit", "hit", "hit: reloaded from the store and verified (prefill skipped)"),
    (S.HIT_DISK, "▆", "page-grid--hit-disk", "disk hit", "hit from disk: reloaded from the store's disk tier "
     "(it had left DRAM) and verified (prefill skipped)"),
    (S.PUBLISHED, "▓", "page-grid--published", "published", "miss → computed and published"),
    (S.PRESENT, "▒", "page-grid--present", "present", "miss → computed, already present in the store"),
    (S.COMPUTED, "░", "page-grid--computed", "computed", "miss → computed, not published (decode role)"),
    (S.PARTIAL, "·", "page-grid--partial", "partial", "partial tail page: never cached, always computed"),
    (S.FAILED, "X", "page-grid--failed", "failed", "a store call failed (see the event log)"),
    (S.EVICTED, "E", "page-grid--evicted", "evicted", "evicted between probe and read"),
    (S.MISMATCH, "!", "page-grid--mismatch", "mismatch", "loaded bytes or size did not verify"),
)
SHORT: dict[int, str] = {S.HIT: "hit", S.HIT_DISK: "disk", S.PUBLISHED: "pub", S.PRESENT: "pres", S.COMPUTED: "comp",
                         S.PARTIAL: "part", S.FAILED: "fail", S.EVICTED: "evict",
                         S.MISMATCH: "mism"}  # legend words when the full ones need > 2 lines (abbreviations)
REASON_BASE = 16  # a reason's cell code: REASON_BASE + MissReason (above every PageState, below 256)
# (cell code, glyph, component class, legend word, short legend word, description): the miss reasons a cell
# shows instead of its computed state (module docstring); first use keeps the state's glyph.
REASON_CELLS: tuple[tuple[int, str, str, str, str, str], ...] = (
    (REASON_BASE + R.EVICTED, "e", "page-grid--miss-evicted", "evicted earlier", "gone",
     "miss, evicted: stored earlier in the run and gone now, from a disk tier too (a larger store would have hit)"),
    (REASON_BASE + R.NEVER_STORED, "n", "page-grid--miss-never", "never stored", "never",
     "miss, never stored: an earlier request computed it, its put failed or was refused"),
    (REASON_BASE + R.AFTER_BREAK, "b", "page-grid--miss-break", "after a break", "break",
     "miss, after a break: in the store, but an earlier page of the request missed"),
    (REASON_BASE + R.IN_FLIGHT, "f", "page-grid--miss-flight", "in flight", "flight",
     "miss, in flight: another request running at the same time was computing it"),
)
_COMPUTED_STATES = frozenset((S.PUBLISHED, S.PRESENT, S.COMPUTED))  # the cells a reason is drawn over
_REASON_CODES = {code - REASON_BASE: code for code, *_ in REASON_CELLS}
GLYPH = {s[0]: s[1] for s in STATES} | {r[0]: r[1] for r in REASON_CELLS}
CLASS = {s[0]: s[2] for s in STATES} | {r[0]: r[2] for r in REASON_CELLS}
UNKNOWN_GLYPH = "?"
# Most severe first: the state a compressed cell shows (see module docstring).
SEVERITY: tuple[int, ...] = (S.MISMATCH, S.FAILED, S.EVICTED, *(r[0] for r in REASON_CELLS), S.COMPUTED,
                             S.PUBLISHED, S.PRESENT, S.PARTIAL, S.HIT_DISK, S.HIT)
_RANK = {s: i for i, s in enumerate(SEVERITY)}
_UNKNOWN_RANK = 0.5  # an unknown state value ranks just below mismatch
GROUP_MARK = "▌"
GROUP_COLOURS = 6  # page-grid--group-0 … -5 (app.tcss)
TITLE = "Page grid · newest first"
SHORT_REASONS = {"first_use": "first", "evicted": "evicted", "never_stored": "never", "after_break": "break",
                 "in_flight": "flight"}  # the title's words for the reasons where the full ones do not fit
BY_NAME = {name: reason for reason, name in MISS_NAMES.items()}
RULER_STEPS = (1, 2, 4, 5, 8, 10, 16, 20, 25, 32, 50, 64, 100, 128, 250, 256, 500, 512, 1000, 1024)


def _rank(state: int) -> float:
    return _RANK.get(state, _UNKNOWN_RANK)


def cells_of(states: bytes | Sequence[int], reasons: bytes | Sequence[int] = b"") -> list[int]:
    """The cell code of each page: its state, or for a computed page whose reason (``reasons``: one
    :class:`~kvtui.core.misses.MissReason` per full page, may be shorter or empty) is not first use, the
    reason's code (:data:`REASON_CELLS`)."""
    if not reasons:
        return list(states)
    return [_REASON_CODES.get(reasons[i], s) if i < len(reasons) and s in _COMPUTED_STATES else s
            for i, s in enumerate(states)]


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


def page_width(longest: int, columns: int) -> int:
    """Columns per page when ``longest`` pages fit ``columns`` (at least 1; 1 when they do not fit)."""
    return max(1, columns // longest) if longest else 1


def group_colour(group: str) -> int:
    """The colour index (0 … ``GROUP_COLOURS - 1``) of a prefix group: the same on every frame and run."""
    return zlib.crc32(group.encode()) % GROUP_COLOURS


def ruler_step(width: int, label_len: int) -> int:
    """The smallest :data:`RULER_STEPS` entry ``s`` whose labels (``label_len`` cells and a space) fit ``s *
    width`` columns."""
    return next((s for s in RULER_STEPS if s * width >= label_len + 1), RULER_STEPS[-1])


class PageGrid(CachedStyles, Widget, can_focus=True):
    """Recent requests × pages. Feed it with :meth:`set_rows` (``PageRow`` s, newest last)."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {s[2] for s in STATES} | {r[2] for r in REASON_CELLS} | {
        "page-grid--label", "page-grid--legend", "page-grid--unknown", "page-grid--empty", "page-grid--ruler",
        "page-grid--cursor"} | {f"page-grid--group-{i}" for i in range(GROUP_COLOURS)}

    BINDINGS: ClassVar = [
        Binding("up", "cursor(-1)", "row up", show=False),
        Binding("down", "cursor(1)", "row down", show=False),
        Binding("enter", "open", "row details", show=False),
    ]

    DEFAULT_CSS = """
    PageGrid { height: 1fr; }
    """

    class RowSelected(Message):
        """Enter or a click on a row: ``row`` is its :class:`~kvtui.metrics.frame.PageRow`."""

        def __init__(self, row) -> None:
            super().__init__()
            self.row = row

    def __init__(self, *, legend: bool = True, name: str | None = None, id: str | None = None,
                 classes: str | None = None) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.rows: tuple[PageRow, ...] = ()
        self.show_legend = legend
        self.scale = 1  # pages per cell (> 1: compressed)
        self.page_w = 1  # columns per page (> 1: spread over the width)
        self.cursor: int | None = None  # index into the visible rows (0 = newest), None: no cursor
        self._strips: list[Strip] | None = None
        self._built_for: Size | None = None  # the size the strips were built for
        self.misses: tuple[tuple[str, float], ...] = ()  # (reason name, share) of the title (set_misses)
        self.tiered = False  # the store has a disk tier: the legend names the disk hit (set_tiered)
        self.border_title = TITLE

    # -- data ----------------------------------------------------------------------------------------------
    def set_rows(self, rows: tuple[PageRow, ...]) -> None:
        """Show ``rows`` (``PageRow`` s, newest last); repaints only when they changed."""
        if rows is self.rows or rows == self.rows:
            return
        self.rows = tuple(rows)
        self._invalidate()

    def set_misses(self, totals: dict) -> None:
        """Say in the title why the session's pages missed, from a frame's ``totals`` (the ``miss_share_*``
        and ``misses_*`` keys of :func:`kvtui.metrics.aggregate.derive`; none: the title stays plain)."""
        misses = tuple((MISS_NAMES[r], float(totals.get(f"miss_share_{MISS_NAMES[r]}", 0.0))) for r in REASONS
                       if totals.get(f"misses_{MISS_NAMES[r]}"))
        if misses != self.misses:
            self.misses = misses
            self._retitle()

    def set_tiered(self, tiered: bool) -> None:
        """Whether the store has a disk tier (a frame's totals carry the tiers' counts): the legend then names
        the disk hit, whether or not a row shown has one."""
        if tiered != self.tiered:
            self.tiered = tiered
            self._invalidate()

    def title_for(self, width: int) -> str:
        """The title at ``width`` columns: the longest form of the miss reasons that fits (module docstring)."""
        if not self.misses:
            return TITLE
        long = " · ".join(f"{MISS_LABELS[BY_NAME[n]]} {fmt_pct(v)}" for n, v in self.misses)
        brief = " · ".join(f"{SHORT_REASONS[n]} {fmt_pct(v, 0)}" for n, v in self.misses)
        big = " · ".join(f"{SHORT_REASONS[n]} {fmt_pct(v, 0)}" for n, v in self.misses if round(100 * v))
        for title in (f"{TITLE} · missed: {long}", f"Page grid · missed: {long}", f"Page grid · missed {brief}",
                      f"missed {brief}", f"missed {big} …"):
            if len(title) <= width - 4:  # (the corners and a space each side)
                return title
        return TITLE

    def _retitle(self) -> None:
        title = self.title_for(self.size.width)
        if title != self.border_title:
            self.border_title = title

    def _invalidate(self) -> None:
        self._strips = None
        self._update_scale()
        self.refresh()

    def on_resize(self) -> None:
        self._retitle()
        self._invalidate()

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._strips = None

    # -- cursor and details ----------------------------------------------------------------------------------
    def action_cursor(self, delta: int) -> None:
        n = len(self._visible())
        if not n:
            return
        self.cursor = 0 if self.cursor is None else max(0, min(n - 1, self.cursor + delta))
        self._invalidate()

    def action_open(self) -> None:
        """Open the details of the row under the cursor (the newest row when there is no cursor)."""
        visible = self._visible()
        if visible:
            self.post_message(self.RowSelected(visible[min(self.cursor or 0, len(visible) - 1)]))

    def row_at(self, y: int):
        """The visible row drawn on line ``y`` of the content (None: the ruler, the legend or blank)."""
        i = y - self._ruler_lines()
        visible = self._visible()
        return visible[i] if 0 <= i < len(visible) else None

    def on_click(self, event) -> None:
        offset = event.get_content_offset(self)  # (inside the border; None on the border itself)
        row = self.row_at(offset.y) if offset is not None else None
        if row is not None:
            self.cursor = self._visible().index(row)
            self._invalidate()
            self.post_message(self.RowSelected(row))

    # -- geometry ------------------------------------------------------------------------------------------
    def legend_lines(self, width: int | None = None, height: int | None = None) -> list[list[tuple[str, int]]]:
        """The legend packed into lines of ``width`` cells: each line a list of (text, state) pairs (state -1:
        the prefix-group marker). Short words when the full ones need more than 2 lines; no legend when fewer
        than 5 grid rows would remain (the help lists it too)."""
        width = self.size.width if width is None else width
        height = self.size.height if height is None else height
        if not self.show_legend or width <= 0:
            return []
        disk = self.tiered or self._disk_shown()
        items = [(state, glyph, text, SHORT[state]) for state, glyph, _, text, _ in STATES
                 if state != S.HIT_DISK or disk]
        shown = self._reasons_shown()
        items += [(code, glyph, text, brief) for code, glyph, _, text, brief, _ in REASON_CELLS if code in shown]
        if self._groups():
            items.append((-1, GROUP_MARK, "same prefix group", "group"))
        for short in (False, True):
            lines: list[list[tuple[str, int]]] = [[]]
            used = 0
            for state, glyph, text, brief in items:
                item = f"{glyph} {brief if short else text}"
                need = len(item) + (2 if used else 0)
                if used and used + need > width:
                    lines.append([])
                    used, need = 0, len(item)
                lines[-1].append((item, state))
                used += need
            if len(lines) <= 2:
                break
        return lines if height - len(lines) - self._ruler_lines(height) >= 5 else []

    def _ruler_lines(self, height: int | None = None) -> int:
        height = self.size.height if height is None else height
        return 1 if height >= 6 and self.rows else 0

    def _visible(self) -> list:
        height = self.size.height
        n = max(0, height - self._ruler_lines() - len(self.legend_lines()))
        return list(reversed(self.rows[-n:])) if n else []

    def _reasons_shown(self) -> set[int]:
        """The reason cell codes drawn on the rows that fit the height (whatever the legend takes)."""
        height = self.size.height
        shown: set[int] = set()
        for r in self.rows[-max(0, height):]:
            if getattr(r, "reasons", b""):
                shown.update(c for c in cells_of(r.states, r.reasons) if c >= REASON_BASE)
        return shown

    def _disk_shown(self) -> bool:
        """Whether a row that fits the height has a page reloaded from disk."""
        return any(S.HIT_DISK in r.states for r in self.rows[-max(0, self.size.height):])

    def _groups(self) -> dict[str, int]:
        """Prefix groups seen on more than one of the rows shown → their colour index."""
        height = self.size.height
        counts = Counter(r.group for r in self.rows[-max(0, height):] if getattr(r, "group", ""))
        return {g: group_colour(g) for g, n in counts.items() if n > 1}

    def _label_parts(self, rows: Sequence) -> tuple[int, int, int]:
        """Widths of the id, group and token columns of the labels (0: left out), by the grid's width."""
        width = self.size.width
        if width < 24 or not rows:
            return 0, 0, 0
        id_w = len(str(max(r.req_id for r in rows))) + 1  # "#" + id
        group_w = max((len(getattr(r, "group", "")) for r in rows), default=0) if width >= 56 else 0
        tok_w = max(len(fmt_count(r.n_tokens)) for r in rows) if width >= 90 else 0
        return id_w, group_w, tok_w

    def _label_width(self, rows: Sequence) -> int:
        id_w, group_w, tok_w = self._label_parts(rows)
        if not id_w:
            return 0
        return id_w + 1 + (group_w + 1 if group_w else 0) + (tok_w + 1 if tok_w else 0) + 1  # + the marker

    def _update_scale(self) -> None:
        visible = self._visible()
        columns = self.size.width - self._label_width(visible)
        longest = max((len(r.states) for r in visible), default=0)
        self.scale = scale_for(longest, columns)
        self.page_w = page_width(longest, columns) if self.scale == 1 else 1
        if self.border_subtitle != self.scale_note:
            self.border_subtitle = self.scale_note

    @property
    def scale_note(self) -> str:
        """What one cell stands for: ``'1 cell = 4 pages (worst shown)'``, or with pages spread over the width
        ``'1 page = 8 columns · 14.0 MiB, 256 tok'`` (the newest row's page size)."""
        if self.scale > 1:
            return f"1 cell = {self.scale} pages" + (" (worst shown)" if self.size.width >= 40 else "")
        newest = self.rows[-1] if self.rows else None
        size = ""
        if newest is not None and newest.page_bytes and self.size.width >= 50:
            size = f" · {format_bytes(newest.page_bytes)}, {newest.page_tokens} tok"
        if self.page_w == 1:
            return "1 cell = 1 page" + size
        return f"1 page = {plural(self.page_w, 'column')}" + size

    # -- rendering -----------------------------------------------------------------------------------------
    def _style(self, name: str) -> Style:
        return self.style_of(name, partial=False)

    def _label(self, row, parts: tuple[int, int, int], groups: dict[str, int], selected: bool) -> list[Segment]:
        id_w, group_w, tok_w = parts
        lab = self._style("page-grid--cursor" if selected else "page-grid--label")
        out = [Segment(f"#{row.req_id}".rjust(id_w) + " ", lab)]
        group = getattr(row, "group", "")
        colour = groups.get(group)
        if group_w:
            style = self._style(f"page-grid--group-{colour}") if colour is not None else lab
            out.append(Segment(group.ljust(group_w) + " ", style))
        if tok_w:
            out.append(Segment(fmt_count(row.n_tokens).rjust(tok_w) + " ", lab))
        marker = GROUP_MARK if colour is not None else " "
        out.append(Segment(marker, self._style(f"page-grid--group-{colour}") if colour is not None else lab))
        return out

    def _row_strip(self, row, parts, groups, selected: bool, width: int) -> Strip:
        segments: list[Segment] = self._label(row, parts, groups, selected) if parts[0] else []
        cells = compress(cells_of(row.states, getattr(row, "reasons", b"")), self.scale)
        if not cells:
            segments.append(Segment("(no pages)", self._style("page-grid--empty")))
        pw = self.page_w
        glyphs, gap = (pw - 1, 1) if pw >= 3 else (pw, 0)
        blank = self._style("")
        start = 0
        while start < len(cells):
            state = cells[start]
            end = start
            while end < len(cells) and cells[end] == state:
                end += 1
            glyph, style = (GLYPH[state], self._style(CLASS[state])) if state in GLYPH else (
                UNKNOWN_GLYPH, self._style("page-grid--unknown"))
            if gap:
                for _ in range(end - start):  # one span per page and one per separator
                    segments += [Segment(glyph * glyphs, style), Segment(" ", blank)]
            else:
                segments.append(Segment(glyph * (glyphs * (end - start)), style))
            start = end
        return Strip(segments).adjust_cell_length(width, blank)

    def _ruler_strip(self, label_w: int, width: int, longest: int) -> Strip:
        """``page 0       8       16 …``: page indices at the start of their cells."""
        cells = [" "] * max(0, width - label_w)
        if self.scale > 1:
            step = ruler_step(1, len(str(longest)))  # cells between labels
            marks = [(c, c * self.scale) for c in range(0, math.ceil(longest / self.scale), step)]
        else:
            step = ruler_step(self.page_w, len(str(longest)))
            marks = [(p * self.page_w, p) for p in range(0, longest, step)]
        for col, page in marks:
            text = str(page)
            if col + len(text) <= len(cells) and all(c == " " for c in cells[max(0, col - 1):col + len(text)]):
                cells[col:col + len(text)] = list(text)
        word = "page " if label_w >= 5 else ""
        pad = Segment(" " * (label_w - len(word)), self._style(""))  # (its own span: SVG renderers drop a span's
        return Strip([pad, Segment(word + "".join(cells), self._style("page-grid--ruler"))]).adjust_cell_length(
            width, self._style(""))  # leading spaces)

    def _legend_strip(self, items: list[tuple[str, int]], width: int) -> Strip:
        segments: list[Segment] = []
        for i, (text, state) in enumerate(items):
            if i:
                segments.append(Segment("  ", self._style("")))
            glyph, rest = text.split(" ", 1)  # (no span starts with a space: SVG renderers drop those)
            segments.append(Segment(glyph, self._style(CLASS[state] if state >= 0 else "page-grid--group-0")))
            segments.append(Segment(" ", self._style("")))
            segments.append(Segment(rest, self._style("page-grid--legend")))
        return Strip(segments).adjust_cell_length(width, self._style(""))

    def _build(self) -> list[Strip]:
        width, height = self.size
        if width <= 0 or height <= 0:
            return []
        visible = self._visible()
        self._update_scale()
        parts = self._label_parts(visible)
        label_w = self._label_width(visible)
        groups = self._groups()
        if self.cursor is not None and self.cursor >= len(visible):
            self.cursor = len(visible) - 1 if visible else None
        strips = [self._row_strip(r, parts, groups, i == self.cursor, width)
                  for i, r in enumerate(visible)]
        if self._ruler_lines():
            longest = max((len(r.states) for r in visible), default=0)
            strips.insert(0, self._ruler_strip(label_w, width, longest))
        if not self.rows:
            strips = [Strip([Segment("waiting for requests…", self._style("page-grid--empty"))])
                      .adjust_cell_length(width, self._style(""))]
        legend = [self._legend_strip(items, width) for items in self.legend_lines()]
        blank = Strip.blank(width, self._style(""))
        strips = strips[: height - len(legend)]
        strips += [blank] * (height - len(legend) - len(strips))
        return strips + legend

    def render_line(self, y: int) -> Strip:
        if self._strips is None or self._built_for != self.size:  # (a render may come before on_resize)
            self._strips, self._built_for = self._build(), self.size
        if 0 <= y < len(self._strips):
            return self._strips[y]
        return Strip.blank(self.size.width, self._style(""))
