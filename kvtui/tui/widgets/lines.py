"""A panel drawn as a list of lines that its subclass builds for a given width (store, processes), and the
packing of ``label value`` pairs into lines that never cuts a pair mid-word."""

from __future__ import annotations

from collections.abc import Sequence

from rich.style import Style
from rich.text import Text
from textual.widget import Widget


def pack_pairs(pairs: Sequence[tuple[Sequence[str], Sequence[str], str | Style | None]], width: int, label_style,
               sep: str = "  ") -> list[Text]:
    """``label value`` pairs packed greedily into lines of at most ``width`` cells, a pair never split.

    Each pair is ``(labels, values, value_style)``: ``labels`` and ``values`` are alternatives from the
    longest to the shortest (``("alloc failures", "allocs")``, ``("12,345", "12.3k")``); a pair takes its
    longest form that fits a line of its own, and starts a new line when it does not fit after the one before.
    """
    lines: list[Text] = []
    cur: Text | None = None
    for labels, values, style in pairs:
        forms = [(lab, val) for lab in labels for val in values]
        lab, val = next(((lab, val) for lab, val in forms if len(lab) + 1 + len(val) <= width), forms[-1])
        piece = Text(lab + " ", label_style) + Text(val, style or "")
        if cur is not None and cur.cell_len + len(sep) + piece.cell_len <= width:
            cur.append(sep, label_style)
            cur.append_text(piece)
            continue
        if cur is not None:
            lines.append(cur)
        cur = piece
    if cur is not None:
        lines.append(cur)
    return lines


class LinesPanel(Widget):
    """Subclasses implement ``lines(width) -> list[Text]``; height follows the number of lines and every
    line is cut with an ellipsis rather than wrapped."""

    def lines(self, width: int) -> list[Text]:
        raise NotImplementedError

    def get_content_height(self, container, viewport, width: int) -> int:
        return len(self.lines(width))

    def render(self) -> Text:
        text = Text("\n").join(self.lines(self.size.width))
        text.no_wrap, text.overflow = True, "ellipsis"
        return text
