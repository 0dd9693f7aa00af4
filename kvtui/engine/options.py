"""How the request pipeline runs (:class:`EngineOptions`): one frozen object, made once from the plan, that
travels unchanged to every worker, local or remote (:class:`~kvtui.engine.worker.WorkerSpec` carries it)."""

from __future__ import annotations

from dataclasses import dataclass

from kvtui.core.defaults import DEFAULT_MODEL, DEFAULT_STORE_BYTES
from kvtui.core.engine_api import BadOption
from kvtui.core.layout import PageLayout
from kvtui.core.topology import DEFAULT_ROUTE, ROUTES
from kvtui.core.units import split_bytes
from kvtui.core.verify import DEFAULT_VERIFY, VERIFY_MODES

SEGMENT_PLACES = ("store", "prefill", "decode")


@dataclass(frozen=True)
class EngineOptions:
    """How the engine runs. ``segment_on``: where the store segment lives (``store``: a separate store node,
    so decode reads cross TCP; ``prefill``/``decode``: co-located with the workers of that role, each
    contributing ``store_bytes`` / their count). Sizes in bytes. ``prefill_workers`` / ``decode_workers``:
    N and M (:mod:`kvtui.core.topology`); ``concurrency``: requests in flight per decode worker;
    ``read_streams``: concurrent reads per reload; ``route``: how a request picks its decode worker
    (:class:`~kvtui.engine.routing.Router`); ``remote_slots``: decode and prefill workers that may join from
    other machines (:mod:`kvtui.engine.remote`); ``replace_dead_workers``: a dead worker is rebuilt and the run
    goes on instead of failing; ``verify``: how the workers check a loaded page, ``full`` or ``sampled``
    (:mod:`kvtui.core.verify`); ``ack_ledger``: the engine keeps every page key a put acknowledged
    (:class:`~kvtui.engine.ledger.PublishedLedger`, ``Engine.published``) for a loss check after a fault (always
    with an HA cluster). :class:`~kvtui.core.engine_api.BadOption` for a value out of its set."""

    layout: PageLayout
    model: str = DEFAULT_MODEL
    scheme: str = "ollama"
    namespace: str | None = None
    segment_on: str = "store"
    store_bytes: int = DEFAULT_STORE_BYTES
    concurrency: int = 1
    read_streams: int = 1
    replace_dead_workers: bool = False
    prefill_workers: int = 1
    decode_workers: int = 1
    route: str = DEFAULT_ROUTE
    remote_slots: int = 0
    verify: str = DEFAULT_VERIFY
    ack_ledger: bool = False

    def __post_init__(self) -> None:
        for name, allowed in (("segment_on", SEGMENT_PLACES), ("route", ROUTES), ("verify", VERIFY_MODES)):
            if getattr(self, name) not in allowed:
                raise BadOption(name, getattr(self, name), allowed)

    def segment_share(self, role: str, index: int = 0) -> int:
        """Bytes of segment ``role`` worker ``index`` contributes (0 unless the segment is on that role's
        workers): ``store_bytes`` split over them to the byte (:func:`~kvtui.core.units.split_bytes`)."""
        if self.segment_on != role:
            return 0
        count = self.prefill_workers if role == "prefill" else self.decode_workers
        return split_bytes(self.store_bytes, count)[index]
