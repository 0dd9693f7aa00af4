"""Miss reasons add up on a real store: a replay of the shipped `synthetic` trace at concurrency 1, into a store
with room for every page, into one that must evict and into one so small that it refuses puts, gives hit
tokens + evicted + never stored + after a break = the unbounded ideal's hit tokens (`trace-stats`), to the
token, and first use = the ideal's misses; so does a scenario run in the default (seed) layout, against the
ideal of the trace it saved. The driver submits requests ahead of their turn: none of them is "in flight"."""

from __future__ import annotations

import csv
import json

import pytest

from kvtui.cli import main
from kvtui.core.traces import SHIPPED_TRACES
from workload.stats import trace_stats
from workload.trace import read_trace

# ~4 s each on a quiet 2-core machine for the head, ~16 s for the whole trace and ~10 s for the scenario run;
# the timeout bounds a loaded machine
pytestmark = [pytest.mark.integration, pytest.mark.timeout(150)]

ROWS = 600
# 4 KiB pages: the head's ~12.6k distinct pages need ~50 MiB, so Mooncake's smallest segment (16 MiB) evicts
LAYOUT = ["--layers", "1", "--kv-heads", "2", "--head-dim", "1", "--elem-bytes", "2", "--page-tokens", "512"]
# 8 KiB pages, the whole trace (~40k distinct pages, ~314 MiB) into 16 MiB: puts are refused
# (NO_AVAILABLE_HANDLE) and the pages they left out miss later as never stored
REFUSING = ["--layers", "1", "--kv-heads", "1", "--head-dim", "1", "--elem-bytes", "8", "--page-tokens", "512"]
STORES = {"ample": ("128MiB", LAYOUT, ROWS), "small": ("16MiB", LAYOUT, ROWS), "refusing": ("16MiB", REFUSING, None)}


def _head(tmp_path, rows):
    if rows is None:
        return SHIPPED_TRACES["synthetic"].path
    lines = SHIPPED_TRACES["synthetic"].path.read_text().splitlines()[:rows]
    path = tmp_path / "synthetic_head.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("store", list(STORES))
def test_hits_and_capacity_misses_add_up_to_the_unbounded_ideal(tmp_path, store):
    size, layout, n = STORES[store]
    head = _head(tmp_path, n)
    out, log = tmp_path / "run.json", tmp_path / "requests.csv"
    rc = main(["run", "--trace", str(head), "--speed", "max", "--concurrency", "1", *layout,
               "--store-size", size, "--quiet", "--json", str(out), "--requests-log", str(log)])
    assert rc == 0
    s = json.loads(out.read_text())
    rows, _ = read_trace(head)
    ideal = trace_stats(rows)
    m = s["misses"]
    assert s["requests"] == len(rows) and s["mismatches"] == 0
    # a full small store may refuse puts (their pages miss later as never stored); nothing else fails
    assert set(s["errors"]) <= ({"NO_AVAILABLE_HANDLE"} if store != "ample" else set())
    if store == "refusing":
        assert s["errors"].get("NO_AVAILABLE_HANDLE", 0) > 0
    assert s["tokens_hit"] + sum(m[r]["tokens"] for r in ("evicted", "never_stored", "after_break")) == \
        ideal.ideal_hit_tokens
    assert m["first_use"]["pages"] == s["pages_total"] - ideal.ideal_block_hits  # the ideal's misses exactly
    assert m["in_flight"]["pages"] == 0  # one request at a time
    assert sum(r["pages"] for r in m.values()) == s["pages_total"] - s["pages_hit"]
    share = sum(m[r]["share"] for r in ("evicted", "never_stored", "after_break"))
    assert s["token_hit_rate"] + share == pytest.approx(ideal.ideal_token_hit_rate, abs=1e-12)
    with log.open() as f:  # the request log's reasons add up to the summary's
        rows_logged = list(csv.DictReader(f))
    assert len(rows_logged) == len(rows)
    for reason, total in m.items():
        assert sum(int(r[f"misses_{reason}"]) for r in rows_logged) == total["pages"]
    ends = sorted((float(r["start_s"]), float(r["finish_s"])) for r in rows_logged)
    assert all(b[0] >= a[1] for a, b in zip(ends, ends[1:]))  # one request at a time, as the log shows
    if store == "ample":  # nothing evicted: the store reaches the ideal, every miss is a first use
        assert s["store_at_end"]["evicted_keys"] == 0 and s["tokens_hit"] == ideal.ideal_hit_tokens
    else:  # the store evicted pages later rows needed: those misses are capacity's
        assert s["store_at_end"]["evicted_keys"] > 0 and m["evicted"]["pages"] > 0
        assert s["tokens_hit"] < ideal.ideal_hit_tokens


def test_a_scenario_run_adds_up_to_the_ideal_of_the_trace_it_saved(tmp_path):
    """The default (seed) layout, 14 MiB pages, a store that evicts: the saved trace's unbounded ideal is the
    run's hits plus its evicted, never-stored and after-a-break pages."""
    out, saved = tmp_path / "run.json", tmp_path / "saved.jsonl"
    rc = main(["run", "--requests", "150", "--concurrency", "1", "--store-size", "400MiB", "--quiet",
               "--json", str(out), "--save-trace", str(saved)])
    assert rc == 0
    s = json.loads(out.read_text())
    block = s["layout"]["page_tokens"]
    rows, _ = read_trace(saved, block_tokens=block)
    ideal = trace_stats(rows, block)
    m = s["misses"]
    assert s["requests"] == len(rows) == 150
    assert s["store_at_end"]["evicted_keys"] > 0
    assert m["in_flight"]["pages"] == 0
    assert s["tokens_hit"] + sum(m[r]["tokens"] for r in ("evicted", "never_stored", "after_break")) == \
        ideal.ideal_hit_tokens
    assert m["first_use"]["pages"] == s["pages_total"] - ideal.ideal_block_hits
