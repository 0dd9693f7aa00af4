"""Writing an app's screen as an SVG file, complete or absent (a full disk, a folder that vanished), for every
screenshot kvtui takes (``watch --screenshot``, ``s``, ``report --svg``, a sweep's ``--svg``)."""

from __future__ import annotations

from textual.app import App

from kvtui.core.files import write_atomic


def write_screen_svg(app: App, path: str) -> str:
    """Write ``app``'s current screen (``App.export_screenshot``) as SVG to ``path`` with
    :func:`kvtui.core.files.write_atomic`; returns the path written. ``OSError`` when it cannot be written
    (nothing is left of it, and a file it would have replaced is as it was)."""
    svg = app.export_screenshot()
    return write_atomic(path, lambda f: f.write(svg))
