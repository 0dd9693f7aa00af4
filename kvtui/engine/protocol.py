"""The messages on the worker pipes: one frozen type per message, grouped by pipe.

Three kinds of ``multiprocessing`` pipe connect the parent and the workers. Every message is pickled,
so each is a small frozen dataclass of plain data, page layouts and the connector's result dataclasses
(:class:`~kvtui.engine.connector.ReloadResult`, :class:`~kvtui.engine.connector.PublishResult`); no
Mooncake object ever crosses a process boundary. Receivers dispatch on the message's type. Times are
``time.monotonic()`` seconds (one clock for every process of the machine), durations ms, sizes bytes.

**Command pipe** (parent ↔ each worker). A worker first answers :class:`Ready` or :class:`Failed`. The
*answered* commands (:data:`ANSWERED`) get exactly one :class:`Ok` or :class:`Failed` each, in order. The
*chain* commands (:data:`CHAIN`: :class:`Submit`, :class:`Hold`, :class:`Drain`, :class:`Begin`) drive the
request chain and get no answer.

**Chain pipes** (decode ↔ prefill): one between every decode and every prefill worker (N prefill × M decode
workers: a full mesh, :mod:`kvtui.core.topology`). For each submitted request, decode waits until fewer than the run's
concurrency are between their reload and the end of their publish, reloads, and sends :class:`PublishRest`.
Prefill publishes, sends the request's :class:`RequestDone` to the parent and then, when decode waits for it
(``needs_ack``), :class:`Ack` back (in that order: at concurrency 1 the parent's next :class:`Submit` and the
:class:`Ack` then reach decode close together, one wake-up rather than two). Decode also sends
:class:`RequestDropped` and :class:`RequestFailed`, which prefill passes on to the parent unchanged.

**Results pipe** (one per prefill worker → parent): :class:`RequestDone`, :class:`RequestDropped` or
:class:`RequestFailed` per request it was handed, in the order its decode workers handed them (submission
order with one decode worker); :class:`RequestFailed` with ``seq`` None when a decode worker died. With one
prefill and one decode worker and none remote, decode writes the pipe too: at concurrency 1 it reports a
request prefill would make no store call for (no page to put) itself, as :class:`RequestDone`, instead of
a :class:`PublishRest` that prefill would only relay; the order stays the submission order (decode reports
only with no publish of its own under way). The bytes on every pipe: :mod:`kvtui.engine.wire`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

    from kvtui.core.layout import PageLayout
    from kvtui.engine.connector import PublishResult, ReloadResult


# ---- command pipe, parent → worker: answered commands --------------------------------------------------
@dataclass(frozen=True, slots=True)
class Reload:
    """Reload the cached leading run of ``tokens`` (its first ``cacheable_tokens``, None: all full pages).
    Answer: :class:`Ok` of a ``ReloadResult``."""

    tokens: np.ndarray
    cacheable_tokens: int | None = None


@dataclass(frozen=True, slots=True)
class Publish:
    """Publish the absent pages of ``tokens`` from page ``start_page`` on (prefill or mixed only; a decode
    worker answers :class:`Failed`). Answer: :class:`Ok` of a ``PublishResult``."""

    tokens: np.ndarray
    cacheable_tokens: int | None = None
    start_page: int = 0


@dataclass(frozen=True, slots=True)
class BenchReload:
    """Reload ``tokens`` ``iterations`` times on every CPU. Answer: :class:`Ok` of ``list[TimedReload]``."""

    tokens: np.ndarray
    iterations: int


@dataclass(frozen=True, slots=True)
class BenchRawGet:
    """``batch_get_into`` of ``keys`` (one page each) ``iterations`` times, without the connector.
    Answer: :class:`Ok` of ``list[RawGetRun]``."""

    keys: list[str]
    iterations: int


@dataclass(frozen=True, slots=True)
class Keys:
    """The page keys of the cacheable full pages of ``tokens``. Answer: :class:`Ok` of ``list[str]``."""

    tokens: np.ndarray
    cacheable_tokens: int | None = None


@dataclass(frozen=True, slots=True)
class SetReadStreams:
    """Split later reloads across ``n`` concurrent reads. Answer: :class:`Ok` of ``n``."""

    n: int


@dataclass(frozen=True, slots=True)
class SetVerify:
    """Check the pages of later reloads ``full`` or ``sampled`` (:mod:`kvtui.core.verify`; a connector's
    :meth:`~kvtui.engine.connector.PagedKVConnector.set_verify`); a reload under way finishes in the mode it
    began in. Answer: :class:`Ok` of ``mode``."""

    mode: str


@dataclass(frozen=True, slots=True)
class RemoveAll:
    """Remove every object of every client (global). Answer: :class:`Ok` of the count removed."""


@dataclass(frozen=True, slots=True)
class SetLayout:
    """Use page ``layout`` from the next request on. Answer: :class:`Ok` of its page bytes, or
    :class:`Failed` while a request is queued or being published (wait until none is)."""

    layout: PageLayout


@dataclass(frozen=True, slots=True)
class Stop:
    """Exit at once, dropping what is queued and without closing the store client (see
    ``kvtui.engine.worker._leave``). Answer: :class:`Ok` of None, once the current store call returned."""


# ---- command pipe, parent → worker: the request chain (no answer) ---------------------------------------
@dataclass(frozen=True, slots=True)
class Submit:
    """Decode: queue request ``seq`` with its page ``keys`` (hashed by the parent, as an LLM scheduler
    hashes blocks before its KV connector sees them); ``prefill``: the index of the prefill worker (among
    this decode worker's chain pipes, in prefill order) that publishes it."""

    seq: int
    keys: list[str]
    prefill: int = 0


@dataclass(frozen=True, slots=True)
class Hold:
    """Decode: hold (True) or release (False) the queue. Decode also holds by itself after a reload failed
    with RPC_FAIL / RPC_TIMEOUT, so queued requests do not pile errors onto a dead master."""

    held: bool


@dataclass(frozen=True, slots=True)
class Drain:
    """Decode: nothing more will be submitted; run what is queued and never hold again, or, if the queue is
    held, drop it (a :class:`RequestDropped` per request), so a run that ends during an outage ends at once."""


@dataclass(frozen=True, slots=True)
class Begin:
    """Both workers: a new run with up to ``concurrency`` requests between the start of their reload and the
    end of their publish (1: store calls of consecutive requests never overlap, and both workers call the
    store from the same CPU); clears a hold or drain of an earlier run."""

    concurrency: int


ANSWERED = (Reload, Publish, BenchReload, BenchRawGet, Keys, SetReadStreams, SetVerify, RemoveAll, SetLayout, Stop)
CHAIN = (Submit, Hold, Drain, Begin)


# ---- command pipe, worker → parent ------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Ready:
    """The worker is set up: its process id and role."""

    pid: int
    role: str


@dataclass(frozen=True, slots=True)
class Ok:
    """The answer of an answered command (its payload is documented on the command)."""

    payload: object = None


@dataclass(frozen=True, slots=True)
class Failed:
    """Set-up failed, a command was refused, or the worker failed and exits: one line for the user."""

    message: str


@dataclass(frozen=True, slots=True)
class TimedReload:
    """One iteration of :class:`BenchReload`: wall time in ms around the reload, and its result."""

    wall_ms: float
    result: ReloadResult


@dataclass(frozen=True, slots=True)
class RawGetRun:
    """One iteration of :class:`BenchRawGet`: wall time in ms; ``ok``: every read returned the page bytes."""

    wall_ms: float
    ok: bool


# ---- chain pipe, decode ↔ prefill, and results pipe, prefill → parent -----------------------------------
@dataclass(frozen=True, slots=True)
class PublishRest:
    """Decode → prefill: publish ``rest_keys`` (the pages after request ``seq``'s reloaded run).

    ``known``: the reload's probe answers (1, 0 or a negative code) for the first of those pages, so prefill
    need not probe them again; empty when an earlier publish was still running (it could store the same
    pages meanwhile and have them counted as published twice). ``reload``: decode's result (its
    ``rest_probe`` emptied: ``known`` carries it). ``t_start``: when the reload began. ``needs_ack``: prefill
    will call the store, and decode counts the request as in flight until :class:`Ack`. ``segment``: the
    decode worker's own segment when it has one, so the pages it will reload next time are local.
    """

    seq: int
    rest_keys: list[str]
    known: list[int]
    reload: ReloadResult
    t_start: float
    needs_ack: bool
    segment: str = ""  # publish into this segment (the decode worker's own, when it has one)


@dataclass(frozen=True, slots=True)
class Ack:
    """Prefill → decode: a publish decode waits for ended. ``store_full``: a put failed with
    NO_AVAILABLE_HANDLE; decode waits 50 ms, doubling up to 1 s, before its next reload (puts are not retried)."""

    store_full: bool


@dataclass(frozen=True, slots=True)
class RequestDone:
    """Prefill → parent: request ``seq`` finished; its reload and publish (None: nothing published), and when
    it began and ended."""

    seq: int
    reload: ReloadResult
    publish: PublishResult | None
    t_start: float
    t_end: float


@dataclass(frozen=True, slots=True)
class RequestDropped:
    """Decode → prefill → parent: request ``seq`` was dropped by :class:`Drain` without any store call."""

    seq: int


@dataclass(frozen=True, slots=True)
class RequestFailed:
    """A worker failed on request ``seq`` (None: decode died) and exits; ``message`` is one line."""

    seq: int | None
    message: str
