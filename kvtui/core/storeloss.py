"""What a store fault did to kvtui's acknowledged pages: the loss check of the soak's ``store-kill`` and
``disk-full`` faults (:class:`StoreLossReport`, made by :func:`classify`), read by
:func:`kvtui.core.failover.loss_summary` beside the failovers' reports.

Just before the fault, the master is asked where each page kvtui was told is stored lies (``/batch_query_keys``:
memory replicas, disk replicas; no lease); the pages it lists then are *checked*. After the fault it is asked
again: a checked page is *gone* when it is not listed, or when kvtui published it again meanwhile (a put-if-absent
stores a page only when the store does not have it, so it was gone in between). Each gone page is put down to what
its replicas were before the fault:

* ``store-kill`` (the store node killed and started again): a page that only the node's DRAM held died with it:
  expected of a single-replica cache, reported and not counted as lost. A page that had a disk replica is
  **lost**: its file outlived the node, and the master dropped it when the killed node's client expired (its
  client TTL), because the node came back within it (:data:`DISK_DROPPED`).
* ``disk-full`` (a separate client fills DRAM and the disk tier until the tier evicts): the tier evicts first in,
  first out (``fifo``), so the pages on disk before the fault go first, then those offloaded from DRAM during it.
  Gone pages are *evicted*, expected at the tier's cap, unless the tier evicted nothing (:data:`NOT_EVICTED`), or a
  page that was only in memory before the fault is gone while a page that was only on disk before it still is
  (:data:`OUT_OF_ORDER`: the tier's order does not account for it): those are **lost**.

A disk tier at its cap keeps evicting while a store-kill's check waits for the TTL (batches of ~2,000 pages on the
tiny layout). So a store-kill is looked at a third time, ``PREDROP_S`` before the killed node's client TTL runs
out, while every page of the dead node is still listed: a page with a disk replica gone by then was evicted
(expected), and only those gone after it were dropped with the client. Without that look (a restart that
outlasted it) the report says its loss is an upper bound when the tier evicted meanwhile.

The master's eviction counters cannot bound the evicted pages by count on this wheel: ``master_evicted_key_count``
counts DRAM evictions, each of them an offload that keeps the key (disk-only), and
``master_evict_disk_replica_requests_total`` counts the tier's eviction batches (one dropped 2,176 pages); the
report keeps both as ``offloads`` and ``disk_evictions``.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from kvtui.core.text import plural

STORE_KILL = "store-kill"  # SIGKILL of the store node, then a new one with a segment of the same size
DISK_FULL = "disk-full"  # a separate client fills DRAM and the disk tier until the tier evicts, then removes
LOSS_CHECKED = (STORE_KILL, DISK_FULL)
"""The soak's faults whose acknowledged pages are checked afterwards (the engine then keeps its ledger)."""

DISK_DROPPED = "disk replica dropped"
"""A page with a disk replica gone after a store-node restart: the master dropped it with the killed node's client."""
NOT_EVICTED = "gone, nothing evicted"
"""A page gone while the disk tier evicted nothing."""
OUT_OF_ORDER = "out of the tier's order"
"""A page only in memory before the fault, gone while a page only on disk before it stayed on disk."""
CAUSE_MEANS = {
    DISK_DROPPED: "had a disk replica: the master dropped it when the killed node's client expired (the node came "
                  "back within its client TTL), though the tier's file outlived the node",
    NOT_EVICTED: "gone while the disk tier evicted nothing",
    OUT_OF_ORDER: "only in memory before the fault, gone while pages on disk before it stayed: the tier evicts first "
                  "in, first out, so its evictions do not account for it",
}
"""What each cause of a store fault's lost page means."""

PREDROP_S = 1.0
"""A store-kill's third look comes this long before the killed node's client TTL runs out."""

Replicas = tuple[int, int]
"""``(memory replicas, disk replicas)`` of one key as the master lists it; ``(0, 0)``: not listed."""


@dataclass(frozen=True)
class KeyCensus:
    """Where the master lists each of some keys, and its eviction counters, at one moment: ``replicas`` (key →
    :data:`Replicas`), ``offloads`` (``master_evicted_key_count``: DRAM evictions; with a disk tier each moves the
    key to disk), ``disk_evictions`` (``master_evict_disk_replica_requests_total``: the tier's eviction batches);
    None: the master did not say."""

    replicas: Mapping[str, Replicas]
    offloads: int | None = None
    disk_evictions: int | None = None


