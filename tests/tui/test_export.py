"""``kvtui export``: casts, GIFs and animated SVGs of a recorded session (a DemoSource recording: no store).

The cast must be valid asciinema v2 and play back, event by event, to the screen that ``kvtui replay`` shows at
the same instant (compared with the text of the replay app's own SVG screenshot); the GIF must have the
frame count and size the span implies; bad input ends with one line and exit 2, and leaves nothing behind.
"""

from __future__ import annotations

import gc
import html
import json
import re
import weakref
from pathlib import Path

import pytest
from conftest import SESSION_FRAMES, SESSION_TICK_S
from rich.cells import cell_len
from tui_helpers import pilot_test

from kvtui.cli import main
from kvtui.core.events import EngineEvent
from kvtui.movie.frames import Span, run_film
from kvtui.session.reader import ReplayPlayer, SessionReader
from kvtui.testing.demo import DemoController, DemoSource
from kvtui.tui.app import KvtuiApp

SGR = re.compile(r"\x1b\[[0-9;]*m")
MOVE = re.compile(r"\x1b\[(\d+);1H")
LENGTH = (SESSION_FRAMES - 1) * SESSION_TICK_S  # 29.5 s


def export(capsys, *argv) -> tuple[int, str, str]:
    rc = main(["export", *map(str, argv)])
    out, err = capsys.readouterr()
    return rc, out, err


def read_cast(path) -> tuple[dict, list[list]]:
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    return json.loads(lines[0]), [json.loads(x) for x in lines[1:]]


def play(header: dict, events: list[list]) -> list[list[str]]:
    """The screen (plain text rows) after each event, as a terminal applies them: ``ESC[2J`` clears,
    ``ESC[r;1H`` starts writing row r; SGR codes style but take no cells."""
    screen = [" " * header["width"]] * header["height"]
    screens = []
    for _t, kind, data in events:
        assert kind == "o"
        data = data.replace("\x1b[?25l", "")
        if "\x1b[2J" in data:
            screen = [" " * header["width"]] * header["height"]
            data = data.replace("\x1b[2J", "")
        parts = MOVE.split(data)
        assert parts[0] == "", "every write starts at a row"
        screen = list(screen)
        for row, text in zip(parts[1::2], parts[2::2]):
            plain = SGR.sub("", text)
            assert "\x1b" not in plain, repr(plain[:80])
            assert cell_len(plain) == header["width"], "a row is redrawn whole"
            screen[int(row) - 1] = plain
        screens.append(screen)
    return screens


def svg_text_rows(svg: str, width: int) -> list[str]:
    """The text of a Rich SVG screenshot, row by row (cells placed at x / char width; spaces are implicit)."""
    char_w = 20 * 0.61
    rows: dict[int, list[str]] = {}
    for m in re.finditer(r'<text class="[^"]*" x="([0-9.]+)" y="[0-9.]+" textLength="[0-9.]+" '
                         r'clip-path="url\(#[\w-]+-line-(\d+)\)">([^<]*)</text>', svg):
        x, row, text = float(m.group(1)), int(m.group(2)), html.unescape(m.group(3)).replace("\xa0", " ")
        cells = rows.setdefault(row, [" "] * width)
        col = round(x / char_w)
        for ch in text.replace("\n", ""):  # the newline that ends a row is a text element too
            cells[col] = ch
            for i in range(1, cell_len(ch)):
                cells[col + i] = ""
            col += cell_len(ch)
    return ["".join(rows.get(r, [" "] * width)) for r in range(max(rows) + 1)]


def replay_screen(path: str, position: float, speed: float, size: tuple[int, int]) -> list[str]:
    """What ``kvtui replay FILE --speed X`` shows at ``position`` (a fresh app, seeked there), from its own
    SVG screenshot."""
    player = ReplayPlayer(SessionReader(path), speed=speed, clock=lambda: 0.0)
    player.seek(position)
    app = KvtuiApp(None, None, player=player, title=f"kvtui replay · {path}")

    async def shot(pilot):
        return app.export_screenshot()

    return svg_text_rows(pilot_test(app, shot, size=size), size[0])


def test_span_counts_frames_from_both_ends():
    s = Span(5.0, 20.0, speed=4, fps=2)
    assert s.step_s == 2.0 and s.frames == 8 and s.position(7) == 19.0 and s.time(7) == 3.5
    assert Span(0, 29.5, 1, 4).frames == 119 and Span(0, 0.1, 1, 4).frames == 1
    assert Span(0, 12, 2, 4).film_s == 25 / 4
    for bad in ((5, 5), (6, 5), (-1, 3)):
        with pytest.raises(ValueError):
            Span(*bad)


