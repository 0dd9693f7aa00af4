"""``kvtui export FILE``: a recorded session as the monitor draws it, for a talk, a PR or a README: an
asciinema v2 cast (``--cast``), an animated GIF (``--gif``), an animated SVG (``--svg-anim``), at a chosen
size, speed, span and frame rate, optionally with the session's events as captions (``--annotate``); or its
requests as a Mooncake FAST'25 trace (``--trace``, :mod:`kvtui.export.saved_trace`), as ``--save-trace`` would
have written them.

The frames are rendered by the monitor itself (:mod:`kvtui.movie`); every output is written to a temporary
file beside it and renamed when complete, so a failed or interrupted export leaves nothing half-written.
"""

from __future__ import annotations

import argparse
import io
import os
import re
import sys
import tempfile
from pathlib import Path
from typing import BinaryIO, TextIO

from kvtui.commands.output import open_session
from kvtui.config.paths import check_writable, path_arg
from kvtui.core.defaults import MAX_HZ
from kvtui.core.errors import KvtuiError, OutputError
from kvtui.core.text import plural
from kvtui.core.units import MAX_SIZE, format_bytes, parse_duration, parse_size

SPEEDS = (0.125, 64.0)  # as kvtui replay
GIF_WIDTHS = (200, 4000)
GIF_PX_PER_COLUMN = 10  # the default --gif-width: 1,200 px at 120 columns; at 800 px (6.7 px a column) cairosvg's
# glyphs ran into each other ("64 tokStore", "skipped103.5k"), at 10 px a column they are clean


def register(subparsers) -> None:
    """Add the ``export`` subcommand."""
    p = subparsers.add_parser(
        "export", help="turn a recorded session into an asciinema cast, a GIF, an animated SVG or a trace",
        description="Render a session recorded with --record or Ctrl+R as the monitor draws it in `kvtui replay`, "
                    "frame by frame, into an asciinema v2 cast (--cast), an animated GIF (--gif) or an animated "
                    "SVG (--svg-anim). Frame k shows the session at --from + k·speed/fps seconds and appears at "
                    "k/fps seconds of the film, so the timing between frames is the recording's, scaled by "
                    "--speed. --gif needs the export extra (pip install 'kvtui[export]': cairosvg and Pillow). "
                    "--trace writes its requests as a Mooncake FAST'25 trace instead (or as well).")
    p.add_argument("file", metavar="FILE", help="session file (.kvtui)")
    g = p.add_argument_group("outputs (at least one)")
    g.add_argument("--cast", type=path_arg, metavar="PATH",
                   help="write an asciinema v2 cast (plays in asciinema-player)")
    g.add_argument("--gif", type=path_arg, metavar="PATH",
                   help="write an animated GIF (SVG screenshots rasterised with cairosvg)")
    g.add_argument("--svg-anim", type=path_arg, metavar="PATH",
                   help="write an animated SVG (CSS keyframes; plays in browsers)")
    g.add_argument("--trace", dest="trace_out", type=path_arg, metavar="PATH",
                   help="write the requests that finished while it recorded as a Mooncake FAST'25 JSONL trace, as "
                        "`kvtui run --save-trace` writes one (blocks of the run's page size, said on stdout, with "
                        "how to replay it); an older recording, whose request rows keep no pages, cannot (one line, "
                        "exit 2)")
    g = p.add_argument_group("what and how")
    g.add_argument("--size", default="120x40", metavar="COLSxROWS",
                   help=f"the monitor's screen size in cells (default 120x40; at least the monitor's minimum, at "
                        f"most {MAX_SIZE[0]}x{MAX_SIZE[1]})")
    g.add_argument("--speed", type=float, default=1.0, metavar="X",
                   help=f"session seconds per second of film (default 1; {SPEEDS[0]:g}-{SPEEDS[1]:g}, as replay)")
    g.add_argument("--from", dest="start", default=None, metavar="TIME",
                   help="start this far into the recording: seconds (10, 10s), 1m30s or 1:30 (default: its start)")
    g.add_argument("--to", dest="end", default=None, metavar="TIME",
                   help="end this far into the recording (default and at most: its end)")
    g.add_argument("--fps", type=float, default=4.0, metavar="N",
                   help=f"film frames per second (default 4; at most {MAX_HZ:g}, the monitor's fastest refresh)")
    g.add_argument("--annotate", action="store_true",
                   help="add a caption row below the monitor naming the newest knob change, recording mark, "
                        "outage or store error (highlighted for 3 s of film)")
    g.add_argument("--gif-width", type=int, default=None, metavar="PIXELS",
                   help=f"width of the GIF in pixels (default {GIF_PX_PER_COLUMN} a column of --size: 1200 at 120 "
                        f"columns; {GIF_WIDTHS[0]}-{GIF_WIDTHS[1]}; below ≈ 10 a column the text runs together)")
    p.set_defaults(func=run)


