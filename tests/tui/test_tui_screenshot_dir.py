"""The screenshot key writes into the current folder (or --screenshot-dir), never into the repository's own
screenshots/ folder, which holds the README's pictures."""

from __future__ import annotations

import os

from tui_helpers import AggSource, RecordingController, pilot_test

from kvtui.cli import build_parser
from kvtui.tui.app import KvtuiApp


def test_screenshot_key_writes_into_the_current_folder_by_default(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    app = KvtuiApp(AggSource(), RecordingController(), refresh_hz=10, clock=lambda: 0.0)

    async def scenario(pilot):
        await pilot.press("S")
        files = os.listdir(tmp_path)
        assert len(files) == 1 and files[0].startswith("kvtui-") and files[0].endswith(".svg"), files
        assert not (tmp_path / "screenshots").exists()

    pilot_test(app, scenario)


def test_watch_saves_screenshots_into_the_current_folder_unless_told():
    parser = build_parser()
    assert parser.parse_args(["watch"]).screenshot_dir == "."
    assert parser.parse_args(["watch", "--screenshot-dir", "shots"]).screenshot_dir == "shots"
