"""Injecting the faults of a soak's schedule (:mod:`kvtui.soak.schedule`) into a live session, and timing
each one's recovery.

Each fault is injected, then *cleared* (the supervisor's part: the killed process restarted, SIGCONT sent,
the filler removed, the worker chain rebuilt), and it counts as *recovered* once requests flow again:
requests that started after it was cleared finish without a store error and without a mismatch, at least
``STABLE_N`` of them in a row over at least ``STABLE_S`` seconds (one healthy request is not enough: after
a master restart a client that has not noticed it yet fails its next calls with RPC_FAIL). Its recovery
time runs from the injection to the end of the first request of that healthy run (``recovery_s``), so it
includes the outage the fault caused; ``cleared_s`` says how much of it was the restart. A fault is injected only once
the previous one recovered (or ``recovery_timeout_s`` passed): a fault that would start after the end of
the soak's span is skipped and counted. While a fault is open, :class:`RecoveryTracker` counts the requests
lost (the engine's worker replacements), the requests that finished with a store error (by code) and the
mismatches (wrong bytes: every loaded page is verified, these must stay 0).

The store faults (``store-kill``, ``disk-full``: :data:`kvtui.core.storeloss.LOSS_CHECKED`) also check kvtui's
acknowledged pages (the engine's ledger): the master lists them just before the injection and again after the
fault recovered (a store-kill's check waits, besides, until the killed node's client TTL and
``LOSS_CHECK_MARGIN_S`` passed since the kill, when the master drops the dead client's keys: that wait is not
part of its recovery time; and it looks once more just before the TTL runs out, to tell the pages the disk tier
evicted meanwhile from those dropped with the client); :func:`kvtui.core.storeloss.classify` says which are gone
and why. Between faults
the ledger forgets, every ``PRUNE_S``, the pages the master no longer lists (evicted long since), so that it
stays near the store's own key count however long the soak runs.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Callable

from kvtui.core.codes import code_name
from kvtui.core.storeloss import LOSS_CHECKED, PREDROP_S, KeyCensus, StoreLossReport, classify, unchecked
from kvtui.core.text import plural
from kvtui.core.topology import role_of
from kvtui.soak.schedule import (
    DISK_FULL,
    ETCD_OUTAGE,
    LEADER_HANG,
    LEADER_KILL,
    LINK_CUT,
    MASTER_KILL,
    MASTER_PAUSE,
    STORE_FULL,
    STORE_KILL,
    WORKER_KILL,
    Fault,
)

if TYPE_CHECKING:
    from kvtui.core.cluster_api import ClusterOps, FailoverWatcher
    from kvtui.live import LiveSession

HA_KINDS = (LEADER_KILL, LEADER_HANG, ETCD_OUTAGE)  # faults of kvtui's HA cluster: each measured as a failover
NEXT_AFTER_S = 1.0  # after a recovery, the next fault waits at least this long
FULL_HOLD_S = 1.0  # the filler keeps the store full this long before removing its objects
FILLER_OBJECT_MAX = 4 << 20  # bytes of the first filler objects (at most; 1/64 of a smaller segment, at least
# 64 KiB); the smallest are 1/16 of that, or a KV page if larger
WAIT_CLEAR_S = 60.0  # a worker replacement, a restart or a filler that takes longer than this failed
STABLE_N, STABLE_S = 3, 2.0  # recovered: this many healthy requests in a row, spanning this many seconds
DISK_FILL_S = 60.0  # disk-full: the filler stops filling after this long, at its cap or not (filling a tier takes
# about 20 s per DRAM's size of disk: kvtui.mooncake.filler)
LOSS_CHECK_MARGIN_S = 3.0  # a store-kill's loss check runs this long after the killed node's client TTL passed
# (measured with a 10 s TTL: the master dropped the dead client's keys 10-11.6 s after the kill)
PRUNE_S = 60.0  # between faults, the ledger forgets the pages the master no longer lists this often


@dataclass
class FaultRecord:
    """What happened to one scheduled fault. Times are seconds on the engine's clock (the workload's start).

    ``t_s``: injected (None: skipped, see ``error``); ``delayed_s``: after its scheduled ``scheduled_s``
    (the previous fault was still open); ``cleared_s``: the fault was over; ``recovered_s``: the first
    request of the healthy run after ``cleared_s`` finished (None: not within the timeout, or the soak
    ended first);
    ``lost``: requests lost with a dead worker; ``failed``: requests that finished with a store error
    between injection and recovery, ``errors`` their codes by name; ``mismatches``: pages whose bytes did
    not verify meanwhile; ``detail``: what was done (pids, the filler's report); ``cut_short``: the soak
    ended (or was interrupted) while it was open (with ``recovered_s`` set: its healthy run had begun, but was
    shorter than a full one when the soak ended); ``failover``: for the HA kinds, what the failover cost
    (:class:`kvtui.core.failover.FailoverReport` as a dict); ``loss_check``: for the store faults, what became
    of kvtui's acknowledged pages (:class:`kvtui.core.storeloss.StoreLossReport` as a dict)."""

    n: int
    kind: str
    target: str
    scheduled_s: float
    t_s: float | None = None
    delayed_s: float = 0.0
    cleared_s: float | None = None
    recovered_s: float | None = None
    lost: int = 0
    failed: int = 0
    mismatches: int = 0
    errors: dict = field(default_factory=dict)
    detail: dict = field(default_factory=dict)
    error: str | None = None
    cut_short: bool = False
    failover: dict | None = None  # an HA fault: its failover report (kvtui.core.failover.FailoverReport.as_dict)
    loss_check: dict | None = None  # a store fault: its loss check (kvtui.core.storeloss.StoreLossReport.as_dict)

    @property
    def recovery_s(self) -> float | None:
        """Seconds from the injection to the end of the first healthy request after it was cleared."""
        return None if self.recovered_s is None or self.t_s is None else self.recovered_s - self.t_s

    def as_dict(self) -> dict:
        """JSON-ready form, with ``recovery_s`` and ``clear_s`` (injection → cleared)."""
        d = asdict(self)
        d["recovery_s"] = self.recovery_s
        d["clear_s"] = None if self.cleared_s is None or self.t_s is None else self.cleared_s - self.t_s
        return d


class RecoveryTracker:
    """Fed every :class:`~kvtui.core.events.RequestResult` (``add``, from the engine's collector thread);
    closes the open fault once a healthy run of requests started after it was cleared (see the module)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.open: FaultRecord | None = None
        self.recovered = threading.Event()
        self._errors: Counter = Counter()
        self.completed = 0  # every request seen, and those that finished with a store error
        self.with_errors = 0
        self._run: tuple[float, float, int] | None = None  # healthy run: (first start, first end, requests)

    def begin(self, rec: FaultRecord) -> None:
        """Count results for ``rec`` from now on (before it is injected)."""
        with self._lock:
            self.open, self._errors, self._run = rec, Counter(), None
            self.recovered.clear()

    def cleared(self, rec: FaultRecord, t: float) -> None:
        """``rec`` is over at engine time ``t``: the next healthy request starting after it recovers it."""
        with self._lock:
            rec.cleared_s = t

    def end(self, soak_ended: bool = False) -> None:
        """Stop counting for the open fault (recovered, timed out or, ``soak_ended``, the soak ended: a healthy
        run already under way then recovers it, marked ``cut_short``, although it is shorter than a full one)."""
        with self._lock:
            rec = self.open
            if rec is not None:
                rec.errors = dict(sorted(self._errors.items()))
                if soak_ended and self._run is not None and rec.recovered_s is None:
                    rec.recovered_s, rec.cut_short = self._run[1], True
            self.open = None

    def add(self, r) -> None:
        """One finished request."""
        with self._lock:
            self.completed += 1
            self.with_errors += bool(r.codes)
            rec = self.open
            if rec is None or rec.t_s is None or r.t_end < rec.t_s:
                return
            if r.codes:
                rec.failed += 1
                for code, n in r.codes.items():
                    self._errors[code_name(code)] += n
            rec.mismatches += r.mismatches
            if rec.cleared_s is None or r.t_start < rec.cleared_s:
                return
            if r.codes or r.mismatches:
                self._run = None
                return
            first_start, first_end, n = self._run or (r.t_start, r.t_end, 0)
            self._run = (first_start, first_end, n + 1)
            if n + 1 >= STABLE_N and r.t_end - first_start >= STABLE_S:
                rec.recovered_s = first_end
                rec.errors = dict(sorted(self._errors.items()))
                self.open = None
                self.recovered.set()


def why_unavailable(kind: str, *, embedded: bool, store_node: bool, hosts: bool = False,
                    ha: bool = False, disk: bool = False) -> str | None:
    """Why ``kind`` cannot be injected (None: it can) into an embedded cluster or an attached one, with or
    without a store node, with or without emulated hosts (``--hosts auto``), an HA cluster (``--ha N``) or not,
    a disk tier (``--disk-size``) or not."""
    if kind not in INJECT:
        return f"{kind} cannot be injected"
    if kind == DISK_FULL and not (disk and embedded):
        return "disk-full needs the embedded store with a disk tier (--disk-size)"
    if kind in (MASTER_KILL, MASTER_PAUSE) and ha:
        return f"{kind} stops the one master of a cluster; with --ha use {LEADER_KILL} or {LEADER_HANG}"
    if kind in HA_KINDS and not (ha and embedded):
        return f"{kind} needs kvtui's own HA cluster (--ha N)"
    if kind == LINK_CUT and not hosts:
        return "link-cut needs emulated hosts (--hosts auto)"
    if kind in (MASTER_KILL, MASTER_PAUSE, STORE_FULL) and not embedded:
        return f"{kind} needs the embedded cluster (kvtui does not kill, pause or fill a store it attached to)"
    if kind == STORE_KILL and not store_node:
        return "store-kill needs the embedded store node (--segment-on store, no --master)"
    return None


def unavailable(kind: str, cluster: ClusterOps) -> str | None:
    """:func:`why_unavailable` for a started ``cluster``."""
    return why_unavailable(kind, embedded=cluster.embedded, store_node=cluster.process("store") is not None,
                           hosts=cluster.links is not None,
                           ha=cluster.embedded and len(cluster.master_names()) > 1,
                           disk=cluster.embedded and "disk" in cluster.endpoints.tiers)


class Injector(threading.Thread):
    """Injects ``faults`` (sorted by time) into ``session`` (a :class:`kvtui.live.LiveSession` whose engine
    replaces dead workers), one at a time, each after the previous recovered. ``end_s``: no fault starts
    after this engine time; ``recovery_timeout_s``: how long a fault may stay open; ``pause_s``: how long a
    paused master stays stopped; ``note_pid(name, pid)``: every process a fault starts (orphan checks);
    ``say(line)``: one line per injection and recovery (also logged as events of the session).
    :attr:`records` holds a :class:`FaultRecord` per fault, in order, injected or skipped. With store faults
    scheduled, the engine's ledger (``engine.published``) is what their loss checks check, and what this thread
    prunes between faults."""

    def __init__(self, session: LiveSession, faults: tuple[Fault, ...], tracker: RecoveryTracker, *, end_s: float,
                 recovery_timeout_s: float, pause_s: float, note_pid: Callable[[str, int], None],
                 say: Callable[[str], None]):
        super().__init__(name="kvtui-chaos", daemon=True)
        self.session, self.engine = session, session.engine
        self.faults, self.tracker = faults, tracker
        self.end_s, self.timeout_s, self.pause_s = end_s, recovery_timeout_s, pause_s
        self.note_pid, self.say = note_pid, say
        self.records: list[FaultRecord] = []
        self._halt = threading.Event()
        self.error: BaseException | None = None
        self._fill = 0
        self._watch: FailoverWatcher | None = None  # the failover watch of the HA fault under way
        self._prunes = any(f.kind in LOSS_CHECKED for f in faults)  # (the ledger is kept for the store faults)
        self._pruned_at = 0.0  # engine time of the last prune
        self._predrop: KeyCensus | None = None  # the store-kill under way: its look just before the client TTL's end

    def stop(self) -> None:
        """Inject nothing more; the fault under way is cleared (a paused master continued, the filler's
        objects removed), its recovery is not waited for."""
        self._halt.set()

    @property
    def open(self) -> bool:
        """True while an injected fault has not recovered."""
        return self.tracker.open is not None

    def _log(self, kind: str, text: str) -> None:
        self.session.log(kind, text)
        self.say(text)

    def run(self) -> None:
        try:
            ready_at = 0.0
            for fault in self.faults:
                rec = FaultRecord(fault.n, fault.kind, fault.target, fault.t_s)
                self.records.append(rec)
                at = max(fault.t_s, ready_at)
                while not self._halt.is_set() and self.engine.now() < at:
                    self._halt.wait(min(0.2, max(0.0, at - self.engine.now())))
                    if self._prunes and self.engine.now() - self._pruned_at >= PRUNE_S:
                        self._look()
                if self._halt.is_set() or self.engine.now() > self.end_s:
                    rec.error = "skipped: the soak ended before its turn"
                    continue
                self._one(rec)
                ready_at = self.engine.now() + NEXT_AFTER_S
        except BaseException as exc:  # a fault that cannot be injected or cleared ends the chaos, not the soak
            self.error = exc
            self._log("error", f"chaos: stopped injecting: {type(exc).__name__}: {exc}")
        finally:
            self.tracker.end()

    def _one(self, rec: FaultRecord) -> None:
        n_all = len(self.faults)
        self.tracker.begin(rec)
        before = self._look() if rec.kind in LOSS_CHECKED else None  # (before the fault: not its recovery)
        rec.t_s = self.engine.now()
        rec.delayed_s = max(0.0, rec.t_s - rec.scheduled_s)
        replacements = len(self.engine.replacements)
        self._log("outage", f"chaos: fault {rec.n}/{n_all} {rec.kind} ({rec.target}) injected")
        self._watch = None
        try:
            rec.detail = INJECT[rec.kind](self, rec)
        except Exception as exc:
            rec.error = f"{type(exc).__name__}: {exc}"
        self.tracker.cleared(rec, self.engine.now())
        self.session.follow_processes()
        deadline = rec.t_s + self.timeout_s
        self._predrop = None
        while not self._halt.is_set() and not self.tracker.recovered.is_set() and self.engine.now() < deadline:
            self.tracker.recovered.wait(0.1)
            self._look_predrop(rec, before)
        self.tracker.end(soak_ended=self._halt.is_set())
        watch, self._watch = self._watch, None
        if watch is not None:  # (its report ends with kvtui's first reload and publish: about the recovery)
            while not self._halt.is_set() and not watch.done.is_set() and self.engine.now() < deadline:
                watch.done.wait(0.1)
            if not watch.done.is_set():
                watch.stop()
                watch.done.wait(5)
            rec.failover = watch.report.as_dict()
            for i, line in enumerate(watch.report.lines()):
                self.say(f"chaos: {line}" if i == 0 else f"       {line}")
        rec.cut_short = rec.cut_short or (rec.recovered_s is None and self._halt.is_set())
        rec.lost = sum(r.lost for r in self.engine.replacements[replacements:])
        self._recovered_line(rec)
        if rec.kind in LOSS_CHECKED:
            assert before is not None  # (looked before every store fault)
            report = self._loss_check(rec, before)
            rec.loss_check = report.as_dict()
            self._log("error" if report.pages_lost else "info", f"chaos: fault {rec.n} {rec.kind}: {report.text()}")

    def _recovered_line(self, rec: FaultRecord) -> None:
        """The fault's line once it recovered, or not."""
        if rec.recovery_s is not None:
            assert rec.cleared_s is not None and rec.t_s is not None and rec.recovered_s is not None  # (recovered)
            short = (f"; the soak ended {self.engine.now() - rec.recovered_s:.1f} s later, before {STABLE_N} healthy "
                     f"requests over {STABLE_S:g} s" if rec.cut_short else "")
            self._log("info", f"chaos: fault {rec.n} {rec.kind} recovered in {rec.recovery_s:.1f} s (cleared "
                              f"after {rec.cleared_s - rec.t_s:.1f} s; {plural(rec.lost, 'request')} lost, "
                              f"{rec.failed} with store errors, {plural(rec.mismatches, 'mismatch', 'mismatches')}"
                              f"{short})")
        else:
            why = rec.error or ("the soak ended first" if self._halt.is_set() else
                                f"no healthy request within {self.timeout_s:g} s")
            self._log("error", f"chaos: fault {rec.n} {rec.kind} NOT recovered ({why})")

    # -- the store faults' loss check ---------------------------------------------------------------------
    def _look(self) -> _Look | str:
        """Where the master lists every page in the engine's ledger now; the ledger then forgets those it does not
        list (unless acknowledged again meanwhile). The look, or why there is none."""
        self._pruned_at = self.engine.now()
        ledger = self.engine.published
        if ledger is None:
            return "the engine keeps no ledger of acknowledged pages"
        acked = ledger.snapshot()
        t = self.engine.now()
        census = self.session.cluster.census(list(acked))
        if census is None:
            return "the master did not list the pages"
        ledger.forget([k for k, r in census.replicas.items() if r == (0, 0)], t)
        return _Look(acked, census)

    def _loss_check(self, rec: FaultRecord, before: _Look | str) -> StoreLossReport:
        """What became of the pages ``before`` listed, once the fault recovered (a store-kill: and once the killed
        node's client TTL and ``LOSS_CHECK_MARGIN_S`` passed since the kill); unchecked when the soak ends first
        or the master does not answer."""
        assert rec.t_s is not None
        t_s = rec.t_s
        if isinstance(before, str):
            return unchecked(rec.n, rec.kind, t_s, before)
        if rec.kind == STORE_KILL:
            ttl = self.session.cluster.settings.client_ttl_s
            due = t_s + ttl + LOSS_CHECK_MARGIN_S
            while not self._halt.is_set() and self.engine.now() < due:
                self._halt.wait(min(0.1, max(0.0, due - self.engine.now())))
                self._look_predrop(rec, before)
            if self._halt.is_set():
                return unchecked(rec.n, rec.kind, t_s, f"the soak ended {self.engine.now() - t_s:.1f} s after the "
                                 f"kill, before the killed node's client TTL ({ttl} s) and {LOSS_CHECK_MARGIN_S:g} s "
                                 "had passed")
        elif self._halt.is_set():
            return unchecked(rec.n, rec.kind, t_s, "the soak ended first")
        ledger = self.engine.published
        assert ledger is not None  # (a look found it)
        keys = list(before.census.replicas)
        after = self.session.cluster.census(keys)
        acked = ledger.snapshot()
        if after is None:
            return unchecked(rec.n, rec.kind, t_s, "the master did not list the pages after the fault")
        again = [k for k in keys if acked.get(k, before.acked[k]) != before.acked[k]]  # (acknowledged anew)
        self._pruned_at = self.engine.now()
        return classify(rec.n, rec.kind, t_s, before.census, after, again,
                        checked_s=round(self.engine.now() - t_s, 3), predrop=self._predrop)

    def _look_predrop(self, rec: FaultRecord, before: _Look | str | None) -> None:
        """A store-kill: once, between ``PREDROP_S`` before the killed node's client TTL runs out and its end, where
        the master lists the pages looked at before the fault (every page of the dead node is still listed then:
        one gone was evicted)."""
        if rec.kind != STORE_KILL or rec.t_s is None or not isinstance(before, _Look) or self._predrop is not None:
            return
        ttl = self.session.cluster.settings.client_ttl_s
        since = self.engine.now() - rec.t_s
        if ttl - PREDROP_S <= since < ttl:
            self._predrop = self.session.cluster.census(list(before.census.replicas))

    # -- the faults ----------------------------------------------------------------------------------------
    def _cluster(self) -> ClusterOps:
        """The cluster kvtui started (a fault that needs one is injected only where :func:`unavailable` found it)."""
        cluster = self.session.cluster
        if not cluster.embedded:
            raise RuntimeError("kvtui started no cluster here (attached)")
        return cluster

    def master_kill(self, rec: FaultRecord) -> dict:
        """SIGKILL the master, wait until it is gone, start it again on the same ports (no keys)."""
        cluster = self._cluster()
        old = cluster.signal("master", signal.SIGKILL)
        self.session.restart_master()  # (LiveSession logs it and shows the new pid)
        new = cluster.process("master")
        if new is None:
            raise RuntimeError("the master did not start again")
        self.note_pid("master", new.pid)
        return {"killed_pid": old, "new_pid": new.pid}

    def master_pause(self, rec: FaultRecord) -> dict:
        """SIGSTOP the master for ``pause_s`` (a hung peer: connections stay open, nothing answers), then
        SIGCONT (always, and at once when the soak is stopped meanwhile)."""
        cluster = self._cluster()
        pid = cluster.signal("master", signal.SIGSTOP)
        try:
            held = self._hold()
        finally:
            cluster.signal("master", signal.SIGCONT)
        return {"pid": pid, "paused_s": round(held, 3)}

    def _hold(self) -> float:
        """Wait ``pause_s``, or less when the soak is stopped meanwhile (Ctrl-C clears the fault at once);
        returns the seconds waited."""
        start = time.monotonic()
        self._halt.wait(self.pause_s)
        return time.monotonic() - start

    def leader_kill(self, rec: FaultRecord) -> dict:
        """SIGKILL the serving master of kvtui's HA cluster (:meth:`kvtui.live.LiveSession.kill_leader`);
        cleared once another master serves and the killed one runs again, as a standby."""
        self._watch = watch = self.session.kill_leader()
        name = watch.report.old_leader
        if not watch.serving.wait(WAIT_CLEAR_S) and not self._halt.is_set():
            raise RuntimeError(f"no master served within {WAIT_CLEAR_S:g} s of the leader's death")
        proc = self._cluster().process(name) if name else None
        if proc is not None and proc.alive():
            self.note_pid(proc.name, proc.pid)
        return {"killed": name, "new_leader": watch.report.new_leader, "restarted_pid": proc.pid if proc else None}

    def leader_hang(self, rec: FaultRecord) -> dict:
        """SIGSTOP the serving master for ``pause_s`` (a hung leader: its connections stay open, nothing
        answers), then SIGCONT (always, and at once when the soak is stopped meanwhile). Longer than the
        masters' etcd lease (~5 s), a standby takes over and the continued master steps down."""
        cluster = self._cluster()
        name = cluster.leader()
        if name is None:
            raise RuntimeError("no master serves (a failover is under way)")
        self._watch = watch = self.session.watch_failover(LEADER_HANG)
        pid = cluster.signal(name, signal.SIGSTOP)
        self._log("outage", f"chaos: leader {name} (pid {pid}) stopped for {self.pause_s:g} s")
        try:
            held = self._hold()
        finally:
            cluster.signal(name, signal.SIGCONT)
            watch.cleared()
        return {"leader": name, "pid": pid, "paused_s": round(held, 3)}

    def etcd_outage(self, rec: FaultRecord) -> dict:
        """SIGSTOP kvtui's etcd for ``pause_s`` (the masters cannot renew the leader's lease nor write their
        OpLog; clients cannot look the leader up), then SIGCONT (always, and at once when the soak is stopped
        meanwhile)."""
        cluster = self._cluster()
        proc = cluster.process("etcd")
        if proc is None or not proc.alive():
            raise RuntimeError("etcd is not running")
        self._watch = watch = self.session.watch_failover(ETCD_OUTAGE)
        cluster.signal("etcd", signal.SIGSTOP)
        self._log("outage", f"chaos: etcd (pid {proc.pid}) stopped for {self.pause_s:g} s")
        try:
            held = self._hold()
        finally:
            cluster.signal("etcd", signal.SIGCONT)
            watch.cleared()
        return {"pid": proc.pid, "stopped_s": round(held, 3)}

    def store_kill(self, rec: FaultRecord) -> dict:
        """SIGKILL the store node, start a new one with a segment of the same size (and, with dummy workers,
        wait for the engine's new workers)."""
        cluster = self._cluster()
        old = cluster.signal("store", signal.SIGKILL)
        before = len(self.engine.replacements)
        self.session.restart_store()
        new = cluster.process("store")
        if new is None:
            raise RuntimeError("the store node did not start again")
        self.note_pid("store", new.pid)
        out = {"killed_pid": old, "new_pid": new.pid}
        if cluster.endpoints.real_client:  # dummy workers do not come back to a new real client: new ones
            done = self._replaced(before, "the dummy workers")
            for role, pid in done.pids.items():
                self.note_pid(role, pid)
            out["new_worker_pids"] = done.pids
        return out

    def _replaced(self, before: int, what: str):
        """The engine's rebuild after its ``before``-th one (``WorkerReplacement``), waited for up to
        ``WAIT_CLEAR_S``; ``RuntimeError`` naming ``what`` when it does not come."""
        deadline = time.monotonic() + WAIT_CLEAR_S
        while len(self.engine.replacements) <= before:
            if time.monotonic() > deadline:
                raise RuntimeError(f"the engine did not replace {what} within {WAIT_CLEAR_S:g} s")
            time.sleep(0.02)
        return self.engine.replacements[before]

    def worker_kill(self, rec: FaultRecord) -> dict:
        """SIGKILL the first local worker of role ``rec.target``; cleared when the engine has rebuilt the
        chain."""
        pid = next((pid for name, pid in self.engine.worker_pids().items() if role_of(name) == rec.target), None)
        if pid is None:
            raise RuntimeError(f"no {rec.target} worker")
        before = len(self.engine.replacements)
        os.kill(pid, signal.SIGKILL)
        done = self._replaced(before, f"the {rec.target} worker")
        for role, new_pid in done.pids.items():
            self.note_pid(role, new_pid)
        return {"killed_pid": pid, "new_pids": done.pids, "replace_s": round(done.took_s, 3)}

    def link_cut(self, rec: FaultRecord) -> dict:
        """Take the link of the store node's emulated host down (the decode worker's without a store node)
        for ``pause_s``, then up again (always, and at once when the soak is stopped meanwhile): packets are dropped
        meanwhile, TCP connections stay open and retransmit (:mod:`kvtui.mooncake.hosts`)."""
        hosts = self._cluster().links
        if hosts is None:
            raise RuntimeError("kvtui runs no emulated hosts here")
        name = "store" if "store" in hosts.hosts else "decode"
        host = hosts.hosts[name]
        hosts.cut(name)
        try:
            self._log("outage", f"chaos: the link of host {name} ({host.address}) is down for {self.pause_s:g} s")
            held = self._hold()
        finally:
            hosts.restore(name)
        return {"host": name, "veth": host.veth, "address": host.address, "cut_s": round(held, 3)}

    def store_full(self, rec: FaultRecord) -> dict:
        """A separate client (:mod:`kvtui.mooncake.filler`) fills the store until a put is refused, holds it
        ``FULL_HOLD_S``, then removes its objects; cleared when it has exited."""
        segment = self.engine.options.store_bytes
        obj = max(64 << 10, min(FILLER_OBJECT_MAX, segment // 64))
        smallest = max(self.engine.options.layout.page_bytes, obj // 16)
        return self._cluster().fill_store(object_bytes=obj, min_object_bytes=smallest, max_bytes=2 * segment,
                                          hold_s=FULL_HOLD_S, timeout_s=WAIT_CLEAR_S,
                                          on_start=lambda pid: self.note_pid("filler", pid))


    def disk_full(self, rec: FaultRecord) -> dict:
        """A separate client (:mod:`kvtui.mooncake.filler`) fills DRAM and, through it, the disk tier, retrying
        the puts DRAM refuses while it waits for an offload, until both tiers are full (DRAM refused a put and the
        tier evicted: at its cap), DRAM + disk were written or ``DISK_FILL_S`` passed; holds it ``FULL_HOLD_S``,
        then removes its objects (at once when the soak is stopped meanwhile); cleared when it has exited."""
        cluster = self._cluster()
        disk = cluster.settings.disk_bytes
        if not disk:
            raise RuntimeError("the store has no disk tier")
        segment = self.engine.options.store_bytes
        obj = max(64 << 10, min(FILLER_OBJECT_MAX, segment // 64))  # (the backend keeps it within a disk bucket)
        return cluster.fill_store(object_bytes=obj, min_object_bytes=obj, max_bytes=segment + disk,
                                  hold_s=FULL_HOLD_S, timeout_s=DISK_FILL_S + WAIT_CLEAR_S,
                                  on_start=lambda pid: self.note_pid("filler", pid), retry_refused_s=DISK_FILL_S,
                                  halt=self._halt)


@dataclass(frozen=True)
class _Look:
    """The ledger's pages with the engine time each was acknowledged (``acked``), and the master's census of
    them taken just after (``census``)."""

    acked: dict[str, float]
    census: KeyCensus


INJECT = {MASTER_KILL: Injector.master_kill, MASTER_PAUSE: Injector.master_pause, STORE_KILL: Injector.store_kill,
          WORKER_KILL: Injector.worker_kill, STORE_FULL: Injector.store_full, LINK_CUT: Injector.link_cut,
          LEADER_KILL: Injector.leader_kill, LEADER_HANG: Injector.leader_hang, ETCD_OUTAGE: Injector.etcd_outage,
          DISK_FULL: Injector.disk_full}
"""How each kind is injected and cleared (:func:`unavailable` says where a kind cannot be)."""
