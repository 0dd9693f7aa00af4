"""The engine's part for workers on other machines (:mod:`kvtui.engine.remote`): the relay slots provisioned
at start-up (``start_mesh``'s ``relays``), the spec a joining worker runs, and adding it to the workers the
engine routes to. A mixin of :class:`kvtui.engine.engine.Engine` (it uses the engine's lock, workers, router
and run state).

Indexes: a local decode worker's chain pipes are ordered prefill 0..N-1, then one per prefill slot, so a remote
prefill worker in slot s is chain index N + s (``Submit.prefill``); :attr:`prefill_peers` maps each entry of
``Engine.prefills`` to its chain index. A remote decode worker has chains to the local prefill workers only,
so its requests are published by one of them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from kvtui.engine.protocol import Begin, Drain, Hold
from kvtui.engine.worker import WorkerSpec

if TYPE_CHECKING:
    import threading

    from kvtui.engine.cluster import ClusterEndpoints
    from kvtui.engine.options import EngineOptions
    from kvtui.engine.routing import Router
    from kvtui.engine.workers import WorkerHandle

ROLES = ("decode", "prefill")


def remote_name(role: str, slot: int) -> str:
    """The name of the remote ``role`` worker in ``slot`` (``remote-decode-0``, ``remote-prefill-0``, …)."""
    return f"remote-{role}-{slot}"


class RemoteWorkers:
    """Engine mixin. ``on_remote(handle, index)``: called when a remote worker joined (``index``: its index
    among the engine's workers of its role, which its requests' results carry)."""

    on_remote: Callable[[WorkerHandle, int], None] | None = None

    # the engine's, which this mixin uses
    options: EngineOptions
    endpoints: ClusterEndpoints | None
    prefills: list[WorkerHandle]
    decodes: list[WorkerHandle]
    _router: Router
    _chain_lock: threading.RLock
    _stopping: bool
    _chain_state: dict[str, int]
    _decode_load: list[int]
    _prefill_load: list[int]
    _results: list

    def _reset_remote(self, relays: dict) -> None:
        """New relay slots (``start_mesh``'s relay ends) after a (re)start: every slot free, remote workers
        forgotten (their handles were stopped with the others)."""
        for rows in getattr(self, "_relays", {}).values():
            for row in rows:
                for conn in row:
                    conn.close()
        self._relays = relays
        self._remote_free = {role: set(range(len(relays.get(role, ())))) for role in ROLES}
        self.prefill_peers = list(range(len(self.prefills)))
        self._router.resize(len(self.decodes))

    def _close_relays(self) -> None:
        self._reset_remote({})

    def free_remote_slot(self, role: str = "decode") -> int | None:
        """Take a free ``role`` slot for a joining worker, None when none is left (or the engine is stopping)."""
        with self._chain_lock:
            free = getattr(self, "_remote_free", {}).get(role)
            if self._stopping or not free:
                return None
            slot = min(free)
            free.discard(slot)
            return slot

    def release_remote_slot(self, slot: int, role: str = "decode") -> None:
        """Give back a slot whose worker never joined."""
        with self._chain_lock:
            if slot < len(self._relays.get(role, ())):
                self._remote_free[role].add(slot)

    def relay_ends(self, slot: int, role: str = "decode") -> list:
        """The parent's ends of ``role`` slot ``slot``'s chain pipes: one per local prefill worker for a decode
        slot, one per local decode worker for a prefill slot (in order)."""
        return self._relays[role][slot]

    def remote_chains(self, role: str) -> int:
        """How many chain connections a remote ``role`` worker opens (the local workers of the other role)."""
        return self.options.prefill_workers if role == "decode" else self.options.decode_workers

    def remote_spec(self, slot: int, role: str = "decode") -> WorkerSpec:
        """What a remote ``role`` worker in ``slot`` runs: the local workers' spec under its own name, no
        segment, counting every worker that may run (so it never trusts a probe and never pins)."""
        o = self.options
        assert self.endpoints is not None  # the engine has started
        return WorkerSpec(role, endpoints=self.endpoints.as_dict(), layout=o.layout.as_dict(), model=o.model,
                          scheme=o.scheme, namespace=o.namespace,
                          read_streams=o.read_streams if role == "decode" else 1,
                          name=remote_name(role, slot), decode_workers=o.decode_workers + o.remote_slots,
                          prefill_workers=o.prefill_workers + o.remote_slots)

    def add_remote(self, handle, results=None) -> None:
        """Route to the joined worker ``handle`` (a ``kvtui.engine.remote.RemoteHandle``; a prefill worker
        comes with its ``results`` connection) from the next request on, after sending it the run's
        concurrency (and a decode worker the hold and drain); a stopping engine hangs up."""
        role = handle.spec.role
        with self._chain_lock:
            rows = self._relays.get(role, ())
            if self._stopping or handle.slot >= len(rows) or handle.slot in self._remote_free[role]:
                handle.finish_stop()
                return
            state = self._chain_state
            try:
                handle.send(Begin(state["concurrency"]))
                if role == "decode":
                    for msg in ([Hold(True)] if state["held"] else []) + ([Drain()] if state["drained"] else []):
                        handle.send(msg)
            except OSError:
                return
            if role == "decode":
                index = len(self.decodes)
                self.decodes.append(handle)
                self._decode_load.append(0)
                self._router.resize(len(self.decodes))
            else:
                index = len(self.prefills)
                self.prefills.append(handle)
                self._prefill_load.append(0)
                self._results.append(results)
                self.prefill_peers.append(self.options.prefill_workers + handle.slot)
        if self.on_remote is not None:
            self.on_remote(handle, index)
