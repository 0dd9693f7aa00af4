"""The failovers a live session measures: one watch per failover, numbered in order, fed every finished request
from its start (one that began without kvtui also those of the last :data:`RECENT_S`), its report kept once it
ends; :meth:`Failovers.close` stops every watch and waits for their reports.

Threads: a watch is started by the caller's thread (K in the monitor, a soak's fault) or the cluster's leader
watcher (a failover kvtui did not cause), ends on its own thread, and the collector thread hands on every result.
Every field is under ``_lock`` but ``_recent``, under ``_results_lock``.
"""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass
from typing import Callable

from kvtui.core.cluster_api import AckLedger, ClusterOps, FailoverSeen, FailoverWatcher
from kvtui.core.events import RequestResult
from kvtui.core.failover import FailoverReport
from kvtui.core.subscribers import Unsubscribe

WATCH_STOP_S = 2.0  # close() waits this long for the watches it stopped to file what they measured (a watch
# stops between two polls of the masters, each at most 0.3 s, then reads the masters' logs)
RECENT_S = 3.0  # HA: the results of this many seconds are kept for a failover kvtui sees only after it began


@dataclass(eq=False)
class _Watch:
    """One watch, from the moment :meth:`Failovers.watch` numbers it until its report joins
    :attr:`Failovers.reports`: the ``watch`` once the cluster started it, and the ``unsubscribe`` of the results
    it is fed."""

    watch: FailoverWatcher | None = None
    unsubscribe: Unsubscribe | None = None


class Failovers:
    """The failovers of one session over ``cluster`` (:meth:`~kvtui.core.cluster_api.ClusterOps.watch_failover`):
    ``clock`` (the engine's), ``ledger`` (the acknowledged pages, None: no loss check), ``log(kind, text)`` (the
    event log), ``subscribe_results(fn)`` (the session's finished requests), ``hit_rate_before()`` (the page hit
    rate of the last 30 s, None without requests); ``keep_recent``: keep :data:`RECENT_S` of results (HA)."""

    def __init__(self, cluster: ClusterOps, *, clock: Callable[[], float], ledger: Callable[[], AckLedger | None],
                 log: Callable[[str, str], None],
                 subscribe_results: Callable[[Callable[[RequestResult], None]], Unsubscribe],
                 hit_rate_before: Callable[[], float | None], keep_recent: bool) -> None:
        self._cluster, self._clock, self._ledger, self._log = cluster, clock, ledger, log
        self._subscribe, self._hit_rate_before = subscribe_results, hit_rate_before
        self._lock = threading.Lock()
        self._change = threading.Condition(self._lock)  # a watch ended (close() waits for the ones it stopped)
        self._reports: list[FailoverReport] = []  # _lock; appended by each watch's thread as it ends
        self._watches: list[_Watch] = []  # _lock; every watch numbered and not yet reported
        self._n = 0  # _lock; the number of the latest watch
        self._closing = False  # _lock; close() began: no more watches
        # the last RECENT_S of results (the first call to a dead leader fails at once, before the cluster sees the
        # leader gone), handed to the watch of a failover kvtui did not cause; _results_lock also covers handing
        # a result on, so a watch subscribing meanwhile sees each result once
        self._recent: deque[RequestResult] | None = deque() if keep_recent else None
        self._results_lock = threading.Lock()

    @property
    def reports(self) -> tuple[FailoverReport, ...]:
        """Every failover measured, in the order they ended."""
        with self._lock:
            return tuple(self._reports)

    @property
    def closing(self) -> bool:
        """:meth:`close` began."""
        with self._lock:
            return self._closing

    def pass_on(self, result: RequestResult, hand_on: Callable[[RequestResult], None]) -> None:
        """The collector's: ``hand_on(result)`` (to the results' subscribers, the watches among them), keeping it
        among the recent ones (HA)."""
        if self._recent is None:
            hand_on(result)
            return
        with self._results_lock:
            recent = self._recent
            recent.append(result)
            while recent and recent[0].t_end < result.t_end - RECENT_S:
                recent.popleft()
            hand_on(result)

    def watch(self, kind: str, *, on_serving: Callable[[str], None] | None = None,
              seen: FailoverSeen | None = None) -> FailoverWatcher:
        """Start measuring a failover caused by a fault of ``kind`` that the caller injects right after this
        returns (``seen``: one that began without kvtui, logged with its number). ``RuntimeError`` once
        :meth:`close` began (a watch that started meanwhile is stopped first; its report still joins
        :attr:`reports`). Any thread."""
        entry = _Watch()
        with self._lock:
            if self._closing:
                raise RuntimeError("the session is stopping: no failover is measured")
            self._n += 1
            n = self._n
            self._watches.append(entry)  # (from now on close() waits for its report)
        if seen is not None:
            self._log("outage", f"{seen.text}: measured as failover {n}")
        try:
            watch = self._cluster.watch_failover(
                n, kind, clock=self._clock, ledger=self._ledger(), log=self._log,
                hit_rate_before=self._hit_rate_before(), on_serving=on_serving,
                on_done=lambda report: self._done(entry, report), seen=seen)
        except BaseException:
            with self._change:
                self._watches.remove(entry)
                if self._n == n:  # (the number goes to the next watch)
                    self._n -= 1
                self._change.notify_all()
            raise
        if seen is not None and self._recent is not None:
            with self._results_lock:  # (the results that came before kvtui saw it; the watch keeps those it wants)
                for result in self._recent:
                    watch.add(result)
                unsubscribe = self._subscribe(watch.add)
        else:
            unsubscribe = self._subscribe(watch.add)
        with self._lock:
            entry.watch, entry.unsubscribe = watch, unsubscribe
            ended, closing = entry not in self._watches, self._closing
        if ended:  # (it ended before it was fed anything)
            unsubscribe()
        if closing:  # close() began meanwhile, before this watch was there to stop
            watch.stop()
            raise RuntimeError("the session is stopping: no failover is measured")
        return watch

    def _done(self, entry: _Watch, report: FailoverReport) -> None:
        """A watch ended (on its own thread): its report joins :attr:`reports`, it is fed no more results."""
        with self._change:
            if entry in self._watches:
                self._watches.remove(entry)
            self._reports.append(report)
            unsubscribe = entry.unsubscribe
            self._change.notify_all()
        if unsubscribe is not None:
            unsubscribe()

    def close(self) -> None:
        """Start no more watches, stop those under way (one starting now stops itself) and wait up to
        :data:`WATCH_STOP_S` for their reports. Safe to call twice."""
        with self._lock:
            self._closing = True
            watches = [e.watch for e in self._watches if e.watch is not None]
        for watch in watches:
            watch.stop()
        self.wait()

    def wait(self, timeout_s: float = WATCH_STOP_S) -> bool:
        """Wait up to ``timeout_s`` until every watch has reported; True if all did."""
        with self._change:
            return self._change.wait_for(lambda: not self._watches, timeout_s)
