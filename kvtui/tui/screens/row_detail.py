"""The detail panel of one page-grid row (Enter or a click on the row): what happened to that request.

Its prefix group, prompt length and layout, the count and the state of every page (one glyph each, as in
the grid), its missed pages by reason (:mod:`kvtui.core.misses`), the reload and publish times (and the
reload's time reading pages from a disk tier), how many of its hit pages had a second memory replica (a store that
replicates hot keys), the bytes moved, its first and last store key (look a page up
with ``kvtui keys``), its failing store codes and, for a trace row, how many pages an unbounded cache would have
reloaded (the ``trace-stats`` rule): the difference is what the store's capacity and concurrency cost.

Like the settings screen it is built once and shown again for each row, over an opaque background (see
:mod:`kvtui.tui.screens.settings`: a translucent one costs a repaint of the whole dashboard).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static

from kvtui.core.misses import LABELS as MISS_LABELS, NAMES as MISS_NAMES
from kvtui.core.pages import PageState
from kvtui.core.text import plural
from kvtui.metrics.frame import PageRow
from kvtui.tui.fmt import fmt_elapsed, fmt_int, fmt_ms, format_bytes
from kvtui.tui.widgets.page_grid import CLASS, GLYPH, STATES, cells_of

BY_NAME = {name: reason for reason, name in MISS_NAMES.items()}
GROUPS = {"sys": "a system prompt of the pool", "shot": "a few-shot template", "conv": "one conversation's turns",
          "pfx": "trace rows with this hash id where the trace's rows first differ"}


DetailLine = Text | str | tuple[str, Any]  # a text, or ("summary", [(state, text), …]) / ("pages", states)


def detail_lines(row: PageRow) -> list[DetailLine]:
    """The panel's lines for ``row`` (a :class:`~kvtui.metrics.frame.PageRow`): texts, and ``("pages",
    states)`` where the page strip goes (one glyph per page, drawn with the grid's styles)."""
    states = bytes(row.states)
    counts = Counter(states)
    pages = len(states)
    group = f" · prefix group {row.group} ({GROUPS.get(row.group.split()[0], 'a shared prefix')})" if row.group else ""
    out: list[DetailLine] = [Text(f"Request #{row.req_id} · {row.scenario}{group}", style="bold")]
    size = ""
    if row.page_tokens:
        size = f" · pages of {row.page_tokens} tok" + (
            f", {format_bytes(row.page_bytes)} each" if row.page_bytes else "")
    out.append(f"{plural(row.n_tokens, 'token')} · {plural(pages, 'page')}{size}"
               + (f" · finished at {fmt_elapsed(row.t)}" if row.t else ""))
    out.append("")
    out.append(("summary", [(s, f"{fmt_int(counts[s])} {word}") for s, _, _, word, _ in STATES if counts[s]]))
    # the strip: drawn by RowDetailScreen with the grid's styles, miss reasons as the grid draws them
    out.append(("pages", bytes(cells_of(states, getattr(row, "reasons", b"")))))
    if row.misses:
        out.append("missed: " + " · ".join(f"{fmt_int(n)} {MISS_LABELS[BY_NAME[name]]}" for name, n in row.misses
                                           if name in BY_NAME))
    if row.page_tokens or row.reload_ms or row.publish_ms:
        disk = counts[PageState.HIT_DISK]
        of_it = (f"; {fmt_ms(getattr(row, 'disk_read_ms', 0.0))} of it reading {plural(disk, 'page')} from disk"
                 if disk else "")
        out.append(f"reload {fmt_ms(row.reload_ms)} (probe + read{of_it}) · publish {fmt_ms(row.publish_ms)} "
                   "(probe + put)")
        out.append(f"loaded {format_bytes(row.bytes_loaded)} · written {format_bytes(row.bytes_written)}")
    hot = getattr(row, "pages_replicated", 0)
    if hot:
        out.append(f"hot replicas: {fmt_int(hot)} of its {plural(row.pages_hit, 'hit page')} had two memory replicas "
                   "or more (the master copied them to a second segment)")
    if row.keys:
        out.append(f"first key {row.keys[0]}")
        if len(row.keys) > 1 and row.keys[-1] != row.keys[0]:
            out.append(f"last key  {row.keys[-1]}")
    if row.codes:
        out.append("store codes: " + ", ".join(f"{name} ×{n}" for name, n in row.codes))
    if row.ideal_pages >= 0:
        lost = row.ideal_pages - row.pages_hit
        out.append(f"ideal (unbounded cache, trace-stats rule): {plural(row.ideal_pages, 'page')} hit"
                   + (f" → {lost} lost to the store's capacity or concurrency" if lost > 0 else
                      " — the store hit all of them" if row.ideal_pages else " (every page a first use)"))
    out.append(Text("Esc / Enter closes", style="dim"))
    return out


class RowDetailScreen(ModalScreen[None]):
    """:meth:`show_row` fills it for a row before each push; Esc or Enter closes it. ``style_of``: the page
    grid's style lookup (its cells' colours)."""

    BINDINGS = [Binding("escape,enter,q", "close", "Close", show=False)]

    def __init__(self, style_of=None) -> None:
        super().__init__()
        self.row = None
        self.style_of = style_of or (lambda name: "")

    def compose(self) -> ComposeResult:
        with Vertical(id="row-detail"):
            yield Static("", id="row-detail-body")

    def text(self, width: int) -> Text:
        """The panel's text for :attr:`row`, the page strip wrapped at ``width``."""
        out = Text()
        lines: list[DetailLine] = detail_lines(self.row) if self.row is not None else []
        for i, line in enumerate(lines):
            if i:
                out.append("\n")
            if isinstance(line, tuple) and line[0] == "summary":
                for j, (s, text) in enumerate(line[1]):  # (no span starts with a space: SVG renderers drop those)
                    out.append(GLYPH.get(s, "?") + " ", self.style_of(CLASS[s]) if s in CLASS else "")
                    out.append(text + ("  " if j < len(line[1]) - 1 else ""))
                if not line[1]:
                    out.append("no pages")
            elif isinstance(line, tuple):
                for j, s in enumerate(line[1]):
                    if j and j % max(1, width) == 0:
                        out.append("\n")
                    out.append(GLYPH.get(s, "?"), self.style_of(CLASS[s]) if s in CLASS else "")
            else:
                out.append_text(line if isinstance(line, Text) else Text(line))
        return out

    def show_row(self, row, width: int) -> None:
        """Show ``row`` (call before pushing the screen), the page strip wrapped at ``width`` cells."""
        self.row = row
        if self.is_mounted:
            self.query_one("#row-detail-body", Static).update(self.text(width))

    def on_mount(self) -> None:
        self.query_one("#row-detail-body", Static).update(self.text(88))

    def action_close(self) -> None:
        self.dismiss(None)
