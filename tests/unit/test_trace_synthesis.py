"""Trace synthesis (workload.synthesis) on small hand-made traces, expected rows and hits worked out by hand,
its documented effect on the ideal hit rate of the shipped traces, and the flags of kvtui/config/workload.py
on `kvtui trace-stats`, `run` and `bench`."""

from __future__ import annotations

import json
from collections import Counter, defaultdict

import pytest

from kvtui.cli import main
from kvtui.core.traces import SHIPPED_TRACES
from workload.stats import trace_stats
from workload.synthesis import (
    MAX_BLOCKS,
    Synthesis,
    replicate_roots,
    rows_to_jsonl,
    scale_prefixes,
    scale_prompts,
    shared_ids,
    shared_prefix_lengths,
    speed_up,
    synthesize,
)
from workload.trace import TraceRow, read_trace

B = 4  # tokens per block in the hand-made traces


def R(line: int, ts: int, n: int, ids: list[int]) -> TraceRow:
    return TraceRow(line, ts, n, 1, tuple(ids))


# Four rows, B = 4. Full blocks: r0 [1,2] (3 is a 2-token tail), r1 [1,2,4], r2 [1,5], r3 [6] (7: tail).
# Listed by two rows or more: 1 (r0, r1, r2) and 2 (r0, r1) -> shared prefixes 2, 2, 1, 0 blocks.
# Ideal replay: r1 hits 1, 2; r2 hits 1 -> H = 3 blocks = 12 of T = 36 tokens.
HAND = [R(1, 0, 10, [1, 2, 3]), R(2, 100, 12, [1, 2, 4]), R(3, 300, 8, [1, 5]), R(4, 300, 6, [6, 7])]


def shape(rows):
    return [(r.input_length, list(r.hash_ids)) for r in rows]


def hits(rows) -> tuple[int, int]:
    """(ideal hit blocks, input tokens) with B-token blocks."""
    s = trace_stats(rows, B)
    return s.ideal_block_hits, s.input_tokens


def test_shared_split_of_the_hand_trace():
    assert shared_ids(HAND, B) == {1, 2}
    assert shared_prefix_lengths(HAND, B) == [2, 2, 1, 0]
    assert hits(HAND) == (3, 36)


def test_shared_counts_full_blocks_only_and_a_row_once():
    # id 2 is a full block only in row 2 (a 488-token tail in row 1): not shared; a row listing 9 twice counts once
    rows = [R(1, 0, 1000, [1, 2]), R(2, 0, 1024, [1, 2]), R(3, 0, 1024, [9, 9])]
    assert shared_ids(rows, 512) == {1}
    assert shared_prefix_lengths(rows, 512) == [1, 1, 0]


def test_speed_up_divides_arrivals_after_the_first_row_rounding_half_up():
    assert [r.timestamp_ms for r in speed_up(HAND, 2)] == [0, 50, 150, 150]
    assert [r.timestamp_ms for r in speed_up(HAND, 3)] == [0, 33, 100, 100]  # 33.3 and 100
    rows = [R(1, 1000, 4, [1]), R(2, 1001, 4, [2]), R(3, 1003, 4, [3]), R(4, 100, 4, [4])]
    # 0.5 -> 1 and 1.5 -> 2 (half up, not to even); the late row stays late, clamped at 0 when slowed down
    assert [r.timestamp_ms for r in speed_up(rows, 2)] == [1000, 1001, 1002, 550]
    assert speed_up(rows, 0.5)[3].timestamp_ms == 0
    assert [r.hash_ids for r in speed_up(HAND, 2)] == [r.hash_ids for r in HAND]
    assert hits(speed_up(HAND, 2)) == hits(HAND)


def test_prefix_scale_two_doubles_each_shared_node_the_same_way_in_every_row():
    # max id 7: node 1 -> (1, 8), node 2 -> (2, 9); suffixes unchanged; +4 tokens per new block
    out = scale_prefixes(HAND, 2, B)
    assert shape(out) == [(18, [1, 8, 2, 9, 3]), (20, [1, 8, 2, 9, 4]), (12, [1, 8, 5]), (6, [6, 7])]
    # hits 3 -> 6 blocks (x2); T = 36 + (2-1) * S with S = (2+2+1) * 4 = 20: 24 / 56
    assert hits(out) == (6, 56)
    assert [(r.line_no, r.timestamp_ms, r.output_length) for r in out] == [(r.line_no, r.timestamp_ms, 1) for r in HAND]


