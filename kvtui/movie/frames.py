"""The frames of a film: which instants of a recording (:class:`Span`), the screen the monitor draws at each
(:class:`ScreenFrame`, captured by :func:`film`), and the caption row of ``--annotate``.

The monitor is :class:`kvtui.tui.app.KvtuiApp` in replay mode over a
:class:`~kvtui.session.reader.ReplayPlayer`, the same app and render path as ``kvtui replay``, run headless
with Textual's ``App.run_test(size=...)``. The player's clock stands still and :func:`film` seeks it to each
instant (``seek_start`` then ``seek``), so the REPLAY badge reads the position and speed a viewer of
``kvtui replay --speed X`` would see there. The screen is read as Textual's own ``App.export_screenshot``
renders it (:func:`screen_rows`), one list of Rich segments per row; the SVG of a frame is Rich's
``Console.export_svg`` of those rows, as in a screenshot.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import math
from collections.abc import AsyncGenerator, Callable, Iterable
from dataclasses import dataclass, field

import textual
from rich.console import Console, ConsoleOptions, RenderResult
from rich.segment import Segment
from rich.text import Text
from textual.app import App

from kvtui.core.events import EngineEvent
from kvtui.core.text import plural
from kvtui.metrics.frame import Frame
from kvtui.session.reader import ReplayPlayer, SessionReader
from kvtui.tui.app import KvtuiApp
from kvtui.tui.fmt import fmt_elapsed

CAPTION_KINDS = ("control", "outage", "error")
"""Engine events a caption shows (``--annotate``): knob changes and recording marks (``control``), outages of
the master, store errors."""
CAPTION_HOLD_S = 3.0
"""Seconds of film a caption stays highlighted after its event (then it stays, dimmed, until the next)."""
CAPTION_STYLES = {"control": "bold #1c1c1c on #ffd75f", "outage": "bold #ffffff on #d7005f",
                  "error": "bold #ffffff on #af5f5f"}
CAPTION_FRESH = "bold #ffffff on #303848"
CAPTION_STALE = "#8a8f98 on #262a33"
EXPORT_REFRESH_HZ = 0.5
"""The app's own frame-pull timer while filming (its slowest): :func:`film` pulls each frame itself."""


class FilmStopped(Exception):
    """The film ended before its last frame: the app stopped (SIGINT, SIGTERM or SIGHUP end it cleanly,
    :mod:`kvtui.tui.signals`). ``exit_code``: the app's (128 + the signal), or 1."""

    def __init__(self, frames: int, of: int, exit_code: int | None):
        super().__init__(f"the film stopped after {frames} of {plural(of, 'frame')}")
        self.exit_code = exit_code or 1


@dataclass(frozen=True)
class Span:
    """Which instants of a recording a film shows. ``start_s`` / ``end_s``: seconds into the recording (0 =
    its first frame); ``speed``: session seconds per second of film; ``fps``: film frames per second.

    Frame ``k`` (0 ≤ k < :attr:`frames`) shows position ``start_s + k · speed / fps`` at film time ``k / fps``,
    so the timing between frames is the recording's, scaled by ``speed``. ``ValueError`` unless
    ``start_s < end_s`` and ``speed``, ``fps`` are positive."""

    start_s: float
    end_s: float
    speed: float = 1.0
    fps: float = 4.0

    def __post_init__(self) -> None:
        if not (self.end_s > self.start_s >= 0):
            raise ValueError(f"empty span: {self.start_s:g} s to {self.end_s:g} s")
        if not (self.speed > 0 and self.fps > 0):
            raise ValueError("speed and fps must be positive")

    @property
    def step_s(self) -> float:
        """Session seconds between two frames."""
        return self.speed / self.fps

    @property
    def frames(self) -> int:
        """How many frames: ``floor((end_s - start_s) · fps / speed) + 1`` (both ends count)."""
        return math.floor((self.end_s - self.start_s) / self.step_s + 1e-9) + 1

    def position(self, k: int) -> float:
        """Seconds into the recording that frame ``k`` shows."""
        return min(self.end_s, self.start_s + k * self.step_s)

    def time(self, k: int) -> float:
        """Seconds into the film at which frame ``k`` appears."""
        return k / self.fps

    @property
    def film_s(self) -> float:
        """Length of the film in seconds (the last frame included, shown for ``1 / fps``)."""
        return self.frames / self.fps


