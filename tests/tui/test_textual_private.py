"""kvtui reads one private Textual attribute (the screen as segments: kvtui.movie.frames.screen_rows, for films
and for these tests); pyproject.toml keeps textual below its next major version. This fails, with what to do,
as soon as an installed Textual renders a screen differently."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.widgets import Static
from tui_helpers import run

from kvtui.movie.frames import screen_rows


class _Tiny(App[None]):
    def compose(self) -> ComposeResult:
        yield Static("kvtui [bold]reads[/] this")


def test_screen_rows_reads_the_screen_as_export_screenshot_draws_it():
    app = _Tiny()

    async def go():
        async with app.run_test(size=(24, 3)) as pilot:
            await pilot.pause()
            return screen_rows(app), app.export_screenshot()

    rows, svg = run(go())  # RuntimeError "textual X no longer renders a screen as …" when the attribute changed
    assert len(rows) == 3 and all(sum(seg.cell_length for seg in row) == 24 for row in rows)
    first = "".join(seg.text for seg in rows[0])
    assert first.startswith("kvtui reads this"), first
    assert any(seg.text.strip() == "reads" and seg.style is not None and seg.style.bold for seg in rows[0])
    assert "reads" in svg  # the same screen as Textual's public screenshot
