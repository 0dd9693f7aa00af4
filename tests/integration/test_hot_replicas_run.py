"""Hot-key replication on the real store (``--replicate-hot``): the master copies a shared prefix's pages to the
other decode worker's segment, its copy counters equal the keys it lists with two memory replicas, kvtui's count of
hits with a hot replica agrees with it, and a decode worker then reads those pages from its own segment."""

from __future__ import annotations

import json
import time
import urllib.parse
import uuid

import pytest

from kvtui.core.layout import PRESETS
from kvtui.engine.driver import Driver
from kvtui.engine.options import EngineOptions
from kvtui.launch import start_stack
from kvtui.mooncake.cluster import ClusterOptions
from kvtui.mooncake.ha import stored_keys
from kvtui.mooncake.net import http_get
from workload import SyntheticWorkload, WorkloadSpec

pytestmark = pytest.mark.integration
TINY = PRESETS["tiny"]
POOL, SHARED = 4, 6  # 4 system prompts of 6 shared pages (overlap 75 % of 8 pages)


def memory_replicas(url: str, keys: list[str]) -> dict[str, int]:
    """Per key, the memory replicas the master lists (``/batch_query_keys`` ``values``: no lease)."""
    out: dict[str, int] = {}
    for i in range(0, len(keys), 50):
        chunk = keys[i:i + 50]
        status, body = http_get(f"{url}/batch_query_keys?keys={urllib.parse.quote(','.join(chunk), safe=',/')}", 5)
        assert status == 200, body
        data = json.loads(body)["data"]
        out.update({k: len((data.get(k) or {}).get("values") or ()) for k in chunk})
    return out


def test_hot_prefix_pages_get_a_second_replica_and_kvtui_counts_the_hits_that_had_one():
    """Two decode workers own a segment each; ~10 s of a 4-prompt pool makes every shared page hot (read far more
    than 0.5 times a second): the master copies each once, to the other segment."""
    from kvtui.commands.output import format_summary, store_counts
    from kvtui.metrics.aggregate import Aggregator

    model = f"hot-{uuid.uuid4().hex[:6]}"
    stack = start_stack(EngineOptions(layout=TINY, model=model, store_bytes=64 << 20, segment_on="decode",
                                      decode_workers=2), ClusterOptions(replicate_hot=True))
    agg = Aggregator(replicated=stack.cluster.endpoints.replicate_hot)
    results = []

    def take(r):
        results.append(r)
        agg.add(r)

    try:
        wl = SyntheticWorkload(WorkloadSpec(scenario="shared-system-prompt", pool=POOL, overlap=0.75,
                                            prompt_tokens=8 * TINY.page_tokens, page_tokens=TINY.page_tokens, seed=3))
        Driver(stack.engine, wl, take, concurrency=1, duration_s=10, store_answers=stack.cluster.reachable).run()
        url = stack.cluster.endpoints.metrics_url
        deadline = time.monotonic() + 10
        while (scrape := stack.cluster.sample_store()).get("copies_done") != scrape.get("copies_started"):
            assert time.monotonic() < deadline, scrape  # (a copy under way: it ends within a heartbeat)
            time.sleep(0.2)
        keys = sorted(stored_keys(url) or ())
        replicas = memory_replicas(url, keys)
    finally:
        stack.stop()
    hot = [k for k, n in replicas.items() if n >= 2]
    assert 0 < len(hot) <= POOL * SHARED and max(replicas.values()) == 2  # only the shared pages, one copy each
    assert scrape["copies_done"] == scrape["copies_started"] == len(hot)  # the master's counters: one copy a key
    s = agg.summary()
    assert s["pages_hit_replicated"] == sum(r.pages_replicated for r in results)
    assert 0 < s["pages_hit_replicated"] < s["pages_hit"] and s["mismatches"] == 0
    late = [r for r in results[-50:] if r.pages_hit]  # well after the copies: every hit page has its second replica
    assert late and all(r.pages_replicated == r.pages_hit for r in late)
    assert all(r.bytes_local == r.bytes_loaded for r in late)  # …and each decode worker reads its own segment's
    s["store_at_end"] = store_counts(scrape)
    text = format_summary(s)
    assert f"KV page hits with a hot replica: {s['pages_hit_replicated']:,} (two memory replicas or more)\n" in text
    assert f"hot copies (master)   {len(hot)} started · {len(hot)} done" in text
