"""The fault schedule of ``kvtui soak --chaos``: a pure function of the seed, the duration and the rate.

The soak's span for faults, ``[start_s, duration_s - tail_s)``, is cut into ``n = round(rate · span / 60)``
equal slots (so the count is the rate, exactly, whatever the seed); each fault falls at a seeded random
moment of its slot, at least ``min_gap_s`` before the next slot begins, so consecutive faults are never
closer than that (stratified, "jittered" sampling: random moments without the clusters a Poisson process
makes). Kinds come in seeded shuffled rounds of every kind (each kind appears ``n / len(kinds)`` times,
±1), and each worker kill picks its role the same way. The same arguments give the same schedule on every
machine (:class:`random.Random` with an integer seed is specified to be reproducible).
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass

from kvtui.core.failover import ETCD_OUTAGE, LEADER_HANG, LEADER_KILL
from kvtui.core.storeloss import DISK_FULL, STORE_KILL

MASTER_KILL = "master-kill"  # SIGKILL of the embedded master, then a restart on the same ports
MASTER_PAUSE = "master-pause"  # SIGSTOP of the master for a few seconds, then SIGCONT: a hung peer
# STORE_KILL (kvtui.core.storeloss): SIGKILL of the store node, then a new one with a segment of the same size
STORE_FULL = "store-full"  # a separate client puts filler objects until NO_AVAILABLE_HANDLE, then removes them
WORKER_KILL = "worker-kill"  # SIGKILL of the prefill or decode worker; the engine starts the chain again
LINK_CUT = "link-cut"  # an emulated host's link taken down and up again: needs --hosts auto (kvtui.mooncake.hosts)
# --ha: LEADER_KILL, LEADER_HANG and ETCD_OUTAGE (kvtui.core.failover: each is a failover report's kind too)
# --disk-size: DISK_FULL (kvtui.core.storeloss): DRAM and the disk tier filled until the tier evicts, then emptied
KINDS = (MASTER_KILL, MASTER_PAUSE, STORE_KILL, STORE_FULL, WORKER_KILL, LINK_CUT, LEADER_KILL, LEADER_HANG,
         ETCD_OUTAGE, DISK_FULL)  # (those that apply: see
# kvtui.soak.faults.why_unavailable; the order of those left is the schedule's)
WORKER_ROLES = ("decode", "prefill")
TARGET = {MASTER_KILL: "master", MASTER_PAUSE: "master", STORE_KILL: "store", STORE_FULL: "segment",
          LINK_CUT: "link", LEADER_KILL: "leader", LEADER_HANG: "leader",
          ETCD_OUTAGE: "etcd", DISK_FULL: "disk"}  # (a worker kill's target is its role)
WHAT = {MASTER_KILL: "master SIGKILL and restart", MASTER_PAUSE: "master SIGSTOP/SIGCONT",
        STORE_KILL: "store-node SIGKILL and restart, then its acknowledged pages checked once its old client's TTL "
                    "passed", STORE_FULL: "a full store", WORKER_KILL: "worker SIGKILL",
        LINK_CUT: "an emulated host's link down and up", LEADER_KILL: "SIGKILL of an HA cluster's leader",
        LEADER_HANG: "SIGSTOP/SIGCONT of the leader", ETCD_OUTAGE: "etcd stopped for --pause-s",
        DISK_FULL: "DRAM and the disk tier (--disk-size) filled until the tier evicts, then emptied and the "
                   "acknowledged pages checked"}
"""Each kind in a few words, for ``kvtui soak``'s description."""

MAX_GAP_S = 30.0  # consecutive faults are at least min(slot / 2, this) apart


@dataclass(frozen=True)
class Fault:
    """One scheduled fault: ``n`` (1-based), ``t_s`` seconds after the soak started, its ``kind`` (one of
    :data:`KINDS`) and ``target`` (``master``, ``store``, ``segment``, ``disk``, ``link``, or the worker role)."""

    n: int
    t_s: float
    kind: str
    target: str

    def as_dict(self) -> dict:
        """JSON-ready form."""
        return asdict(self)


def default_window(duration_s: float) -> tuple[float, float]:
    """``(start_s, tail_s)``: no fault in the first ``min(20 s, 5 %)`` of a soak (start-up settles) nor in
    its last ``min(60 s, 20 %)`` (the last fault has time to recover before the end)."""
    return min(20.0, 0.05 * duration_s), min(60.0, 0.2 * duration_s)


def schedule(seed: int, duration_s: float, rate_per_min: float, kinds: tuple[str, ...] = KINDS, *,
             start_s: float | None = None, tail_s: float | None = None) -> tuple[Fault, ...]:
    """The faults of a soak of ``duration_s`` seconds at ``rate_per_min`` faults a minute (0: none), drawn
    from ``kinds`` with ``seed``; sorted by time. ``start_s`` / ``tail_s``: the quiet start and end
    (default :func:`default_window`). ``ValueError`` on a negative or non-finite rate or duration, no
    kinds, an unknown or repeated kind, or a window that leaves no span."""
    if not (duration_s >= 0 and duration_s != float("inf")):
        raise ValueError(f"duration must be finite and non-negative seconds, got {duration_s!r}")
    if not (rate_per_min >= 0 and rate_per_min != float("inf")):
        raise ValueError(f"--chaos must be finite, non-negative faults per minute, got {rate_per_min!r}")
    if not kinds:
        raise ValueError("no fault kinds to choose from")
    unknown = [k for k in kinds if k not in KINDS]
    if unknown or len(set(kinds)) != len(kinds):
        raise ValueError(f"fault kinds must be distinct names from {', '.join(KINDS)}, got {', '.join(kinds)}")
    first, last = default_window(duration_s)
    start = first if start_s is None else float(start_s)
    end = duration_s - (last if tail_s is None else float(tail_s))
    span = end - start
    n = round(rate_per_min * span / 60.0) if span > 0 else 0
    if n <= 0:
        return ()
    rng = random.Random(int(seed))
    slot = span / n
    gap = min(slot / 2.0, MAX_GAP_S)
    bag: list[str] = []
    roles: list[str] = []
    out = []
    for i in range(n):
        if not bag:
            bag = list(kinds)
            rng.shuffle(bag)
        kind = bag.pop()
        target = TARGET.get(kind, "")
        if kind == WORKER_KILL:
            if not roles:
                roles = list(WORKER_ROLES)
                rng.shuffle(roles)
            target = roles.pop()
        t = start + i * slot + rng.uniform(0.0, slot - gap)
        out.append(Fault(i + 1, round(t, 3), kind, target))
    return tuple(out)


def parse_kinds(text: str) -> tuple[str, ...]:
    """``--faults``: comma-separated kinds (``all`` = :data:`KINDS`); ``ValueError`` naming an unknown one."""
    if text.strip().lower() == "all":
        return KINDS
    kinds = tuple(dict.fromkeys(k.strip().lower() for k in text.split(",") if k.strip()))
    bad = [k for k in kinds if k not in KINDS]
    if bad or not kinds:
        raise ValueError(f"--faults: unknown fault kind {', '.join(bad) or repr(text)} (choose from "
                         f"{', '.join(KINDS)}, or all)")
    return kinds
