"""One failover of an HA cluster as kvtui measured it (:class:`FailoverReport`, filled by
``kvtui.mooncake.failover.FailoverWatch``), and the frames' status keys that summarise the failovers so far."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from kvtui.core.text import plural

RESTORE_FAILED = "Standby restore failed"
"""What a promoted Mooncake master logs (``master_service_supervisor.cpp``) when it could not restore the state it
replicated as a standby: it serves anyway, with no objects, so every key stored before is gone. Mooncake
0.3.13.post1 logs it after ``RestoreFromStandbySnapshot: overlapping memory descriptors``."""

AFTER_S = 10.0
"""The hit rate "after" a failover: over the requests that finish this long after kvtui publishes again."""


@dataclass
class FailoverReport:
    """One failover. Times in seconds from the fault (``t_s``, engine time); None: it did not happen (see
    :mod:`kvtui.mooncake.failover`). ``old_leader`` / ``new_leader``: master names; ``requests_failed``,
    ``pages_failed``, ``errors`` (store error codes by name: calls); ``pages_checked``: kvtui's acknowledged
    pages the check expected; ``pages_lost``: of them, those gone (None: no master answered the check);
    ``evicted``: keys the masters evicted meanwhile (0: ``pages_lost`` is exact; None: unknown);
    ``lost_sample``: up to 5 lost keys, ``lost_confirmed``: how many of those a second endpoint
    (``/batch_query_keys``) finds absent too; ``lost_acked_s``: when the lost pages were acknowledged,
    ``[earliest, latest]`` seconds from the fault; ``restore_failed``: the new leader logged that it could not
    restore the state it replicated as a standby (:data:`RESTORE_FAILED`: it serves with no
    objects), None when its log is not kvtui's to read (an attached cluster); ``oplog_failed``: puts the old
    leader acknowledged but could not append to its OpLog since the last failover (its log's
    :data:`kvtui.mooncake.ha.OPLOG_FAILED` lines; etcd slow or stopped), which no standby knows of;
    ``hit_rate_before`` /
    ``hit_rate_during`` / ``hit_rate_after``: pages reloaded ÷ full pages of the requests that finished in the
    30 s before the fault, between the fault and kvtui's first publish after it, and in the :data:`AFTER_S` after
    that publish (None: no request finished then): the dip a failover puts in the hit rate."""

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
    restore_failed: bool | None = None  # the new leader logged RESTORE_FAILED (None: no log to read)
    oplog_failed: int | None = None  # puts the old leader acknowledged without an OpLog entry (ha.OPLOG_FAILED)
    hit_rate_before: float | None = None  # page hit rate of the requests of the 30 s before the fault
    hit_rate_during: float | None = None  # … of those finished between the fault and kvtui's first publish after it
    hit_rate_after: float | None = None  # … of those finished in the AFTER_S after that publish

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return asdict(self)

    def line(self) -> str:
        """The report in one line (the event log, the soak's output)."""
        def s(v: float | None) -> str:
            return "—" if v is None else f"{v:.1f} s"

        lost = "unchecked" if self.pages_lost is None else f"{self.pages_lost:,} of {self.pages_checked:,}"
        if self.pages_lost is not None and self.evicted:
            lost += f" (the masters evicted {plural(self.evicted, 'key')} meanwhile: an upper bound)"
        if self.oplog_failed:
            lost += (f"; {self.old_leader or 'the old leader'} had acknowledged {plural(self.oplog_failed, 'put')} it "
                     "could not write to its OpLog (etcd slow or stopped)")
        codes = ", ".join(f"{k} {v}" for k, v in self.errors.items())
        failed = (f"; {self.new_leader or 'the new leader'} could not restore its standby state (Mooncake logged "
                  f"'{RESTORE_FAILED}') and serves without it" if self.restore_failed else "")
        def pct(v: float | None) -> str:
            return "—" if v is None else f"{v:.0%}"

        hits = (f"; page hits {pct(self.hit_rate_before)} before, {pct(self.hit_rate_during)} during, "
                f"{pct(self.hit_rate_after)} after" if self.hit_rate_during is not None else "")
        return (f"failover {self.n} ({self.kind}): leader {s(self.leader_s)}, serving {s(self.serving_s)}, "
                f"reload {s(self.reload_s)}, publish {s(self.publish_s)}; "
                f"{plural(self.requests_failed, 'request')} failed"
                f"{f' ({codes})' if codes else ''}; acknowledged pages lost {lost}{failed}{hits}")


def failover_status(reports: list[FailoverReport]) -> dict[str, Any]:
    """The frames' ``status`` keys of the failovers so far: ``failovers`` (count), ``failover_pages_lost``
    (acknowledged pages lost, all failovers), the last one's ``failover_leader_s``, ``failover_serving_s``,
    ``failover_reload_s``, ``failover_publish_s`` (absent when it did not happen) and ``failover_last`` (its
    :meth:`FailoverReport.line`)."""
    last = reports[-1]
    out: dict[str, Any] = {"failovers": len(reports), "failover_pages_lost": sum(r.pages_lost or 0 for r in reports),
                 "failover_last": last.line()}
    for key in ("leader_s", "serving_s", "reload_s", "publish_s"):
        value = getattr(last, key)
        if value is not None:
            out[f"failover_{key}"] = value
    return out
