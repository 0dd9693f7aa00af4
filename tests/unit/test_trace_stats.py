"""Offline trace statistics (workload.stats) and the ``kvtui trace-stats`` command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvtui.cli import main
from workload.stats import hit_rate_curve, ideal_hits, percentile, trace_stats
from workload.trace import TraceRow, read_trace

TRACES = Path(__file__).resolve().parents[3] / "shared" / "data" / "traces"
if not TRACES.is_dir():
    TRACES = Path("/work/shared/data/traces")

# README ground truth: (rows, blocks listed, full-block hits, input tokens, hit tokens, rate %)
GROUND_TRUTH = {
    "synthetic_trace.jsonl": (3993, 121_877, 77_740, 61_194_628, 39_802_880, 65.04),
    "conversation_head1000.jsonl": (1000, 27_305, 5_780, 13_732_944, 2_959_360, 21.55),
}


def load(name: str) -> list[TraceRow]:
    path = TRACES / name
    if not path.exists():
        pytest.skip(f"shared trace {path} not available")
    rows, problems = read_trace(path)
    assert problems == []
    return rows


def R(line: int, ts: int, n: int, ids: list[int]) -> TraceRow:
    return TraceRow(line, ts, n, 1, tuple(ids))


# --- stats ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(GROUND_TRUTH))
def test_ground_truth_unbounded(name):
    rows_n, listed, hits, input_tokens, hit_tokens, rate = GROUND_TRUTH[name]
    rows = load(name)
    assert ideal_hits(rows) == (hits, hit_tokens)
    s = trace_stats(rows)
    assert (s.rows, s.blocks_listed, s.ideal_block_hits, s.input_tokens, s.ideal_hit_tokens) == (
        rows_n,
        listed,
        hits,
        input_tokens,
        hit_tokens,
    )
    assert round(s.ideal_token_hit_rate * 100, 2) == rate
    # README: "if every listed block, partial tails included, were cacheable"
    assert (s.all_blocks_hits, round(s.all_blocks_token_hit_rate * 100, 2)) == {
        "synthetic_trace.jsonl": (77_953, 65.12),
        "conversation_head1000.jsonl": (5_791, 21.57),
    }[name]


@pytest.mark.parametrize("name", sorted(GROUND_TRUTH))
def test_lru_monotone_and_huge_capacity_equals_unbounded(name):
    rows = load(name)
    caps = [0, 100_000, 1_000_000, 3_000_000, 10_000_000, 30_000_000, 10**12]
    curve = hit_rate_curve(rows, caps)
    assert [c for c, _ in curve] == caps
    rates = [r for _, r in curve]
    assert rates[0] == 0.0
    assert all(a <= b for a, b in zip(rates, rates[1:]))
    unbounded = trace_stats(rows).ideal_token_hit_rate
    assert rates[-1] == unbounded
    assert rates[1] < unbounded  # a small cache really loses hits
    assert hit_rate_curve(rows, [None]) == [(None, unbounded)]
    assert ideal_hits(rows, capacity_tokens=10**12) == ideal_hits(rows)


def test_hit_rule_on_a_small_example():
    rows = [
        R(1, 0, 1100, [1, 2, 3]),  # publishes 1,2 (3 is a partial tail)
        R(2, 10, 1536, [1, 2, 3]),  # hits 1,2; 3 not published before -> 2 hits; publishes 1,2,3
        R(3, 20, 1536, [1, 9, 3]),  # hits 1 only (leading run stops at 9)
        R(4, 30, 100, [1]),  # no full block: nothing to hit
    ]
    assert ideal_hits(rows, 512) == (3, 1536)
    # LRU of 2 blocks: after row 2 the cache holds {2, 3}: row 3 misses block 1
    assert ideal_hits(rows, 512, capacity_tokens=1024) == (2, 1024)
    assert ideal_hits(rows, 512, capacity_tokens=1023) == (0, 0)  # one block: row 1 keeps only block 2
    s = trace_stats(rows, 512)
    assert (s.rows, s.duration_s, s.arrival_rate_rps) == (4, 0.03, pytest.approx(100.0))
    assert (s.blocks_listed, s.distinct_blocks, s.full_blocks) == (10, 4, 8)
    assert (s.input_p50, s.input_max, s.input_tokens) == (1100, 1536, 4272)
    with pytest.raises(ValueError):
        ideal_hits(rows, 512, capacity_tokens=-1)
    with pytest.raises(ValueError):
        trace_stats([])


def test_percentile_nearest_rank():
    v = list(range(1, 101))
    assert [percentile(v, p) for p in (0, 50, 90, 99, 100)] == [1, 50, 90, 99, 100]
    assert percentile([7], 99) == 7


# --- command --------------------------------------------------------------------------------------------


def _row(ts: int, n: int, ids: list[int]) -> str:
    return json.dumps({"timestamp": ts, "input_length": n, "output_length": 3, "hash_ids": ids})


@pytest.fixture
def small_trace(tmp_path) -> Path:
    lines = [_row(100, 1100, [1, 2, 3]), "{oops", _row(200, 1536, [1, 2, 3]), _row(300, 1000, [1])]
    p = tmp_path / "small.jsonl"
    p.write_text("\n".join(lines) + "\n")
    return p


def test_command_table_json_and_bad_rows(small_trace, tmp_path, capsys):
    out_json = tmp_path / "s.json"
    rc = main(["trace-stats", str(small_trace), "--capacity", "1k,2k", "--capacity", "1M", "--json", str(out_json)])
    out, err = capsys.readouterr()
    assert rc == 0 and err == ""
    assert "rows" in out and "ideal hit rate" in out and "req/s" in out
    assert "hit rate @ 1,000 tokens" in out and "hit rate @ 1,000,000 tokens" in out
    assert "skipped 2 bad rows" in out
    assert "line 2: bad JSON" in out and "line 4:" in out
    doc = json.loads(out_json.read_text())
    assert doc["rows"] == 2 and doc["bad_rows"] == 2
    assert doc["ideal_block_hits"] == 2 and doc["ideal_hit_tokens"] == 1024
    assert [x["capacity_tokens"] for x in doc["lru"]] == [1000, 2000, 1_000_000]
    assert doc["lru"][-1]["token_hit_rate"] == doc["ideal_token_hit_rate"]


def test_command_json_to_stdout(small_trace, capsys):
    assert main(["trace-stats", str(small_trace), "--json", "-"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["rows"] == 2


@pytest.mark.parametrize(
    "argv_tail, needle",
    [
        (["--strict"], ":2: bad JSON"),
        (["--capacity", "lots"], "bad --capacity"),
        (["--capacity", "1M,"], "bad --capacity"),
        (["--block-tokens", "0"], "--block-tokens"),
        (["--block-tokens", "x"], "--block-tokens"),
        (["--block-tokens", "256"], "no valid rows"),
    ],
)
def test_command_errors_are_one_line_exit_2(small_trace, capsys, argv_tail, needle):
    rc = main(["trace-stats", str(small_trace), *argv_tail])
    out, err = capsys.readouterr()
    assert rc == 2
    assert err.count("\n") == 1 and err.startswith("kvtui: error: ") and needle in err
    assert "Traceback" not in err


@pytest.mark.parametrize("content", [None, b"", b"\x00\x00binary"])
def test_command_file_errors(tmp_path, capsys, content):
    p = tmp_path / "f.jsonl"
    if content is not None:
        p.write_bytes(content)
    rc = main(["trace-stats", str(p)])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and str(p) in err


def test_command_on_real_trace(capsys):
    path = TRACES / "conversation_head1000.jsonl"
    if not path.exists():
        pytest.skip("shared traces not available")
    assert main(["trace-stats", str(path), "--capacity", "500k"]) == 0
    out = capsys.readouterr().out
    assert "1,000" in out and "21.55 %" in out and "5,780 block hits" in out


def test_command_names_each_out_of_order_row_and_strict_rejects_it(tmp_path, capsys):
    p = tmp_path / "late.jsonl"
    p.write_text("\n".join([_row(1000, 512, [1]), "{oops", _row(900, 512, [1]), _row(1200, 512, [2])]) + "\n")
    assert main(["trace-stats", str(p), "--json", str(tmp_path / "s.json")]) == 0
    out = capsys.readouterr().out
    assert "(1 bad row skipped)" in out and "skipped 1 bad row:" in out
    assert "1 row out of order" in out and "  line 3: timestamp 900 ms is below the previous row's 1000 ms" in out
    doc = json.loads((tmp_path / "s.json").read_text())
    assert (doc["rows"], doc["bad_rows"], doc["out_of_order_rows"]) == (3, 1, 1)  # the late row is kept, counted
    assert doc["problems"][1] == {"line": 3, "reason": "timestamp 900 ms is below the previous row's 1000 ms",
                                  "skipped": False}
    assert doc["ideal_block_hits"] == 1  # and analysed: it hits block 1
    p.write_text("\n".join([_row(1000, 512, [1]), _row(900, 512, [1])]) + "\n")
    assert main(["trace-stats", str(p), "--strict"]) == 2
    err = capsys.readouterr().err
    assert err == f"kvtui: error: {p}:2: timestamp 900 ms is below the previous row's 1000 ms\n"


def test_out_of_order_rows_follow_the_reader_rule():
    rows = [R(1, 1000, 512, [1]), R(2, 900, 512, [2]), R(3, 950, 512, [3]), R(4, 1000, 512, [4])]
    assert trace_stats(rows, 512).out_of_order_rows == 2  # 950 is above 900 but still below 1000
