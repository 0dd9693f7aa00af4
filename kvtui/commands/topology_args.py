"""The worker-topology flags shared by the commands that start an engine (``--prefill-workers``,
``--decode-workers``, ``--route``; :mod:`kvtui.core.topology`)."""

from __future__ import annotations

import argparse

from kvtui.core.errors import KvtuiError
from kvtui.core.topology import DEFAULT_ROUTE, DEFAULT_WORKERS, MAX_WORKERS, ROUTE_HELP, ROUTES, check_count
from kvtui.engine.cluster import WORKER_CLIENTS

DEFAULT_WORKER_CLIENT = "auto"
"""``--worker-client``'s default (:data:`~kvtui.engine.cluster.WORKER_CLIENTS`, or ``auto``)."""


def add_topology_arguments(p: argparse.ArgumentParser) -> None:
    """Add the group of worker flags to a command's parser."""
    g = p.add_argument_group("workers (N prefill × M decode processes, each with its own store client)")
    g.add_argument("--prefill-workers", type=int, default=DEFAULT_WORKERS, metavar="N",
                   help=f"prefill worker processes, 1-{MAX_WORKERS} (default {DEFAULT_WORKERS}); each request's "
                        "publish goes to the one with the fewest requests under way")
    g.add_argument("--decode-workers", type=int, default=DEFAULT_WORKERS, metavar="M",
                   help=f"decode worker processes, 1-{MAX_WORKERS} (default {DEFAULT_WORKERS}); --concurrency is "
                        "per decode worker, so M × --concurrency requests are in flight in all")
    g.add_argument("--store-nodes", type=int, default=DEFAULT_WORKERS, metavar="K",
                   help=f"embedded, with --segment-on store: store node processes, 1-{MAX_WORKERS} (default "
                        f"{DEFAULT_WORKERS}), each contributing an equal share of --store-size (with --hosts auto, "
                        "each on a host of its own); Mooncake's allocator spreads the pages over them")
    g.add_argument("--worker-client", choices=("auto", *WORKER_CLIENTS), default=DEFAULT_WORKER_CLIENT,
                   help="how the workers join an embedded store: dummy: as dummy clients of the wheel's "
                        "standalone real client (mooncake_client), which owns the segment, so pages move "
                        "through shared memory on this host; real: each worker is a real client and pages "
                        "cross TCP from a store node; auto: dummy where it is exact (embedded, --segment-on "
                        "store, one store node, no --hosts, one prefill worker: the only writer), else real "
                        f"(default {DEFAULT_WORKER_CLIENT})")
    g.add_argument("--route", choices=ROUTES, default=DEFAULT_ROUTE,
                   help="which decode worker a request goes to (default " + DEFAULT_ROUTE + "): "
                        + "; ".join(f"{k}: {v}" for k, v in ROUTE_HELP.items()))


def topology_options(args: argparse.Namespace) -> tuple[int, int, str, int]:
    """``(prefill workers, decode workers, route, store nodes)`` of the flags; ``KvtuiError`` (one line) for
    a count out of range, and for ``--store-nodes`` above 1 without an embedded ``--segment-on store``."""
    n = getattr(args, "prefill_workers", DEFAULT_WORKERS)
    m = getattr(args, "decode_workers", DEFAULT_WORKERS)
    k = getattr(args, "store_nodes", DEFAULT_WORKERS)
    try:
        check_count("--prefill-workers", n)
        check_count("--decode-workers", m)
        check_count("--store-nodes", k)
    except ValueError as exc:
        raise KvtuiError(str(exc)) from None
    if k > 1 and (getattr(args, "segment_on", "store") != "store" or getattr(args, "master", None)):
        raise KvtuiError("--store-nodes starts embedded store nodes: it needs --segment-on store and no --master")
    return n, m, getattr(args, "route", DEFAULT_ROUTE), k


def check_segment_share(segment_on: str, store_bytes: int, page_bytes: int, n_prefill: int, n_decode: int,
                        store_nodes: int = 1) -> None:
    """Each process of the segment's place (``--segment-on``: the store nodes, or the workers of that role)
    contributes ``store_bytes`` / their count; ``KvtuiError`` (one line) when that share is below
    Mooncake's smallest segment or one page."""
    from kvtui.core.defaults import MIN_SEGMENT_BYTES

    share = {"prefill": n_prefill, "decode": n_decode, "store": store_nodes}.get(segment_on, 1)
    if share > 1 and store_bytes // share < max(MIN_SEGMENT_BYTES, page_bytes):
        flag = f"--store-nodes {share}" if segment_on == "store" else f"--segment-on {segment_on}"
        raise KvtuiError(f"{flag} splits the store into {share} segments of {store_bytes // share / 2**20:g} MiB, "
                         f"below Mooncake's smallest segment ({MIN_SEGMENT_BYTES >> 20} MiB) or one page "
                         f"({page_bytes / 2**20:g} MiB); raise --store-size or use fewer")


def worker_client(args: argparse.Namespace, attached: bool, n_prefill: int, store_nodes: int, hosts: bool) -> str:
    """``--worker-client`` resolved to ``real`` or ``dummy``. A dummy client needs the standalone real client
    on its own host and gives up exact publish accounting between writers (its put sessions answer
    INVALID_PARAMS, :meth:`kvtui.engine.store.StoreClient.batch_put_if_absent`), so ``dummy`` is refused in
    one line (``KvtuiError``) and ``auto`` gives ``real`` unless the store is embedded, on a store node of
    its own (one), without emulated hosts, and published by one prefill worker."""
    choice = getattr(args, "worker_client", DEFAULT_WORKER_CLIENT)
    why = ("--master (an attached cluster)" if attached
           else f"--segment-on {args.segment_on}" if getattr(args, "segment_on", "store") != "store"
           else f"--store-nodes {store_nodes}" if store_nodes != 1 else "--hosts auto" if hosts
           else f"--prefill-workers {n_prefill} (several writers)" if n_prefill != 1 else "")
    if choice == "dummy" and why:
        raise KvtuiError(f"--worker-client dummy needs an embedded store on one store node of this host and one "
                         f"prefill worker; drop {why} or use --worker-client real")
    return "real" if choice == "real" or why else "dummy"
