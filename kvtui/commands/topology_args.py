"""The worker-topology flags shared by the commands that start an engine (``--prefill-workers``,
``--decode-workers``, ``--route``; :mod:`kvtui.core.topology`)."""

from __future__ import annotations

import argparse

from kvtui.core.errors import KvtuiError
from kvtui.core.topology import DEFAULT_ROUTE, DEFAULT_WORKERS, MAX_WORKERS, ROUTE_HELP, ROUTES, check_count


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