@dataclass
class ScreenFrame:
    """One captured screen. ``rows``: one list of Rich segments per terminal row, each ``width`` cells (the
    monitor's rows, then the caption row with ``--annotate``); ``t``: seconds into the film; ``position``:
    seconds into the recording; ``caption``: the event the caption row names (None: none, or no caption)."""

    index: int
    t: float
    position: float
    width: int
    rows: list[list[Segment]]
    caption: EngineEvent | None = None
    _svg: dict = field(default_factory=dict, repr=False)

    @property
    def height(self) -> int:
        return len(self.rows)

    def text_lines(self) -> list[str]:
        """The screen as plain text, one string per row."""
        return ["".join(s.text for s in row if not s.control) for row in self.rows]

    def ansi_lines(self) -> list[str]:
        """Each row as text with SGR escape codes (truecolor), every styled run closed with a reset."""
        return ["".join(s.style.render(s.text) if s.style else s.text for s in row if not s.control)
                for row in self.rows]

    def svg(self, title: str = "kvtui", unique_id: str | None = None) -> str:
        """The frame as an SVG screenshot (Rich's ``Console.export_svg``, as Textual's screenshots are made;
        ``unique_id`` prefixes its CSS classes and ids). Cached per ``(title, unique_id)``."""
        key = (title, unique_id)
        if key not in self._svg:
            console = _console(self.width, self.height, record=True)
            console.print(_Rows(self.rows))
            self._svg[key] = console.export_svg(title=title, unique_id=unique_id)
        return self._svg[key]


class _Rows:
    """A Rich renderable of pre-rendered rows (a newline between rows, none after the last)."""

    def __init__(self, rows: list[list[Segment]]):
        self.rows = rows

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for i, row in enumerate(self.rows):
            if i:
                yield Segment.line()
            yield from row


def _console(width: int, height: int, record: bool = False) -> Console:
    """A truecolor console that writes nowhere (as ``App.export_screenshot`` makes one)."""
    return Console(width=width, height=height, file=io.StringIO(), force_terminal=True, color_system="truecolor",
                   record=record, legacy_windows=False, safe_box=False)


def screen_rows(app: App) -> list[list[Segment]]:
    """The app's current screen (no dialog over it) as rows of Rich segments, each row's strip simplified, as
    ``App.export_screenshot`` renders it. Textual has no public call that returns the screen as segments
    (``export_screenshot`` returns SVG only), so this is kvtui's one read of a private Textual attribute,
    ``Screen._compositor.render_strips()``: pyproject.toml keeps textual below its next major version, and
    ``tests/tui/test_textual_private.py`` fails with this function's message when the attribute changes.
    ``RuntimeError`` (one line) when this Textual has no such call."""
    try:
        strips = app.screen._compositor.render_strips()
    except AttributeError as exc:
        raise RuntimeError(f"textual {textual.__version__} no longer renders a screen as "
                           f"Screen._compositor.render_strips() ({exc}), which kvtui.movie.frames.screen_rows "
                           "reads: pin textual below this version in pyproject.toml, or port screen_rows") from None
    return [list(strip.simplify().discard_meta()) for strip in strips]


