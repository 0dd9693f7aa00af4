"""``kvtui replay FILE``: play a recorded session in the same app, through the same render path, with no
store: pause, step, seek, speed; a REPLAY badge shows position / length."""

from __future__ import annotations

import argparse
import sys

from kvtui.commands.output import open_session
from kvtui.config.screen import add_screen_arguments, screen_from_args
from kvtui.core.errors import KvtuiError


def register(subparsers) -> None:
    """Add the ``replay`` subcommand."""
    p = subparsers.add_parser("replay", help="play a recorded session (no store needed)",
                              description="Play a session recorded with --record or Ctrl+R in the monitor. Keys: "
                                          "space pause, . and , step a frame, → and ← seek 10 s, Home/End, + and - "
                                          "speed; ? lists them all.")
    p.add_argument("file", metavar="FILE", help="session file (.kvtui)")
    p.add_argument("--speed", type=float, default=1.0, metavar="X", help="playback speed factor (default 1; 0.125-64)")
    add_screen_arguments(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace, started_at: float | None = None) -> int:
    """Play the session until quit (or ``--duration``)."""
    from kvtui.session.reader import ReplayPlayer
    from kvtui.tui.app import run_app

    if not (0.125 <= args.speed <= 64):
        raise KvtuiError(f"--speed must be within 0.125-64, got {args.speed:g}")
    reader = open_session(args.file)  # a wrong file is the first thing to say, terminal or not
    screen = screen_from_args(args, "replay")
    warning = reader.warning("playing")
    if warning:
        print(f"kvtui: {warning}", file=sys.stderr)
    player = ReplayPlayer(reader, speed=args.speed)
    return run_app(player, None, player=player, headless=screen.headless, duration_s=screen.duration_s,
                   screenshot=screen.screenshot, size=screen.size, title=f"kvtui replay · {args.file}")