def parse_time(text: str, flag: str) -> float:
    """``--from``/``--to``: seconds (``10``, ``10.5s``), ``1m30s``, ``1h2m``, or ``M:SS`` / ``H:MM:SS``
    (``1:30``); ``KvtuiError`` otherwise."""
    s = str(text).strip().lower()
    bad = KvtuiError(f"{flag} must be a time into the recording such as 10s, 90, 1m30s or 1:30, got {text!r}")
    if ":" in s:
        parts = s.split(":")
        if len(parts) > 3 or not all(re.fullmatch(r"\d+(\.\d*)?", x) for x in parts):
            raise bad
        value = 0.0
        for x in parts:
            value = value * 60 + float(x)
        return value
    try:
        return parse_duration(s, flag)
    except KvtuiError:
        raise bad from None


def _outputs(args: argparse.Namespace) -> list[tuple[str, str]]:
    """``(flag, path)`` of each output asked for; ``KvtuiError`` if none (two outputs on one file, or one on
    FILE, are refused before the command runs: :func:`kvtui.commands.output.check_distinct_paths`)."""
    outs = [(flag, path) for flag, path in (("--cast", args.cast), ("--gif", args.gif), ("--svg-anim", args.svg_anim))
            if path]
    if not outs and not args.trace_out:
        raise KvtuiError("nothing to export: give --cast PATH, --gif PATH, --svg-anim PATH or --trace PATH")
    return outs


def _check(args: argparse.Namespace):
    """Every check that needs no rendering: ``(reader, Span, size, outputs)``; ``KvtuiError`` on bad input."""
    from kvtui.movie.frames import Span
    from kvtui.tui.app import MIN_SIZE
    from kvtui.tui.fmt import fmt_position

    outs = _outputs(args)
    if not (SPEEDS[0] <= args.speed <= SPEEDS[1]):
        raise KvtuiError(f"--speed must be within {SPEEDS[0]:g}-{SPEEDS[1]:g}, got {args.speed:g}")
    if not (0 < args.fps <= MAX_HZ):
        raise KvtuiError(f"--fps must be within (0, {MAX_HZ:g}] frames per second, got {args.fps:g}")
    if args.gif_width is not None and not args.gif:
        raise KvtuiError("--gif-width sets the width of a GIF: it needs --gif PATH")
    if args.gif_width is not None and not (GIF_WIDTHS[0] <= args.gif_width <= GIF_WIDTHS[1]):
        raise KvtuiError(f"--gif-width must be within {GIF_WIDTHS[0]}-{GIF_WIDTHS[1]} pixels, got {args.gif_width}")
    size = parse_size(args.size)
    if size[0] < MIN_SIZE[0] or size[1] < MIN_SIZE[1]:
        raise KvtuiError(f"--size {size[0]}x{size[1]} is below the monitor's minimum {MIN_SIZE[0]}x{MIN_SIZE[1]}")
    start = parse_time(args.start, "--from") if args.start is not None else 0.0
    end = parse_time(args.end, "--to") if args.end is not None else None
    if end is not None and start >= end:
        raise KvtuiError(f"empty span: --from {args.start or 0} is not before --to {args.end}")
    reader = open_session(args.file)
    length = reader.duration
    if length <= 0:  # (one frame: a recording stopped at once, or damaged after its first frame)
        why = (f" (it is damaged after frame {len(reader)})" if reader.damaged else
               " (its recorder did not close it)" if reader.not_closed or reader.wal_missing else "")
        raise KvtuiError(f"nothing to film: {args.file} holds {plural(len(reader), 'frame')}, "
                         f"spanning 0 s{why}")
    if start >= length:
        raise KvtuiError(f"empty span: --from {args.start or 0} is at or beyond the end of the recording "
                         f"({fmt_position(length)}, {plural(len(reader), 'frame')})")
    if end is None or end > length:
        if end is not None:
            print(f"kvtui: --to {args.end} is beyond the end of the recording; exporting up to its end "
                  f"({fmt_position(length)})", file=sys.stderr)
        end = length
    for flag, path in outs:
        check_writable(path, flag)
    if args.gif:
        from kvtui.movie.gif import missing_dependency

        missing = missing_dependency()
        if missing:
            raise KvtuiError(f"--gif: {missing}")
    warning = reader.warning("exporting")  # a damaged file, or one copied without its -wal
    if warning:
        print(f"kvtui: {warning}", file=sys.stderr)
    return reader, Span(start, end, args.speed, args.fps), size, outs


