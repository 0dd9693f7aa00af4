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

import json
import shutil
import tempfile
import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kvtui.mooncake.errors import Conflict
from kvtui.mooncake.net import http_get, parse_metrics

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
        bucket = self.bucket_bytes(owners)
        return {
            "MOONCAKE_OFFLOAD_FILE_STORAGE_PATH": str(path.resolve()),
            "MOONCAKE_OFFLOAD_STORAGE_BACKEND_DESCRIPTOR": "bucket_storage_backend",
            "MOONCAKE_OFFLOAD_BUCKET_EVICTION_POLICY": "fifo",
            "MOONCAKE_OFFLOAD_BUCKET_MAX_TOTAL_SIZE": str(share),
            "MOONCAKE_OFFLOAD_BUCKET_SIZE_LIMIT_BYTES": str(bucket),
            "MOONCAKE_OFFLOAD_HEARTBEAT_INTERVAL_SECONDS": str(HEARTBEAT_S),
            "MOONCAKE_OFFLOAD_LOCAL_BUFFER_SIZE_BYTES": str(max(STAGING_BYTES, self.page_bytes)),
        }

    def bucket_bytes(self, owners: int = 1) -> int:
        """The most bytes one disk bucket of an owner (one of ``owners``) holds: an object larger than that is
        never offloaded (measured: 256 KiB objects behind 64 KiB buckets stayed in DRAM, every put refused)."""
        return max(self.page_bytes, self.segment_bytes // max(1, owners) // BUCKET_FRACTION)

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


# -- where the master says each key is ------------------------------------------------------------------------
QUERY_KEYS = 100
"""Keys per ``/batch_query_keys`` call (all of them on one kept-alive connection: 7,490 keys took 0.09 s 50 at a
time on a connection each, whose TIME_WAIT sockets a soak would count as its own)."""

EVICTION_METRICS = ("master_evicted_key_count", "master_evict_disk_replica_requests_total")
"""The master's eviction counters: keys evicted from DRAM (with ``offload_on_evict`` each of them an offload to
disk: the key stays, disk-only) and the disk tier's eviction batches (one dropped 2,176 keys: not a key count)."""


def query_keys(url: str, keys: Sequence[str], timeout_s: float = 5.0) -> dict[str, dict[str, Any]] | None:
    """Per key, the master's ``/batch_query_keys`` entry at admin ``url`` (``ok``, ``values``,
    ``local_disk_values``, ``disk_values``; ``{}`` for a key it does not answer for), :data:`QUERY_KEYS` keys a
    call on one kept-alive connection. It answers from its metadata and grants no lease, so asking pins nothing
    against eviction. None when the master does not answer one of the calls."""
    import http.client

    parts = urllib.parse.urlsplit(url)
    base = parts.path.rstrip("/")
    conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port or 80, timeout=timeout_s)
    out: dict[str, dict[str, Any]] = {}
    try:
        for i in range(0, len(keys), QUERY_KEYS):
            chunk = list(keys[i:i + QUERY_KEYS])
            conn.request("GET", f"{base}/batch_query_keys?keys={urllib.parse.quote(','.join(chunk), safe=',/')}")
            resp = conn.getresponse()
            body = resp.read()
            data = json.loads(body)["data"] if resp.status == 200 else None
            if not isinstance(data, dict):
                return None
            out.update({k: e if isinstance(e := data.get(k), dict) else {} for k in chunk})
    except (OSError, ValueError, KeyError, TypeError, http.client.HTTPException):
        return None
    finally:
        conn.close()
    return out


def key_replicas(url: str, keys: Sequence[str], timeout_s: float = 5.0) -> dict[str, tuple[int, int]] | None:
    """Per key, ``(memory replicas, disk replicas)`` as the master at admin ``url`` lists them (:func:`query_keys`:
    ``values``, and ``local_disk_values`` with ``disk_values``); ``(0, 0)`` for a key it does not list. None when
    the master does not answer."""
    entries = query_keys(url, keys, timeout_s)
    if entries is None:
        return None
    return {k: ((len(e.get("values") or []), len(e.get("local_disk_values") or []) + len(e.get("disk_values") or []))
                if e.get("ok") else (0, 0)) for k, e in entries.items()}


def eviction_counts(url: str, timeout_s: float = 1.0) -> dict[str, int] | None:
    """The master's :data:`EVICTION_METRICS` now (a counter it does not export yet is 0); None when its
    ``/metrics`` does not answer."""
    status, body = http_get(url.rstrip("/") + "/metrics", timeout_s=timeout_s)
    if status != 200:
        return None
    m = parse_metrics(body)
    return {name: int(m.value(name) or 0) for name in EVICTION_METRICS}
