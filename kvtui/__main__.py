"""The ``kvtui`` console script's entry (and ``python -m kvtui``): a Ctrl-C while kvtui itself is still being
imported is one line and exit 130 like any other (:mod:`kvtui.cli` then handles every later one)."""

from __future__ import annotations

import sys


def main() -> int:
    """Import :mod:`kvtui.cli` and run it; ``KeyboardInterrupt`` during the import: one line, 130."""
    try:
        from kvtui.cli import main as cli_main
    except KeyboardInterrupt:
        print("kvtui: interrupted", file=sys.stderr)
        return 130
    return cli_main()


if __name__ == "__main__":
    sys.exit(main())
