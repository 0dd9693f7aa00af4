"""The pages kvtui's workers were told are stored: a failover's or a store fault's loss check asks which of them
are gone."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence

LEDGER_CAP = 200_000
"""Keys a :class:`PublishedLedger` holds at most (~30 MiB); beyond it the oldest are forgotten (a store holds
far fewer pages than this at kvtui's page sizes, so those are evicted long since)."""


class PublishedLedger:
    """The keys kvtui's workers were told are stored (their put returned 0), with the engine time of the
    result that said so. Thread-safe. A loss check asks which of them are gone; keys the store no longer has can
    be forgotten (:meth:`forget`), which keeps the ledger near the store's own key count on a long run."""

    def __init__(self, cap: int = LEDGER_CAP):
        self.cap = cap
        self._lock = threading.Lock()
        self._keys: OrderedDict[str, float] = OrderedDict()  # key → engine time acknowledged, oldest first

    def __len__(self) -> int:
        return len(self._keys)

    def add(self, keys: Sequence[str], t: float) -> None:
        """``keys`` were acknowledged as stored at engine time ``t`` (seconds)."""
        with self._lock:
            for k in keys:
                self._keys[k] = t
                self._keys.move_to_end(k)
            while len(self._keys) > self.cap:
                self._keys.popitem(last=False)

    def snapshot(self) -> dict[str, float]:
        """``{key: time acknowledged}`` now (a copy)."""
        with self._lock:
            return dict(self._keys)

    def forget(self, keys: Sequence[str], acked_before: float) -> int:
        """Drop those of ``keys`` last acknowledged before engine time ``acked_before`` (a key published again
        since stays); returns how many were dropped."""
        dropped = 0
        with self._lock:
            for k in keys:
                t = self._keys.get(k)
                if t is not None and t < acked_before:
                    del self._keys[k]
                    dropped += 1
        return dropped
