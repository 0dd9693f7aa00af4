"""The store-full fault's separate client: fills the store until a put is refused, holds, then removes.

Run by :meth:`kvtui.mooncake.ops.MooncakeCluster.fill_store` (the soak's store-full fault) as
``python -m kvtui.mooncake.filler --endpoints JSON --object-bytes N
--min-object-bytes N --max-bytes N --hold-s S --report PATH`` (a child of kvtui that dies with it, in its
network namespace). It joins the cluster without a segment (its objects land in the store's segment), puts
filler objects in batches under keys of its own (``kvtui-soak-filler/<run id>/<i>``, never a page's key):
``--object-bytes`` ones until a put returns NO_AVAILABLE_HANDLE, then objects a quarter that size, down to
``--min-object-bytes`` (the gaps big objects leave would still take pages), until a put of that size is
refused too, ``--max-bytes`` were stored or ``MAX_FILL_S`` passed (the master evicts above its watermark
while the store fills: small objects would only churn it). It then probes its objects once
(``batch_is_exist``, which grants each a read lease, so the master cannot evict them) and keeps them
``--hold-s`` seconds: the workload's puts meanwhile find the store full, and each refused put makes the
master evict its oldest unleased objects (the workload's pages). Then it removes every filler key it stored
(force: its own leases must not keep them), writes a JSON report to ``--report`` and leaves at once
(``os._exit``: a client without a segment leaves only its heartbeat). The bytes put are zeros: what a
filler holds is never read.

With ``--retry-refused`` (a store with a disk tier, the soak's disk-full fault) a refused put does not end the
fill: DRAM refuses puts with NO_AVAILABLE_HANDLE while it waits for its owner to offload evicted objects to
disk (once an offload heartbeat), so the filler waits a short back-off (``BACKOFF_S``, doubling up to
``BACKOFF_MAX_S``) and goes on with new keys until both tiers are full (DRAM refused a put, and the master's
``master_evict_disk_replica_requests_total`` rose since the fill began: the disk tier evicted to stay within its
cap; ``full`` in the report, ``disk_evicted`` how many eviction batches), ``--max-bytes`` (DRAM + disk) are stored
or ``--max-fill-s`` passed. SIGUSR1 (the soak ends) stops the fill and the hold at once: the filler removes what
it stored and leaves. DRAM frees room only as fast as its owner offloads (about 5 % of the segment, the
master's eviction ratio, per 1 s offload heartbeat), so filling a disk tier takes about 20 s per DRAM's size of
disk not yet used.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
import uuid

from kvtui.core.codes import NO_AVAILABLE_HANDLE, OBJECT_NOT_FOUND

BATCH = 8  # filler objects per batch_put_from
MAX_FILL_S = 10.0  # give up filling after this long (a store that keeps evicting as fast as it is filled)
BACKOFF_S, BACKOFF_MAX_S = 0.05, 1.0  # --retry-refused: the wait after a refused put, doubling up to the most
DISK_EVICTED = "master_evict_disk_replica_requests_total"  # the disk tier's evictions, in the master's /metrics
DISK_USED = "master_allocated_file_size_bytes"
DISK_POLL_S = 0.5  # --retry-refused: how often the master's disk evictions are read while filling


def main(argv: list[str] | None = None) -> int:
    """Fill, hold, remove, report; exit code 0 (1: the client could not be set up)."""
    from kvtui.runtime.procs import parent_death_signal

    parent_death_signal(signal.SIGKILL)
    stop = threading.Event()  # SIGUSR1: stop filling and holding, remove, leave
    signal.signal(signal.SIGUSR1, lambda _sig, _frame: stop.set())
    ap = argparse.ArgumentParser(prog="kvtui-soak-filler")
    ap.add_argument("--endpoints", required=True, help="ClusterEndpoints.as_dict() as JSON")
    ap.add_argument("--object-bytes", type=int, required=True, help="bytes of the first filler objects")
    ap.add_argument("--min-object-bytes", type=int, required=True, help="bytes of the smallest filler objects")
    ap.add_argument("--max-bytes", type=int, required=True, help="stop filling after storing this many bytes")
    ap.add_argument("--hold-s", type=float, default=1.0, help="seconds to keep the store full")
    ap.add_argument("--report", required=True, help="where the JSON report goes")
    ap.add_argument("--retry-refused", action="store_true",
                    help="a store with a disk tier: retry after a refused put (DRAM waits for an offload) until "
                         "the tier evicts (at its cap), --max-bytes are stored or --max-fill-s passed")
    ap.add_argument("--max-fill-s", type=float, default=MAX_FILL_S, help="give up filling after this many seconds")
    args = ap.parse_args(argv)
    import numpy as np

    from kvtui.mooncake.client import StoreError, open_client

    report: dict = {"stored": 0, "stored_bytes": 0, "full": False, "removed": 0, "evicted": 0, "remove_failed": 0}
    try:
        client = open_client(json.loads(args.endpoints), segment_bytes=0)
    except StoreError as exc:
        report["error"] = str(exc)
        _write(args.report, report)
        os._exit(1)
    buf = np.zeros(args.object_bytes, dtype=np.uint8)
    prefix = f"kvtui-soak-filler/{uuid.uuid4().hex[:12]}"
    stored: list[str] = []
    stored_bytes = 0
    t0 = time.monotonic()
    codes: dict[str, int] = {}
    size = args.object_bytes
    disk_before = _disk(args.endpoints) if args.retry_refused else None
    tried, backoff, polled, at_cap, refused = 0, BACKOFF_S, t0, False, False
    while stored_bytes < args.max_bytes and time.monotonic() - t0 < args.max_fill_s and not stop.is_set():
        if disk_before is not None and refused and time.monotonic() - polled >= DISK_POLL_S:
            polled, now = time.monotonic(), _disk(args.endpoints)
            if now is not None and now[0] > disk_before[0]:  # DRAM full, and the tier evicted: it is at its cap
                at_cap = True
                break
        keys = [f"{prefix}/{tried + i}" for i in range(BATCH)]
        tried += BATCH
        rcs = client.batch_put_from(keys, [buf.ctypes.data] * BATCH, [size] * BATCH)
        for k, rc in zip(keys, rcs):
            if rc == 0:
                stored.append(k)
                stored_bytes += size
            else:
                codes[str(rc)] = codes.get(str(rc), 0) + 1
        if NO_AVAILABLE_HANDLE in rcs and args.retry_refused:  # DRAM waits for an offload: wait, go on
            refused = True
            stop.wait(backoff)
            backoff = min(BACKOFF_MAX_S, backoff * 2)
            continue
        backoff = BACKOFF_S
        if NO_AVAILABLE_HANDLE in rcs:
            if size <= args.min_object_bytes:
                report["full"] = True
                break
            size = max(args.min_object_bytes, size // 4)  # fill the gaps with smaller objects
        elif all(rc != 0 for rc in rcs):  # the master is away, or the store refuses for another reason
            break
    report.update(stored=len(stored), stored_bytes=stored_bytes, codes=codes, fill_s=round(time.monotonic() - t0, 3))
    if disk_before is not None:
        disk_after = _disk(args.endpoints)
        report["full"] = at_cap or bool(disk_after and disk_after[0] > disk_before[0])
        if disk_after is not None:
            report["disk_used_bytes"] = disk_after[1]
            report["disk_evicted"] = disk_after[0] - disk_before[0]
    leased = client.batch_is_exist(stored) if stored else []
    report["leased"] = sum(1 for rc in leased if rc == 1)
    stop.wait(max(0.0, args.hold_s))
    report["stopped"] = stop.is_set()
    t1 = time.monotonic()
    for k in stored:
        rc = client.remove(k, True)
        report["removed" if rc == 0 else "evicted" if rc == OBJECT_NOT_FOUND else "remove_failed"] += 1
    report["remove_s"] = round(time.monotonic() - t1, 3)
    _write(args.report, report)
    sys.stdout.flush()
    os._exit(0)


def _disk(endpoints: str) -> tuple[int, int] | None:
    """``(the disk tier's eviction batches so far, bytes on disk)`` from the master's ``/metrics``; None when
    unknown."""
    from kvtui.mooncake.net import http_get, parse_metrics

    url = json.loads(endpoints).get("metrics_url")
    status, body = http_get(url.rstrip("/") + "/metrics", timeout_s=1.0) if url else (0, "")
    if status != 200:
        return None
    m = parse_metrics(body)
    return int(m.value(DISK_EVICTED) or 0), int(m.value(DISK_USED) or 0)


def _write(path: str, report: dict) -> None:
    tmp = f"{path}.tmp"
    with open(tmp, "w") as f:
        json.dump(report, f)
    os.replace(tmp, path)


if __name__ == "__main__":
    sys.exit(main())
