"""At concurrency 1 the request chain is serial (kvtui.engine.worker._Chain): against a real master, the
outcome is the serial one page by page, and a request starts only after the publish before it ended (decode
waits for prefill's Ack whenever prefill called the store; README, "Workers on one machine")."""

from __future__ import annotations

import itertools
import uuid

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


def test_concurrency_1_replays_serially_page_by_page(fresh_cluster):
    spec = WorkloadSpec(scenario="shared-system-prompt", pool=4, prompt_tokens=64, page_tokens=8, seed=5)
    requests = list(itertools.islice(SyntheticWorkload(spec), 60))
    e = Engine(EngineOptions(layout=TINY, model=f"serial-{uuid.uuid4().hex[:6]}"), endpoints=fresh_cluster.endpoints)
    e.start()
    try:
        e.clear_store()
        keys = [e.keyer.keys(r.tokens[: r.cacheable_tokens]) for r in requests]
        results = []
        Driver(e, requests, results.append, concurrency=1).run()
    finally:
        e.stop()
    assert [r.req_id for r in results] == [r.req_id for r in requests]  # one prefill worker: in order
    assert [(r.pages_hit, r.pages_published) for r in results] == _serial(keys)
    assert all(r.mismatches == 0 and r.verified == r.pages_hit for r in results)
    published = 0
    for before, r in zip(results, results[1:]):
        if before.pages_published:  # prefill put pages: the next reload began after that put ended
            published += 1
            assert r.t_start >= before.t_end, (before.req_id, r.req_id)
    assert published > 0 and any(r.pages_hit for r in results)  # (both kinds of request happened)
