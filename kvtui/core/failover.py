"""One failover of an HA cluster as kvtui measured it (:class:`FailoverReport`, filled by
``kvtui.mooncake.failover.FailoverWatch``), what the lost pages were lost to, and the frames' status keys that
summarise the failovers so far.

Lost pages are put down to causes from the masters' own lines, by Mooncake's ``ErrorCode`` names
(:data:`kvtui.core.codes.ERROR_CODES`): a line that names the key (``PutEnd: OpLog queue failed for key=K,
err=-1401``: TASK_PENDING_LIMIT_EXCEEDED), else the new leader's failed restore of its standby state (``Standby
restore failed: INVALID_PARAMS``: it serves with no objects), else none (:data:`UNTRACED`). Separately, a lost
page acknowledged within the *leader-kill window* (:data:`KILL_WINDOW_S` around a fault that stopped the leader
at once) is the store's known durability window: its OpLog is written by a batch thread, so a put acknowledged
in the leader's last milliseconds may never reach a standby.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from kvtui.core.storeloss import LOSS_CHECKED
from kvtui.core.text import plural

AFTER_S = 10.0
"""The hit rate "after" a failover: over the requests that finish this long after kvtui publishes again."""

KILL_WINDOW_S = (-0.05, 0.05)
"""The leader-kill window, seconds from the fault: a lost page acknowledged within it is put down to the store's
durability window when the leader is stopped at once (SIGKILL, SIGSTOP). Measured on 0.3.13.post1 (6 kills at 400
puts/s, no kvtui code): 0–13 puts lost, acknowledged 0.3–31 ms before the kill; through kvtui, pages acknowledged
27 ms before to 6 ms after the fault was issued (the acknowledgement reaches kvtui a little after the store sent it)."""

LEADER_KILL = "leader-kill"  # --ha: SIGKILL of the serving master; a standby takes over, the killed one rejoins
LEADER_HANG = "leader-hang"  # --ha: SIGSTOP of the serving master for --pause-s, then SIGCONT (a hung leader)
ETCD_OUTAGE = "etcd-outage"  # --ha: SIGSTOP of kvtui's etcd for --pause-s, then SIGCONT (the masters' lease holder)
EXTERNAL = "external"  # a leader change kvtui did not cause (the leader killed, hung or demoted for another reason)
STOPS_LEADER = (LEADER_KILL, LEADER_HANG, EXTERNAL)
"""The kinds of failover that stop the leader at once, whose reports have a leader-kill window."""

UNTRACED = "untraced"
"""The cause of a lost page that no master's log line accounts for: lost without a trace in the masters' logs."""
RESTORE = "restore "
"""The prefix of a cause that is the new leader's failed restore (``restore INVALID_PARAMS``)."""

CODE_MEANS = {
    "TASK_PENDING_LIMIT_EXCEEDED": "its OpLog queue was full: the put was acknowledged without an OpLog entry",
    "ETCD_TRANSACTION_FAIL": "its etcd transaction was refused",
    "ETCD_OPERATION_ERROR": "an etcd operation failed",
    "ETCD_CTX_CANCELLED": "an etcd call was cancelled",
    "ETCD_KEY_NOT_EXIST": "an etcd key it needed was missing",
    "OPLOG_ENTRY_NOT_FOUND": "an OpLog entry was missing",
    "INCOMPLETE_OPLOG_CATCH_UP": "a standby was promoted before it had applied the whole OpLog",
    "INVALID_PARAMS": "its parameters were refused",
}
"""What a Mooncake code in a master's line means for its keys (the codes seen in HA masters' logs)."""


