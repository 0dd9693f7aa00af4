"""`kvtui run` on a shipped trace by name (no ``../shared`` needed) and on a trace with out-of-order rows."""

from __future__ import annotations

import json
import uuid

import pytest

from kvtui.cli import main

pytestmark = pytest.mark.integration
SMALL = ["--layers", "1", "--kv-heads", "1", "--head-dim", "1", "--elem-bytes", "1", "--page-tokens", "512"]


def _attach(cluster):
    ep = cluster.endpoints
    return ["--master", ep.master, "--metadata", ep.metadata_url, "--metrics-url", ep.metrics_url]


def test_shipped_trace_by_name_reproduces_ground_truth(cluster, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)  # nothing of the repository or ../shared around
    out = tmp_path / "run.json"
    rc = main(["run", "--trace", "conversation-head", "--speed", "max", "--quiet", "--json", str(out),
               "--model", f"name-{uuid.uuid4().hex[:8]}", *SMALL, *_attach(cluster)])
    assert rc == 0, capsys.readouterr().err
    s = json.loads(out.read_text())
    assert (s["pages_hit"], s["tokens_hit"], s["tokens_input"]) == (5780, 2_959_360, 13_732_944)
    assert s["mismatches"] == 0 and s["bad_rows_skipped"] == 0
    assert s["workload"]["name"] == "conversation-head" and s["workload"]["complete"]


def _row(ts: int, ids: list[int]) -> str:
    return json.dumps({"timestamp": ts, "input_length": 512 * len(ids), "output_length": 1, "hash_ids": ids})


def test_a_late_row_is_named_replayed_and_rejected_under_strict(cluster, tmp_path, capsys):
    trace = tmp_path / "late.jsonl"
    trace.write_text("\n".join([_row(1000, [1, 2]), _row(900, [1, 3]), _row(1100, [1, 2])]) + "\n")
    out = tmp_path / "late.json"
    rc = main(["run", "--trace", str(trace), "--speed", "max", "--quiet", "--json", str(out),
               "--model", f"late-{uuid.uuid4().hex[:8]}", *SMALL, *_attach(cluster)])
    err = capsys.readouterr().err
    assert rc == 0, err
    assert ("kvtui: 1 trace row out of order, replayed at the earlier row's time (first: line 2: timestamp 900 ms "
            "is below the previous row's 1000 ms)") in err
    s = json.loads(out.read_text())
    assert s["requests"] == 3 and s["bad_rows_skipped"] == 0  # kept and replayed, not skipped
    assert s["pages_hit"] == 1 + 2  # row 2 hits block 1, row 3 blocks 1 and 2
    rc = main(["run", "--trace", str(trace), "--strict", "--speed", "max", "--quiet", *SMALL, *_attach(cluster)])
    err = capsys.readouterr().err
    assert rc == 2 and err == f"kvtui: error: --trace {trace}:2: timestamp 900 ms is below the previous row's 1000 ms\n"
