"""The embedded store node: a process whose only job is to contribute a memory segment to the store.

Run by :class:`kvtui.engine.cluster.EmbeddedCluster` as ``python -m kvtui.engine.store_node --endpoints JSON
--segment-bytes N``. It exits (closing its client, so its keys leave the master at once) on SIGTERM,
SIGINT, or when kvtui dies (parent-death signal).
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading

from kvtui.engine.procs import parent_death_signal


def main(argv: list[str] | None = None) -> int:
    """Set up a store client owning ``--segment-bytes`` of segment and wait for a stop signal."""
    parent_death_signal(signal.SIGTERM)
    ap = argparse.ArgumentParser(prog="kvtui-store-node")
    ap.add_argument("--endpoints", required=True, help="ClusterEndpoints.as_dict() as JSON")
    ap.add_argument("--segment-bytes", type=int, required=True, help="segment size in bytes")
    args = ap.parse_args(argv)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    from kvtui.engine.store import StoreError, open_client

    try:
        client = open_client(json.loads(args.endpoints), segment_bytes=args.segment_bytes)
    except StoreError as exc:
        print(f"store node: {exc}", file=sys.stderr, flush=True)
        return 1
    print(f"store node ready: segment {args.segment_bytes} bytes", flush=True)
    try:
        while not stop.wait(0.5):
            pass
    finally:
        client.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
