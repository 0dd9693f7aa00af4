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


def test_a_runs_summary_json_and_request_log_split_the_hits_by_tier_and_add_up(tmp_path, capsys):
    """`kvtui run --disk-size` on the real store: the summary, `--json` and the request log say which hits came
    from disk; each tier's pages, tokens, bytes and read time add up to the whole's; the store's disk tier is
    scraped with the capacity kvtui set."""
    import csv
    import json

    from kvtui.cli import main

    out, log = tmp_path / "run.json", tmp_path / "requests.csv"
    rc = main(["run", "--layout", "tiny", "--requests", "600", "--store-size", "16MiB", "--disk-size", "64MiB",
               "--disk-path", str(tmp_path), "--prompt-tokens", "512", "--pool", "128", "--overlap", "90",
               "--model", f"tiers-{uuid.uuid4().hex[:6]}", "--json", str(out), "--requests-log", str(log)])
    assert rc == 0
    s = json.loads(out.read_text())
    memory, disk = s["tiers"]["memory"], s["tiers"]["disk"]
    assert 0 < disk["pages_hit"] < s["pages_hit"] and s["mismatches"] == 0
    for key in ("pages_hit", "tokens_hit", "bytes_loaded"):
        assert memory[key] + disk[key] == s[key], key
    assert memory["read_ms_total"] + disk["read_ms_total"] == pytest.approx(s["read_ms_total"])
    assert memory["page_hit_rate"] + disk["page_hit_rate"] == pytest.approx(s["page_hit_rate"])
    assert 0 < disk["reload_ms"]["count"] <= s["reload_ms"]["count"] <= memory["reload_ms"]["count"] + disk[
        "reload_ms"]["count"]
    store = s["store_at_end"]
    assert store["disk_capacity_bytes"] == 64 << 20 and store["disk_used_bytes"] > 0 and store["offloaded_keys"] > 0
    rows = list(csv.DictReader(log.open()))
    assert sum(int(r["pages_hit_disk"]) for r in rows) == disk["pages_hit"]
    assert sum(float(r["disk_read_ms"]) for r in rows) == pytest.approx(disk["read_ms_total"], abs=0.5)
    text = capsys.readouterr().out
    assert f"KV page hits by tier: memory {memory['pages_hit']:,} (" in text
    assert f"· disk {disk['pages_hit']:,} (" in text and "\n└ disk " in text
