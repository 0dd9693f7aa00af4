"""Writing an app's screen as an SVG file: complete or absent, never half written (a full disk, a folder that
vanished), for every screenshot kvtui takes (``watch --screenshot``, ``s``, ``report --svg``)."""

from __future__ import annotations

import os
import tempfile

from textual.app import App


def write_screen_svg(app: App, path: str) -> str:
    """Write ``app``'s current screen (``App.export_screenshot``) as SVG to ``path`` through a temporary file in
    the same folder and a rename; returns the absolute path. ``OSError`` when it cannot be written, the
    temporary file then removed and ``path`` as it was."""
    path = os.path.realpath(path)  # through a symbolic link: the file it points at, the link kept
    folder = os.path.dirname(path)
    svg = app.export_screenshot()
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(svg)
        os.chmod(tmp, 0o666 & ~_umask())  # as a plain open would make it (mkstemp's file is 0600)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return path


def _umask() -> int:
    """The process's umask, read from /proc (setting it to read it back would race the app's threads); 0o022
    where /proc does not say."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return 0o022
