"""The engine's part for decode workers on other machines (:mod:`kvtui.engine.remote`): the relay slots
provisioned at start-up, the spec a joining worker runs, and adding it to the decode workers routed to.
A mixin of :class:`kvtui.engine.engine.Engine` (it uses the engine's lock, workers, router and run state)."""

from __future__ import annotations

from kvtui.engine.protocol import Begin, Drain, Hold
from kvtui.engine.worker import WorkerSpec


def remote_name(slot: int) -> str:
    """The name of the remote decode worker in ``slot`` (``remote-0``, …)."""
    return f"remote-{slot}"


class RemoteWorkers:
    """Engine mixin. ``on_remote(handle, index)``: called when a remote worker joined (``index``: its
    decode-worker index, which its requests' results carry)."""

    on_remote = None

    def _reset_remote(self, relays: list) -> None:
        """New relay slots (``start_mesh``'s relay ends) after a (re)start: every slot free, remote workers
        forgotten (their handles were stopped with the others)."""
        for row in getattr(self, "_relays", []):
            for conn in row:
                conn.close()
        self._relays = relays
        self._remote_free = set(range(len(relays)))
        self._router.resize(len(self.decodes))

    def free_remote_slot(self) -> int | None:
        """Take a free slot for a joining worker, None when none is left (or the engine is stopping)."""
        with self._chain_lock:
            if self._stopping or not getattr(self, "_remote_free", None):
                return None
            slot = min(self._remote_free)
            self._remote_free.discard(slot)
            return slot

    def release_remote_slot(self, slot: int) -> None:
        """Give back a slot whose worker never joined."""
        with self._chain_lock:
            if slot < len(self._relays):
                self._remote_free.add(slot)

    def relay_ends(self, slot: int) -> list:
        """The parent's ends of slot ``slot``'s chain pipes, one per prefill worker (in order)."""
        return self._relays[slot]

    def remote_spec(self, slot: int) -> WorkerSpec:
        """What a remote decode worker in ``slot`` runs: the local decode workers' spec under its own name,
        no segment, counting every worker that may run (so it never trusts a probe and never pins)."""
        o = self.options
        return WorkerSpec("decode", endpoints=self.endpoints.as_dict(), layout=o.layout.as_dict(), model=o.model,
                          scheme=o.scheme, namespace=o.namespace, read_streams=o.read_streams,
                          name=remote_name(slot), decode_workers=o.decode_workers + o.remote_slots,
                          prefill_workers=o.prefill_workers)

    def add_remote(self, handle) -> None:
        """Route to the joined worker ``handle`` (a ``kvtui.engine.remote.RemoteHandle``) from the next
        request on, after sending it the run's concurrency, hold and drain; a stopping engine hangs up."""
        with self._chain_lock:
            if self._stopping or handle.slot >= len(self._relays) or handle.slot in self._remote_free:
                handle.finish_stop()
                return
            state = self._chain_state
            try:
                handle.send(Begin(state["concurrency"]))
                for msg in ([Hold(True)] if state["held"] else []) + ([Drain()] if state["drained"] else []):
                    handle.send(msg)
            except OSError:
                return
            index = len(self.decodes)
            self.decodes.append(handle)
            self._decode_load.append(0)
            self._router.resize(len(self.decodes))
        if self.on_remote is not None:
            self.on_remote(handle, index)
