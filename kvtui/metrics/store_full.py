"""One event-log line per burst of refused puts, not one per failure.

When the store is full and what it holds cannot be evicted (leased by recent reads, or the working set is
larger than the segment), every put returns ``NO_AVAILABLE_HANDLE`` at once; a run can refuse hundreds in a
few seconds. :class:`StoreFullAlarm` counts them from the request results and reports each burst once, with
the count, the cause and the remedy (the text comes from its ``explain`` callback, see
:func:`kvtui.core.capacity.store_full_text`).
"""

from __future__ import annotations

import threading
from typing import Callable

WINDOW_S = 1.0  # a burst is reported this long after its first refused put, with the count so far
QUIET_S = 30.0  # after a line, refused puts are only counted for this long; the next line counts them too


class StoreFullAlarm:
    """Counts refused puts and says when a line is due.

    ``explain(failed, seconds)``: the line for ``failed`` refused puts within ``seconds``. Times are seconds
    on any monotonic clock (the engine's). Thread-safe. :attr:`lines` keeps every line made, in order, as
    ``(t, text)``.
    """

    def __init__(self, explain: Callable[[int, float], str], window_s: float = WINDOW_S, quiet_s: float = QUIET_S):
        self.explain = explain
        self.window_s, self.quiet_s = window_s, quiet_s
        self.lines: list[tuple[float, str]] = []
        self._start: float | None = None  # first refused put not reported yet
        self._count = 0
        self._last: float | None = None  # when the last line was made
        self._lock = threading.Lock()

    def add(self, failed: int, t: float) -> str | None:
        """Count ``failed`` refused puts (0 is fine: a result without any) seen at ``t``; returns the line if
        one is due now (``window_s`` after the burst's first refused put, and ``quiet_s`` after the last
        line), else None."""
        with self._lock:
            if failed > 0:
                if self._start is None:
                    self._start, self._count = t, 0
                self._count += int(failed)
            return self._due(t, self.window_s)

    def flush(self, t: float) -> str | None:
        """At the end of a run: the line of a burst not reported yet, unless a line was made within the
        last ``quiet_s`` (its count was given in the summary anyway)."""
        with self._lock:
            return self._due(t, 0.0)

    def _due(self, t: float, window: float) -> str | None:
        if self._start is None or t - self._start < window:
            return None
        if self._last is not None and t - self._last < self.quiet_s:
            return None
        text = self.explain(self._count, max(t - self._start, 0.0))
        self.lines.append((t, text))
        self._last, self._start, self._count = t, None, 0
        return text
