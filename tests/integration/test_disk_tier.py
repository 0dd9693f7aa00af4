"""The disk tier on the real store: pages the DRAM segment evicts are offloaded, reloads read them back from
disk and say so (HIT_DISK), every page verifies, and the tier's folder is gone when the stack stops."""

from __future__ import annotations

import os
import uuid

import pytest

from kvtui.core.layout import PRESETS
from kvtui.core.pages import PageState
from kvtui.engine.driver import Driver
from kvtui.engine.options import EngineOptions
from kvtui.launch import start_stack
from kvtui.mooncake.cluster import ClusterOptions
from workload import SyntheticWorkload, WorkloadSpec

pytestmark = pytest.mark.integration
TINY = PRESETS["tiny"]


@pytest.mark.parametrize("client", ["dummy", "real"])
def test_pages_evicted_from_dram_are_reloaded_from_disk_and_verify(client, tmp_path):
    """A 16 MiB segment, a 64 MiB disk tier, a working set of ~60 MiB: some reloads come from disk."""
    stack = start_stack(EngineOptions(layout=TINY, model=f"disk-{uuid.uuid4().hex[:6]}", store_bytes=16 << 20),
                        ClusterOptions(disk_bytes=64 << 20, disk_path=str(tmp_path), worker_client=client,
                                       lease_ttl_ms=2000))
    folder = next(tmp_path.iterdir())
    assert folder.name.startswith("kvtui-disk-") and stack.cluster.endpoints.tiers == ("memory", "disk")
    results = []
    try:
        wl = SyntheticWorkload(WorkloadSpec(scenario="shared-system-prompt", pool=128, overlap=0.9, prompt_tokens=512,
                                            page_tokens=TINY.page_tokens, seed=1))
        Driver(stack.engine, wl, results.append, concurrency=1, max_requests=600,
               store_answers=stack.cluster.reachable).run()
    finally:
        stack.stop()
    hit, disk = sum(r.pages_hit for r in results), sum(r.pages_hit_disk for r in results)
    assert sum(r.mismatches for r in results) == 0 and sum(r.verified for r in results) == hit
    assert 0 < disk < hit, (disk, hit)
    cells = sum(r.states.count(PageState.HIT_DISK) for r in results)
    assert cells == disk
    assert not folder.exists() and os.path.isdir(tmp_path)  # the tier's files went with the cluster
