"""What every bench (``reuse``, ``trace``, ``ui``, ``tcp-sweep``) shares: how it starts the engines it
measures, its progress lines on stderr, the environment its figures depend on, and the rule that stops it
on a broken store (:class:`BrokenStoreWatch`)."""

from __future__ import annotations

import collections
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypedDict

from kvtui.core.codes import BROKEN_STORE_CODES, code_name
from kvtui.core.events import RequestResult
from kvtui.core.text import line_width, wrap

if TYPE_CHECKING:
    from kvtui.core.layout import PageLayout
    from kvtui.engine.engine import Engine
    from kvtui.engine.options import EngineOptions
    from kvtui.engine.workers import WorkerHandle
    from kvtui.launch import Stack
    from kvtui.mooncake.client import ClusterEndpoints
    from kvtui.mooncake.cluster import ClusterOptions
    from workload import WorkloadSpec

    StartStack = Callable[[EngineOptions, ClusterOptions | ClusterEndpoints], Stack]


class Environment(TypedDict):
    """What a bench's figures depend on (:func:`environment`): CPU ``cores`` (None when unknown), the Mooncake
    wheel's version (``mooncake``) and the ``MC_*`` settings in force for the store clients (``mc_settings``)."""

    cores: int | None
    mooncake: str
    mc_settings: dict[str, str]


class BenchInputs(TypedDict, total=False):
    """What ``kvtui bench`` adds to every bench's figures (:mod:`kvtui.commands.bench`), the inputs ``kvtui compare``
    says when two runs differ in them: ``verify`` (how the decode workers checked loaded pages), ``round_count``
    (``--rounds`` of the benches that alternate their sides) and ``synthesis`` (the trace synthesis flags given,
    ``workload.synthesis.Synthesis.as_dict()``)."""

    verify: str
    round_count: int
    synthesis: dict[str, Any]


def say(msg: str) -> None:
    """One progress line of ``kvtui bench`` on stderr (``kvtui bench: msg``), flushed at once, wrapped to the
    terminal's width (100 columns when stderr is not a terminal: :func:`kvtui.core.text.line_width`), the lines
    after the first indented."""
    text = "\n".join(wrap(msg, line_width(sys.stderr), "kvtui bench: ", "  "))
    print(text, file=sys.stderr, flush=True)


@dataclass(frozen=True)
class BenchEngines:
    """How a bench starts its engines: the key naming (``model``, ``scheme``, ``namespace``), the embedded
    segment's size ``store_bytes`` (bytes), and ``start(options, cluster) -> Stack``, which starts a cluster
    and an engine over it (:func:`kvtui.launch.start_engine`: start-up failures become one-line errors, so a
    bench fails the way ``kvtui run`` does); ``verify``: how its decode workers check loaded pages
    (``--verify``: ``full`` or ``sampled``, :mod:`kvtui.core.verify`)."""

    model: str
    scheme: str
    namespace: str | None
    store_bytes: int
    start: StartStack
    verify: str = "full"

    def options(self, layout: PageLayout, segment_on: str = "store", **changes: Any) -> EngineOptions:
        """The :class:`~kvtui.engine.options.EngineOptions` of a bench engine of ``layout``: one read stream,
        the segment on ``segment_on``, then ``changes``."""
        from kvtui.engine.options import EngineOptions

        return EngineOptions(layout=layout, model=self.model, scheme=self.scheme, namespace=self.namespace,
                             segment_on=segment_on, store_bytes=self.store_bytes, read_streams=1, verify=self.verify,
                             **changes)

    def engine(self, layout: PageLayout, segment_on: str = "store", endpoints: ClusterEndpoints | None = None,
               cluster: ClusterOptions | None = None, worker_client: str = "dummy") -> Stack:
        """A started :class:`~kvtui.launch.Stack` (an engine of :meth:`options` over its cluster); with
        ``endpoints`` it attaches to that cluster (no segment of its own) instead of starting one. ``cluster``:
        the embedded cluster's :class:`~kvtui.mooncake.cluster.ClusterOptions` (default ones, with
        ``worker_client``: ``dummy``, the default of ``kvtui watch``/``run`` for this setup, or ``real``, the TCP
        path; a segment on the workers is always ``real``, :data:`~kvtui.mooncake.cluster.WORKER_CLIENTS`)."""
        from kvtui.mooncake.cluster import ClusterOptions

        if cluster is None:
            cluster = ClusterOptions(worker_client=worker_client if segment_on == "store" else "real")
        return self.start(self.options(layout, segment_on), endpoints if endpoints is not None else cluster)


