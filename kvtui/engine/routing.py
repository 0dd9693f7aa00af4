"""Routing of requests to workers (the policies of :data:`kvtui.core.topology.ROUTES`). Pure: the engine
keeps the per-worker counts of requests under way and asks a :class:`Router` where the next one goes."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

from kvtui.core.topology import ROUTES

AFFINITY_ENTRIES = 65_536  # prefix groups remembered by prefix-affinity (least recently routed forgotten first)


def least_loaded(load: Sequence[float], start: int = 0) -> int:
    """The index of the smallest count in ``load`` (requests under way per worker), scanning from ``start``
    (mod len) so that ties rotate when ``start`` does. ``ValueError`` for an empty list."""
    if not load:
        raise ValueError("no workers to route to")
    n = len(load)
    best = start % n
    for k in range(1, n):
        i = (start + k) % n
        if load[i] < load[best]:
            best = i
    return best


class Router:
    """Picks the decode worker and the prefill worker of each request.

    ``route``: one of :data:`~kvtui.core.topology.ROUTES` (``ValueError`` otherwise); decode workers by it,
    prefill workers always least-loaded with ties taken in turn. :meth:`route` takes the request's first
    page key (its prefix group: requests sharing a first page share a prefix; None for a request without a
    full page) and the per-worker counts of requests under way, and returns ``(decode index, prefill index)``.
    """

    def __init__(self, route: str, decode_workers: int, prefill_workers: int):
        if route not in ROUTES:
            raise ValueError(f"--route must be one of {', '.join(ROUTES)}, got {route!r}")
        self.route_name = route
        self.m, self.n = int(decode_workers), int(prefill_workers)
        self._turn = 0  # requests routed so far
        self._affinity: OrderedDict[str, int] = OrderedDict()  # prefix group (first page key) → decode worker
        self._groups = [0] * self.m  # prefix groups assigned to each decode worker
        self.affinity_hits = 0  # prefix-affinity: requests sent where their prefix group went before

    def resize(self, decode_workers: int) -> None:
        """The decode workers are now ``decode_workers`` (a remote one joined, or the workers were rebuilt
        without the remote ones): groups of workers gone are forgotten."""
        self.m = int(decode_workers)
        self._groups = (self._groups + [0] * self.m)[: self.m]
        for key in [k for k, w in self._affinity.items() if w >= self.m]:
            del self._affinity[key]

    def route(self, first_key: str | None, decode_load: list[int], prefill_load: list[int]) -> tuple[int, int]:
        """``(decode index, prefill index)`` for the next request (see the class)."""
        turn, self._turn = self._turn, self._turn + 1
        prefill = least_loaded(prefill_load, turn)
        if self.m == 1:
            return 0, prefill
        if self.route_name == "round-robin":
            return turn % self.m, prefill
        if self.route_name == "prefix-affinity" and first_key is not None:
            known = self._affinity.get(first_key)
            if known is not None:
                self._affinity.move_to_end(first_key)
                self.affinity_hits += 1
                return known, prefill
            fewest = min(self._groups)  # a new group: to a worker with the fewest groups, then the least loaded
            decode = least_loaded([load if g == fewest else float("inf") for g, load in zip(self._groups, decode_load)],
                                  turn)
            self._affinity[first_key] = decode
            self._groups[decode] += 1
            if len(self._affinity) > AFFINITY_ENTRIES:
                self._groups[self._affinity.popitem(last=False)[1]] -= 1
            return decode, prefill
        return least_loaded(decode_load, turn), prefill