@dataclass
class StoreLossReport:
    """A store fault's loss check. ``n``: the fault's number; ``kind``: :data:`STORE_KILL` or :data:`DISK_FULL`;
    ``t_s``: the fault (engine seconds); ``checked_s``: the check, seconds after it (None: unchecked, ``why``
    says why). ``pages_checked``: acknowledged before the fault and listed then, ``memory_only`` / ``with_disk``
    of them with memory replicas only / a disk replica; ``pages_gone``: of them, gone after it (``republished``
    of those kvtui had published again by the check); ``gone_with_dram``: gone pages only the killed node's DRAM
    held (expected); ``pages_evicted``: gone pages the tier's evictions account for (expected); ``pages_lost``
    (None: unchecked) and ``lost_by_cause``: the rest; ``offloads`` / ``disk_evictions``: growth of the master's
    counters between the two looks (None: unknown); ``lost_sample``: up to 5 lost keys; ``predrop``: a store-kill
    was also looked at just before the killed node's client TTL ran out."""

    n: int
    kind: str
    t_s: float
    checked_s: float | None = None
    why: str = ""
    pages_checked: int = 0
    memory_only: int = 0
    with_disk: int = 0
    pages_gone: int = 0
    republished: int = 0
    gone_with_dram: int = 0
    pages_evicted: int = 0
    pages_lost: int | None = None
    lost_by_cause: dict[str, int] = field(default_factory=dict)
    offloads: int | None = None
    disk_evictions: int | None = None
    lost_sample: list[str] = field(default_factory=list)
    predrop: bool = False

    @property
    def pages_kept(self) -> int:
        """Checked pages still listed after the fault."""
        return self.pages_checked - self.pages_gone

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form (:func:`kvtui.core.failover.loss_summary` reads ``n``, ``kind``, ``pages_lost`` and
        ``lost_by_cause``), with ``pages_kept``."""
        return {**asdict(self), "pages_kept": self.pages_kept}

    def text(self) -> str:
        """``7,490 acknowledged pages checked: 4,033 kept, 1,075 gone with the store node's DRAM, 2,382 lost
        (disk replica dropped 2,382)``; ``unchecked (why)``."""
        if self.pages_lost is None:
            return f"acknowledged pages unchecked ({self.why})"
        parts = [f"{self.pages_kept:,} kept"]
        if self.gone_with_dram:
            parts.append(f"{self.gone_with_dram:,} gone with the store node's DRAM")
        if self.pages_evicted:
            parts.append(f"{self.pages_evicted:,} evicted by the {'full ' if self.kind == DISK_FULL else ''}disk tier")
        lost = f"{self.pages_lost:,} lost"
        if self.lost_by_cause:
            lost += " (" + ", ".join(f"{c} {n:,}" for c, n in sorted(self.lost_by_cause.items(),
                                                                     key=lambda kv: -kv[1])) + ")"
        parts.append(lost)
        out = f"{plural(self.pages_checked, 'acknowledged page')} checked: " + ", ".join(parts)
        if self.republished:
            out += f"; {self.republished:,} of the gone published again since"
        if self.kind == STORE_KILL and self.pages_lost and self.disk_evictions and not self.predrop:
            out += "; the disk tier evicted meanwhile: an upper bound"
        return out


def classify(n: int, kind: str, t_s: float, before: KeyCensus, after: KeyCensus,
             republished: Collection[str] = (), checked_s: float | None = None,
             predrop: KeyCensus | None = None) -> StoreLossReport:
    """The loss check of fault ``n`` of ``kind`` at engine time ``t_s`` (see the module): ``before`` lists the
    acknowledged keys just before the fault, ``after`` the same keys after it; ``republished``: those kvtui
    published again in between; ``checked_s``: seconds from the fault to ``after``; ``predrop``: a store-kill's
    look just before the killed node's client TTL ran out (None: none was taken)."""
    rep = StoreLossReport(n, kind, t_s, checked_s=checked_s, predrop=predrop is not None)
    checked = {k: r for k, r in before.replicas.items() if r[0] + r[1] > 0}
    again = set(republished)
    gone = [k for k in checked if k in again or after.replicas.get(k, (0, 0)) == (0, 0)]
    rep.pages_checked, rep.pages_gone = len(checked), len(gone)
    rep.with_disk = sum(1 for r in checked.values() if r[1] > 0)
    rep.memory_only = rep.pages_checked - rep.with_disk
    rep.republished = sum(1 for k in gone if k in again)
    rep.offloads = _growth(before.offloads, after.offloads)
    rep.disk_evictions = _growth(before.disk_evictions, after.disk_evictions)
    lost: dict[str, list[str]] = {}
    if kind == DISK_FULL:
        if not rep.disk_evictions:  # (None: unknown, 0: none; either way the tier accounts for nothing)
            lost[NOT_EVICTED] = gone
        else:
            stayed = any(r[0] == 0 and r[1] > 0 and k not in again and after.replicas.get(k, (0, 0))[1] > 0
                         for k, r in checked.items())
            out_of_order = [k for k in gone if checked[k][1] == 0] if stayed else []
            if out_of_order:
                lost[OUT_OF_ORDER] = out_of_order
            rep.pages_evicted = len(gone) - len(out_of_order)
    else:
        rep.gone_with_dram = sum(1 for k in gone if checked[k][1] == 0)
        dropped = [k for k in gone if checked[k][1] > 0]
        if predrop is not None:  # (gone while the killed node's keys were all still listed: evicted by the tier)
            evicted = {k for k in dropped if predrop.replicas.get(k, (0, 0)) == (0, 0)}
            rep.pages_evicted, dropped = len(evicted), [k for k in dropped if k not in evicted]
        if dropped:
            lost[DISK_DROPPED] = dropped
    rep.lost_by_cause = {cause: len(keys) for cause, keys in lost.items() if keys}
    rep.pages_lost = sum(rep.lost_by_cause.values())
    rep.lost_sample = [k for keys in lost.values() for k in keys][:5]
    return rep


def unchecked(n: int, kind: str, t_s: float, why: str) -> StoreLossReport:
    """The report of a fault whose pages could not be checked, and ``why``."""
    return StoreLossReport(n, kind, t_s, why=why)


def _growth(a: int | None, b: int | None) -> int | None:
    return None if a is None or b is None else max(0, b - a)


def expected_text(reports: Sequence[Mapping[str, Any]]) -> str:
    """What the store faults' checks found gone as expected, in words (``""`` when nothing):
    ``1,075 gone with the store node's DRAM, 2,176 evicted by the disk tier (expected, not counted)``."""
    dram = sum(r.get("gone_with_dram") or 0 for r in reports)
    evicted = sum(r.get("pages_evicted") or 0 for r in reports)
    parts = ([f"{dram:,} gone with the store node's DRAM"] if dram else []) + (
        [f"{evicted:,} evicted by the disk tier"] if evicted else [])
    return ", ".join(parts) + " (expected, not counted)" if parts else ""
