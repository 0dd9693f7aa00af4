"""How the engine runs (:class:`EngineOptions`), as plain data the commands build from their flags."""

from __future__ import annotations

from dataclasses import dataclass, field

from kvtui.core.defaults import DEFAULT_MODEL, DEFAULT_STORE_BYTES
from kvtui.core.layout import PageLayout
from kvtui.core.topology import DEFAULT_ROUTE
from kvtui.core.verify import DEFAULT_VERIFY
from kvtui.engine.cluster import ClusterOptions

SEGMENT_PLACES = ("store", "prefill", "decode")


@dataclass
class EngineOptions:
    """How the engine runs. ``segment_on``: where the store segment lives (``store``: a separate store node,
    so decode reads cross TCP; ``prefill``/``decode``: co-located with the workers of that role, each
    contributing ``store_bytes`` / their count). Sizes in bytes. ``prefill_workers`` / ``decode_workers``:
    N and M (:mod:`kvtui.core.topology`); ``concurrency``: requests in flight per decode worker; ``route``:
    how a request picks its decode worker (:class:`~kvtui.engine.routing.Router`); ``verify``: how the
    workers check a loaded page, ``full`` or ``sampled`` (:mod:`kvtui.core.verify`)."""

    layout: PageLayout
    model: str = DEFAULT_MODEL
    scheme: str = "ollama"
    namespace: str | None = None
    segment_on: str = "store"
    store_bytes: int = DEFAULT_STORE_BYTES
    concurrency: int = 1
    read_streams: int = 1
    cluster: ClusterOptions = field(default_factory=ClusterOptions)
    replace_dead_workers: bool = False  # a dead worker: rebuild the chain and go on (see Engine) instead of failing
    prefill_workers: int = 1
    decode_workers: int = 1
    route: str = DEFAULT_ROUTE
    remote_slots: int = 0  # decode workers that may join from other machines (kvtui.engine.remote)
    verify: str = DEFAULT_VERIFY
