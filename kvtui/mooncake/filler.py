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
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
import uuid

from kvtui.core.codes import NO_AVAILABLE_HANDLE, OBJECT_NOT_FOUND

BATCH = 8  # filler objects per batch_put_from
MAX_FILL_S = 10.0  # give up filling after this long (a store that keeps evicting as fast as it is filled)


def main(argv: list[str] | None = None) -> int:
    """Fill, hold, remove, report; exit code 0 (1: the client could not be set up)."""
    from kvtui.runtime.procs import parent_death_signal

    parent_death_signal(signal.SIGKILL)
    ap = argparse.ArgumentParser(prog="kvtui-soak-filler")
    ap.add_argument("--endpoints", required=True, help="ClusterEndpoints.as_dict() as JSON")
    ap.add_argument("--object-bytes", type=int, required=True, help="bytes of the first filler objects")
    ap.add_argument("--min-object-bytes", type=int, required=True, help="bytes of the smallest filler objects")
    ap.add_argument("--max-bytes", type=int, required=True, help="stop filling after storing this many bytes")
    ap.add_argument("--hold-s", type=float, default=1.0, help="seconds to keep the store full")
    ap.add_argument("--report", required=True, help="where the JSON report goes")
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
    while stored_bytes < args.max_bytes and time.monotonic() - t0 < MAX_FILL_S:
        keys = [f"{prefix}/{len(stored) + i}" for i in range(BATCH)]
        rcs = client.batch_put_from(keys, [buf.ctypes.data] * BATCH, [size] * BATCH)
        for k, rc in zip(keys, rcs):
            if rc == 0:
                stored.append(k)
                stored_bytes += size
            else:
                codes[str(rc)] = codes.get(str(rc), 0) + 1
        if NO_AVAILABLE_HANDLE in rcs:
            if size <= args.min_object_bytes:
                report["full"] = True
                break
            size = max(args.min_object_bytes, size // 4)  # fill the gaps with smaller objects
        elif all(rc != 0 for rc in rcs):  # the master is away, or the store refuses for another reason
            break
    report.update(stored=len(stored), stored_bytes=stored_bytes, codes=codes, fill_s=round(time.monotonic() - t0, 3))
    leased = client.batch_is_exist(stored) if stored else []
    report["leased"] = sum(1 for rc in leased if rc == 1)
    time.sleep(max(0.0, args.hold_s))
    t1 = time.monotonic()
    for k in stored:
        rc = client.remove(k, True)
        report["removed" if rc == 0 else "evicted" if rc == OBJECT_NOT_FOUND else "remove_failed"] += 1
    report["remove_s"] = round(time.monotonic() - t1, 3)
    _write(args.report, report)
    sys.stdout.flush()
    os._exit(0)


def _write(path: str, report: dict) -> None:
    tmp = f"{path}.tmp"
    with open(tmp, "w") as f:
        json.dump(report, f)
    os.replace(tmp, path)


if __name__ == "__main__":
    sys.exit(main())