def test_prefix_scale_fractional_and_below_one():
    # x = 1.5: L(1) = 2, L(2) = floor(3.5) = 3 -> node 1 (depth 1) gets 2 blocks, node 2 (depth 2) 1
    assert shape(scale_prefixes(HAND, 1.5, B)) == [(14, [1, 8, 2, 3]), (16, [1, 8, 2, 4]), (12, [1, 8, 5]),
                                                   (6, [6, 7])]
    assert hits(scale_prefixes(HAND, 1.5, B)) == (5, 48)
    # x = 0.5: L(1) = max(1, 1) = 1, L(2) = max(1, floor(1.5)) = 1 -> node 2 vanishes
    out = scale_prefixes(HAND, 0.5, B)
    assert shape(out) == [(6, [1, 3]), (8, [1, 4]), (8, [1, 5]), (6, [6, 7])]
    assert hits(out) == (2, 28)
    # a tiny factor keeps one block of every shared prefix (L(s) >= 1)
    assert shape(scale_prefixes(HAND, 0.01, B))[:3] == [(6, [1, 3]), (8, [1, 4]), (8, [1, 5])]


def test_prompt_scale_renews_the_unique_suffix_and_keeps_the_hits():
    # suffix tokens u = 2, 4, 4, 6 -> 4, 8, 8, 12 of new ids from 8 on
    out = scale_prompts(HAND, 2, B)
    assert shape(out) == [(12, [1, 2, 8]), (16, [1, 2, 9, 10]), (12, [1, 11, 12]), (12, [13, 14, 15])]
    assert hits(out) == (3, 52)
    # u -> 1, 2, 2, 3 tokens
    out = scale_prompts(HAND, 0.5, B)
    assert shape(out) == [(9, [1, 2, 8]), (10, [1, 2, 9]), (6, [1, 10]), (3, [11])]
    assert hits(out) == (3, 28)
    # a row that is all shared prefix keeps its length
    rows = [R(1, 0, 8, [1, 2]), R(2, 0, 8, [1, 2])]
    assert scale_prompts(rows, 3, B) == rows


def test_prefix_roots_spreads_rows_round_robin_over_disjoint_copies():
    # rows 0, 2 -> copy 0 (ids kept), rows 1, 3 -> copy 1: r1's prefix 1, 2 -> 8, 9 (r3 has none)
    out = replicate_roots(HAND, 2, B)
    assert shape(out) == [(10, [1, 2, 3]), (12, [8, 9, 4]), (8, [1, 5]), (6, [6, 7])]
    # only r2 hits (block 1, from r0): sum over ids of k - c = (3 - 2) + (2 - 2) = 1
    assert hits(out) == (1, 36)
    assert hits(replicate_roots(HAND, 4, B)) == (0, 36)  # N >= rows: every row alone in its copy


def test_synthesize_composes_in_the_documented_order():
    # prefix x2 (ids 8, 9 as above), then copy 1 for rows 1 and 3: r1's 1, 8, 2, 9 -> 10, 11, 12, 13
    out = synthesize(HAND, Synthesis(prefix_scale=2, prefix_roots=2), B)
    assert shape(out) == [(18, [1, 8, 2, 9, 3]), (20, [10, 11, 12, 13, 4]), (12, [1, 8, 5]), (6, [6, 7])]
    assert hits(out) == (2, 56)  # r2 hits 1, 8
    sped = synthesize(HAND, Synthesis(speedup=2, prompt_scale=2), B)
    assert [r.timestamp_ms for r in sped] == [0, 50, 150, 150] and hits(sped) == (3, 52)
    assert synthesize(HAND, Synthesis(), B) == HAND and HAND[1].hash_ids == (1, 2, 4)  # input untouched


