"""`kvtui run --save-trace FILE` against the real store: the trace it writes, replayed with the same page size,
gives every request the same page hits as the run that wrote it."""

from __future__ import annotations

import csv
import json
import uuid
from pathlib import Path

import pytest

from kvtui.cli import main
from kvtui.core.layout import PRESETS
from workload.trace import read_trace

pytestmark = pytest.mark.integration
PAGE_TOKENS = PRESETS["tiny"].page_tokens


def _attach(cluster) -> list[str]:
    ep = cluster.endpoints
    return ["--master", ep.master, "--metadata", ep.metadata_url, "--metrics-url", ep.metrics_url]


def _hits(log: Path) -> list[tuple[int, int]]:
    """``(pages hit, full pages)`` of each request of a request log, in issue order."""
    with open(log, newline="") as f:
        rows = sorted(csv.DictReader(f), key=lambda r: int(r["id"]))
    return [(int(r["pages_hit"]), int(r["pages"])) for r in rows]


@pytest.mark.parametrize("scenario", ["shared-system-prompt", "multi-turn"])
def test_a_saved_trace_replays_with_the_same_page_hits(fresh_cluster, tmp_path, capsys, scenario):
    trace, first_log, again_log = tmp_path / "ran.jsonl", tmp_path / "ran.csv", tmp_path / "again.csv"
    rc = main(["run", "--scenario", scenario, "--overlap", "75", "--pool", "3", "--requests", "24",
               "--layout", "tiny", "--prompt-tokens", "100", "--quiet", "--requests-log", str(first_log),
               "--save-trace", str(trace), "--model", f"st-{uuid.uuid4().hex[:8]}", *_attach(fresh_cluster)])
    assert rc == 0, capsys.readouterr().err
    rows, problems = read_trace(trace, block_tokens=PAGE_TOKENS, strict=True)  # the FAST'25 format, in order
    assert problems == [] and len(rows) == 24
    assert [list(json.loads(line)) for line in trace.read_text().splitlines()[:1]] == [
        ["timestamp", "input_length", "output_length", "hash_ids"]]
    ran = _hits(first_log)
    assert sum(h for h, _ in ran) > 0  # the scenario shares prefixes: a round trip of misses would prove nothing
    rc = main(["run", "--trace", str(trace), "--trace-block-tokens", str(PAGE_TOKENS), "--speed", "max",
               "--layout", "tiny", "--quiet", "--requests-log", str(again_log),
               "--model", f"st-{uuid.uuid4().hex[:8]}", *_attach(fresh_cluster)])
    assert rc == 0, capsys.readouterr().err
    assert _hits(again_log) == ran


