"""Record the README's demo session (``make demo-gif``): a real run of ``kvtui run``'s engine (embedded
Mooncake store on loopback, prefill and decode workers) on the tiny layout, with the prefix overlap changed
live twice, so the page hit rate visibly follows it: 75 % at the start, 25 % at 6 s, 95 % at 12 s.

    .venv/bin/python scripts/record_demo.py /tmp/kvtui-demo.kvtui [--duration 18]

The session file is then turned into the README's GIF with ``kvtui export`` (see the Makefile).
"""

from __future__ import annotations

import argparse
import sys
import time

from kvtui.cli import build_parser
from kvtui.config.paths import check_new_file
from kvtui.config.plan import plan_from_args
from kvtui.core.controls import SetKnob
from kvtui.core.errors import KvtuiError
from kvtui.core.text import plural
from kvtui.launch import open_session

RUN = ["run", "--layout", "tiny", "--prompt-tokens", "256", "--overlap", "75", "--rate", "50"]
CHANGES = ((6.0, 0.25), (12.0, 0.95))  # (seconds into the run, overlap fraction)


def record(path: str, duration: float) -> None:
    args = build_parser().parse_args([*RUN, "--record", path])
    check_new_file(path, "FILE")
    session = open_session(plan_from_args(args, run_for_s=duration))
    final = None
    try:
        session.recording.start(path)
        session.start()
        t0 = time.monotonic()
        for at, overlap in CHANGES:
            if session.wait(max(0.0, t0 + at - time.monotonic())):
                break
            session.send(SetKnob("overlap", overlap))
            print(f"record_demo: {time.monotonic() - t0:4.1f} s  overlap → {overlap:.0%}", file=sys.stderr)
        while not session.wait(1.0):
            pass
        final = session.final_frame()
    finally:
        session.stop(final)
    t = final.totals
    print(f"record_demo: {path}: {plural(int(t['requests']), 'request')}, page hit rate {t['page_hit_rate']:.1%}",
          file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("file", metavar="FILE", help="the session file to write (must not exist)")
    ap.add_argument("--duration", type=float, default=18.0, metavar="SECONDS", help="run length (default 18)")
    args = ap.parse_args(argv)
    try:
        record(args.file, args.duration)
    except KvtuiError as exc:
        print(f"kvtui: error: {exc}", file=sys.stderr)
        return exc.exit_code
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
