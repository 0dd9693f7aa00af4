"""The relay slots through which workers on other machines join (:mod:`kvtui.engine.remote`), and the spec a
joining worker runs.

:class:`RemoteSlots` is the bookkeeping of one set of slots: the parent's relay ends of each slot that
``start_mesh`` provisioned (``relays``) and which slots are free. The engine owns one per started chain (a
rebuilt chain gets new relays: a new object) and calls it under its chain lock; it holds no lock itself.

Indexes: a local decode worker's chain pipes are ordered prefill 0..N-1, then one per prefill slot, so a remote
prefill worker in slot s is chain index N + s (``Submit.prefill``). A remote decode worker has chains to the
local prefill workers only, so its requests are published by one of them.
"""

from __future__ import annotations

from kvtui.engine.options import EngineOptions
from kvtui.engine.worker import WorkerSpec

ROLES = ("decode", "prefill")


def remote_name(role: str, slot: int) -> str:
    """The name of the remote ``role`` worker in ``slot`` (``remote-decode-0``, ``remote-prefill-0``, …)."""
    return f"remote-{role}-{slot}"


class RemoteSlots:
    """The relay slots of one chain. ``relays``: ``{role: [slot's parent ends (one per local worker of the
    other role, in order)]}``, empty when the engine provisions none."""

    def __init__(self, relays: dict | None = None) -> None:
        self._relays: dict = dict(relays or {})
        self._free = {role: set(range(len(self._relays.get(role, ())))) for role in ROLES}

    def take(self, role: str) -> int | None:
        """Take the lowest free ``role`` slot for a joining worker; None when none is left."""
        free = self._free.get(role)
        if not free:
            return None
        slot = min(free)
        free.discard(slot)
        return slot

    def give_back(self, slot: int, role: str) -> None:
        """Free ``slot`` again (its worker never joined); a slot of other relays is ignored."""
        if slot < len(self._relays.get(role, ())):
            self._free[role].add(slot)

    def taken(self, slot: int, role: str) -> bool:
        """Whether ``slot`` is one of these relays' ``role`` slots and was taken (:meth:`take`)."""
        return slot < len(self._relays.get(role, ())) and slot not in self._free[role]

    def ends(self, slot: int, role: str) -> list:
        """The parent's ends of ``role`` slot ``slot``'s chain pipes: one per local prefill worker for a decode
        slot, one per local decode worker for a prefill slot (in order); ``KeyError`` / ``IndexError`` for a
        slot these relays do not have."""
        return self._relays[role][slot]

    def close(self) -> None:
        """Close every relay end and free no slot from now on (the chain they belonged to is gone)."""
        for rows in self._relays.values():
            for row in rows:
                for conn in row:
                    conn.close()
        self._relays = {}
        self._free = {role: set() for role in ROLES}


def remote_chains(options: EngineOptions, role: str) -> int:
    """How many chain connections a remote ``role`` worker opens (the local workers of the other role)."""
    return options.prefill_workers if role == "decode" else options.decode_workers


def remote_spec(options: EngineOptions, endpoints: dict, slot: int, role: str) -> WorkerSpec:
    """What a remote ``role`` worker in ``slot`` runs: the run's ``options`` unchanged (the cluster's
    ``endpoints`` as a dict) under its own name, no segment, counting every worker that may run."""
    return WorkerSpec(role, options, endpoints, name=remote_name(role, slot), remote=True)