@dataclass
class FailoverReport:
    """One failover. Times in seconds from the fault (``t_s``, engine time); None: it did not happen (see
    :mod:`kvtui.mooncake.failover`). ``kind``: the fault (``leader-kill``, ``leader-hang``, ``etcd-outage``,
    or :data:`EXTERNAL`: a leader change kvtui did not cause, whose ``t_s`` is when kvtui first saw it,
    ``detected_s`` after its last sight of the old leader serving and ``how``: what it saw).
    ``old_leader`` / ``new_leader``: master names; ``requests_failed``, ``pages_failed``, ``errors`` (store
    error codes by name: calls); ``pages_checked``: kvtui's acknowledged pages the check expected;
    ``pages_lost``: of them, those gone (None: no master answered the check); ``evicted``: keys the masters
    evicted meanwhile (0: ``pages_lost`` is exact; None: unknown); ``lost_sample``: up to 5 lost keys,
    ``lost_confirmed``: how many of those a second endpoint (``/batch_query_keys``) finds absent too;
    ``lost_acked_s``: when the lost pages were acknowledged, ``[earliest, latest]`` seconds from the fault;
    ``lost_by_cause``: the lost pages by cause (a code name of a line that named the key, ``restore CODE``,
    :data:`UNTRACED`); ``window_s``: the leader-kill window of this fault (None: its kind has none) and
    ``lost_in_window``: the lost pages acknowledged within it; ``restore_failed`` / ``restore_error``: the new
    leader logged that it could not restore the state it replicated as a standby, and with which code (None:
    no log to read, an attached cluster); ``oplog_failed``: the masters' ``OpLog queue failed`` lines since the
    previous failover; ``log_errors``: every code the masters logged since the previous failover, per master
    (``master``, ``code``, ``name``, ``lines``, ``first_s``, ``last_s``, ``what``: the first line, its key left
    out); ``roles_logged``: the masters' logged role changes from 1 s before the fault on (``[t_s, master,
    state]``: every master's ``leader_warmup`` and ``serving``, the old leader's first change after the fault);
    ``etcd_silent_s``: seconds etcd did not answer kvtui's polls since the previous failover (0: it answered
    every poll; None: not polled); ``hit_rate_before`` / ``hit_rate_during`` / ``hit_rate_after``: pages
    reloaded ÷ full pages of the requests that finished in the 30 s before the fault, between the fault and
    kvtui's first publish after it, and in the :data:`AFTER_S` after that publish (None: no request finished
    then)."""

    n: int
    kind: str
    t_s: float
    old_leader: str | None = None
    new_leader: str | None = None
    leader_s: float | None = None
    serving_s: float | None = None
    reload_s: float | None = None
    publish_s: float | None = None
    requests_failed: int = 0
    pages_failed: int = 0
    errors: dict[str, int] = field(default_factory=dict)
    pages_checked: int = 0
    pages_lost: int | None = None
    evicted: int | None = None
    lost_sample: list[str] = field(default_factory=list)  # up to 5 of the keys lost
    lost_confirmed: int | None = None  # of lost_sample, how many /batch_query_keys also finds absent
    lost_acked_s: list[float] | None = None  # [earliest, latest] acknowledgement of a lost page, seconds from the fault
    lost_by_cause: dict[str, int] = field(default_factory=dict)  # lost pages by cause (see the class)
    window_s: list[float] | None = None  # the leader-kill window, seconds from the fault (None: not this kind's)
    lost_in_window: int | None = None  # lost pages acknowledged within window_s
    restore_failed: bool | None = None  # the new leader logged RESTORE_FAILED (None: no log to read)
    restore_error: str | None = None  # … with this code
    oplog_failed: int | None = None  # the masters' "OpLog queue failed" lines since the previous failover
    log_errors: list[dict[str, Any]] = field(default_factory=list)  # codes the masters logged, per master
    roles_logged: list[list[Any]] = field(default_factory=list)  # [t_s, master, state] (see the class)
    etcd_silent_s: float | None = None  # etcd did not answer kvtui's polls this long since the previous failover
    detected_s: float | None = None  # EXTERNAL: seconds from kvtui's last sight of the old leader serving to t_s
    how: str = ""  # EXTERNAL: what kvtui saw
    hit_rate_before: float | None = None  # page hit rate of the requests of the 30 s before the fault
    hit_rate_during: float | None = None  # … of those finished between the fault and kvtui's first publish after it
    hit_rate_after: float | None = None  # … of those finished in the AFTER_S after that publish

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> FailoverReport:
        """The report of :meth:`as_dict` (keys it does not know are left out)."""
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in known})

    # -- the loss -------------------------------------------------------------------------------------------
    @property
    def lost_beyond_window(self) -> int:
        """Lost pages that the leader-kill window does not account for (all of them without a window)."""
        return max(0, (self.pages_lost or 0) - (self.lost_in_window or 0))

    def cause_texts(self) -> list[tuple[int, str]]:
        """``(pages, what took them)`` per cause of the loss, the largest first."""
        out = []
        for cause, n in sorted(self.lost_by_cause.items(), key=lambda kv: -kv[1]):
            out.append((n, self._cause_text(cause)))
        return out

    def _cause_text(self, cause: str) -> str:
        if cause == UNTRACED:
            return "lost without a trace in the masters' logs"
        if cause.startswith(RESTORE):
            code = cause[len(RESTORE):]
            return (f"{code}: {self.new_leader or 'the new leader'} could not restore its standby state ('Standby "
                    f"restore failed: {code}') and serves with no objects")
        logged = next((e for e in self.log_errors if e.get("name") == cause), None)
        value = f" ({logged['code']})" if logged else ""
        where = f" in {logged['master']}'s '{logged['what']}' lines" if logged else ""
        return f"{cause}{value}: named{where}; {CODE_MEANS.get(cause, 'see Mooncake’s error table')}"

    def _etcd_text(self) -> str:
        if self.etcd_silent_s is None:
            return ""
        if self.etcd_silent_s <= 0:
            return "etcd answered every poll"
        return f"etcd did not answer for {self.etcd_silent_s:.1f} s"

    def lost_text(self) -> str:
        """``4,926 of 12,630 (TASK_PENDING_LIMIT_EXCEEDED 3,901, untraced 1,025; 0 in the leader-kill window)``."""
        if self.pages_lost is None:
            return "unchecked"
        out = f"{self.pages_lost:,} of {self.pages_checked:,}"
        if self.pages_lost and self.lost_by_cause:
            out += " (" + ", ".join(f"{c} {n:,}" for c, n in sorted(self.lost_by_cause.items(),
                                                                      key=lambda kv: -kv[1]))
            if self.window_s is not None:
                out += f"; {self.lost_in_window or 0:,} in the leader-kill window"
            out += ")"
        if self.evicted:
            out += f" (the masters evicted {plural(self.evicted, 'key')} meanwhile: an upper bound)"
        return out

    # -- text -----------------------------------------------------------------------------------------------
    def line(self) -> str:
        """The report in one line (the event log, the soak's output)."""
        def s(v: float | None) -> str:
            return "—" if v is None else f"{v:.1f} s"

        codes = ", ".join(f"{k} {v}" for k, v in self.errors.items())
        etcd = self._etcd_text()
        return (f"failover {self.n} ({self.kind}): leader {s(self.leader_s)}, serving {s(self.serving_s)}, "
                f"reload {s(self.reload_s)}, publish {s(self.publish_s)}; "
                f"{plural(self.requests_failed, 'request')} failed"
                f"{f' ({codes})' if codes else ''}; acknowledged pages lost {self.lost_text()}"
                + (f"; {etcd}" if etcd and self.pages_lost else "") + self._hits_text("; "))

    def _hits_text(self, sep: str) -> str:
        def pct(v: float | None) -> str:
            return "—" if v is None else f"{v:.0%}"

        return (f"{sep}page hits {pct(self.hit_rate_before)} before, {pct(self.hit_rate_during)} during, "
                f"{pct(self.hit_rate_after)} after" if self.hit_rate_during is not None else "")

    def lines(self) -> list[str]:
        """The whole report, a line per fact (the failover screen, what ``watch`` and ``run`` print at the end)."""
        def s(v: float | None) -> str:
            return "—" if v is None else f"{v:.1f} s"

        who = f"{self.old_leader or '?'} → {self.new_leader or '?'}"
        out = [f"failover {self.n} ({self.kind}) at {self.t_s:.1f} s: {who}"]
        if self.kind == EXTERNAL:
            out.append(f"  not kvtui's: {self.how or 'the leader changed'}"
                       + (f" (within {self.detected_s:.1f} s of its last sight serving)"
                          if self.detected_s is not None else ""))
        out.append(f"  a standby leads after {s(self.leader_s)}, serves after {s(self.serving_s)}; kvtui reloads "
                   f"after {s(self.reload_s)}, publishes after {s(self.publish_s)}")
        codes = ", ".join(f"{k} {v}" for k, v in self.errors.items())
        out.append(f"  {plural(self.requests_failed, 'request')} failed{f' ({codes})' if codes else ''}"
                   + self._hits_text("; "))
        if self.pages_lost is None:
            out.append("  acknowledged pages lost: unchecked (no master listed its keys)")
        else:
            when = (f", acknowledged {self.lost_acked_s[0]:+.3f} s to {self.lost_acked_s[1]:+.3f} s from the fault"
                    if self.lost_acked_s else "")
            exact = (f"; the masters evicted {plural(self.evicted, 'key')} meanwhile: an upper bound" if self.evicted
                     else "; nothing evicted meanwhile: exact" if self.evicted == 0 else "")
            out.append(f"  acknowledged pages lost: {self.pages_lost:,} of {self.pages_checked:,}{when}{exact}")
            for n, text in self.cause_texts():
                out.append(f"    {n:>9,}  {text}")
            if self.window_s is not None:
                a, b = self.window_s
                out.append(f"    of them {self.lost_in_window or 0:,} acknowledged in the leader-kill window "
                           f"({a * 1000:+.0f} ms to {b * 1000:+.0f} ms: the store's durability window), "
                           f"{self.lost_beyond_window:,} beyond it")
        if self.log_errors:
            out.append("  the masters logged: " + "; ".join(
                f"{e['master']} {e['name']} ({e['code']}) ×{e['lines']:,} from {e['first_s']:+.1f} s"
                for e in self.log_errors))
        etcd = self._etcd_text()
        if etcd:
            out.append(f"  {etcd} (since the previous failover)")
        if self.roles_logged:
            out.append("  roles logged: " + ", ".join(f"{m} {st} {t:+.1f} s" for t, m, st in self.roles_logged))
        return out