class _Partial:
    """An output being written: a temporary file in the target's folder, renamed onto it by :meth:`commit`,
    removed by :meth:`discard`."""

    def __init__(self, path: str, binary: bool):
        self.target = Path(path)
        fd, self.tmp = tempfile.mkstemp(prefix=f".{self.target.name}.", suffix=".part",
                                        dir=str(self.target.resolve().parent))
        self.file = os.fdopen(fd, "wb") if binary else os.fdopen(fd, "w", encoding="utf-8", newline="\n")

    @property
    def text(self) -> TextIO:
        """The file of a text output (a cast, an animated SVG)."""
        assert isinstance(self.file, io.TextIOWrapper)
        return self.file

    @property
    def binary(self) -> BinaryIO:
        """The file of a binary output (a GIF)."""
        assert isinstance(self.file, io.BufferedWriter)
        return self.file

    def commit(self) -> int:
        """Close, rename onto the target with the mode a plain ``open`` gives (0666 less the umask; the
        temporary file is 0600); returns its size in bytes."""
        self.file.close()
        mask = os.umask(0o022)
        os.umask(mask)
        os.chmod(self.tmp, 0o666 & ~mask)
        os.replace(self.tmp, self.target)
        return self.target.stat().st_size

    def discard(self) -> None:
        try:
            self.file.close()
        except OSError:
            pass
        try:
            os.unlink(self.tmp)
        except FileNotFoundError:
            pass


def _start_time(reader, start_s: float) -> int:
    """Unix time of the span's first frame (the session's ``started_at``; now if it has none)."""
    import datetime as dt
    import time

    try:
        t0 = dt.datetime.fromisoformat(reader.meta.get("started_at", "")).timestamp()
    except ValueError:
        t0 = time.time()
    return int(t0 + start_s)


def export_trace(reader, path: str) -> None:
    """``--trace PATH``: the recording's requests as a trace, written whole or not at all; prints what was
    written and how to replay it. ``KvtuiError`` (one line) when the recording cannot become a trace (an older
    recording, one whose page size changed), ``OutputError`` when the file cannot be written."""
    from kvtui.core.files import write_atomic
    from kvtui.export.saved_trace import NotATrace, check_columns, write_trace
    from workload.trace_writer import saved_trace_text

    try:
        check_columns(reader.request_columns, str(reader.path))
        saved: list = []
        write_atomic(path, lambda f: saved.append(write_trace(reader.request_rows(), f, str(reader.path))))
    except NotATrace as exc:
        raise KvtuiError(str(exc)) from None
    except OSError as exc:
        raise OutputError(f"could not write {path}: {exc.strerror or exc}") from None
    done = saved[0]
    if done.left_out:
        print(f"kvtui: left out {plural(done.left_out, 'request')} drawn before the recording started (their pages "
              "are not in it)", file=sys.stderr)
    print(f"kvtui export: {saved_trace_text(path, done.rows, done.block_tokens)}")


