"""A panel drawn as a list of lines that its subclass builds for a given width (store, processes)."""

from __future__ import annotations

from rich.text import Text
from textual.widget import Widget


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
