"""Files kvtui writes whole or not at all: a temporary file beside the target, renamed over it once complete,
with the permissions a plain ``open`` would give. Every JSON output and every SVG screenshot goes through it."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Callable, TextIO


def process_umask() -> int:
    """The process's umask, read from /proc (setting it to read it back would race other threads); where /proc
    does not say, set and restored at once."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_atomic(path: str, write: Callable[[TextIO], object]) -> str:
    """Call ``write(f)`` on a text file that becomes ``path`` only once it returns (a temporary file in the same
    folder, mode 0666 less the umask, then a rename: a reader never sees half a file, and a file it replaces
    is as it was until then). Through a symbolic link it writes the file the link names and keeps the link.
    Returns the path written; ``OSError`` (the temporary file removed) when it cannot be written."""
    target = Path(os.path.realpath(path))
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=str(target.parent))
    try:
        os.fchmod(fd, 0o666 & ~process_umask())
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            write(f)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return str(target)
