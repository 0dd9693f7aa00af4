"""What one failover of kvtui's HA cluster cost, measured as it happens (:class:`FailoverWatch`).

A watch starts just before a fault of the leader or of etcd (a leader killed or hung, etcd stopped): it notes
which master serves and which of the keys kvtui published (the engine's ledger,
:class:`kvtui.engine.ledger.PublishedLedger`) that master lists. Then, polling every master's ``/health`` every
``POLL_S``, it times from the fault:

* ``leader_s``: until another master says it is the leader;
* ``serving_s``: until a master serves again after none did (the end of the failover; None when one served
  all along: a short hang or etcd outage costs no failover);
* ``reload_s`` / ``publish_s``: until the first request after the first store error that reloaded pages
  (respectively published some) without an error: kvtui's workers work again; when no request failed (their
  calls waited for the new leader instead), the first such request to end once a master serves again (None:
  none did within ``WAIT_S``).

Between the fault and ``publish_s`` it counts the requests that finished with a store error, their codes
by name and the pages they failed. Once a master serves again it asks it for every key it lists
(``/get_all_keys``: no lease, so the check pins nothing and changes no figure) and counts the **pages
acknowledged as stored and gone**: kvtui's keys that were stored when the fault began, or were acknowledged
after that, and are not listed now. A key evicted in between would count too: ``evicted`` (the masters'
``master_evicted_key_count`` growth over the same span) says whether any was, so the count is exact when it
is 0.

Each lost page is then put down to a cause from the masters' logs (embedded clusters: kvtui reads them,
:mod:`kvtui.mooncake.masterlog`), by Mooncake's codes: a line that names the key (``PutEnd: OpLog queue failed
for key=K, err=-1401``), else the new leader's ``Standby restore failed: CODE``, else none (lost without a trace
in the masters' logs); and counted within or beyond the leader-kill window of a fault that stopped the leader at
once (:data:`kvtui.core.failover.KILL_WINDOW_S`). A failover kvtui did not cause is watched from the moment the
cluster's :class:`~kvtui.mooncake.leaderwatch.LeaderWatcher` saw it (:meth:`FailoverWatch.begin_seen`), its loss
check based on the leader's keys as that watcher last listed them.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

from kvtui.core.codes import code_name
from kvtui.core.failover import AFTER_S, KILL_WINDOW_S, RESTORE, STOPS_LEADER, UNTRACED, FailoverReport
from kvtui.core.pages import PageState
from kvtui.mooncake import ha, masterlog

if TYPE_CHECKING:
    from kvtui.core.cluster_api import AckLedger
    from kvtui.core.events import RequestResult
    from kvtui.mooncake.leaderwatch import LeaderChange

POLL_S = 0.1  # the masters' /health is asked this often during a failover
NO_FAILOVER_S = 12.0  # a fault cleared this long ago with a master serving all along caused no failover (an
# etcd lease is 5 s, a new leader's warm-up 5 s more)
REMOUNT_WAIT_S = 15.0  # the loss check waits this long at most for the segments to be mounted on a new leader
WAIT_S = 90.0  # a watch gives up waiting for a serving master, or for kvtui's first reload and publish, after this
ROLES_FROM_S = -1.0  # the report's logged role changes: from this long before the fault
LEADER_STATES = ("leader_warmup", "serving")  # role changes the report keeps (and the old leader's first after the
# fault: standbys go candidate → standby every second while none leads, which says nothing of the failover)


@dataclass
class FailoverHistory:
    """What the failover watches of one cluster share (they run one at a time): each master's log, read up to
    here by the last report (``log_marks``, bytes), when the last report's check ended (``since``,
    ``time.monotonic()``; None: none yet) and how long etcd did not answer since a moment (``etcd_silent_s``,
    the cluster's leader watcher; None: etcd is not polled)."""

    log_marks: dict[str, int] = field(default_factory=dict)
    since: float | None = None
    etcd_silent_s: Callable[[float], float] | None = None


class FailoverWatch(threading.Thread):
    """Measures one failover (:class:`FailoverReport`). Call :meth:`begin` just before the fault (it notes
    the leader and the keys it lists) or :meth:`begin_seen` for one that began without kvtui, feed it every
    finished request (:meth:`add`), :meth:`start` it, and :meth:`cleared` once the fault is over (a hung master
    continued; a kill needs none: its end is a new leader). ``endpoints``: the cluster's (``masters``, and
    ``log_dir`` when kvtui started it); ``clock()``: engine seconds (the time of results); ``ledger``: the pages
    acknowledged (None: no loss check); ``log(kind, text)``: event-log lines; ``on_serving(name)``: called once
    a master serves again (e.g. to start the killed one again as a standby); ``on_done(report)``: called at the
    end. :attr:`done` is set then. ``history``: what the watches of one cluster share (:class:`FailoverHistory`)."""

    def __init__(self, n: int, kind: str, endpoints, clock: Callable[[], float], ledger: AckLedger | None,
                 log: Callable[[str, str], None], *, on_serving: Callable[[str], None] | None = None,
                 on_done: Callable[[FailoverReport], None] | None = None, wait_s: float = WAIT_S,
                 history: FailoverHistory | None = None):
        super().__init__(name="kvtui-failover", daemon=True)
        self.clock, self.ledger = clock, ledger
        self.log, self.on_serving, self.on_done, self.wait_s = log, on_serving, on_done, wait_s
        self.masters: tuple = tuple(getattr(endpoints, "masters", ()) or ())
        self.report = FailoverReport(n, kind, 0.0)
        if kind in STOPS_LEADER:
            self.report.window_s = list(KILL_WINDOW_S)
        self.done = threading.Event()
        self.serving = threading.Event()  # a master serves again (or served all along)
        self._lock = threading.Lock()
        self._halt = threading.Event()
        self._cleared_at: float | None = None
        self._first_error: float | None = None
        self._errors: Counter = Counter()
        self._before: set[str] | frozenset[str] | None = None
        self._evicted_before: dict[str, int] = {}
        self._t_pre = 0.0
        self._t_from: float | None = None  # requests that end from here count (None: from the fault, t_s)
        self._capacity = 0  # bytes of segments mounted on the leader before the fault
        self._log_dir = str(getattr(endpoints, "log_dir", "") or "") if getattr(endpoints, "embedded", False) else ""
        self.history = history if history is not None else FailoverHistory()
        self._pages = {"during": [0, 0], "after": [0, 0]}  # pages hit, full pages of the requests finished then

    def _mono(self, t: float) -> float:
        """``time.monotonic()`` of engine time ``t``."""
        return time.monotonic() - (self.clock() - t)

    # -- before the fault ------------------------------------------------------------------------------
    def begin(self, hit_rate: float | None = None) -> None:
        """Note the serving master, the keys it lists and each master's eviction count; the fault's time is now.
        ``hit_rate``: the page hit rate of the requests of the last 30 s (the report's ``hit_rate_before``)."""
        self.report.hit_rate_before = hit_rate
        states = ha.master_states(self.masters, timeout_s=0.5)
        leader = next((s for s in states if s.serving), None)
        self.report.old_leader = leader.name if leader else None
        self._t_pre = self.clock()
        self._before = ha.stored_keys(leader.url) if leader else None
        self._capacity = (ha.capacity_bytes(leader.url) or 0) if leader else 0
        self._evicted_before = self._evictions()
        self.report.t_s = self.clock()

    def begin_seen(self, change: LeaderChange, hit_rate: float | None = None) -> None:
        """A failover kvtui did not cause (:class:`~kvtui.mooncake.leaderwatch.LeaderChange`): its time is when
        kvtui first saw it, its leader-kill window reaches back to kvtui's last sight of the old leader serving,
        and its loss check is based on the old leader's keys as last listed (``change.snapshot``; none: every
        acknowledged page is expected, an upper bound when the store evicts)."""
        rep = self.report
        rep.hit_rate_before, rep.old_leader, rep.how = hit_rate, change.old_leader, change.how
        now_mono, now = time.monotonic(), self.clock()
        rep.t_s = round(now - (now_mono - change.t), 3)
        rep.detected_s = round(max(0.0, change.t - change.last_ok), 3)
        self._t_from = rep.t_s - rep.detected_s  # (a request that failed before kvtui saw it counts: the first
        # call to a dead leader fails at once)
        if rep.window_s is not None:
            rep.window_s = [round(KILL_WINDOW_S[0] - rep.detected_s, 3), KILL_WINDOW_S[1]]
        snap = change.snapshot
        if snap is not None:
            self._before, self._capacity, self._evicted_before = snap.keys, snap.capacity, dict(snap.evictions)
            self._t_pre = now - (now_mono - snap.t)
        else:
            self._before, self._t_pre = None, float("-inf")

    def _evictions(self) -> dict[str, int]:
        out = {}
        for name, url in self.masters:
            n = ha.evicted_keys(url, timeout_s=0.3)
            if n is not None:
                out[name] = n
        return out

    # -- fed while it runs -----------------------------------------------------------------------------
    def add(self, r: RequestResult) -> None:
        """One finished request (from the session's collector thread)."""
        rep = self.report
        with self._lock:
            if self.done.is_set() or r.t_end < (rep.t_s if self._t_from is None else self._t_from):
                return
            since, pub = r.t_end - rep.t_s, rep.publish_s
            span = "during" if pub is None or since <= pub else "after" if since <= pub + AFTER_S else None
            if span is not None:
                self._pages[span][0] += r.pages_hit
                self._pages[span][1] += r.pages_total
            if r.codes:
                rep.requests_failed += 1
                rep.pages_failed += sum(1 for s in r.states if s == PageState.FAILED)
                for code, n in r.codes.items():
                    self._errors[code_name(code)] += n
                if self._first_error is None:
                    self._first_error = r.t_end
                return
            if self._first_error is None:  # (no request failed: calls that waited for the new leader count once
                if rep.serving_s is None or r.t_end - rep.t_s < rep.serving_s:  # it serves)
                    return
            elif r.t_start < self._first_error:
                return
            if r.pages_hit and rep.reload_s is None:
                rep.reload_s = round(r.t_end - rep.t_s, 3)
            if r.pages_published and rep.publish_s is None:
                rep.publish_s = round(r.t_end - rep.t_s, 3)

    def cleared(self) -> None:
        """The fault is over (SIGCONT sent, etcd continued)."""
        self._cleared_at = self.clock()

    def stop(self) -> None:
        """End the watch now (the session stops): the report keeps what was measured so far."""
        self._halt.set()

    # -- the thread ------------------------------------------------------------------------------------
    def run(self) -> None:
        try:
            self._watch()
        except Exception as exc:  # a watch that fails must not end the session: say it, keep the report
            self.log("error", f"failover {self.report.n}: the watch stopped: {type(exc).__name__}: {exc}")
        finally:
            with self._lock:
                self.report.errors = dict(sorted(self._errors.items()))
                self._hit_rates()
            self.done.set()
            if self.on_done is not None:
                self.on_done(self.report)

    def _since(self) -> float:
        return self.clock() - self.report.t_s

    def _watch(self) -> None:
        rep = self.report
        gap = False
        while not self._halt.is_set() and self._since() < self.wait_s:
            states = ha.master_states(self.masters, timeout_s=0.3)
            serving = next((s for s in states if s.serving), None)
            if rep.leader_s is None and any(s.up and s.role == "leader" and s.name != rep.old_leader for s in states):
                rep.leader_s = round(self._since(), 3)
                who = next(s.name for s in states if s.up and s.role == "leader" and s.name != rep.old_leader)
                self.log("outage", f"failover {rep.n}: {who} is the leader after {rep.leader_s:.1f} s (warming up)")
            if serving is not None and gap and serving.name == rep.old_leader and rep.leader_s is not None:
                serving = None  # (a hung leader, continued, serves a moment before it sees its lease is gone)
            if serving is None:
                gap = True
            elif gap or rep.old_leader is None:
                rep.serving_s, rep.new_leader = round(self._since(), 3), serving.name
                self._check(serving.url)
                self.log("outage", f"failover {rep.n}: {serving.name} serves after {rep.serving_s:.1f} s; "
                                   f"acknowledged pages lost: {self._lost_text()}")
                break
            elif self._cleared_at is not None and self.clock() - self._cleared_at >= NO_FAILOVER_S:
                rep.new_leader = serving.name
                self._check(serving.url)
                self.log("info", f"failover {rep.n}: {serving.name} served throughout (no failover); "
                                 f"acknowledged pages lost: {self._lost_text()}")
                break
            self._halt.wait(POLL_S)
        else:
            return
        if self.on_serving is not None and rep.new_leader:
            self.on_serving(rep.new_leader)
        self.serving.set()
        while not self._halt.is_set() and self._since() < self.wait_s:  # kvtui's workers, again at work
            with self._lock:
                quiet = self._first_error is None and self.clock() - rep.t_s > (rep.serving_s or 0) + 5.0
                if quiet or (rep.reload_s is not None and rep.publish_s is not None):
                    break
            self._halt.wait(POLL_S)
        if rep.publish_s is not None:  # the hit rate after: the requests of the next AFTER_S
            self._halt.wait(max(0.0, rep.t_s + rep.publish_s + AFTER_S - self.clock()))
        with self._lock:
            self._hit_rates()
        self.log("error" if rep.pages_lost else "info", self._end_text())

    def _end_text(self) -> str:
        """The event log's line at the end: short enough to read there (the whole report: ``lines()``)."""
        rep = self.report

        def s(v: float | None) -> str:
            return "—" if v is None else f"{v:.1f} s"

        if rep.pages_lost is None:
            lost = "acknowledged pages unchecked"
        elif rep.pages_lost:
            lost = (f"{rep.pages_lost:,} of {rep.pages_checked:,} acknowledged pages lost"
                    + (f", {rep.lost_in_window:,} in the leader-kill window" if rep.lost_in_window else ""))
        else:
            lost = f"none of {rep.pages_checked:,} acknowledged pages lost"
        return (f"failover {rep.n} ({rep.kind}): serving {s(rep.serving_s)}, reload {s(rep.reload_s)}; {lost} · "
                "F: report")

    def _hit_rates(self) -> None:
        """The report's ``hit_rate_during`` and ``hit_rate_after`` from the pages counted so far (hold the lock)."""
        for span, (hit, total) in self._pages.items():
            setattr(self.report, f"hit_rate_{span}", round(hit / total, 4) if total else None)


    def _lost_text(self) -> str:
        rep = self.report
        if rep.pages_lost is None:
            return "not checked (the serving master did not list its keys)"
        return rep.lost_text()

    def _check(self, url: str) -> None:
        """Count kvtui's acknowledged pages that the master at ``url`` no longer lists, once it has as many bytes
        of segments mounted as the leader had before the fault (or ``REMOUNT_WAIT_S`` passed): until a segment
        is mounted again, a new leader lists none of the keys it holds, although its OpLog kept them. Then put
        each lost page down to its cause (:meth:`_read_logs`)."""
        rep = self.report
        deadline = self.clock() + REMOUNT_WAIT_S
        while not self._halt.is_set() and self.clock() < deadline and \
                (ha.capacity_bytes(url, timeout_s=0.5) or 0) < max(1, self._capacity):
            self._halt.wait(POLL_S)
        t_check = self.clock()
        after = ha.stored_keys(url)
        while after is None and not self._halt.is_set() and self.clock() < deadline:  # (it stepped down)
            self._halt.wait(POLL_S)
            now_serving = next((s for s in ha.master_states(self.masters, timeout_s=0.3) if s.serving), None)
            if now_serving is not None:
                self.report.new_leader = now_serving.name
                after = ha.stored_keys(now_serving.url)
        named = self._read_logs()
        ledger = self.ledger
        if after is None or ledger is None:
            return
        before = self._before
        acked = ledger.snapshot()
        expected = [k for k, t in acked.items()
                    if t < t_check and ((before is not None and k in before) or t >= self._t_pre or before is None)]
        lost = [k for k in expected if k not in after]
        rep.pages_checked, rep.pages_lost, rep.lost_sample = len(expected), len(lost), lost[:5]
        if lost:
            found = ha.keys_found(url, rep.lost_sample)
            rep.lost_confirmed = None if found is None else sum(not ok for ok in found.values())
            times = [acked[k] - rep.t_s for k in lost]
            rep.lost_acked_s = [round(min(times), 3), round(max(times), 3)]
            causes: Counter = Counter()
            restore = RESTORE + rep.restore_error if rep.restore_error else None
            for k in lost:
                causes[named.get(k) or restore or UNTRACED] += 1
            rep.lost_by_cause = dict(causes.most_common())
            if rep.window_s is not None:
                a, b = rep.window_s
                rep.lost_in_window = sum(1 for t in times if a <= t <= b)
        if rep.window_s is not None and rep.lost_in_window is None:
            rep.lost_in_window = 0
        now = self._evictions()
        if now:
            rep.evicted = sum(max(0, n - self._evicted_before.get(name, 0)) for name, n in now.items())

    def _read_logs(self) -> dict[str, str]:
        """Read every master's log since the last report (an embedded cluster's; an attached one's are not
        kvtui's to read): the report's ``log_errors``, ``oplog_failed``, ``roles_logged``, the new leader's
        ``restore_failed`` / ``restore_error``, and ``etcd_silent_s`` since the last report. Returns the keys
        that a line with a code named, with that code's name (the first such line per key)."""
        rep, history = self.report, self.history
        since_mono = history.since if history.since is not None else self._mono(rep.t_s) - 3600.0
        if history.etcd_silent_s is not None:
            rep.etcd_silent_s = history.etcd_silent_s(since_mono)
        history.since = time.monotonic()
        if not self._log_dir:
            return {}
        wall = time.time() - self.clock()  # epoch seconds of engine time 0
        named: dict[str, str] = {}
        errors: dict[tuple[str, int], dict] = {}
        roles, oplog, restore, stepped = [], 0, None, False
        for name, _url in self.masters:
            entries, history.log_marks[name] = masterlog.read_entries(self._log_dir, name,
                                                                       history.log_marks.get(name, 0))
            for e in entries:
                t = round(e.t - wall - rep.t_s, 3)
                if e.code is None:
                    old = name == rep.old_leader and t >= 0 and not stepped  # (its first change after the fault)
                    if t >= ROLES_FROM_S and (e.state in LEADER_STATES or old):
                        roles.append([t, name, e.state])
                        stepped = stepped or old
                    continue
                got = errors.setdefault((name, e.code), {"master": name, "code": e.code, "name": e.name, "lines": 0,
                                                         "first_s": t, "last_s": t, "what": e.what})
                got["lines"] += 1
                got["last_s"] = t
                if e.key is not None:
                    named.setdefault(e.key, e.name)
                oplog += masterlog.OPLOG_FAILED in e.text
                if name == rep.new_leader and masterlog.RESTORE_FAILED in e.text and t >= ROLES_FROM_S:
                    restore = e.name
        rep.log_errors = sorted(errors.values(), key=lambda d: d["first_s"])
        rep.roles_logged = sorted(roles)
        rep.oplog_failed = oplog
        rep.restore_failed, rep.restore_error = restore is not None, restore
        return named
