"""At concurrency 1 the request chain is serial (kvtui.engine.worker._Chain): against a real master, the
outcome is the serial one page by page, and a request starts only after the publish before it ended (decode
waits for prefill's Ack whenever prefill called the store; README, "Workers on one machine")."""

from __future__ import annotations

import itertools
import uuid

import numpy as np
import pytest

from kvtui.core.layout import PageLayout
from kvtui.engine.driver import Driver
from kvtui.engine.engine import Engine, EngineOptions
from workload import SyntheticWorkload, WorkloadSpec

pytestmark = pytest.mark.integration
TINY = PageLayout(4, 2, 16, 8, 2)


def _serial(keys_by_request: list[list[str]]) -> list[tuple[int, int]]:
    """(pages hit, pages published) of each request replayed one after another into a store that evicts
    nothing: the leading run of pages an earlier request stored, then every page not yet stored."""
    stored: set[str] = set()
    out = []
    for keys in keys_by_request:
        hit = next((i for i, k in enumerate(keys) if k not in stored), len(keys))
        new = {k for k in keys[hit:] if k not in stored}
        stored |= new
        out.append((hit, len(new)))
    return out


def _replay(cluster, requests: list, name: str) -> tuple[list, list]:
    """``requests`` through a new engine on ``cluster`` (emptied first) at concurrency 1: each request's page
    keys, and the results in the order the parent got them."""
    e = Engine(EngineOptions(layout=TINY, model=f"{name}-{uuid.uuid4().hex[:6]}"), endpoints=cluster.endpoints)
    e.start()
    try:
        e.clear_store()
        keys = [e.keyer.keys(r.tokens[: r.cacheable_tokens]) for r in requests]
        results = []
        Driver(e, requests, results.append, concurrency=1).run()
    finally:
        e.stop()
    return keys, results


def test_concurrency_1_replays_serially_page_by_page(fresh_cluster):
    spec = WorkloadSpec(scenario="shared-system-prompt", pool=4, prompt_tokens=64, page_tokens=8, seed=5)
    requests = list(itertools.islice(SyntheticWorkload(spec), 60))
    keys, results = _replay(fresh_cluster, requests, "serial")
    assert [r.req_id for r in results] == [r.req_id for r in requests]  # one prefill worker: in order
    assert [(r.pages_hit, r.pages_published) for r in results] == _serial(keys)
    assert all(r.mismatches == 0 and r.verified == r.pages_hit for r in results)
    published = 0
    for before, r in zip(results, results[1:]):
        if before.pages_published:  # prefill put pages: the next reload began after that put ended
            published += 1
            assert r.t_start >= before.t_end, (before.req_id, r.req_id)
    assert published > 0 and any(r.pages_hit for r in results)  # (both kinds of request happened)


def _repeating(prompt_of: list[int], pages: int = 4) -> list:
    """Request ``i`` is prompt ``prompt_of[i]`` (``pages`` full pages): a prompt seen before is a full hit,
    with nothing for prefill to do (decode reports it itself), a new one is published."""
    from workload import Request

    body = {k: np.arange(pages * TINY.page_tokens, dtype=np.uint32) + 1000 * (k + 1) for k in set(prompt_of)}
    return [Request(i, body[k], None, len(body[k]), "repeat") for i, k in enumerate(prompt_of)]


def test_requests_decode_reports_itself_keep_their_order_and_outcome(fresh_cluster):
    """Full hits (reported by decode on prefill's results pipe) and publishes (reported by prefill) reach the
    parent in submission order, with the serial outcome."""
    requests = _repeating([i % 5 if i % 9 else 5 + i // 9 for i in range(45)])  # a new prompt every 9th request
    keys, results = _replay(fresh_cluster, requests, "direct")
    assert [r.req_id for r in results] == [r.req_id for r in requests]
    assert [(r.pages_hit, r.pages_published) for r in results] == _serial(keys)
    assert sum(r.pages_published == 0 and r.pages_hit == r.pages_total for r in results) >= 30
    assert all(r.mismatches == 0 and r.verified == r.pages_hit for r in results)


def test_a_dead_prefill_worker_is_reported_while_every_request_is_a_full_hit(fresh_cluster):
    """Decode holds a copy of prefill's results pipe for its own reports: once prefill dies, decode closes
    it, so the parent sees the pipe end and names the dead worker even when no request needs prefill."""
    from kvtui.engine.workers import WorkerError

    e = Engine(EngineOptions(layout=TINY, model=f"dead-{uuid.uuid4().hex[:6]}"), endpoints=fresh_cluster.endpoints)
    e.start()
    try:
        e.clear_store()
        req = _repeating([0])[0]
        assert e.process(req).pages_published == 4  # first: prefill publishes its pages
        assert e.process(req).pages_hit == 4  # then a full hit, reported by decode
        e.prefills[0].kill()
        with pytest.raises(WorkerError, match=r"prefill worker died \(exit code -9\)"):
            e.next_result(timeout_s=20)  # (None here would mean the pipe never ended)
    finally:
        e.stop()
