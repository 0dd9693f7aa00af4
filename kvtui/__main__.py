"""The ``kvtui`` console script's entry (and ``python -m kvtui``): a Ctrl-C, SIGTERM or SIGHUP while kvtui
itself is still being imported is one line and exit 130 / 143 / 129 like any other (:mod:`kvtui.cli` then
handles every later one)."""

from __future__ import annotations

import signal
import sys


class _Early(BaseException):
    """SIGTERM or SIGHUP during the import of :mod:`kvtui.cli` (``signum``)."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = int(signum)


def _early(signum, _frame) -> None:
    raise _Early(signum)


def main() -> int:
    """Import :mod:`kvtui.cli` and run it; ``KeyboardInterrupt`` during the import: one line, 130; SIGTERM /
    SIGHUP (unless ignored, as under ``nohup``): one line, 143 / 129."""
    caught = [s for s in (signal.SIGTERM, signal.SIGHUP) if signal.getsignal(s) == signal.SIG_DFL]
    for signum in caught:
        signal.signal(signum, _early)
    try:
        try:
            from kvtui.cli import main as cli_main
        finally:
            for signum in caught:  # (kvtui.cli installs its own: it leaves a SIGHUP that is not SIG_DFL alone)
                signal.signal(signum, signal.SIG_DFL)
    except KeyboardInterrupt:
        exec("pass", {})  # (CPython's "unhandled KeyboardInterrupt" flag: see kvtui.cli.forget_caught_interrupt)
        print("kvtui: interrupted", file=sys.stderr)
        return 130
    except _Early as exc:
        print(f"kvtui: terminated ({signal.Signals(exc.signum).name})", file=sys.stderr)
        return 128 + exc.signum
    return cli_main()


if __name__ == "__main__":
    sys.exit(main())
