"""The embedded store node: a process whose only job is to contribute a memory segment to the store.

Run by :class:`kvtui.mooncake.cluster.EmbeddedCluster` as ``python -m kvtui.mooncake.store_node --endpoints JSON
--segment-bytes N [--name store-1]`` (one per ``--store-nodes``). It exits (closing its client, so its keys leave the
master at once; within :data:`CLOSE_TIMEOUT_S` whatever the master does; at once, without closing, in an HA
cluster) on SIGTERM or SIGINT, and at once when kvtui
dies (parent-death SIGKILL).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import sys
import threading

from kvtui.runtime.procs import parent_death_signal

CLOSE_TIMEOUT_S = 10.0
"""Seconds a stopping store node waits for its store client to close before it exits anyway."""


def main(argv: list[str] | None = None) -> int:
    """Set up a store client owning ``--segment-bytes`` of segment and wait for a stop signal."""
    parent_death_signal(signal.SIGKILL)  # kvtui gone: its embedded master goes too, nothing to unmount from
    ap = argparse.ArgumentParser(prog="kvtui-store-node")
    ap.add_argument("--endpoints", required=True, help="ClusterEndpoints.as_dict() as JSON")
    ap.add_argument("--segment-bytes", type=int, required=True, help="segment size in bytes")
    ap.add_argument("--name", default="store", help="the node's name (store, store-0, …: its emulated host)")
    ap.add_argument("--disk", action="store_true",
                    help="offload to a disk tier (its MOONCAKE_OFFLOAD_* settings in the environment)")
    args = ap.parse_args(argv)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    from kvtui.mooncake.client import StoreError, is_etcd, open_client, probe_tcp, split_hostport

    endpoints = json.loads(args.endpoints)
    try:
        client = open_client(endpoints, segment_bytes=args.segment_bytes, role=args.name, offload=args.disk)
    except StoreError as exc:
        print(f"store node: {exc}", file=sys.stderr, flush=True)
        return 1
    print(f"store node ready: segment {args.segment_bytes} bytes", flush=True)
    try:
        while not stop.wait(0.5):
            pass
    finally:
        # closing unmounts the segment through the master. With the master dead that takes seconds or never
        # ends, in a native call holding the GIL (so no Python timeout can fire), and the store node would
        # outlive its kvtui. Skip it when the master is unreachable; otherwise SIGALRM's default
        # action (no handler, no GIL needed) ends the process if the close outlasts CLOSE_TIMEOUT_S.
        # A client of an HA cluster is not closed at all: its close waits ~30 s for a master-view change
        # (kvtui.mooncake.client), and the masters drop its segment after client_ttl anyway.
        if is_etcd(endpoints["master"]):
            os._exit(0)
        host, port = split_hostport(endpoints["master"])
        if not probe_tcp(host, port, timeout_s=0.5):
            print("store node: the master is gone; exiting without unmounting", file=sys.stderr, flush=True)
            os._exit(0)
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
        signal.alarm(int(math.ceil(CLOSE_TIMEOUT_S)))
        client.close()
        signal.alarm(0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
