"""What the engine hands out per request: :func:`result_from` joins a decode worker's reload and a prefill
worker's publish into one :class:`~kvtui.core.events.RequestResult`. :class:`Dropped` and :class:`Lost`
(requests that end without one) and :class:`WorkerReplacement` (one rebuild of the workers) are part of the
engine's interface, :mod:`kvtui.core.engine_api`."""

from __future__ import annotations

from kvtui.core.engine_api import Dropped, Lost, WorkerReplacement
from kvtui.core.events import RequestResult
from kvtui.core.layout import PageLayout
from kvtui.core.pages import PageState
from kvtui.engine.connector import PublishResult, ReloadResult

__all__ = ["Dropped", "Lost", "WorkerReplacement", "result_from"]

_CELL = {state: bytes((int(state),)) for state in PageState}  # one page cell of each state


def result_from(req, reload: ReloadResult, publish: PublishResult | None, layout: PageLayout, t_start: float,
                t_end: float, keys: tuple = (), decode_worker: int = 0, prefill_worker: int = 0) -> RequestResult:
    """Combine the decode worker's reload and the prefill worker's publish (None: nothing published) of
    ``req`` (a ``workload.Request``) into one :class:`RequestResult`; ``t_start``/``t_end`` in seconds.

    Page cells: HIT for the reloaded run (HIT_DISK for its pages read from the disk tier); then the reload's
    stop state (EVICTED, FAILED, MISMATCH) for the page where the run ended early, even when prefill then
    recomputed and republished it (the counts still say so); the publish states after it; then one PARTIAL
    cell per started page of tokens beyond the cacheable full pages. ``codes``: the reload's and the publish's
    codes added up (the reload's include its stop code). ``keys``: the request's first and last page key (for
    the monitor's row details); ``decode_worker`` / ``prefill_worker``: the indexes of the workers that ran it.
    """
    hit = reload.pages_hit
    total = reload.pages_total
    states = bytearray(_CELL[PageState.HIT] * hit)  # (bytes arithmetic: extending by enum members is slow)
    for i in reload.disk_pages:  # (those of the run read from the store's disk tier)
        states[i] = PageState.HIT_DISK
    pub_states = bytearray(publish.states) if publish else bytearray(_CELL[PageState.COMPUTED] * (total - hit))
    if reload.stop_state is not None and pub_states:
        pub_states[0] = reload.stop_state
    states += pub_states
    rest = len(req.tokens) - total * layout.page_tokens
    if rest > 0:
        states += _CELL[PageState.PARTIAL] * (-(-rest // layout.page_tokens))
    codes = {int(k): int(v) for k, v in reload.codes.items()}
    for k, v in (publish.codes.items() if publish else ()):
        codes[int(k)] = codes.get(int(k), 0) + int(v)
    return RequestResult(
        req_id=req.req_id, scenario=req.scenario, n_tokens=len(req.tokens), cacheable_tokens=req.cacheable_tokens,
        page_tokens=layout.page_tokens, page_bytes=layout.page_bytes, pages_total=total, pages_hit=hit,
        states=bytes(states),
        pages_published=publish.stored if publish else 0,
        pages_already_present=publish.already_present if publish else 0,
        pages_failed=publish.failed if publish else 0,
        bytes_loaded=reload.bytes_loaded, bytes_written=publish.bytes_written if publish else 0,
        verified=reload.verified, mismatches=reload.mismatches,
        probe_ms=reload.probe_ms, read_ms=reload.read_ms, verify_ms=reload.verify_ms,
        publish_probe_ms=publish.probe_ms if publish else 0.0, compute_ms=publish.compute_ms if publish else 0.0,
        put_ms=publish.put_ms if publish else 0.0, codes=codes, arrival_s=req.arrival_s,
        t_start=t_start, t_end=t_end, labels=tuple(req.labels), keys=tuple(keys),
        decode_worker=decode_worker, prefill_worker=prefill_worker, bytes_local=reload.bytes_local,
        pages_hit_disk=len(reload.disk_pages), disk_read_ms=reload.read_ms_disk,
        pages_replicated=len(reload.replicated_pages),
    )
