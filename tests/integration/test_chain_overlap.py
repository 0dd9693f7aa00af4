"""At concurrency 1 decode starts a request during prefill's publish of the one before when the two share no
page (kvtui.engine.worker._Chain): against a real master, the outcome is still the serial one page by page,
a request that needs a page under publish starts only after that publish ended, and the overlap happens."""

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


def test_overlapped_publishes_keep_the_serial_outcome_and_order_dependent_requests(fresh_cluster):
    spec = WorkloadSpec(scenario="shared-system-prompt", pool=4, prompt_tokens=64, page_tokens=8, seed=5)
    requests = list(itertools.islice(SyntheticWorkload(spec), 60))
    e = Engine(EngineOptions(layout=TINY, model=f"overlap-{uuid.uuid4().hex[:6]}"), endpoints=fresh_cluster.endpoints)
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
    dependent = overlapped = 0
    for i, r in enumerate(results):
        for j in range(i):  # every earlier publish whose pages this request reads or stores ended before it began
            rest = set(keys[j][results[j].pages_hit:])
            if results[j].pages_published and rest & set(keys[i]):
                dependent += 1
                assert r.t_start >= results[j].t_end, (i, j)
        if i and results[i - 1].pages_published and r.t_start < results[i - 1].t_end:
            overlapped += 1
    assert dependent > 0 and overlapped > 0  # both cases happened
