"""The store's tiers behind its DRAM segment: a disk (SSD) tier of the embedded store (``--disk-size``,
``--disk-path``), and hot-key replication across its segments (``--replicate-hot``). :func:`tiers_from_args`
checks them against the segments and the disk they go on; the backend (:mod:`kvtui.mooncake.tiers`,
:mod:`kvtui.mooncake.cluster`) runs them in the configuration of this Mooncake wheel that works."""

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
    under (a new ``kvtui-disk-*`` folder inside it, removed at the end; None: the temporary folder);
    ``replicate_hot``: the master gives a hot key a second memory replica on another segment."""

    disk_bytes: int = 0
    disk_path: str | None = None
    replicate_hot: bool = False

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
    g.add_argument("--replicate-hot", action="store_true",
                   help="embedded, with two segments or more (--store-nodes K, or --segment-on decode|prefill with "
                        "several workers): the master gives a key read more than 0.5 times a second (over 5 s) a "
                        "second memory replica on another segment (Mooncake's dynamic replication); a reader with "
                        "a segment of its own then reads the hot pages locally")
    g.add_argument("--disk-path", default=None, metavar="DIR",
                   help="with --disk-size: the folder the disk tier writes under (an existing folder; kvtui makes "
                        "a kvtui-disk-* folder in it and removes it at the end; default: the temporary folder)")


def disk_room(path: str | None) -> tuple[str, int]:
    """Where a disk tier goes (``path``, else the temporary folder) and the bytes free there; ``KvtuiError`` for a
    ``--disk-path`` that is no existing folder."""
    import tempfile

    if path is not None and not os.path.isdir(path):
        raise KvtuiError(f"--disk-path {path}: not an existing folder")
    where = path or tempfile.gettempdir()
    return where, shutil.disk_usage(where).free


def tiers_from_args(args: argparse.Namespace, store_bytes: int, attached: bool, segments: int = 1) -> TierPlan:
    """The :class:`TierPlan` of the flags for DRAM segments of ``store_bytes`` in all, in ``segments`` segments;
    ``KvtuiError`` (one line naming the flag) for a disk tier with an attached cluster, smaller than the segment
    (it wedges the store), or larger than the free space where it would go, for a ``--disk-path`` that is no
    folder, and for ``--replicate-hot`` attached or with one segment (a second replica needs another)."""
    from kvtui.core.units import parse_bytes

    size, path = getattr(args, "disk_size", None), getattr(args, "disk_path", None)
    hot = bool(getattr(args, "replicate_hot", False))
    if hot and attached:
        raise KvtuiError("--replicate-hot is the embedded master's setting (--dynamic_replication_mode); an attached "
                         "cluster's master has its own")
    if hot and segments < 2:
        raise KvtuiError("--replicate-hot needs two segments or more, so a hot page has another to be copied to: "
                         "--store-nodes 2, or --segment-on decode with --decode-workers 2")
    if size is None:
        if path is not None:
            raise KvtuiError("--disk-path says where the disk tier goes: give its size too (--disk-size)")
        return TierPlan(replicate_hot=hot)
    if attached:
        raise KvtuiError("--disk-size sizes the embedded store's disk tier; an attached cluster's tiers are its own "
                         "(kvtui shows them when its master has one)")
    text = str(size).strip()
    positive = f"--disk-size must be a positive size such as 1GiB, got {text}"
    if text.startswith("-"):
        raise KvtuiError(positive)
    try:
        disk = parse_bytes(text)
    except ValueError as exc:
        raise KvtuiError(positive if "positive" in str(exc) else f"--disk-size: {exc}") from None
    if getattr(args, "segment_on", "store") != "store":
        raise KvtuiError(f"--disk-size cannot go with --segment-on {args.segment_on}: the disk tier belongs to the "
                         "store nodes' segments")
    if disk < store_bytes:
        raise KvtuiError(f"--disk-size {text} is smaller than the DRAM segment ({format_bytes(store_bytes)}): "
                         "Mooncake's store wedges with a disk tier below its DRAM (every put refused); give at "
                         "least --store-size")
    where, free = disk_room(path)
    if disk > free:
        raise KvtuiError(f"--disk-size {text} is more than the free space in {where} ({format_bytes(free)}); "
                         "choose a smaller size or another --disk-path")
    return TierPlan(disk_bytes=disk, disk_path=path, replicate_hot=hot)