@pytest.mark.parametrize("bad, field", [(Synthesis(speedup=0), "speedup"), (Synthesis(prefix_scale=-1), "prefix_scale"),
                                        (Synthesis(prompt_scale=float("nan")), "prompt_scale"),
                                        (Synthesis(prefix_roots=0), "prefix_roots"),
                                        (Synthesis(prefix_roots=1.5), "prefix_roots")])
def test_bad_synthesis_names_its_field(bad, field):
    with pytest.raises(ValueError, match=f"^{field} must be"):
        synthesize(HAND, bad, B)


def test_a_synthesis_too_large_is_refused_before_building():
    rows = [R(1, 0, 8, [1, 2]), R(2, 0, 8, [1, 2])]
    with pytest.raises(ValueError, match="more than"):
        scale_prefixes(rows, MAX_BLOCKS, B)


def test_describe_and_as_dict():
    s = Synthesis(speedup=2, prefix_scale=1.5, prefix_roots=4)
    assert s.describe() == "arrivals ÷ 2, shared prefixes × 1.5, 4 prefix roots"
    assert s.as_dict() == {"speedup": 2, "prefix_scale": 1.5, "prefix_roots": 4}
    assert Synthesis().describe() == "none" and Synthesis().identity


def test_rows_to_jsonl_reads_back(tmp_path):
    out = synthesize(HAND, Synthesis(prefix_scale=2, prompt_scale=1.5, prefix_roots=3), B)
    path = tmp_path / "synth.jsonl"
    path.write_text(rows_to_jsonl(out))
    back, problems = read_trace(path, block_tokens=B)
    assert problems == [] and [(r.timestamp_ms, r.input_length, r.hash_ids) for r in back] == [
        (r.timestamp_ms, r.input_length, r.hash_ids) for r in out]


# --- the shipped traces: prefix trees, and the documented effects ------------------------------------


@pytest.fixture(scope="module", params=sorted(SHIPPED_TRACES))
def shipped(request):
    rows, _ = read_trace(SHIPPED_TRACES[request.param].path)
    return rows


