"""A soak's summary: growth per hour of each resource (a least-squares slope), the faults and their
recovery times, requests lost or failed, wrong bytes, and the targets of the soak (measured, not asserted).

Growth is the slope of a least-squares line (``numpy.polyfit``, degree 1) through every sample after the
warm-up, in units per hour, never the difference of two points: one spike at either end moves it little.
A process restarted by a fault (new pid) starts a new *incarnation* whose level may differ (a new master
starts empty): each incarnation is centred on its own means before the fit, so the slope is the common
within-incarnation slope of a fixed-effects regression (the standard "within" estimator) and a restart's
step does not count as growth; an incarnation that begins during the soak also leaves out its own first
``settle_s`` (a new worker opens its store client's connections over its first seconds).
``stderr_per_h`` is the slope's standard error from the residuals
(``n - incarnations - 1`` degrees of freedom); an estimate with its basis: ``samples``, ``from_s``/``to_s``.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from kvtui.core.failover import loss_text
from kvtui.core.storeloss import expected_text
from kvtui.core.text import plural
from kvtui.core.verify import checked
from kvtui.metrics.figures import failover_lines, failover_ranges

KVTUI_RSS_TARGET_MIB_PER_H = 1.0  # the target: kvtui's own RSS grows at most this much per hour after warm-up
TIME_WAIT_FLAG_PER_H = 60.0  # TIME_WAIT growth is flagged above one socket a minute (and significantly > 0)
TIME_WAIT_S = 60.0  # Linux keeps a socket in TIME_WAIT this long (TCP_TIMEWAIT_LEN): the count levels off after it
TIME_WAIT_MIN_FIT_S = 300.0  # a slope is judged only over a fit this long that starts after TIME_WAIT_S
MIB = 1 << 20
FD_RISE = 4  # file descriptors are "flat" when no incarnation's count rose more than this (``rise``, after the
# warm-up): a worker's store client opens 3 more once, when it reconnects to a restarted master
SETTLE_S = 60.0  # a process restarted in a soak is fitted from this long after its start (or the warm-up, if shorter)


def growth_per_hour(t_s: Sequence[float], values: Sequence[float | None], incarnations: Sequence | None = None,
                    warmup_s: float = 0.0, settle_s: float = 0.0) -> dict | None:
    """The least-squares growth of ``values`` sampled at ``t_s`` seconds, per hour, over the samples at or
    after ``warmup_s`` (None or NaN values are skipped: a process down at that sample); ``incarnations``:
    one label per sample (e.g. the pid), each label's samples centred on their own means (see the module's
    note), and one whose first sample comes after the first sample of all loses its first ``settle_s``
    seconds too. Returns ``{"per_h", "stderr_per_h", "samples", "incarnations", "from_s", "to_s", "first", "last",
    "min", "max", "rise"}`` (``stderr_per_h`` None with too few degrees of freedom), or None with fewer than 3 usable
    samples or no spread in time; ``rise``: the largest rise of one incarnation, the median of its last
    quarter of fitted samples less the median of its first. ``ValueError`` when the lengths differ."""
    t = np.asarray(t_s, dtype=float)
    y = np.asarray([np.nan if v is None else v for v in values], dtype=float)
    labels = list(incarnations) if incarnations is not None else [0] * len(t)
    if not (len(t) == len(y) == len(labels)):
        raise ValueError(f"t_s, values and incarnations differ in length ({len(t)}, {len(y)}, {len(labels)})")
    keep = (t >= warmup_s) & np.isfinite(y) & np.isfinite(t)
    if settle_s > 0 and len(t):
        began: dict = {}
        for ti, lab, ok in zip(t, labels, np.isfinite(y)):
            if ok:
                began.setdefault(lab, ti)
        t_first = min(began.values(), default=0.0)
        for i, lab in enumerate(labels):
            b = began.get(lab)
            if b is not None and b > t_first and t[i] < b + settle_s:
                keep[i] = False
    xs, ys, used, rise = [], [], 0, None
    for label in dict.fromkeys(lab for lab, k in zip(labels, keep) if k):
        idx = np.array([i for i, lab in enumerate(labels) if keep[i] and lab == label])
        if len(idx) < 2:
            continue
        q = max(1, len(idx) // 4)  # median of its last quarter − median of its first: robust to the dips and
        r = float(np.median(y[idx[-q:]]) - np.median(y[idx[:q]]))  # spikes of a fault, not to a steady rise
        rise = r if rise is None else max(rise, r)
        xs.append(t[idx] - t[idx].mean())
        ys.append(y[idx] - y[idx].mean())
        used += 1
    if not xs:
        return None
    x, yc = np.concatenate(xs), np.concatenate(ys)
    if len(x) < 3 or not np.any(x != 0):
        return None
    slope, intercept = np.polyfit(x, yc, 1)
    dof = len(x) - used - 1
    resid = yc - (slope * x + intercept)
    stderr = math.sqrt(float(resid @ resid) / dof / float(x @ x)) if dof > 0 else None
    kept = y[keep]
    return {"per_h": float(slope) * 3600.0, "stderr_per_h": None if stderr is None else stderr * 3600.0,
            "samples": int(len(x)), "incarnations": used, "from_s": float(t[keep].min()), "to_s": float(t[keep].max()),
            "first": float(kept[0]), "last": float(kept[-1]), "min": float(kept.min()), "max": float(kept.max()),
            "rise": rise}


def percentiles(values: Sequence[float]) -> dict:
    """``{"count", "p50", "max"}`` of ``values`` (seconds; p50 is the median, numpy's linear interpolation)."""
    v = [float(x) for x in values if x is not None]
    if not v:
        return {"count": 0, "p50": None, "max": None}
    return {"count": len(v), "p50": float(np.median(v)), "max": max(v)}


def fit_columns(procs: Sequence[str]) -> tuple[str, ...]:
    """The series columns the growth fits read (:func:`resource_growth`)."""
    return ("t_s", "tcp_established", "tcp_time_wait", "keys", "used_bytes") + tuple(
        f"{what}_{p}" for p in procs for what in ("rss_bytes", "fds", "pid"))


def resource_growth(cols: dict, procs: Sequence[str], warmup_s: float) -> dict:
    """Growth per hour of every sampled resource; ``cols``: the series columns of :func:`fit_columns`
    (``{name: sequence}``, NaN or None where a value is missing): ``rss_MiB`` and ``fds`` per process
    (incarnations: its pids), ``tcp_established``, ``tcp_time_wait``, and the master's ``keys`` and
    ``used_MiB`` (incarnations: the master's pids; a restarted master starts empty); each incarnation that
    begins during the soak settles for ``min(warmup_s, SETTLE_S)`` first. Each value:
    :func:`growth_per_hour`; processes with too few samples are left out, the others are None then."""
    t = cols["t_s"]

    def fit(key: str, scale: float = 1.0, by: str | None = None):
        vals = [None if v is None else v / scale for v in cols[key]]
        return growth_per_hour(t, vals, list(cols[by]) if by else None, warmup_s, min(warmup_s, SETTLE_S))

    rss = {p: fit(f"rss_bytes_{p}", MIB, f"pid_{p}") for p in procs}
    fds = {p: fit(f"fds_{p}", 1.0, f"pid_{p}") for p in procs}
    return {"rss_MiB": {p: g for p, g in rss.items() if g is not None},
            "fds": {p: g for p, g in fds.items() if g is not None},
            "tcp_established": fit("tcp_established"), "tcp_time_wait": fit("tcp_time_wait"),
            "keys": fit("keys", 1.0, "pid_master"), "used_MiB": fit("used_bytes", MIB, "pid_master")}


def time_wait_check(counts: Sequence[float | None], growth: dict | None, ports: int | None) -> dict:
    """The TIME_WAIT watch (sustained TCP use can exhaust the ephemeral ports through TIME_WAIT; Mooncake's
    troubleshooting notes name ``MC_TCP_ENABLE_CONNECTION_POOL=1``, which kvtui sets, as the remedy):
    ``counts``: the sampled TIME_WAIT counts; ``growth``: their :func:`growth_per_hour`. Gives ``last``,
    ``max``, ``per_h`` and ``flagged`` (with ``why``) when the fitted growth is above
    ``TIME_WAIT_FLAG_PER_H`` and more than two standard errors above 0, or the count ever reached half of
    the ``ports`` the kernel hands out. A socket stays in TIME_WAIT for ``TIME_WAIT_S``, so the count rises
    for that long after the load starts: the slope is judged (``judged``) only when the fit starts after
    it and spans at least ``TIME_WAIT_MIN_FIT_S``."""
    vals = [int(v) for v in counts if v is not None and math.isfinite(v)]
    judged = bool(growth and growth["from_s"] >= TIME_WAIT_S
                  and growth["to_s"] - growth["from_s"] >= TIME_WAIT_MIN_FIT_S)
    out: dict[str, Any] = {"last": vals[-1] if vals else None, "max": max(vals) if vals else None,
           "per_h": growth["per_h"] if growth else None, "ephemeral_ports": ports, "judged": judged,
           "flagged": False, "why": "" if judged else "too short to judge the slope (the fit must start after "
           f"{TIME_WAIT_S:.0f} s, TIME_WAIT's length, and span {TIME_WAIT_MIN_FIT_S:.0f} s)"}
    if judged and growth and growth["stderr_per_h"] is not None and growth["per_h"] > TIME_WAIT_FLAG_PER_H \
            and growth["per_h"] - 2 * growth["stderr_per_h"] > 0:
        out.update(flagged=True, why=f"TIME_WAIT grows {growth['per_h']:.0f}/h (± {growth['stderr_per_h']:.0f}): "
                                     "ephemeral ports may run out on a long run")
    if ports and out["max"] is not None and out["max"] >= ports / 2:
        out.update(flagged=True, why=f"{out['max']} TIME_WAIT sockets: half of the {ports} ephemeral ports")
    return out


def fault_summary(records: list, kinds: Sequence[str]) -> dict:
    """Counts and recovery times of :class:`kvtui.soak.faults.FaultRecord` s: ``scheduled``, ``injected``,
    ``recovered`` (survived), ``not_recovered`` (of which ``cut_short``: still open when the soak ended),
    ``skipped`` (never injected: the soak ended first),
    ``inject_errors``, ``lost`` (requests), ``failed_requests``, ``mismatches``, ``pages_lost`` (acknowledged
    pages the HA faults' failovers and the store faults lost), ``recovery_s`` and ``clear_s``
    (:func:`percentiles`), and ``by_kind`` with the same per kind; with store faults' loss checks,
    ``pages_checked`` (:func:`check_counts`); with HA faults, ``failovers``: their count
    ``n`` and ``ranges``, each failover figure's min and max (:func:`kvtui.metrics.figures.failover_ranges`)."""
    def block(recs: list) -> dict:
        injected = [r for r in recs if r.t_s is not None]
        rec_s = [r.recovery_s for r in injected if r.recovery_s is not None]
        return {"scheduled": len(recs), "injected": len(injected), "recovered": len(rec_s),
                "not_recovered": len(injected) - len(rec_s),
                "cut_short": sum(1 for r in injected if r.cut_short and r.recovery_s is None),
                "skipped": len(recs) - len(injected),
                "inject_errors": sum(1 for r in injected if r.error), "lost": sum(r.lost for r in injected),
                "failed_requests": sum(r.failed for r in injected), "mismatches": sum(r.mismatches for r in injected),
                "pages_lost": sum((r.failover or r.loss_check or {}).get("pages_lost") or 0 for r in injected),
                "recovery_s": percentiles(rec_s),
                "clear_s": percentiles([r.cleared_s - r.t_s for r in injected if r.cleared_s is not None]),
                **({"pages_checked": check_counts([r.loss_check for r in injected if r.loss_check])}
                   if any(r.loss_check for r in injected) else {})}

    out = block(records)
    out["by_kind"] = {k: block([r for r in records if r.kind == k]) for k in kinds}
    reports = [r.failover for r in records if r.failover is not None]
    if reports:  # (HA faults: what each failover cost, and the range of each figure over them)
        out["failovers"] = {"n": len(reports), "ranges": failover_ranges(reports)}
    return out


def check_counts(checks: Sequence[dict]) -> dict:
    """The store faults' loss checks (:class:`kvtui.core.storeloss.StoreLossReport` dicts) added up: ``checks``,
    ``unchecked`` (checks that could not be made), and over the others ``checked`` pages, ``kept``,
    ``gone_with_dram``, ``evicted`` and ``lost``."""
    done = [c for c in checks if c.get("pages_lost") is not None]
    return {"checks": len(checks), "unchecked": len(checks) - len(done),
            "checked": sum(c["pages_checked"] for c in done), "kept": sum(c["pages_kept"] for c in done),
            "gone_with_dram": sum(c["gone_with_dram"] for c in done), "evicted": sum(c["pages_evicted"] for c in done),
            "lost": sum(c["pages_lost"] for c in done)}


def _checks_text(c: dict) -> str:
    """``; acknowledged pages checked 7,490: 4,033 kept, 1,075 gone with the store node's DRAM, 2,382 lost`` (a
    kind's store checks, :func:`check_counts`)."""
    parts = [f"{c['kept']:,} kept"] + ([f"{c['gone_with_dram']:,} gone with the store node's DRAM"]
                                       if c["gone_with_dram"] else []) + (
        [f"{c['evicted']:,} evicted by the disk tier"] if c["evicted"] else []) + [f"{c['lost']:,} lost"]
    unchecked = f"; {c['unchecked']} unchecked" if c["unchecked"] else ""
    return f"; acknowledged pages checked {c['checked']:,}: " + ", ".join(parts) + unchecked


def _num(v, fmt: str = "{:.2f}") -> str:
    return "n/a" if v is None else fmt.format(v)


def _secs(v) -> str:
    """``2.03 s``, or ``n/a`` (no unit) when nothing was measured."""
    return "n/a" if v is None else f"{v:.2f} s"


SHORT_FIT_S = 600.0
"""Below this many seconds of fitted samples the summary says its per-hour slopes are projections."""


def format_soak(s: dict) -> str:
    """The human summary of a soak (``s``: the summary dict of :func:`kvtui.soak.runner.Soak.summary`)."""
    f, req = s["faults"], s["requests"]
    g = s["growth_per_hour"]
    lines = [
        f"soak                  {s['elapsed_s']:.0f} s of {s['duration_s']:.0f} s; chaos {s['chaos_per_min']:g}/min "
        f"(seed {s['seed']}); samples every {s['sample_s']:g} s, fitted after {s['warmup_s']:.0f} s",
        f"requests              {req['completed']:,} finished ({req['per_s']:.1f}/s); lost {req['lost']:,}; "
        f"with store errors {req['with_errors']:,}; dropped at the end {req['dropped']:,}, "
        f"abandoned {req['abandoned']:,}",
        f"verified              {plural(s['verified_pages'], 'page')}, {checked(s.get('verify', 'full'))}; mismatches "
        f"{s['mismatches']:,} (wrong bytes)",
        f"faults                {f['injected']} injected, {f['recovered']} recovered, {f['not_recovered']} not "
        f"({f['cut_short']} still open at the end), {f['skipped']} skipped; recovery p50 "
        f"{_secs(f['recovery_s']['p50'])}, max {_secs(f['recovery_s']['max'])}",
    ]
    for kind, b in f["by_kind"].items():
        if b["scheduled"]:
            pages = (_checks_text(b["pages_checked"]) if "pages_checked" in b else
                     f"; acknowledged pages lost {b['pages_lost']:,}" if b.get("pages_lost") else "")
            lines.append(f"  {kind:<20}{b['injected']} injected, {b['recovered']} recovered; recovery p50 "
                         f"{_secs(b['recovery_s']['p50'])}, max {_secs(b['recovery_s']['max'])}; requests lost "
                         f"{b['lost']}{pages}")
    if "failovers" in f:
        lines.append(failover_lines(f["failovers"]["n"], f["failovers"]["ranges"]))
    if "pages_lost" in s:
        expected = expected_text(s.get("store_checks") or [])
        lines.append(f"pages lost            {loss_text(s['pages_lost'])}" + (f"; {expected}" if expected else ""))
    rss = g["rss_MiB"]
    lines.append("RSS growth (MiB/h)    " + ", ".join(f"{p} {_num(v['per_h'])}" for p, v in rss.items()))
    lines.append("fd growth (/h)        " + ", ".join(f"{p} {_num(v['per_h'], '{:.1f}')}" for p, v in g["fds"].items()))
    fitted = s["elapsed_s"] - s["warmup_s"]
    if fitted < SHORT_FIT_S:
        lines.append(f"                      (slopes fitted over {max(0.0, fitted):.0f} s of samples: "
                     "projections to an hour; a soak of 30 min or more gives slopes to go by)")
    tw = s["time_wait"]
    lines.append(f"TCP                   established {s['tcp']['established_last']}, TIME_WAIT {tw['last']} "
                 f"(max {tw['max']}, growth {_num(tw['per_h'], '{:.0f}')}/h)"
                 + (f"  FLAGGED: {tw['why']}" if tw["flagged"] else ""))
    t = s["targets"]
    lost = (f"; 0 pages lost {t['zero_pages_lost']}" if "zero_pages_lost" in t else "") + (
        f"; 0 lost in the leader-kill window {t['zero_pages_lost_in_window']}" if "zero_pages_lost_in_window" in t
        else "")
    lines.append(f"targets               every fault recovered {t['every_fault_recovered']}; 0 mismatches "
                 f"{t['zero_mismatches']}{lost}; 0 orphans {t['zero_orphans']}; kvtui RSS ≤ "
                 f"{KVTUI_RSS_TARGET_MIB_PER_H:g} MiB/h {t['kvtui_rss_ok']}; fds flat {t['fds_flat']}")
    errors = ", ".join(f"{k} ×{v}" for k, v in s["errors"].items()) or "none"
    lines.append(f"store errors          {errors}")
    return "\n".join(lines)
