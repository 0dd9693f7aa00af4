"""Offline trace statistics (workload.stats) and the ``kvtui trace-stats`` command."""

from __future__ import annotations

import functools
import json
import math
import random
from pathlib import Path

import pytest

from kvtui.cli import main
from workload.stats import (
    aiperf_hit_rate,
    hit_rate_curve,
    ideal_hits,
    optimal_hit_rate_curve,
    optimal_hits,
    percentile,
    prefill_ceiling,
    trace_stats,
)
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


# --- Belady's MIN ---------------------------------------------------------------------------------------


def _best_hits(full: list[list[int]], capacity: int) -> int:
    """The most full-block prefix hits any eviction choices give: an exhaustive search over every choice
    (keep or drop the new block, or which cached block to drop) at every publish into a full cache."""
    rows = [tuple(r) for r in full]

    @functools.lru_cache(maxsize=None)
    def best(r: int, k: int, cache: frozenset[int]) -> int:
        if r == len(rows):
            return 0
        ids = rows[r]
        gain = 0
        if k == 0:  # the row's lookup: its leading run of cached blocks
            for h in ids:
                if h not in cache:
                    break
                gain += 1
        if k == len(ids):
            return gain + best(r + 1, 0, cache)
        h = ids[k]
        if h in cache or len(cache) < capacity:
            return gain + best(r, k + 1, cache | {h})
        return gain + max([best(r, k + 1, cache)] + [best(r, k + 1, (cache - {v}) | {h}) for v in cache])

    return best(0, 0, frozenset())


def _chain_rows(rng: random.Random, n: int, depth: int, fan: int) -> list[list[int]]:
    """``n`` rows of prefix-chained block ids (a block's id names its whole prefix, as in the FAST'25 traces):
    each row a random root path of 1..``depth`` blocks in a tree of fan-out ``fan``."""
    ids: dict[tuple[int, ...], int] = {}
    out = []
    for _ in range(n):
        path = tuple(rng.randrange(fan) for _ in range(rng.randint(1, depth)))
        out.append([ids.setdefault(path[: i + 1], len(ids)) for i in range(len(path))])
    return out


def _rows_of(full: list[list[int]]) -> list[TraceRow]:
    return [R(i + 1, i, 512 * len(ids), ids) for i, ids in enumerate(full)]


def test_min_keeps_what_is_used_soonest_on_a_hand_made_trace():
    # room for 2 blocks; rows 1, 2, 3, then 1 and 2 again: LRU drops 1 for 3 and then 2 for 1 (no hit);
    # MIN keeps 1 and 2 (3 is never used again), so both later rows hit
    full = [[1], [2], [3], [1], [2]]
    rows = _rows_of(full)
    assert ideal_hits(rows, 512, capacity_tokens=1024) == (0, 0)
    assert optimal_hits(rows, 512, capacity_tokens=1024) == (2, 1024) == (_best_hits(full, 2), 1024)
    # for 3, MIN drops 2 rather than 1: both are next used by row 4, which can only hit 2 if it hits 1
    full = [[1, 2], [3], [3], [1, 2]]
    assert optimal_hits(_rows_of(full), 512, capacity_tokens=1024)[0] == 2 == _best_hits(full, 2)
    assert optimal_hits(_rows_of(full), 512, capacity_tokens=0) == (0, 0)
    assert optimal_hits(_rows_of(full), 512) == ideal_hits(_rows_of(full), 512)  # None: unbounded
    with pytest.raises(ValueError):
        optimal_hits(_rows_of(full), 512, capacity_tokens=-1)


def test_min_equals_an_exhaustive_search_on_small_prefix_chained_traces():
    rng = random.Random(39)
    for _ in range(400):
        full = _chain_rows(rng, rng.randint(1, 7), rng.randint(1, 4), rng.randint(1, 3))
        capacity = rng.randint(1, 4)
        rows = _rows_of(full)
        best = _best_hits(full, capacity)
        assert optimal_hits(rows, 512, capacity_tokens=512 * capacity)[0] == best, (full, capacity)
        assert ideal_hits(rows, 512, capacity_tokens=512 * capacity)[0] <= best


@pytest.mark.parametrize("name", sorted(GROUND_TRUTH))
def test_min_lies_between_lru_and_the_unbounded_cache_on_the_shipped_traces(name):
    rows = load(name)
    caps = [0, 100_000, 1_000_000, 3_000_000, 10**12]
    lru = dict(hit_rate_curve(rows, caps))
    best = optimal_hit_rate_curve(rows, caps)
    unbounded = trace_stats(rows).ideal_token_hit_rate
    assert [c for c, _ in best] == caps
    assert all(lru[c] <= rate <= unbounded for c, rate in best)
    assert best[0][1] == 0.0 and best[-1][1] == unbounded
    assert lru[1_000_000] < dict(best)[1_000_000]  # on these traces LRU leaves hits a better policy takes
    rates = [rate for _, rate in best]
    assert rates == sorted(rates)


