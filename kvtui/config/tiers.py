"""The store's tiers behind its DRAM segment: a disk (SSD) tier of the embedded store (``--disk-size``,
``--disk-path``). :func:`tiers_from_args` checks them against the segment and the disk they go on; the
backend (:mod:`kvtui.mooncake.tiers`) runs them in the one configuration of this Mooncake wheel that works."""

from __future__ import annotations

import argparse
import os
import shutil
from dataclasses import dataclass

from kvtui.core.errors import KvtuiError
from kvtui.core.units import format_bytes


@dataclass(frozen=True)
class TierPlan:
    """``disk_bytes``: the embedded store's disk tier in bytes (0: none); ``disk_path``: the folder its files go
    under (a new ``kvtui-disk-*`` folder inside it, removed at the end; None: the temporary folder)."""

    disk_bytes: int = 0
    disk_path: str | None = None

    @property
    def disk(self) -> bool:
        """The store has a disk tier."""
        return self.disk_bytes > 0


NO_TIERS = TierPlan()


def add_tier_arguments(g: argparse._ActionsContainer) -> None:
    """Add ``--disk-size`` and ``--disk-path`` to the argument group ``g``."""
    g.add_argument("--disk-size", default=None, metavar="BYTES",
                   help="embedded: a disk (SSD) tier of this size behind the DRAM segment, bytes with units (1GiB, "
                        "512MiB; at least --store-size): pages the DRAM evicts are offloaded to it, and a reload "
                        "reads them back from disk (Mooncake's offload_on_evict; default: no disk tier)")
    g.add_argument("--disk-path", default=None, metavar="DIR",
                   help="with --disk-size: the folder the disk tier writes under (an existing folder; kvtui makes "
                        "a kvtui-disk-* folder in it and removes it at the end; default: the temporary folder)")


def tiers_from_args(args: argparse.Namespace, store_bytes: int, attached: bool) -> TierPlan:
    """The :class:`TierPlan` of the flags for a DRAM segment of ``store_bytes``; ``KvtuiError`` (one line naming
    the flag) for a disk tier with an attached cluster, smaller than the segment (it wedges the store), or larger
    than the free space where it would go, and for a ``--disk-path`` that is no folder."""
    from kvtui.core.units import parse_bytes

    size, path = getattr(args, "disk_size", None), getattr(args, "disk_path", None)
    if size is None:
        if path is not None:
            raise KvtuiError("--disk-path says where the disk tier goes: give its size too (--disk-size)")
        return NO_TIERS
    if attached:
        raise KvtuiError("--disk-size sizes the embedded store's disk tier; an attached cluster's tiers are its own "
                         "(kvtui shows them when its master has one)")
    text = str(size).strip()
    try:
        disk = -1 if text.startswith("-") else parse_bytes(text)
    except ValueError as exc:
        raise KvtuiError(f"--disk-size: {exc}") from None
    if disk <= 0:
        raise KvtuiError(f"--disk-size must be a positive size such as 1GiB, got {text}")
    if disk < store_bytes:
        raise KvtuiError(f"--disk-size {text} is smaller than the DRAM segment ({format_bytes(store_bytes)}): "
                         "Mooncake's store wedges with a disk tier below its DRAM (every put refused); give at "
                         "least --store-size")
    if path is not None and not os.path.isdir(path):
        raise KvtuiError(f"--disk-path {path}: not an existing folder")
    where = path or os.environ.get("TMPDIR") or "/tmp"
    free = shutil.disk_usage(where).free
    if disk > free:
        raise KvtuiError(f"--disk-size {text} is more than the free space in {where} ({format_bytes(free)}); "
                         "choose a smaller size or another --disk-path")
    return TierPlan(disk_bytes=disk, disk_path=path)