def first_workers(engine: Engine) -> tuple[WorkerHandle, WorkerHandle]:
    """``(prefill, decode)``: the first prefill and the first decode worker of a started ``engine``, which a bench
    sends its commands; ``WorkerError`` when one is missing (its workers are being rebuilt)."""
    from kvtui.core.engine_api import WorkerError

    if engine.prefill is None or engine.decode is None:
        raise WorkerError("the bench's engine has no prefill or no decode worker")
    return engine.prefill, engine.decode


def default_workload(layout: PageLayout) -> WorkloadSpec:
    """``kvtui watch``'s default workload for ``layout``: the first scenario, the knobs' defaults, prompts of
    the default length, seed 0 (a ``workload.WorkloadSpec``)."""
    from kvtui.core.defaults import DEFAULT_PROMPT_PAGES
    from kvtui.core.knobs import DEFAULT_SCENARIO, OVERLAP, POOL
    from workload import WorkloadSpec

    return WorkloadSpec(scenario=DEFAULT_SCENARIO, overlap=OVERLAP.default, pool=int(POOL.default),
                        prompt_tokens=DEFAULT_PROMPT_PAGES * layout.page_tokens, page_tokens=layout.page_tokens, seed=0)


def environment(endpoints: ClusterEndpoints | None) -> Environment:
    """What the figures depend on: CPU cores, the Mooncake wheel's version, and the ``MC_*`` settings in force
    for the store clients (kvtui's defaults for the processes it starts, then the user's environment)."""
    from importlib import metadata

    version = "unknown"
    for dist in ("mooncake-transfer-engine-non-cuda", "mooncake-transfer-engine"):
        try:
            version = f"{dist} {metadata.version(dist)}"
            break
        except metadata.PackageNotFoundError:
            continue
    mc = dict(getattr(endpoints, "client_env", ()) or ())
    mc.update({k: v for k, v in os.environ.items() if k.startswith("MC_")})
    return {"cores": os.cpu_count(), "mooncake": version, "mc_settings": dict(sorted(mc.items()))}


class BrokenStoreWatch:
    """Watches the ``RequestResult`` s a bench measures for answers of a broken store
    (:data:`~kvtui.core.codes.BROKEN_STORE_CODES`: the master or, for dummy workers, the store node stopped
    answering). A ``kvtui run`` waits such an outage out; a bench cannot measure across one, so it stops.
    ``count(result)`` counts one result (a :class:`~kvtui.live.LiveSession` results subscriber), ``add(result)``
    counts it and says whether any was broken so far (for a driver's ``on_result``, which stops on it);
    :meth:`check` raises ``StoreError`` naming ``what`` met it."""

    def __init__(self) -> None:
        self.down: collections.Counter[str] = collections.Counter()  # {code name: answers}

    def count(self, result: RequestResult) -> None:
        self.down.update({code_name(c): n for c, n in result.codes.items() if c in BROKEN_STORE_CODES})

    def add(self, result: RequestResult) -> bool:
        self.count(result)
        return bool(self.down)

    def check(self, what: str) -> None:
        """``StoreError`` ("WHAT met a broken store (N NAME answers …)") when a result counted was broken."""
        if self.down:
            from kvtui.mooncake.client import StoreError

            name, n = self.down.most_common(1)[0]
            raise StoreError(f"{what} met a broken store ({n} {name} answers: the master or the store node stopped "
                             "answering); its figures would be void")