def test_cast_is_valid_and_plays_back_to_the_replay_screen(session_file, tmp_path, capsys):
    out = tmp_path / "demo.cast"
    rc, stdout, err = export(capsys, session_file, "--cast", out, "--speed", 4, "--fps", 2, "--size", "100x30",
                             "--from", "5s", "--to", "0:20")
    assert rc == 0, err
    header, events = read_cast(out)
    assert header["version"] == 2 and (header["width"], header["height"]) == (100, 30)
    assert isinstance(header["timestamp"], int) and header["env"]["TERM"]
    span = Span(5, 20, 4, 2)
    assert len(events) == span.frames == 8  # floor(15 s · 2 fps / ×4) + 1
    times = [e[0] for e in events]
    assert times == sorted(times) and times == [k / 2 for k in range(8)]  # the real timing, ×4
    assert f"{out}: asciinema v2 cast" in stdout and "8 frames" in stdout and "KiB" in stdout
    screens = play(header, events)
    for k in (0, 3, 7):
        pos = span.position(k)
        want = replay_screen(session_file, pos, 4, (100, 30))
        assert screens[k] == want, (k, pos)
    assert "REPLAY 0:05.0 / 0:29.5 ×4 ▶" in "".join(screens[0][:2])  # the header wraps the long title
    assert "REPLAY 0:19.0 / 0:29.5 ×4 ▶" in "".join(screens[7][:2])
    assert not list(tmp_path.glob(".*.part"))


def test_gif_has_the_frames_and_size_of_the_span(session_file, tmp_path, capsys):
    from PIL import Image

    out = tmp_path / "demo.gif"
    rc, stdout, err = export(capsys, session_file, "--gif", out, "--speed", 8, "--fps", 4, "--to", 4,
                             "--size", "80x24", "--gif-width", 400)
    assert rc == 0, err
    with Image.open(out) as im:
        assert im.format == "GIF" and im.n_frames == Span(0, 4, 8, 4).frames == 3
        assert im.width == 400 and 200 < im.height < 400  # the screen's aspect (80×24 cells, Rich's cells)
        durations = []
        for k in range(im.n_frames):
            im.seek(k)
            durations.append(im.info["duration"])
        assert durations == [250, 250, 250] and im.info.get("loop") == 0
    assert re.search(rf"{re.escape(str(out))}: animated GIF, [0-9.]+ KiB, 400×\d+ px", stdout)


def test_a_gifs_default_width_is_ten_pixels_a_column(session_file, tmp_path, capsys):
    """At the old default of 800 px for 120 columns cairosvg's glyphs ran into each other: the default follows
    --size, 10 px a column."""
    from PIL import Image

    out = tmp_path / "d.gif"
    rc, _stdout, err = export(capsys, session_file, "--gif", out, "--speed", 8, "--fps", 1, "--to", 1,
                              "--size", "80x24")
    assert rc == 0, err
    with Image.open(out) as im:
        assert im.width == 800


def test_gif_frames_show_each_screen(session_file, tmp_path):
    """Each GIF frame, composed over the previous ones (only the changed pixels are stored, the rest are
    transparent), is the frame's own rasterised screenshot, every pixel up to the palette's rounding."""
    from PIL import Image, ImageChops

    from kvtui.movie.gif import GifWriter

    out = tmp_path / "x.gif"
    expected = []
    with open(out, "wb") as f:
        writer = GifWriter(f, fps=4, width_px=300)

        class Keep:
            def add(self, frame):
                expected.append(writer.rasterise(frame))

            def close(self):
                pass

        run_film(SessionReader(session_file), Span(10, 14, 4, 4), (60, 16), [writer, Keep()])
    with Image.open(out) as im:
        assert im.n_frames == len(expected) == 5
        for k in range(im.n_frames):
            im.seek(k)
            diff = ImageChops.difference(im.convert("RGB"), expected[k])
            assert max(hi for _lo, hi in diff.getextrema()) <= 24, k  # no pixel off by more than the palette's rounding


