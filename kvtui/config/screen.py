"""The monitor's screen, for the commands that show it (``watch``, ``replay``; ``serve`` checks the same
flags): ``--headless``, ``--duration``, ``--screenshot``, ``--size``, ``--refresh-hz`` and
``--screenshot-dir``."""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from kvtui.config.paths import check_writable, path_arg
from kvtui.core.defaults import DEFAULT_HZ, MAX_HZ
from kvtui.core.errors import KvtuiError, bad_value
from kvtui.core.units import MAX_SIZE, duration_arg, parse_size


def add_screen_arguments(p: argparse._ActionsContainer) -> None:
    """``--headless``, ``--duration``, ``--screenshot`` and ``--size`` on a parser or argument group;
    :func:`screen_from_args` checks them."""
    p.add_argument("--headless", action="store_true",
                   help="run without a terminal for --duration seconds (for CI and screenshots)")
    p.add_argument("--duration", type=duration_arg, metavar="SECONDS",
                   help="quit after this many seconds (or 90s, 2m: with a unit; default: until q; required with "
                        "--headless)")
    p.add_argument("--screenshot", type=path_arg, metavar="PATH",
                   help="with --duration: save an SVG of the screen at the end")
    p.add_argument("--size", default="120x40", metavar="COLSxROWS",
                   help=f"headless screen size in cells (default 120x40, at most {MAX_SIZE[0]}x{MAX_SIZE[1]})")


def add_refresh_argument(p: argparse._ActionsContainer, help_text: str | None = None,
                         default: float | None = DEFAULT_HZ) -> None:
    """``--refresh-hz``: screen updates per second (``default`` None: the command fills it in per mode)."""
    p.add_argument("--refresh-hz", type=float, default=default, metavar="HZ", help=help_text or (
        f"screen updates per second, ≤ {MAX_HZ:g} (default {DEFAULT_HZ:g}: every repaint costs CPU the "
        "workload could use; key presses show at once whatever the rate)"))


def check_refresh_hz(hz: float) -> None:
    """``KvtuiError`` unless ``hz`` (screen updates per second) is within (0, ``MAX_HZ``]."""
    if not (0 < hz <= MAX_HZ):
        raise bad_value("--refresh-hz", f"within (0, {MAX_HZ:g}]", hz)


def check_screenshot_dir(path: str) -> None:
    """``--screenshot-dir``: ``KvtuiError`` now if it names a file, or a folder whose parent does not exist
    (the screenshot key creates the folder itself, one level only)."""
    folder = Path(path)
    if folder.exists() and not folder.is_dir():
        raise KvtuiError(f"--screenshot-dir: {path} exists and is not a folder")
    if not folder.exists() and not folder.resolve().parent.is_dir():
        raise KvtuiError(f"--screenshot-dir: folder {folder.resolve().parent} does not exist")


@dataclass(frozen=True)
class ScreenPlan:
    """How the monitor shows: ``headless`` (no terminal) for ``duration_s`` (None: until q), an SVG
    ``screenshot`` at the end (None: none), ``size`` ``(columns, rows)`` when headless, ``refresh_hz`` screen
    updates per second and ``screenshot_dir`` (where the screenshot key saves)."""

    headless: bool = False
    duration_s: float | None = None
    screenshot: str | None = None
    size: tuple[int, int] = (120, 40)
    refresh_hz: float = DEFAULT_HZ
    screenshot_dir: str = "."


def screen_from_args(args: argparse.Namespace, command: str) -> ScreenPlan:
    """The :class:`ScreenPlan` of the flags. ``KvtuiError`` (one line) for a bad ``--duration``, ``--size`` or
    ``--refresh-hz``, ``--screenshot`` without ``--duration`` or unwritable, and no terminal without
    ``--headless`` (``command`` names the command in that line)."""
    hz = getattr(args, "refresh_hz", None)
    if hz is not None:
        check_refresh_hz(hz)
    shots = getattr(args, "screenshot_dir", None)
    if shots is not None:
        check_screenshot_dir(shots)
    if args.duration is not None and not args.duration > 0:
        raise bad_value("--duration", "positive seconds", args.duration)
    if args.screenshot:
        if args.duration is None:
            raise KvtuiError("--screenshot needs --duration (the screenshot is taken at the end)")
        check_writable(args.screenshot, "--screenshot")
    if args.headless and args.duration is None:
        raise KvtuiError("--headless needs --duration SECONDS (without a terminal there is no q to quit with)")
    size = parse_size(args.size)
    web = os.environ.get("TEXTUAL_DRIVER", "").endswith(":WebDriver")  # kvtui serve: a browser is the terminal
    if not args.headless and not sys.stdout.isatty() and not web:
        raise KvtuiError(f"kvtui {command} needs a terminal; "
                         "use --headless --duration S [--screenshot PATH] without one")
    return ScreenPlan(headless=args.headless, duration_s=args.duration, screenshot=args.screenshot, size=size,
                      refresh_hz=hz if hz is not None else DEFAULT_HZ,
                      screenshot_dir=shots if shots is not None else ".")
