"""Miss reasons add up on a real store: a replay of the shipped `synthetic` trace's head at concurrency 1, into
a store with room for every page and into one that must evict, gives hit tokens + evicted + never stored +
after a break = the unbounded ideal's hit tokens (`trace-stats`), to the token, and first use = the ideal's
misses."""

from __future__ import annotations

import csv
import json

import pytest

from kvtui.cli import main
from kvtui.core.traces import SHIPPED_TRACES
from workload.stats import trace_stats
from workload.trace import read_trace

# ~4 s on a quiet 2-core machine (two embedded clusters, 600 rows each); the timeout bounds a loaded one
pytestmark = [pytest.mark.integration, pytest.mark.timeout(150)]

ROWS = 600
# 4 KiB pages: the head's ~12.6k distinct pages need ~50 MiB, so Mooncake's smallest segment (16 MiB) evicts
LAYOUT = ["--layers", "1", "--kv-heads", "2", "--head-dim", "1", "--elem-bytes", "2", "--page-tokens", "512"]
STORES = {"ample": "128MiB", "small": "16MiB"}


@pytest.fixture(scope="module")
def head(tmp_path_factory):
    lines = SHIPPED_TRACES["synthetic"].path.read_text().splitlines()[:ROWS]
    path = tmp_path_factory.mktemp("trace") / "synthetic_head.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("store", list(STORES))
def test_hits_and_capacity_misses_add_up_to_the_unbounded_ideal(head, tmp_path, store):
    out, log = tmp_path / "run.json", tmp_path / "requests.csv"
    rc = main(["run", "--trace", str(head), "--speed", "max", "--concurrency", "1", *LAYOUT,
               "--store-size", STORES[store], "--quiet", "--json", str(out), "--requests-log", str(log)])
    assert rc == 0
    s = json.loads(out.read_text())
    rows, _ = read_trace(head)
    ideal = trace_stats(rows)
    m = s["misses"]
    assert s["requests"] == ROWS and s["mismatches"] == 0
    # a full small store may refuse puts (their pages miss later as never stored); nothing else fails
    assert set(s["errors"]) <= ({"NO_AVAILABLE_HANDLE"} if store == "small" else set())
    assert s["tokens_hit"] + sum(m[r]["tokens"] for r in ("evicted", "never_stored", "after_break")) == \
        ideal.ideal_hit_tokens
    assert m["first_use"]["pages"] == s["pages_total"] - ideal.ideal_block_hits  # the ideal's misses exactly
    assert m["in_flight"]["pages"] == 0  # one request at a time
    assert sum(r["pages"] for r in m.values()) == s["pages_total"] - s["pages_hit"]
    share = sum(m[r]["share"] for r in ("evicted", "never_stored", "after_break"))
    assert s["token_hit_rate"] + share == pytest.approx(ideal.ideal_token_hit_rate, abs=1e-12)
    with log.open() as f:  # the request log's reasons add up to the summary's
        rows_logged = list(csv.DictReader(f))
    assert len(rows_logged) == ROWS
    for reason, total in m.items():
        assert sum(int(r[f"misses_{reason}"]) for r in rows_logged) == total["pages"]
    if store == "ample":  # nothing evicted: the store reaches the ideal, every miss is a first use
        assert s["store_at_end"]["evicted_keys"] == 0 and s["tokens_hit"] == ideal.ideal_hit_tokens
    else:  # the store evicted pages later rows needed: those misses are capacity's
        assert s["store_at_end"]["evicted_keys"] > 0 and m["evicted"]["pages"] > 0
        assert s["tokens_hit"] < ideal.ideal_hit_tokens
