"""The worker topology, each fact defined once: how many prefill and decode workers may run, how a request
is routed to a decode worker, and what each worker is called (process names, emulated hosts, logs, the
Workers panel, ``--json``). Pure; importable without Textual or Mooncake.

A run has N prefill and M decode workers, each its own process with its own store client. Every decode
worker is joined to every prefill worker (a full mesh of chain pipes, :mod:`kvtui.engine.protocol`); the
engine picks a decode worker per request with the ``--route`` policy (:mod:`kvtui.engine.routing`) and
the prefill worker with the fewest requests under way.
"""

from __future__ import annotations

MAX_WORKERS = 8  # per role: beyond this, workers contend for a few cores instead of exercising the store
DEFAULT_WORKERS = 1
REMOTE_SLOTS = 4  # decode workers that may join from other machines (--listen): relay pipes provisioned per slot
ROUTES = ("round-robin", "least-loaded", "prefix-affinity")
DEFAULT_ROUTE = "round-robin"
ROUTE_HELP = {
    "round-robin": "request k goes to decode worker k mod M",
    "least-loaded": "to the decode worker with the fewest requests under way (lowest index on a tie)",
    "prefix-affinity": "to the decode worker that last served the request's first page (its prefix group), "
                       "so that worker's segment (--segment-on decode) holds the prefix and the reload is "
                       "local; a prefix group seen for the first time goes to the worker with the fewest groups "
                       "(then the least loaded)",
}


def worker_name(role: str, index: int, count: int) -> str:
    """The name of worker ``index`` (from 0) of ``count`` workers of ``role``: the role alone when it is the
    only one (``decode``), else role and index (``decode-0``, ``decode-1``). ``ValueError`` for an index
    out of range."""
    if not 0 <= index < count:
        raise ValueError(f"worker index {index} out of range for {count} {role} workers")
    return role if count == 1 else f"{role}-{index}"


def worker_names(role: str, count: int) -> list[str]:
    """The names of all ``count`` workers of ``role`` (:func:`worker_name`)."""
    return [worker_name(role, i, count) for i in range(count)]


def role_of(name: str) -> str:
    """The role of a process name from :func:`worker_name` (``decode-2`` → ``decode``); other names as
    they are."""
    base, _, index = name.rpartition("-")
    return base if base and index.isdigit() else name


def check_count(flag: str, n: int) -> None:
    """``ValueError`` (one line naming ``flag``) unless 1 ≤ ``n`` ≤ :data:`MAX_WORKERS`."""
    if not 1 <= n <= MAX_WORKERS:
        raise ValueError(f"{flag} must be within 1-{MAX_WORKERS}, got {n}")
