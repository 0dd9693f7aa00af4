"""Recorded sessions as films: the frames the monitor draws when it replays a session, written as an
asciinema v2 cast, an animated GIF or an animated SVG (``kvtui export``).

The frames come from the app itself: :func:`kvtui.movie.frames.film` runs
:class:`kvtui.tui.app.KvtuiApp` in replay mode over a :class:`~kvtui.session.reader.ReplayPlayer` in a headless
Textual session (``App.run_test``), seeks the player to each instant of a :class:`~kvtui.movie.frames.Span`
and captures the screen (:class:`~kvtui.movie.frames.ScreenFrame`). Writers take one frame at a time and
write it out at once, so memory stays flat however long the session:

- :mod:`kvtui.movie.cast`: asciinema v2 (header line, then ``[t, "o", data]`` events);
- :mod:`kvtui.movie.gif`: GIF, each frame's SVG rasterised with cairosvg, encoded with Pillow;
- :mod:`kvtui.movie.svg_anim`: one SVG whose frames take turns through a CSS keyframe animation.

This package reads sessions and renders them with the monitor; it never touches a store or the engine.
Paths, temporary files and the progress bar are the command's (:mod:`kvtui.commands.export`).
"""

from kvtui.movie.frames import (
    CAPTION_KINDS,
    FilmStopped,
    ScreenFrame,
    Span,
    film,
    run_film,
)

__all__ = ["CAPTION_KINDS", "FilmStopped", "ScreenFrame", "Span", "film", "run_film"]
