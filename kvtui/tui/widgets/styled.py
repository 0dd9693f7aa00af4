"""Widget styles looked up once per CSS change instead of once per span."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.style import Style

if TYPE_CHECKING:
    from textual.widget import Widget

    _WidgetHost = Widget  # the mixin's host, for the type checker
else:
    _WidgetHost = object


class CachedStyles(_WidgetHost):
    """Mixin for a Textual ``Widget``: :meth:`style_of` caches ``get_component_rich_style`` (and the widget's
    own ``rich_style``) until the CSS changes. Each lookup walks the CSS and every ancestor's background, too
    slow to do per span in every repaint."""

    def style_of(self, name: str = "", partial: bool = True) -> Style:
        """The Rich style of component class ``name`` (``partial``: without the inherited background), or
        of the widget itself for ``""``."""
        cache = self.__dict__.setdefault("_style_cache", {})
        key = (name, partial)
        style = cache.get(key)
        if style is None:
            style = cache[key] = self.get_component_rich_style(name, partial=partial) if name else self.rich_style
        return style

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self.__dict__.pop("_style_cache", None)