def run(args: argparse.Namespace, started_at: float | None = None) -> int:
    """Export; prints the span and, per output, its path, frames and size (``--trace``: the trace's rows and
    block size)."""
    if args.trace_out:
        check_writable(args.trace_out, "--trace")
        if not _outputs(args):  # (a trace alone: no film, so a recording of one frame will do)
            export_trace(open_session(args.file), args.trace_out)
            return 0
    reader, span, size, outs = _check(args)
    if args.trace_out:
        export_trace(reader, args.trace_out)
    gif_width = args.gif_width if args.gif_width is not None else min(
        GIF_WIDTHS[1], max(GIF_WIDTHS[0], GIF_PX_PER_COLUMN * size[0]))
    from kvtui.movie.cast import CastWriter
    from kvtui.movie.frames import FilmStopped
    from kvtui.movie.gif import GifWriter
    from kvtui.movie.svg_anim import SvgAnimWriter
    from kvtui.tui.fmt import fmt_position, fmt_speed

    title = f"kvtui replay · {args.file}"  # as kvtui replay titles the same session
    height = size[1] + (1 if args.annotate else 0)
    partial: dict[str, _Partial] = {}
    sinks: list[CastWriter | GifWriter | SvgAnimWriter] = []
    try:
        for flag, path in outs:
            try:
                partial[flag] = part = _Partial(path, binary=flag == "--gif")
            except OSError as exc:
                raise KvtuiError(f"{flag}: cannot write in the folder of {path} ({exc.strerror})") from None
            if flag == "--cast":
                sinks.append(CastWriter(part.text, size[0], height, _start_time(reader, span.start_s), title))
            elif flag == "--gif":
                sinks.append(GifWriter(part.binary, span.fps, gif_width, title))
            else:
                sinks.append(SvgAnimWriter(part.text, span.frames, span.fps, title))
        try:
            _film_with_progress(reader, span, size, sinks, args.annotate, title)
        except OSError as exc:
            raise OutputError(f"could not write {', '.join(str(p) for _f, p in outs)}: {exc.strerror or exc}") from None
        except FilmStopped as exc:  # SIGINT / SIGTERM / SIGHUP end the headless monitor cleanly
            print(f"kvtui: export interrupted ({exc}); no file written", file=sys.stderr)
            return exc.exit_code  # the partial outputs go in the finally below
        sizes = {flag: part.commit() for flag, part in partial.items()}
        partial.clear()
    finally:
        for part in partial.values():
            part.discard()
    print(f"kvtui export: {fmt_position(span.start_s)}–{fmt_position(span.end_s)} of {args.file} at "
          f"{fmt_speed(span.speed)}, {span.fps:g} fps: {plural(span.frames, 'frame')}, "
          f"{span.film_s:.1f} s of film, {size[0]}×{height} cells")
    kinds = {"--cast": "asciinema v2 cast", "--gif": "animated GIF", "--svg-anim": "animated SVG"}
    for (flag, path), sink in zip(outs, sinks):
        extra = f", {sink.size[0]}×{sink.size[1]} px" if isinstance(sink, GifWriter) and sink.size else ""
        print(f"  {path}: {kinds[flag]}, {format_bytes(sizes[flag])}{extra}")
    return 0


def _film_with_progress(reader, span, size, sinks, annotate: bool, title: str) -> None:
    """:func:`kvtui.movie.frames.run_film` with a progress bar on stderr (when it is a terminal)."""
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    from kvtui.movie.frames import run_film
    from kvtui.tui.fmt import fmt_position

    cols = [TextColumn("[bold]kvtui export"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[at]}"),
            TimeElapsedColumn(), TimeRemainingColumn()]
    with Progress(*cols, console=Console(stderr=True), transient=True, disable=not sys.stderr.isatty()) as prog:
        task = prog.add_task("export", total=span.frames, at="")
        run_film(reader, span, size, sinks, annotate=annotate, title=title,
                 on_frame=lambda f: prog.update(task, advance=1, at=fmt_position(f.position)))