def test_svg_anim_shows_one_frame_at_a_time(session_file, tmp_path, capsys):
    import xml.etree.ElementTree as ET

    out = tmp_path / "demo.svg"
    rc, _, err = export(capsys, session_file, "--svg-anim", out, "--speed", 10, "--fps", 2, "--from", 20)
    assert rc == 0, err
    n = Span(20, LENGTH, 10, 2).frames
    root = ET.parse(out).getroot()
    ns = "{http://www.w3.org/2000/svg}"
    frames = root.findall(f"{ns}g")
    assert len(frames) == n == 2 and all(g.get("class") == "kvtui-frame" for g in frames)
    assert [g.get("style") for g in frames] == ["animation-delay: -1.000000s", "animation-delay: -0.500000s"]
    style = root.find(f"{ns}style").text
    assert "animation: kvtui-show 1.000000s step-end infinite" in style
    assert "50.000000% { visibility: hidden; }" in style
    assert all(g.find(f"{ns}svg") is not None for g in frames)
    assert "REPLAY&#160;0:25.0&#160;/&#160;0:29.5&#160;×10" in out.read_text()  # the last frame


@pytest.fixture
def annotated_session(tmp_path):
    """A recording with a knob change at t = 5 s of the run: first in the frame 5.0 s into the recording
    (frames at t = 0.5, 1.0, … s of the run); seed 13: store errors at 2.5, 3.5 and 4.0 s, none after."""
    src = DemoSource(13, tick_s=0.5)
    ctl = DemoController(src, record_dir=str(tmp_path))
    _, path = ctl.toggle_recording()
    for i in range(20):
        if i == 10:
            src.agg.event(EngineEvent("control", src.t, "overlap → 25 %"))
        src.frame()
    ctl.toggle_recording()
    return path


def test_annotate_adds_a_caption_row_naming_the_event(annotated_session, tmp_path, capsys):
    out = tmp_path / "a.cast"
    rc, _, err = export(capsys, annotated_session, "--cast", out, "--annotate", "--size", "80x24", "--fps", 2)
    assert rc == 0, err
    header, events = read_cast(out)
    assert (header["width"], header["height"]) == (80, 25)  # the monitor's 24 rows, then the caption
    screens = play(header, events)
    captions = [s[-1] for s in screens]  # frame k at k / 2 s of the recording (×1)
    assert "no knob change, outage or error yet" in captions[0]
    assert "overlap" not in captions[9]  # 4.5 s: before the change (the demo's store errors meanwhile)
    for k in range(10, 15):  # from the frame recorded after it, for 3 s, though store errors come meanwhile
        assert re.search(r"^ CONTROL\s+0:05\s+overlap → 25 % +$", captions[k]), (k, captions[k])
    assert "overlap → 25 %" in captions[-1]  # later: still the newest event, dimmed (no badge colour)
    row = events[15][2].split("\x1b[25;1H")[1]
    assert "38;2;138;143;152" in row and "48;2;255;215;95" not in row
    assert "48;2;255;215;95" in events[10][2].split("\x1b[25;1H")[1]  # the yellow CONTROL badge while fresh
    assert "overlap → 25 %" in SGR.sub("", events[10][2])


def test_frames_stream_one_at_a_time(session_file):
    """The film holds one frame at a time: earlier frames are gone once the sink has them."""
    refs = []
    alive = []

    class Watch:
        def add(self, frame):
            refs.append(weakref.ref(frame))
            gc.collect()
            alive.append(sum(r() is not None for r in refs))

        def close(self):
            pass

    n = run_film(SessionReader(session_file), Span(0, 5, 5, 4), (60, 16), [Watch()])
    assert n == 5 and max(alive) <= 2, alive