# --- aiperf's hit rate and the prefill ceiling --------------------------------------------------------


def test_aiperf_hit_rate_is_a_mean_over_requests_of_their_block_shares():
    rows = [
        R(1, 0, 1100, [1, 2, 3]),  # nothing seen: 0/3
        R(2, 10, 1100, [1, 2, 3]),  # all seen, the partial tail 3 too: 3/3
        R(3, 20, 1536, [1, 9, 3]),  # 1 seen, then 9 is new: 1/3
        R(4, 30, 100, [1]),  # 1/1
    ]
    assert aiperf_hit_rate(rows) == pytest.approx((0 + 1 + 1 / 3 + 1) / 4)
    assert aiperf_hit_rate([]) == 0.0
    assert trace_stats(rows, 512).aiperf_hit_rate == aiperf_hit_rate(rows)
    # token-weighted, the same rows hit 0 + 2 + 1 + 0 full blocks of 512 of 3,836 prompt tokens: another figure
    assert trace_stats(rows, 512).ideal_token_hit_rate == pytest.approx(3 * 512 / 3836)


def test_aiperf_hit_rate_of_synthetic_is_the_one_aiperf_reports():
    # aiperf analyze-trace gives 0.42 for the FAST'25 synthetic trace (issue #39); kvtui's token-weighted 65 %
    assert round(aiperf_hit_rate(load("synthetic_trace.jsonl")), 2) == 0.42


def test_prefill_ceiling():
    assert prefill_ceiling(0.0) == 1.0
    assert prefill_ceiling(0.75) == pytest.approx(4.0)
    assert prefill_ceiling(1.0) == math.inf
    for bad in (-0.1, 1.5):
        with pytest.raises(ValueError):
            prefill_ceiling(bad)
    from kvtui.metrics.figures import ceiling_text

    assert ceiling_text(prefill_ceiling(0.75)) == "4.00×" and ceiling_text(math.inf) == "∞ (all hits)"


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
    assert [x["capacity_tokens"] for x in doc["min"]] == [1000, 2000, 1_000_000]
    assert all(lru["token_hit_rate"] <= best["token_hit_rate"] <= doc["ideal_token_hit_rate"]
               for lru, best in zip(doc["lru"], doc["min"]))
    assert doc["prefill_ceiling"] == pytest.approx(1 / (1 - doc["ideal_token_hit_rate"]))
    assert doc["aiperf_hit_rate"] == pytest.approx(0.5)  # row 1: 0 of 3 blocks seen, row 2: 3 of 3
    for name in ("ideal hit rate", "aiperf hit rate", "prefill ceiling", "LRU", "optimal (Belady MIN)"):
        assert name in out


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
        (["--capacity", "0"], "--capacity must be at least 1 token, got 0"),
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


def test_trace_stats_gives_the_two_tier_model_behind_each_capacity(tmp_path, capsys):
    """``--disk`` beside ``--capacity``: one row and one JSON entry per (memory, disk) pair, memory + disk hits
    adding up to the two tiers' rate, never above Belady MIN at their total; --disk alone is refused."""
    from workload.tiers import two_tier_hits

    out = tmp_path / "s.json"
    assert main(["trace-stats", "synthetic", "--capacity", "1M", "--disk", "2M,8M", "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert [(t["memory_tokens"], t["disk_tokens"]) for t in doc["two_tier"]] == [(1_000_000, 2_000_000),
                                                                                  (1_000_000, 8_000_000)]
    rows, _ = read_trace(Path(__file__).resolve().parents[2] / "kvtui" / "data" / "traces" / "synthetic_trace.jsonl")
    for t in doc["two_tier"]:
        assert t["memory_token_hit_rate"] + t["disk_token_hit_rate"] == pytest.approx(t["token_hit_rate"])
        assert t["token_hit_rate"] <= t["min_token_hit_rate"]
        model = two_tier_hits(rows, t["memory_tokens"], t["disk_tokens"], 512)
        assert t["token_hit_rate"] == pytest.approx(model.hit_rate)
    text = capsys.readouterr().out
    assert "hit rate @ 1,000,000 + 8,000,000 disk" in text and "two tiers (memory" in text
    assert main(["trace-stats", "synthetic", "--disk", "1M"]) == 2
    assert "give --capacity too" in capsys.readouterr().err
