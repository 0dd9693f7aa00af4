"""Failovers kvtui did not cause: :class:`LeaderWatcher` follows the leader of an HA cluster, embedded or
attached, and says when it changes, whoever killed, hung or demoted it.

It polls etcd's ``master_view`` (the leader's RPC address, :func:`kvtui.mooncake.ha.master_view_key`) every
``VIEW_S`` and, with the masters' admin URLs known (``--metrics-url``, or an embedded cluster), each master's
``/health`` every ``POLL_S``. A leader change begins at the first of ``MISSES`` polls in a row that found the
serving leader not serving (dead, hung past the poll's timeout, stepped down), or, with only etcd to go by, when
``master_view`` names another leader or none (its lease expired, ~5 s after the leader died). While kvtui's own
failover watch runs (:meth:`LeaderWatcher.pause`) nothing is reported: that watch measures it. Each etcd poll
also notes whether etcd answered (:meth:`LeaderWatcher.etcd_silent_s`: a loss is never put down to etcd when it
answered every poll). With a subscriber that checks losses (``snapshots``), it lists the serving leader's keys
every ``SNAPSHOT_S`` (``/get_all_keys``: no lease), so that the loss check of a failover it did not see coming
knows what the old leader held.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from kvtui.mooncake import ha
from kvtui.mooncake.net import parse_etcd

POLL_S = 0.25  # each master's /health is asked this often
HEALTH_TIMEOUT_S = 0.4  # … and a master that does not answer within this missed the poll
VIEW_S = 0.5  # etcd's master_view is read this often
MISSES = 2  # polls in a row that find the leader not serving: it is gone (one slow answer is not a failover)
SNAPSHOT_S = 5.0  # the serving leader's keys are listed this often (for a failover kvtui did not cause)
SILENCES_KEPT = 256  # etcd silences remembered (oldest forgotten first)


@dataclass(frozen=True)
class Snapshot:
    """The serving leader as last seen: ``name``, ``url`` (admin), ``t`` (``time.monotonic()``), ``keys`` it
    listed, ``capacity`` (bytes of segments mounted), ``evictions`` (each master's eviction count)."""

    name: str
    url: str
    t: float
    keys: frozenset[str]
    capacity: int
    evictions: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class LeaderChange:
    """A failover kvtui did not cause began. ``t``: when kvtui first saw it (``time.monotonic()``: the first
    failed poll's start); ``last_ok``: its last sight of the old leader serving; ``old_leader``: its name (or its
    RPC address, with only etcd to go by); ``how``: what kvtui saw; ``snapshot``: the old leader's keys as last
    listed (None: not listed)."""

    t: float
    last_ok: float
    old_leader: str | None
    how: str
    snapshot: Snapshot | None = None

    @property
    def text(self) -> str:
        """One line for the event log."""
        return f"the leader changed, not by kvtui: {self.how}"


class LeaderWatcher(threading.Thread):
    """Follows the leader of the HA cluster at ``etcd`` (``etcd://…``) with ``masters`` (``(name, admin URL)``,
    may be empty); calls ``on_change(LeaderChange)`` from its thread. Threads: every field is written by its
    own thread only, except ``_paused`` (a counter under ``_lock``), ``snapshots`` and the silences (under
    ``_lock``)."""

    def __init__(self, etcd: str, masters: tuple[tuple[str, str], ...], on_change: Callable[[LeaderChange], None],
                 *, clock: Callable[[], float] = time.monotonic):
        super().__init__(name="kvtui-leader-watch", daemon=True)
        self.etcd = parse_etcd(etcd)
        self.masters = tuple(masters)
        self.on_change = on_change
        self.clock = clock
        self.snapshots = False  # list the leader's keys every SNAPSHOT_S (a subscriber checks losses)
        self._lock = threading.Lock()
        self._halt = threading.Event()
        self._paused = 0  # kvtui's own failover watches under way
        self._rebase = True  # (re)learn which master leads before reporting a change
        self._leader: str | None = None  # the serving leader's name (admin URLs known) or RPC address
        self._last_ok = 0.0
        self._first_miss: float | None = None
        self._misses = 0
        self._view: str | None = None
        self._view_at = -VIEW_S
        self._silent_since: float | None = None
        self._silences: deque[tuple[float, float]] = deque(maxlen=SILENCES_KEPT)
        self._snapshot: Snapshot | None = None

    # -- what others ask --------------------------------------------------------------------------------
    def pause(self) -> None:
        """kvtui's own failover watch begins: report nothing until :meth:`resume`."""
        with self._lock:
            self._paused += 1

    def resume(self) -> None:
        """kvtui's own failover watch ended: learn the leader afresh, then report changes again."""
        with self._lock:
            self._paused = max(0, self._paused - 1)
            self._rebase = True

    @property
    def snapshot(self) -> Snapshot | None:
        """The serving leader's keys as last listed (None: not yet)."""
        with self._lock:
            return self._snapshot

    def etcd_silent_s(self, since: float) -> float:
        """Seconds between ``since`` (``time.monotonic()``) and now that etcd did not answer kvtui's polls."""
        now = self.clock()
        with self._lock:
            spans = list(self._silences) + ([(self._silent_since, now)] if self._silent_since is not None else [])
        return round(sum(max(0.0, min(b, now) - max(a, since)) for a, b in spans), 3)

    def stop(self) -> None:
        self._halt.set()

    # -- the thread ------------------------------------------------------------------------------------
    def run(self) -> None:
        last_snapshot = -SNAPSHOT_S
        while not self._halt.is_set():
            start = self.clock()
            try:
                if start - self._view_at >= VIEW_S:
                    self._view_at = start
                    self._poll_view(start)
                if self.masters:
                    self._poll_masters(start)
                    if self.snapshots and start - last_snapshot >= SNAPSHOT_S and self._misses == 0:
                        last_snapshot = start
                        self._take_snapshot()
            except Exception:  # (a poll that fails is a poll missed; the watcher keeps going)
                pass
            self._halt.wait(max(0.0, POLL_S - (self.clock() - start)))

    def _quiet(self) -> bool:
        """Nothing is to be reported now (kvtui's own watch runs); resets the baseline afterwards."""
        with self._lock:
            paused, rebase = self._paused > 0, self._rebase
            if not paused:
                self._rebase = False
        if paused or rebase:
            self._leader, self._misses, self._first_miss = None, 0, None
        return paused

    def _poll_view(self, start: float) -> None:
        answered, value = ha.etcd_read(self.etcd, ha.master_view_key(), timeout_s=HEALTH_TIMEOUT_S)
        now = self.clock()
        with self._lock:
            if not answered and self._silent_since is None:
                self._silent_since = start
            elif answered and self._silent_since is not None:
                self._silences.append((self._silent_since, now))
                self._silent_since = None
        if not answered or self.masters:
            return
        view = (value or "").strip() or None
        if self._quiet():
            self._view = view
            return
        if self._leader is None:  # (a baseline: the leader etcd names now)
            self._leader, self._view, self._last_ok = view, view, now
            return
        if view == self._leader:
            self._last_ok = now
            return
        how = (f"etcd's master_view names {view} instead of {self._leader}" if view else
               f"etcd's master_view names no leader any more (the lease of {self._leader} expired)")
        self._report(LeaderChange(start, self._last_ok, self._leader, how))
        self._leader = view

    def _poll_masters(self, start: float) -> None:
        states = ha.master_states(self.masters, timeout_s=HEALTH_TIMEOUT_S)
        serving = next((s for s in states if s.serving), None)
        if self._quiet():
            return
        if self._leader is None:
            if serving is not None:
                self._leader, self._last_ok, self._misses, self._first_miss = serving.name, start, 0, None
            return
        mine = next((s for s in states if s.name == self._leader), None)
        if mine is not None and mine.serving:
            self._last_ok, self._misses, self._first_miss = start, 0, None
            return
        self._misses += 1
        if self._first_miss is None:
            self._first_miss = start
        if self._misses < MISSES:
            return
        word = "down" if mine is None or not mine.up else mine.word
        how = (f"{self._leader} stopped serving ({'it does not answer /health' if word == 'down' else word})"
               + (f"; {serving.name} serves" if serving is not None else ""))
        self._report(LeaderChange(self._first_miss, self._last_ok, self._leader, how, self.snapshot))
        self._leader, self._misses, self._first_miss = None, 0, None

    def _report(self, change: LeaderChange) -> None:
        with self._lock:
            self._rebase = True
        self.on_change(change)

    def _take_snapshot(self) -> None:
        """List the serving leader's keys (no lease) with its capacity and the masters' eviction counts."""
        url = dict(self.masters).get(self._leader or "")
        if url is None:
            return
        t = self.clock()
        keys = ha.stored_keys(url, timeout_s=3.0)
        if keys is None:
            return
        evictions = {name: n for name, u in self.masters if (n := ha.evicted_keys(u, timeout_s=0.3)) is not None}
        snap = Snapshot(self._leader or "", url, t, frozenset(keys), ha.capacity_bytes(url, timeout_s=0.5) or 0,
                        evictions)
        with self._lock:
            self._snapshot = snap
