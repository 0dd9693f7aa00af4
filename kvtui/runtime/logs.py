"""Where the native (Mooncake) logs of the processes kvtui starts go, and when they are kept.

With ``--log-dir DIR`` they go to DIR and stay there. Without it, each run makes a new temporary folder
(``kvtui-logs-*`` in the temp dir, never the terminal) and removes it when the run ends without trouble; it is
kept, and its path said in one line on stderr (:data:`KEPT_WHY`), when something failed: a process kvtui
started died or exited with an error, or start-up failed. A folder whose files are all empty (stopped before
anything was logged) is removed whatever happened: it would not help.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

__all__ = ["KEPT_RESTARTED", "KEPT_WHY", "PREFIX", "LogFolder", "all_empty"]

PREFIX = "kvtui-logs-"
"""The temporary folders' name prefix."""

KEPT_WHY = "kept because something failed; kvtui removes them after a run without trouble, --log-dir keeps them"
"""Why a temporary log folder is still there, as the line that names it says."""
KEPT_RESTARTED = ("kept because a process of the cluster was killed and started again during the run, by a fault or "
                  "by K or M in the monitor: its logs say what it did; --log-dir keeps them always")
"""Why a log folder is kept when nothing failed but a process was restarted on purpose."""


def all_empty(folder: Path) -> bool:
    """No file under ``folder`` holds a byte (a log folder of processes stopped before anything was logged)."""
    try:
        return not any(f.is_file() and f.stat().st_size for f in folder.rglob("*"))
    except OSError:
        return False


class LogFolder:
    """The log folder of one run: ``given`` (``--log-dir``, created if missing) or a new temporary one
    (:attr:`temporary`), which :meth:`close` removes or keeps."""

    def __init__(self, given: str | None = None) -> None:
        self.temporary = not given
        self.path = Path(given) if given else Path(tempfile.mkdtemp(prefix=PREFIX))
        self.path.mkdir(parents=True, exist_ok=True)
        self._closed = False

    def close(self, trouble: bool, what: str, why: str = KEPT_WHY) -> None:
        """The run is over: a temporary folder is removed unless ``trouble`` (something failed), or when it
        holds nothing (:func:`all_empty`); a kept one is named in one line on stderr: ``kvtui: logs of WHAT
        kept in DIR (WHY)``. A folder the user gave is left as it is. Only the first call counts."""
        if self._closed:
            return
        self._closed = True
        if not self.temporary:
            return
        if not trouble or all_empty(self.path):
            shutil.rmtree(self.path, ignore_errors=True)
        else:
            print(f"kvtui: logs of {what} kept in {self.path} ({why})", file=sys.stderr, flush=True)
