"""The offline two-tier model (workload.tiers): against a brute-force replay written apart, and its bounds (no
disk is plain LRU; both tiers together never beat Belady's MIN at their total; ample memory is the ideal)."""

from __future__ import annotations

import random

import pytest

from workload.stats import ideal_hits, optimal_hits
from workload.tiers import replay_two_tier, two_tier_hits
from workload.trace import TraceRow


def _brute(full, m, d):
    """The rule of workload.tiers, with lists (most recent last) and no shortcuts."""
    memory: list[int] = []
    disk: list[int] = []
    hm = hd = 0
    for ids in full:
        for h in ids:
            if h in memory:
                hm += 1
            elif h in disk:
                hd += 1
            else:
                break
        for h in ids:
            if h in memory:
                memory.remove(h)
                memory.append(h)
            elif h in disk:
                disk.remove(h)
                disk.append(h)
            elif m:
                memory.append(h)
                if len(memory) > m:
                    old = memory.pop(0)
                    if d:
                        disk.append(old)
                        if len(disk) > d:
                            disk.pop(0)
    return hm, hd


def _rows(seed: int, n: int = 60) -> list[TraceRow]:
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        root = rng.randrange(6)
        blocks = [root * 100 + k for k in range(rng.randrange(1, 6))] + [10_000 + i * 10 + k for k in range(2)]
        rows.append(TraceRow(line_no=i + 1, timestamp_ms=i, input_length=len(blocks) * 4, output_length=1,
                             hash_ids=tuple(blocks)))
    return rows


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("m, d", [(1, 0), (3, 2), (5, 10), (8, 3), (0, 5), (40, 40)])
def test_the_model_matches_a_brute_force_replay(seed, m, d):
    rows = _rows(seed)
    full = [r.hash_ids for r in rows]
    assert replay_two_tier(full, m, d) == _brute(full, m, d)


@pytest.mark.parametrize("seed", range(5))
def test_no_disk_is_lru_ample_memory_is_ideal_and_min_bounds_both_tiers(seed):
    rows = _rows(seed)
    for m in (2, 5, 9):
        assert two_tier_hits(rows, m * 4, 0, block_tokens=4).hit_blocks == ideal_hits(rows, 4, m * 4)[0]
        for d in (0, 3, 12):
            t = two_tier_hits(rows, m * 4, d * 4, block_tokens=4)
            assert t.hit_blocks <= t.optimal_blocks == optimal_hits(rows, 4, (m + d) * 4)[0]
            assert t.hit_blocks >= ideal_hits(rows, 4, m * 4)[0]  # a disk tier never loses a memory hit
    ample = two_tier_hits(rows, 10_000, 10_000, block_tokens=4)
    assert ample.disk_blocks == 0 and ample.hit_blocks == ideal_hits(rows, 4)[0]
    assert ample.memory_rate + ample.disk_rate == pytest.approx(ample.hit_rate)


def test_sizes_below_zero_are_refused():
    with pytest.raises(ValueError, match="tier sizes"):
        two_tier_hits(_rows(0), -1, 0, block_tokens=4)