def failover_status(reports: list[FailoverReport]) -> dict[str, Any]:
    """The frames' ``status`` keys of the failovers so far: ``failovers`` (count), ``failover_pages_lost``
    (acknowledged pages lost, all failovers) and ``failover_pages_lost_beyond`` (of them, beyond the leader-kill
    window), the last one's ``failover_leader_s``, ``failover_serving_s``, ``failover_reload_s``,
    ``failover_publish_s`` (absent when it did not happen) and ``failover_last`` (its :meth:`FailoverReport.line`)."""
    last = reports[-1]
    out: dict[str, Any] = {"failovers": len(reports), "failover_pages_lost": sum(r.pages_lost or 0 for r in reports),
                           "failover_pages_lost_beyond": sum(r.lost_beyond_window for r in reports),
                           "failover_last": last.line()}
    for key in ("leader_s", "serving_s", "reload_s", "publish_s"):
        value = getattr(last, key)
        if value is not None:
            out[f"failover_{key}"] = value
    return out


def loss_summary(reports: Sequence[Mapping[str, Any]], labels: Sequence[str] | None = None) -> dict[str, Any]:
    """The acknowledged pages lost over loss checks: failover reports (:meth:`FailoverReport.as_dict` each) and the
    soak's store faults' (:class:`kvtui.core.storeloss.StoreLossReport`, whose ``n``, ``kind``, ``pages_lost`` and
    ``lost_by_cause`` it reads). Gives ``pages_lost``, ``beyond_window``, ``in_window``, ``windowed`` (reports with
    a leader-kill window), ``unchecked`` (reports without a loss check, ``unchecked_labels`` theirs), ``by_cause``
    (all reports) and ``failovers``: one entry per report that lost pages (``label``: ``labels[i]``, else
    ``failover N``; ``kind``, ``lost``, ``beyond_window``, ``in_window``, ``by_cause``)."""
    out: dict[str, Any] = {"pages_lost": 0, "beyond_window": 0, "in_window": 0, "failover_checks": 0, "unchecked": 0,
                           "unchecked_labels": [], "by_cause": {}, "failovers": []}
    for i, d in enumerate(reports):
        r = FailoverReport.from_dict(d)
        label = labels[i] if labels else f"failover {r.n}"
        out["failover_checks"] += r.kind not in LOSS_CHECKED
        if r.pages_lost is None:
            out["unchecked"] += 1
            out["unchecked_labels"].append(f"{label} {r.kind}")
            continue
        out["pages_lost"] += r.pages_lost
        out["beyond_window"] += r.lost_beyond_window
        out["in_window"] += r.lost_in_window or 0
        for cause, n in r.lost_by_cause.items():
            out["by_cause"][cause] = out["by_cause"].get(cause, 0) + n
        if r.pages_lost:
            out["failovers"].append({"label": label, "kind": r.kind,
                                     "lost": r.pages_lost, "beyond_window": r.lost_beyond_window,
                                     "in_window": r.lost_in_window or 0, "by_cause": dict(r.lost_by_cause)})
    return out


