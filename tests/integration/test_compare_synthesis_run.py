"""Through the real store: a synthesized trace replays at exactly the ideal hit rate `kvtui trace-stats` gives it
with the same flags, and `kvtui compare` on two recorded sessions of `kvtui run`."""

from __future__ import annotations

import json
import uuid

import pytest

from kvtui.cli import main
from workload.synthesis import rows_to_jsonl
from workload.trace import TraceRow

pytestmark = pytest.mark.integration
SMALL = ["--layers", "1", "--kv-heads", "1", "--head-dim", "1", "--elem-bytes", "1", "--page-tokens", "512"]
SYNTH = ["--prefix-scale", "2", "--prefix-roots", "2", "--prompt-scale", "1.5", "--trace-speedup", "4"]


def _attach(cluster):
    ep = cluster.endpoints
    return ["--master", ep.master, "--metadata", ep.metadata_url, "--metrics-url", ep.metrics_url]


def test_a_synthesized_trace_replays_at_its_trace_stats_ideal(cluster, tmp_path, capsys):
    # 512-token blocks: two prefix trees (1 -> 2 -> …, 20 -> …), partial tails, a unique row
    rows = [TraceRow(i + 1, 100 * i, n, 1, tuple(ids)) for i, (n, ids) in enumerate([
        (1200, [1, 2, 3]), (1536, [1, 2, 4]), (1100, [1, 5, 6]), (1024, [20, 21]), (1536, [20, 21, 22]),
        (700, [30, 31]), (1600, [1, 2, 4, 7]), (1024, [20, 21])])]
    trace = tmp_path / "t.jsonl"
    trace.write_text(rows_to_jsonl(rows))
    stats = tmp_path / "stats.json"
    assert main(["trace-stats", str(trace), *SYNTH, "--json", str(stats)]) == 0
    ideal = json.loads(stats.read_text())
    out = tmp_path / "run.json"
    rc = main(["run", "--trace", str(trace), *SYNTH, "--speed", "max", "--quiet", "--json", str(out),
               "--model", f"synth-{uuid.uuid4().hex[:8]}", *SMALL, *_attach(cluster)])
    assert rc == 0, capsys.readouterr().err
    s = json.loads(out.read_text())
    # one 512-token page per block: the store's hits are the replay rule's, on the synthesized rows
    assert (s["pages_hit"], s["tokens_input"]) == (ideal["ideal_block_hits"], ideal["input_tokens"])
    assert s["token_hit_rate"] == pytest.approx(ideal["ideal_token_hit_rate"])
    assert ideal["ideal_block_hits"] > 0 and s["mismatches"] == 0
    want = {"speedup": 4.0, "prefix_scale": 2.0, "prompt_scale": 1.5, "prefix_roots": 2}
    assert s["workload"]["synthesis"] == ideal["synthesis"] == want
    assert s["setup"]["store_bytes"] is None and s["setup"]["protocol"] == "tcp"  # attached: no segment of its own


def test_compare_two_recorded_sessions(cluster, tmp_path, capsys):
    summaries = []
    for name, overlap in (("a", "75"), ("b", "25")):
        rc = main(["run", "--requests", "40", "--layout", "tiny", "--overlap", overlap, "--quiet",
                   "--json", str(tmp_path / f"{name}.json"), "--record", str(tmp_path / f"{name}.kvtui"),
                   "--model", f"cmp-{uuid.uuid4().hex[:8]}", *_attach(cluster)])
        assert rc == 0, capsys.readouterr().err
        summaries.append(json.loads((tmp_path / f"{name}.json").read_text()))
    capsys.readouterr()
    cmp_json, svg = tmp_path / "cmp.json", tmp_path / "cmp.svg"
    assert main(["compare", str(tmp_path / "a.kvtui"), str(tmp_path / "b.kvtui"), "--json", str(cmp_json),
                 "--svg", str(svg)]) == 0
    table = capsys.readouterr().out
    c = json.loads(cmp_json.read_text())
    differ = {d["input"]: d["values"] for d in c["inputs_differ"]}
    assert differ.pop("workload.overlap") == [0.75, 0.25]
    assert set(differ) <= {"context.model"}  # the rest is the same setup: layout, store, versions
    rows = {r["field"]: r for r in c["figures"]}
    for field in ("pages_hit", "requests", "tokens_input"):
        assert rows[field]["values"] == [summaries[0][field], summaries[1][field]]
        assert rows[field]["delta"][1] == summaries[1][field] - summaries[0][field]
    assert rows["page_hit_rate"]["values"][0] > rows["page_hit_rate"]["values"][1]
    assert "workload.overlap" in table and "page hit rate (session)" in table
    text = svg.read_text()
    assert "A: a.kvtui" in text and "B: b.kvtui" in text


def test_one_runs_three_forms_differ_only_in_kind(cluster, tmp_path, capsys):
    """The run's JSON, the report of its recording and the recording itself carry the same inputs (setup,
    seed, model, scheme, command): compared, only what each file is differs, and the counters agree."""
    run_json, rec, rep = tmp_path / "run.json", tmp_path / "run.kvtui", tmp_path / "report.json"
    rc = main(["run", "--requests", "30", "--layout", "tiny", "--quiet", "--json", str(run_json), "--record", str(rec),
               "--model", f"forms-{uuid.uuid4().hex[:8]}", *_attach(cluster)])
    assert rc == 0, capsys.readouterr().err
    assert main(["report", str(rec), "--json", str(rep)]) == 0
    capsys.readouterr()
    assert main(["compare", str(run_json), str(rep), str(rec), "--json", "-"]) == 0
    c = json.loads(capsys.readouterr().out)
    differ = {d["input"]: d["values"] for d in c["inputs_differ"]}
    assert differ == {"kind": ["run", "report", "session"]}
    rows = {r["field"]: r for r in c["figures"]}
    for field in ("requests", "pages_hit", "pages_published", "tokens_input"):
        assert rows[field]["delta"][1:] == [0, 0], field


def test_runs_of_other_bounds_say_so_among_the_inputs(cluster, tmp_path, capsys):
    """Two runs that differ only in --requests: compare lists the bound among the inputs that differ (it said
    "inputs: the same" over a 40 % drop of the requests), and the report of a recording carries it as the run's
    JSON does."""
    outs = []
    for n in (10, 16):
        out, rec = tmp_path / f"r{n}.json", tmp_path / f"r{n}.kvtui"
        assert main(["run", "--requests", str(n), "--layout", "tiny", "--quiet", "--json", str(out),
                     "--record", str(rec), "--model", f"bounds-{uuid.uuid4().hex[:8]}", *_attach(cluster)]) == 0
        outs.append(out)
    capsys.readouterr()
    assert main(["compare", *map(str, outs), "--json", "-"]) == 0
    differ = {d["input"]: d["values"] for d in json.loads(capsys.readouterr().out)["inputs_differ"]}
    assert differ.get("context.max_requests") == [10, 16] and "context.duration_s" not in differ
    assert main(["report", str(tmp_path / "r16.kvtui"), "--json", "-"]) == 0
    context = json.loads(capsys.readouterr().out)["context"]
    assert (context["max_requests"], context["duration_s"]) == (16, None)
