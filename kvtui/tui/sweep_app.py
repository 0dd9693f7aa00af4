"""A small Textual app showing one capacity sweep (``kvtui report SWEEP.json``), apart from the live monitor:
a sweep is a finished result, with no frame source or controller."""

from __future__ import annotations

from textual.app import App

from kvtui.core.errors import OutputError
from kvtui.core.sweep import SweepResult
from kvtui.tui.screens.sweep import SweepScreen
from kvtui.tui.svg import write_screen_svg


class SweepApp(App[int]):
    """Shows :class:`~kvtui.tui.screens.sweep.SweepScreen` of ``result``; headless with ``screenshot``: saves
    an SVG of the screen once it is drawn, then exits."""

    TITLE = "kvtui sweep"
    ENABLE_COMMAND_PALETTE = False

    def __init__(self, result: SweepResult, screenshot: str | None = None) -> None:
        super().__init__()
        self.result = result
        self.screenshot = screenshot
        self.screenshot_error: str | None = None  # why the headless screenshot could not be written

    def on_mount(self) -> None:
        self.push_screen(SweepScreen(self.result))
        if self.screenshot:
            self.set_timer(0.5, lambda: self.call_after_refresh(self._shoot))  # once every widget drew

    def _shoot(self) -> None:
        assert self.screenshot is not None  # (called only with one)
        try:
            write_screen_svg(self, self.screenshot)  # complete or absent, never half written
        except OSError as exc:
            self.screenshot_error = f"could not write {self.screenshot}: {exc.strerror or exc}"
            self.exit(OutputError.exit_code)
            return
        self.exit(0)


def run_sweep_app(result: SweepResult, *, headless: bool = False, screenshot: str | None = None,
                  size: tuple[int, int] = (120, 40)) -> int:
    """Show ``result`` until ``q`` (in a terminal), or headless at ``size`` (columns, rows) until
    ``screenshot`` (an SVG path) is written. Returns the exit code (0); ``OutputError`` (one line, exit 3) when the
    screenshot could not be written (nothing is left of it)."""
    if headless and not screenshot:
        raise ValueError("a headless sweep screen needs a screenshot path (there is no q without a terminal)")
    app = SweepApp(result, screenshot=screenshot)
    app.run(headless=headless, size=size if headless else None)
    if app.screenshot_error:
        raise OutputError(app.screenshot_error)
    return int(app.return_code or 0)
