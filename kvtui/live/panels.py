"""The slow-changing panels of a live session (the store's scrape, the processes), sampled on a background
thread at ~1 Hz so no view ever waits on them."""

from __future__ import annotations

import threading
from collections.abc import Callable

from kvtui.core.panels import ProcRow, StoreScrape
from kvtui.runtime.processes import ProcessSampler


class PanelThread:
    """Samples the store (``sample_store()``: the cluster's ``/metrics`` scrape) and the processes every
    ``interval_s`` on a daemon thread; :attr:`store` / :attr:`procs` hold the latest. ``store``: the panel
    before the first scrape. Threads: :attr:`store` and :attr:`procs` are written by the sampling thread (and
    :meth:`refresh_store`, under ``_sampling``) and replaced whole, never mutated, so a reader takes a
    consistent panel without a lock."""

    def __init__(self, sample_store: Callable[[], StoreScrape], procs: ProcessSampler, interval_s: float = 1.0,
                 store: StoreScrape | None = None):
        self.sample_store, self.proc_sampler = sample_store, procs
        self.interval_s = interval_s
        self.store: StoreScrape = store if store is not None else {}
        self.procs: tuple[ProcRow, ...] = ()
        self._stop = threading.Event()
        self._sampling = threading.Lock()
        self._thread = threading.Thread(target=self._loop, name="kvtui-panels", daemon=True)

    def start(self) -> "PanelThread":
        """Start sampling."""
        self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.is_set():
            with self._sampling:  # (refresh_store may sample from another thread)
                self.store = self.sample_store()
            self.procs = self.proc_sampler.sample()
            self._stop.wait(self.interval_s)

    def refresh_store(self) -> StoreScrape:
        """Sample the store now, on the caller's thread (≤ 0.8 s), and keep it as :attr:`store`: a final frame
        then shows the store as the run left it (keys, bytes, evictions), not as the last periodic scrape (up
        to ``interval_s`` old) saw it. The put and get rates stay those of the last full interval: over the
        fraction of a second since that scrape they would be noise."""
        before = self.store
        with self._sampling:
            store = StoreScrape(**self.sample_store())
        for rate in ("put_rps", "get_rps"):
            if rate in before:
                store[rate] = before[rate]
        self.store = store
        return store

    def stop(self) -> None:
        """Stop sampling (returns within one interval)."""
        self._stop.set()
        self._thread.join(self.interval_s + 1)
