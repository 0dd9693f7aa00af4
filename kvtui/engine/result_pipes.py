"""The parent's read side of the results pipes (one per prefill worker, see :mod:`kvtui.engine.protocol`):
waiting on them with one ``poll(2)`` set registered once, instead of ``Connection.poll``, which builds a
selector on every call (three times a request at concurrency 1, on the parent's share of the request chain)."""

from __future__ import annotations

import math
import select
import time

from kvtui.engine.wire import decode


class PipeGone(EOFError):
    """The results pipe ``index`` ended (its worker is gone)."""

    def __init__(self, index: int):
        super().__init__(index)
        self.index = index


class ResultPipes:
    """``conns``: the read ends (``multiprocessing`` connections); the list object itself is kept, so the
    engine can tell when it rebuilt its pipes or a remote prefill worker joined (:meth:`serves`)."""

    def __init__(self, conns: list):
        self.conns = conns
        self._poller = select.poll()
        self._index = {}
        for i, conn in enumerate(conns):
            self._poller.register(conn.fileno(), select.POLLIN)
            self._index[conn.fileno()] = i
        self._turn = 0  # which pipe is read first when several are ready (they take turns)

    def serves(self, conns: list) -> bool:
        """True while ``conns`` is the list these pipes were made of, with no pipe added since."""
        return conns is self.conns and len(conns) == len(self._index)

    def recv(self, deadline: float | None):
        """The next message on any pipe, or None once ``deadline`` (``time.monotonic()`` seconds; None: wait
        for ever) has passed. Raises :class:`PipeGone` when a ready pipe has ended."""
        while True:
            left = None if deadline is None else deadline - time.monotonic()
            ms = None if left is None else max(0, math.ceil(left * 1000))
            ready = sorted(self._index[fd] for fd, _events in self._poller.poll(ms))
            if ready:
                k = len(self.conns)
                start, self._turn = self._turn, self._turn + 1
                j = min(ready, key=lambda i: (i - start) % k)
                try:
                    return decode(self.conns[j].recv_bytes())
                except (EOFError, OSError):
                    raise PipeGone(j) from None
            if left is not None and left <= 0:
                return None