def loss_text(loss: Mapping[str, Any]) -> str:
    """The loss of :func:`loss_summary` in one line: ``10,532 acknowledged pages lost: 10,500 beyond the
    leader-kill window, 32 within it; fault 1 etcd-outage 4,926 (TASK_PENDING_LIMIT_EXCEEDED 3,901, untraced
    1,025); fault 2 leader-kill 32, 32 in the window (untraced 32)`` (the window's part only with a failover's
    report); ``none`` when no page was lost; the checks that could not be made named last."""
    labels = loss.get("unchecked_labels") or []
    unchecked = f"unchecked: {', '.join(labels)}" if labels else (
        f"{plural(loss['unchecked'], 'failover')} unchecked" if loss["unchecked"] else "")
    if not loss["pages_lost"]:
        return "none" + (f" ({unchecked})" if unchecked else "")

    def one(f: Mapping[str, Any]) -> str:
        causes = ", ".join(f"{k} {v:,}" for k, v in sorted(f["by_cause"].items(), key=lambda kv: -kv[1]))
        window = f", {f['in_window']:,} in the window" if f["in_window"] else ""
        return f"{f['label']} {f['kind']} {f['lost']:,}{window}" + (f" ({causes})" if causes else "")

    window = (f"{loss['beyond_window']:,} beyond the leader-kill window, {loss['in_window']:,} within it; "
              if loss.get("failover_checks", 1) else "")
    text = f"{loss['pages_lost']:,} acknowledged pages lost: {window}" + "; ".join(one(f) for f in loss["failovers"])
    if unchecked:
        text += f"; {unchecked}"
    return text


def report_lines(reports: Sequence[FailoverReport]) -> list[str]:
    """What a command prints of its failovers when it ends: every report whole (:meth:`FailoverReport.lines`),
    then the loss over all of them (:func:`loss_text`)."""
    out = [line for r in reports for line in r.lines()]
    if reports:
        out.append(f"acknowledged pages lost in {plural(len(reports), 'failover')}: "
                   f"{loss_text(loss_summary([r.as_dict() for r in reports]))}")
    return out