def test_bad_input_is_one_line_and_leaves_nothing(session_file, tmp_path, capsys):
    text = tmp_path / "notes.txt"
    text.write_text("not a session\n")
    out = tmp_path / "o.cast"
    cases = [
        ((text, "--cast", out), "is not a kvtui session"),
        ((session_file, "--cast", out, "--from", 20, "--to", 10), "empty span: --from 20 is not before --to 10"),
        ((session_file, "--cast", out, "--from", "1:00"), "is at or beyond the end of the recording (0:29.5"),
        ((session_file, "--cast", out, "--from", 10, "--to", 10), "empty span"),
        ((session_file, "--cast", tmp_path / "nowhere" / "o.cast"), "--cast: folder"),
        ((session_file, "--gif", tmp_path), "--gif: " + str(tmp_path) + " is a folder; give a file's path"),
        ((session_file, "--cast", out, "--size", "59x40"), "--size 59x40 is below the monitor's minimum 60x16"),
        ((session_file, "--cast", out, "--size", "120x15"), "below the monitor's minimum"),
        ((session_file,), "nothing to export: give --cast PATH"),
        ((session_file, "--cast", out, "--from", "ten"), "--from must be a time into the recording"),
        ((session_file, "--cast", out, "--fps", 0), "--fps must be within (0, 15]"),
        ((session_file, "--cast", out, "--speed", 100), "--speed must be within 0.125-64"),
        ((session_file, "--cast", out, "--svg-anim", out), "--cast and --svg-anim name the same file"),
        ((session_file, "--cast", session_file), "is a file this command reads"),  # (cli.main's check)
    ]
    for argv, message in cases:
        rc, _, err = export(capsys, *argv)
        assert rc == 2, (argv, err)
        assert err.count("\n") == 1 and err.startswith("kvtui: error: ") and message in err, (argv, err)
        assert "Traceback" not in err and not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


def test_to_beyond_the_end_exports_up_to_the_end(session_file, tmp_path, capsys):
    out = tmp_path / "end.cast"
    rc, _, err = export(capsys, session_file, "--cast", out, "--from", 28, "--to", "2m", "--fps", 2)
    assert rc == 0 and "beyond the end of the recording; exporting up to its end (0:29.5)" in err
    header, events = read_cast(out)
    assert len(events) == Span(28, LENGTH, 1, 2).frames == 4
    assert "REPLAY 0:29.5 / 0:29.5 ×1 ■" in "".join(play(header, events)[-1][:2])


def test_a_failure_mid_export_leaves_the_old_file(session_file, tmp_path, capsys, monkeypatch, caplog):
    """A full disk mid-export: one line, the old file kept, and the headless app ends cleanly (before, the
    event loop's shutdown logged a screenful of Textual context errors through asyncio's logger, which a
    user sees on stderr and capsys does not)."""
    from kvtui.movie import cast

    out = tmp_path / "keep.cast"
    out.write_text("the old cast\n")
    real_add = cast.CastWriter.add

    def add(self, frame):
        if frame.index == 2:
            raise OSError(28, "No space left on device")
        real_add(self, frame)

    monkeypatch.setattr(cast.CastWriter, "add", add)
    rc, _, err = export(capsys, session_file, "--cast", out, "--to", 3)
    assert rc == 3 and err == f"kvtui: error: could not write {out}: No space left on device\n"
    assert out.read_text() == "the old cast\n" and sorted(p.name for p in tmp_path.iterdir()) == ["keep.cast"]
    assert [r.getMessage() for r in caplog.records if r.name == "asyncio"] == []


def test_a_signal_mid_export_writes_nothing(session_file, tmp_path, capsys, monkeypatch):
    """SIGTERM (as SIGINT, SIGHUP) ends the headless monitor cleanly: the export stops, its partial
    outputs are removed, and the exit code is 128 + the signal."""
    import os
    import signal

    from kvtui.movie import cast

    real_add = cast.CastWriter.add

    def add(self, frame):
        real_add(self, frame)
        if frame.index == 2:
            os.kill(os.getpid(), signal.SIGTERM)

    monkeypatch.setattr(cast.CastWriter, "add", add)
    rc, _, err = export(capsys, session_file, "--cast", tmp_path / "x.cast", "--to", 20)
    assert rc == 128 + signal.SIGTERM
    assert err.startswith("kvtui: export interrupted (the film stopped after ") and err.endswith("no file written\n")
    assert list(tmp_path.iterdir()) == []


def test_gif_without_its_libraries_is_one_line(session_file, tmp_path, capsys, monkeypatch):
    from kvtui.movie import gif

    monkeypatch.setattr(gif, "missing_dependency", lambda: "cairosvg is not installed (pip install 'kvtui[export]')")
    rc, _, err = export(capsys, session_file, "--gif", tmp_path / "x.gif")
    assert rc == 2 and err == "kvtui: error: --gif: cairosvg is not installed (pip install 'kvtui[export]')\n"
    assert list(tmp_path.iterdir()) == []


def test_missing_dependency_finds_this_environment_complete():
    from kvtui.movie.gif import missing_dependency

    assert missing_dependency() is None  # the test extra installs cairosvg and Pillow; setup.sh libcairo2