def _visits(rows, bt=512):
    """Per full-block id, the row indices listing it."""
    out = defaultdict(list)
    for i, r in enumerate(rows):
        for h in dict.fromkeys(r.hash_ids[: r.input_length // bt]):
            out[h].append(i)
    return out


def test_the_shipped_traces_are_prefix_trees(shipped):
    depth, parent = defaultdict(set), defaultdict(set)
    for r in shipped:
        full = r.hash_ids[: r.input_length // 512]
        for d, h in enumerate(full):
            depth[h].add(d)
            parent[h].add(full[d - 1] if d else None)
    assert all(len(v) == 1 for v in depth.values()) and all(len(v) == 1 for v in parent.values())
    # so H = sum over ids of (k - 1), and every shared id sits in its row's leading shared run
    assert trace_stats(shipped).ideal_block_hits == sum(len(v) - 1 for v in _visits(shipped).values())
    shared = shared_ids(shipped)
    for r, s in zip(shipped, shared_prefix_lengths(shipped)):
        assert not shared & set(r.hash_ids[s: r.input_length // 512])


def test_prefix_scale_effect_on_the_shipped_traces(shipped):
    base = trace_stats(shipped)
    shared_tokens = sum(shared_prefix_lengths(shipped)) * 512
    out = trace_stats(scale_prefixes(shipped, 2))
    assert out.ideal_block_hits == 2 * base.ideal_block_hits
    assert out.input_tokens == base.input_tokens + shared_tokens  # T + (X - 1) S
    assert out.ideal_token_hit_rate == pytest.approx(2 * base.ideal_hit_tokens / (base.input_tokens + shared_tokens))
    assert out.ideal_token_hit_rate > base.ideal_token_hit_rate


def test_prompt_scale_and_speedup_effects_on_the_shipped_traces(shipped):
    base = trace_stats(shipped)
    out = trace_stats(scale_prompts(shipped, 2))
    assert out.ideal_block_hits == base.ideal_block_hits and out.input_tokens > base.input_tokens
    fast = trace_stats(speed_up(shipped, 4))
    assert fast.ideal_block_hits == base.ideal_block_hits
    assert fast.duration_s == pytest.approx(base.duration_s / 4, abs=0.001)


@pytest.mark.parametrize("n", [2, 5])
def test_prefix_roots_effect_on_the_shipped_traces(shipped, n):
    base = trace_stats(shipped)
    expected = sum(len(rows) - len({i % n for i in rows}) for rows in _visits(shipped).values())
    out = trace_stats(replicate_roots(shipped, n))
    assert out.ideal_block_hits == expected < base.ideal_block_hits
    assert out.input_tokens == base.input_tokens
    assert trace_stats(replicate_roots(shipped, len(shipped))).ideal_block_hits == 0


# --- the flags ------------------------------------------------------------------------------------------


def _trace_file(tmp_path, rows=HAND):
    path = tmp_path / "hand.jsonl"
    path.write_text(rows_to_jsonl(rows))
    return str(path)


def test_trace_stats_applies_the_flags(tmp_path, capsys):
    path = _trace_file(tmp_path)
    out = tmp_path / "s.json"
    assert main(["trace-stats", path, "--block-tokens", "4", "--prefix-scale", "2", "--prefix-roots", "2",
                 "--trace-speedup", "2", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "\nsynthesis        arrivals ÷ 2, shared prefixes × 2, 2 prefix roots\n" in text
    doc = json.loads(out.read_text())
    assert doc["synthesis"] == {"speedup": 2.0, "prefix_scale": 2.0, "prefix_roots": 2}
    assert (doc["ideal_block_hits"], doc["input_tokens"], doc["duration_s"]) == (2, 56, 0.15)
    # of the synthesized rows: r0 and r2 share 1, 8 in copy 0 (2, 9 are now r0's alone, r1 is alone in copy 1)
    assert doc["shared_prefix_tokens"] == (2 + 2) * 4
    assert main(["trace-stats", path, "--block-tokens", "4", "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert "synthesis" not in doc and doc["ideal_block_hits"] == 3 and doc["shared_prefix_tokens"] == 20


@pytest.mark.parametrize("argv, message", [
    (["--prefix-scale", "0"], "--prefix-scale must be a positive number, got '0'"),
    (["--prompt-scale", "x"], "--prompt-scale must be a positive number, got 'x'"),
    (["--trace-speedup", "inf"], "--trace-speedup must be a positive number, got 'inf'"),
    (["--trace-speedup", "1e-300"], "--trace-speedup must be within 0.001–1000, got '1e-300'"),
    (["--prefix-scale", "5000"], "--prefix-scale must be within 0.001–1000, got '5000'"),
    (["--prefix-roots", "1.5"], "--prefix-roots must be an integer >= 1, got '1.5'"),
    (["--prefix-roots", "0"], "--prefix-roots must be an integer >= 1, got '0'"),
])
def test_bad_flag_values_are_one_line(tmp_path, capsys, argv, message):
    assert main(["trace-stats", _trace_file(tmp_path), "--block-tokens", "4", *argv]) == 2
    assert capsys.readouterr().err == f"kvtui: error: {message}\n"


@pytest.mark.parametrize("command", [["run"], ["watch", "--headless", "--duration", "1"], ["bench"]])
def test_synthesis_flags_need_a_trace(capsys, command):
    assert main([*command, "--layout", "tiny", "--prefix-scale", "2"]) == 2
    assert capsys.readouterr().err == "kvtui: error: --prefix-scale applies to --trace replays only\n"


def test_a_synthesis_too_large_is_one_line(tmp_path, capsys):
    rows = [R(i, i, 4, [i]) for i in range(1, 60_001)]  # 60,000 one-block rows, each suffix × 1000 → 60 M blocks
    assert main(["trace-stats", _trace_file(tmp_path, rows), "--block-tokens", "4", "--prompt-scale", "1000"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("kvtui: error: trace synthesis: the synthesized trace would list ") and err.count("\n") == 1


def test_counts_per_copy_are_even():  # round robin: each copy gets every N-th row
    rows = [R(i + 1, 0, 4, [1]) for i in range(6)]
    out = replicate_roots(rows, 3, B)
    assert Counter(r.hash_ids for r in out) == Counter({(1,): 2, (2,): 2, (3,): 2})
