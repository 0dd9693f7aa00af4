"""The disk (SSD) tier of an embedded store, in the one configuration of this wheel that stays bounded and does
not deadlock, and the checks that refuse the settings known to wedge it.

Mooncake 0.3.13.post1 offloads an object to its segment owner's local disk when DRAM eviction picks it
(master ``--enable_offload --offload_on_evict``; owner ``--enable_offload`` with
``MOONCAKE_OFFLOAD_FILE_STORAGE_PATH``). Of its storage backends, only the bucket backend with the ``fifo``
eviction policy keeps the disk within a size (``MOONCAKE_OFFLOAD_BUCKET_MAX_TOTAL_SIZE``); the file-per-key
backend writes past any limit, and the bucket backend's default buckets deadlock under ``offload_on_evict``
(the master defers every eviction for an offload that never comes) unless a bucket holds less than one
eviction batch. A cap below the DRAM segment wedges the store (disk buckets evicted every heartbeat, DRAM
full, every put refused). An owner stages disk reads in a buffer allocated at start-up; a batch larger than
it fails every key with BUFFER_OVERFLOW (-10), so kvtui keeps its disk reads within it. The disk tier guide
(``docs/guide/tiers.md``) shows each of these on the real store; upstream ``mooncake-store/src/file_storage.cpp``
names the variables.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kvtui.mooncake.errors import Conflict

TIERS_MEMORY = ("memory",)
TIERS_DISK = ("memory", "disk")

HEARTBEAT_S = 1
"""``MOONCAKE_OFFLOAD_HEARTBEAT_INTERVAL_SECONDS``: how often an owner takes the master's offload tasks (the
default, 10 s, holds puts refused for up to ~20 s while DRAM is full; 1 s, the least, ~10 s)."""

STAGING_BYTES = 64 << 20
"""``MOONCAKE_OFFLOAD_LOCAL_BUFFER_SIZE_BYTES`` of each owner: the buffer its disk reads are staged in, allocated
at start-up (the default, 1.25 GiB, takes ~7 s here). kvtui reads disk-only pages in batches of at most this
many bytes (``ClusterEndpoints.disk_read_bytes``)."""

BUCKET_FRACTION = 256
"""A disk bucket holds at most 1/256 of the DRAM segment (and at least one page): well below one eviction batch
(5 % of the objects), which the bucket backend's default buckets exceed, deadlocking ``offload_on_evict``."""


def master_flags() -> list[str]:
    """The flags an embedded master gets for a disk tier: offload, at eviction time."""
    return ["--enable_offload=true", "--offload_on_evict=true"]


def check_disk(disk_bytes: int, segment_bytes: int) -> None:
    """:class:`Conflict` for a disk tier the store cannot run with: one smaller than the DRAM segment wedges it."""
    if disk_bytes < segment_bytes:
        raise Conflict("disk_bytes", "store_bytes",
                       f"a disk tier ({disk_bytes:,} bytes) smaller than the DRAM segment ({segment_bytes:,} bytes) "
                       "wedges Mooncake's store: its disk buckets are evicted every heartbeat while DRAM stays full "
                       "and every put is refused")


@dataclass(frozen=True)
class DiskTier:
    """One embedded store's disk tier: ``disk_bytes`` in all (shared equally by the segment owners), written
    under ``folder`` (one subfolder per owner); ``segment_bytes``: the DRAM segment in all; ``page_bytes``: one
    KV page (a bucket holds at least one)."""

    disk_bytes: int
    folder: str
    segment_bytes: int
    page_bytes: int

    def owner_env(self, name: str, owners: int = 1) -> dict[str, str]:
        """The ``MOONCAKE_OFFLOAD_*`` variables of segment owner ``name`` (one of ``owners``); makes its folder."""
        path = Path(self.folder) / name
        path.mkdir(parents=True, exist_ok=True)
        share = self.disk_bytes // max(1, owners)
        bucket = max(self.page_bytes, self.segment_bytes // max(1, owners) // BUCKET_FRACTION)
        return {
            "MOONCAKE_OFFLOAD_FILE_STORAGE_PATH": str(path.resolve()),
            "MOONCAKE_OFFLOAD_STORAGE_BACKEND_DESCRIPTOR": "bucket_storage_backend",
            "MOONCAKE_OFFLOAD_BUCKET_EVICTION_POLICY": "fifo",
            "MOONCAKE_OFFLOAD_BUCKET_MAX_TOTAL_SIZE": str(share),
            "MOONCAKE_OFFLOAD_BUCKET_SIZE_LIMIT_BYTES": str(bucket),
            "MOONCAKE_OFFLOAD_HEARTBEAT_INTERVAL_SECONDS": str(HEARTBEAT_S),
            "MOONCAKE_OFFLOAD_LOCAL_BUFFER_SIZE_BYTES": str(max(STAGING_BYTES, self.page_bytes)),
        }

    @property
    def read_bytes(self) -> int:
        """The largest batch of disk reads an owner takes (its staging buffer)."""
        return max(STAGING_BYTES, self.page_bytes)


class DiskFolder:
    """Where a disk tier writes: a new folder ``kvtui-disk-*`` under ``parent`` (``--disk-path``, which must
    exist) or the temporary folder. :meth:`remove` deletes it (and only it); a janitor started with
    :meth:`guard` deletes it if kvtui dies first."""

    def __init__(self, parent: str | None = None) -> None:
        self.path = Path(tempfile.mkdtemp(prefix="kvtui-disk-", dir=parent))
        self._janitor: Any = None

    def guard(self, pid: int) -> None:
        """Have a janitor delete the folder if kvtui dies before :meth:`remove`, once ``pid`` (the process that
        writes into it, which dies with kvtui) is gone."""
        from kvtui.runtime.procs import spawn_janitor

        self._janitor = spawn_janitor(pid, [str(self.path)])

    def used_bytes(self) -> int:
        """Bytes of the files in the folder now."""
        total = 0
        for f in self.path.rglob("*"):
            try:
                if f.is_file():
                    total += f.stat().st_size
            except OSError:
                continue
        return total

    def remove(self) -> None:
        """Delete the folder (call once every process writing into it is gone) and end the janitor."""
        shutil.rmtree(self.path, ignore_errors=True)
        if self._janitor is not None:
            self._janitor.release()
            self._janitor = None
