"""What every bench (``reuse``, ``trace``, ``ui``) shares: how it starts the engines it measures, and its
progress lines on stderr."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Callable


def say(msg: str) -> None:
    """One progress line of ``kvtui bench`` on stderr (``kvtui bench: msg``), flushed at once."""
    print(f"kvtui bench: {msg}", file=sys.stderr, flush=True)


@dataclass(frozen=True)
class BenchEngines:
    """How a bench starts its engines: the key naming (``model``, ``scheme``, ``namespace``), the embedded
    segment's size ``store_bytes`` (bytes), and ``start(options, endpoints) -> Engine``, which starts an
    :class:`~kvtui.engine.engine.Engine` and turns start-up failures into one-line errors (the command passes
    its own, so a bench fails the way ``kvtui run`` does)."""

    model: str
    scheme: str
    namespace: str | None
    store_bytes: int
    start: Callable

    def engine(self, layout, segment_on: str = "store", endpoints=None):
        """A started engine of ``layout``, one read stream, the segment on ``segment_on``; with ``endpoints``
        it attaches to that cluster (no segment of its own) instead of starting one."""
        from kvtui.engine.cluster import ClusterOptions
        from kvtui.engine.engine import EngineOptions

        opts = EngineOptions(layout=layout, model=self.model, scheme=self.scheme, namespace=self.namespace,
                             segment_on=segment_on, store_bytes=self.store_bytes, read_streams=1,
                             cluster=ClusterOptions())
        return self.start(opts, endpoints)
