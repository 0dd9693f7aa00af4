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
    g.add_argument("--route", choices=ROUTES, default=DEFAULT_ROUTE,
                   help="which decode worker a request goes to (default " + DEFAULT_ROUTE + "): "
                        + "; ".join(f"{k}: {v}" for k, v in ROUTE_HELP.items()))


def topology_options(args: argparse.Namespace) -> tuple[int, int, str]:
    """``(prefill workers, decode workers, route)`` of the flags; ``KvtuiError`` (one line) for a count out
    of range."""
    n = getattr(args, "prefill_workers", DEFAULT_WORKERS)
    m = getattr(args, "decode_workers", DEFAULT_WORKERS)
    try:
        check_count("--prefill-workers", n)
        check_count("--decode-workers", m)
    except ValueError as exc:
        raise KvtuiError(str(exc)) from None
    return n, m, getattr(args, "route", DEFAULT_ROUTE)


def check_segment_share(segment_on: str, store_bytes: int, page_bytes: int, n_prefill: int, n_decode: int) -> None:
    """With ``--segment-on prefill|decode`` each worker of that role contributes ``store_bytes`` / its count;
    ``KvtuiError`` (one line) when that share is below Mooncake's smallest segment or one page."""
    from kvtui.core.defaults import MIN_SEGMENT_BYTES

    share = {"prefill": n_prefill, "decode": n_decode}.get(segment_on, 1)
    if share > 1 and store_bytes // share < max(MIN_SEGMENT_BYTES, page_bytes):
        raise KvtuiError(f"--segment-on {segment_on} splits the store into {share} segments of "
                         f"{store_bytes // share} bytes, below Mooncake's smallest segment or one page; raise "
                         "--store-size or use fewer workers")