def caption_event(frame: Frame, hold_s: float) -> tuple[EngineEvent | None, bool]:
    """The event the caption shows at ``frame`` and whether it is fresh (within ``hold_s`` session seconds):
    the newest control or outage event of the last ``hold_s``, else the newest error of that time, else the
    newest of :data:`CAPTION_KINDS` before (not fresh); ``(None, False)`` when there is none."""
    now = frame.t
    past = [e for e in frame.events if e.kind in CAPTION_KINDS and e.t <= now + 1e-9]
    fresh = [e for e in past if e.t > now - hold_s]
    pick = next((e for e in reversed(fresh) if e.kind != "error"), None) or (fresh[-1] if fresh else None)
    if pick is not None:
        return pick, True
    return (past[-1], False) if past else (None, False)


def caption_row(event: EngineEvent | None, fresh: bool, width: int, console: Console) -> list[Segment]:
    """The caption row: ``" CONTROL  0:12  overlap → 25 %"`` (the event's kind, its run time as in the event
    log, its text), highlighted while fresh; exactly ``width`` cells."""
    if event is None:
        text = Text(" events: no knob change, outage or error yet", style=CAPTION_STALE)
    else:
        body = CAPTION_FRESH if fresh else CAPTION_STALE
        badge = CAPTION_STYLES.get(event.kind, CAPTION_FRESH) if fresh else CAPTION_STALE
        text = Text.assemble((f" {event.kind.upper()} ", badge), (f" {fmt_elapsed(event.t)}  {event.text}", body),
                             style=body)
    text.truncate(width, overflow="ellipsis", pad=True)
    return [s for s in text.render(console, end="") if s.text]


async def film(reader: SessionReader, span: Span, size: tuple[int, int], *, annotate: bool = False,
               title: str = "kvtui") -> AsyncGenerator[ScreenFrame, None]:
    """Yield the :attr:`Span.frames` frames of ``span`` as the monitor draws them at ``size`` (columns, rows);
    with ``annotate``, each frame has one more row: the caption (:func:`caption_row`). One frame is in
    memory at a time. :class:`FilmStopped` if the app ends first (a signal)."""
    player = ReplayPlayer(reader, speed=span.speed, clock=lambda: 0.0)
    app = KvtuiApp(None, None, player=player, title=title, refresh_hz=EXPORT_REFRESH_HZ)
    console = _console(size[0], 1)
    hold = CAPTION_HOLD_S * span.speed
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        for k in range(span.frames):
            pos = span.position(k)
            player.seek_start()
            player.seek(pos)
            app.tick()
            await pilot.pause()
            if not app.is_running or app.return_code is not None:
                raise FilmStopped(k, span.frames, app.return_code)
            rows = screen_rows(app)
            event = None
            if annotate:
                assert app.shown is not None  # the tick above showed the player's frame
                event, fresh = caption_event(app.shown, hold)
                rows.append(caption_row(event, fresh, size[0], console))
            yield ScreenFrame(k, span.time(k), pos, size[0], rows, event)


def run_film(reader: SessionReader, span: Span, size: tuple[int, int], sinks: Iterable, *, annotate: bool = False,
             title: str = "kvtui", on_frame: Callable[[ScreenFrame], None] | None = None) -> int:
    """Film ``span`` and hand each frame to every sink's ``add(frame)`` as it is captured, then call each
    sink's ``close()``; ``on_frame(frame)`` after each frame (a progress bar). Returns the number of frames.
    :class:`FilmStopped` if the app stopped before the last frame (a signal); exceptions of a sink propagate
    (the sinks are not closed then)."""
    sinks = list(sinks)

    async def main() -> int:
        n = 0
        # aclosing: when a sink raises (a full disk), the film and its headless app end here, in this task,
        # rather than at the event loop's shutdown, where Textual's context is gone (a screenful of noise)
        async with contextlib.aclosing(film(reader, span, size, annotate=annotate, title=title)) as frames:
            async for frame in frames:
                for sink in sinks:
                    sink.add(frame)
                n += 1
                if on_frame is not None:
                    on_frame(frame)
        return n

    n = asyncio.run(main())
    if n != span.frames:  # the app ended (a signal) and took the event loop's task with it
        raise FilmStopped(n, span.frames, None)
    for sink in sinks:
        sink.close()
    return n
