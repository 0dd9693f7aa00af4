"""`kvtui sweep` through real stores: two capacities over the first 200 rows of conversation-head, each on a
fresh embedded cluster sized for it, then `kvtui report` of the result (headless SVG of its screen)."""

from __future__ import annotations

import json

import pytest

from kvtui.cli import main
from kvtui.core.sweep import sweep_from_dict
from kvtui.core.traces import SHIPPED_TRACES
from workload.stats import hit_rate_curve, optimal_hit_rate_curve, trace_stats
from workload.trace import read_trace

# ~8 s on a quiet 2-core machine (two clusters started, 400 rows replayed), 33 s with a load average of 13;
# the suite keeps timings out of assertions (README "Measured, not asserted"), the timeout bounds it
pytestmark = [pytest.mark.integration, pytest.mark.timeout(150)]


def test_a_two_point_sweep_through_real_stores(tmp_path, capsys):
    lines = SHIPPED_TRACES["conversation-head"].path.read_text().splitlines()[:200]
    trace = tmp_path / "head200.jsonl"
    trace.write_text("\n".join(lines) + "\n")
    out, svg, png = tmp_path / "sweep.json", tmp_path / "sweep.svg", tmp_path / "sweep.png"
    rc = main(["sweep", "--trace", str(trace), "--capacity", "1M,3M", "--json", str(out), "--svg", str(svg),
               "--png", str(png)])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    r = sweep_from_dict(json.loads(out.read_text()))
    rows, _ = read_trace(trace)
    stats = trace_stats(rows)
    assert (r.rows, r.input_tokens, r.ideal_token_hit_rate) == (200, stats.input_tokens, stats.ideal_token_hit_rate)
    assert r.sizing["elem_bytes_auto"] and r.page_bytes == 8192  # 1M tokens: 1,953 pages of 8 KiB ≥ 16 MiB
    lru = dict(hit_rate_curve(rows, [1_000_000, 3_000_000]))
    best = dict(optimal_hit_rate_curve(rows, [1_000_000, 3_000_000]))
    small, big = r.points
    assert (small.capacity_tokens, small.pages, big.pages) == (1_000_000, 1953, 5859)
    assert small.segment_bytes == -(-1953 * 8192 * 10 // 9) and small.segment_bytes >= 16 << 20
    for p in r.points:
        assert p.lru_token_hit_rate == lru[p.capacity_tokens]
        assert p.min_token_hit_rate == best[p.capacity_tokens]
        assert 0 < p.real_token_hit_rate <= r.ideal_token_hit_rate
        assert p.mismatches == 0 and p.overhead_bytes_per_object == 0  # Mooncake adds no per-object bytes
        # (the last puts may land between two passes of the 10 ms eviction thread: past the watermark, which
        # is `pages`, but never past the whole segment)
        assert p.keys_at_end <= p.segment_bytes // 8192 and p.used_bytes_at_end == p.keys_at_end * 8192
    assert big.keys_at_end <= big.pages  # nothing to evict there
    # 1M tokens hold fewer pages than the 200 rows publish: the master evicted (past the watermark; leased
    # pages and the 10 ms eviction thread may let it fill more of the segment meanwhile, never more than all)
    assert small.evicted_keys > 0 and small.keys_max <= small.segment_bytes // 8192
    # 3M tokens hold every distinct page: nothing evicted, the real store reaches the ideal exactly
    assert big.evicted_keys == 0 and big.tokens_hit == stats.ideal_hit_tokens
    assert big.real_token_hit_rate == r.ideal_token_hit_rate
    assert "1,000,000 tok" in captured.out and "unbounded ideal" in captured.out
    assert svg.read_text().lstrip().startswith("<?xml") and png.read_bytes()[:4] == b"\x89PNG"
    screen = tmp_path / "screen.svg"
    assert main(["report", str(out), "--svg", str(screen)]) == 0
    text = screen.read_text().replace("&#160;", " ")
    assert "real Mooncake store" in text and "offline LRU" in text and "head200.jsonl" in text
    assert "offline optimal (Belady MIN)" in text


def test_repeats_give_each_point_a_range_and_the_reasons_of_its_misses(tmp_path, capsys):
    """`--repeat 3`: three replays of the point, each on a fresh cluster, every one kept in the JSON with its miss
    reasons; the table gives the median with the lowest and highest, and why the other tokens missed. The
    compulsory misses (first use) do not depend on the store, so every repeat has the trace's own."""
    from kvtui.config.cluster import LEASE_S

    lines = SHIPPED_TRACES["conversation-head"].path.read_text().splitlines()[:200]
    trace = tmp_path / "head200.jsonl"
    trace.write_text("\n".join(lines) + "\n")
    out = tmp_path / "sweep.json"
    rc = main(["sweep", "--trace", str(trace), "--capacity", "1M", "--repeat", "3", "--json", str(out)])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    r = sweep_from_dict(json.loads(out.read_text()))
    rows, _ = read_trace(trace)
    stats = trace_stats(rows)
    (p,) = r.points
    assert len(p.runs) == 3 and r.store["repeats"] == 3 and r.store["lease_ttl_s"] == LEASE_S
    rates = sorted(run.real_token_hit_rate for run in p.runs)
    assert p.real_token_hit_rate == rates[1] and p.real_range() == (rates[0], rates[2])
    for run in p.runs:
        m = run.misses
        assert m is not None and m["in_flight"]["pages"] == 0  # one request at a time
        assert m["first_use"]["pages"] == run.pages_total - stats.ideal_block_hits
        assert run.tokens_hit + sum(m[k]["tokens"] for k in ("evicted", "never_stored", "after_break")) == \
            stats.ideal_hit_tokens
    assert p.misses == next(run.misses for run in p.runs if run.real_token_hit_rate == p.real_token_hit_rate)
    lo, hi = p.real_range()
    assert f"({lo * 100:.2f}–{hi * 100:.2f})" in captured.out
    assert "why the prompt tokens missed" in captured.out and "after a break" in captured.out
    assert captured.err.count("repeat ") >= 3  # one progress line per replay


def test_a_dram_by_disk_pair_splits_its_hits_by_tier_beside_the_two_tier_model(tmp_path, capsys):
    """One DRAM × disk pair on the real store (1M tokens of DRAM, 4M on disk, the first 200 rows of
    conversation-head, whose pages do not fit the DRAM): every hit is read from DRAM or from disk, some from disk;
    the offline figures are the two-tier model's and MIN at DRAM + disk; a pair whose disk is below its DRAM
    segment is left out and said; the disk tier's folder goes with the point."""
    from kvtui.core.layout import PageLayout
    from workload.tiers import two_tier_hits
    from workload.working_set import trace_working_set

    lines = SHIPPED_TRACES["conversation-head"].path.read_text().splitlines()[:200]
    trace = tmp_path / "head200.jsonl"
    trace.write_text("\n".join(lines) + "\n")
    out, disks = tmp_path / "sweep.json", tmp_path / "disks"
    disks.mkdir()
    rc = main(["sweep", "--trace", str(trace), "--capacity", "1M", "--disk", "500k,4M", "--disk-path", str(disks),
               "--json", str(out)])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    assert "warning: left out --capacity 1M with --disk 500k" in captured.err
    r = sweep_from_dict(json.loads(out.read_text()))
    (p,) = r.points
    (run,) = p.runs
    assert (p.capacity_tokens, p.disk_tokens) == (1_000_000, 4_000_000) and p.disk_bytes == p.disk_pages * r.page_bytes
    assert r.sizing["skipped_pairs"][0]["disk_tokens"] == 500_000
    rows, _ = read_trace(trace)
    ws = trace_working_set(rows, r.block_tokens, PageLayout(**r.layout).page_tokens)
    assert ws.pages > p.pages  # the DRAM cannot hold the trace's pages: evicted ones are offloaded
    assert 0 < p.pages_hit_disk < p.pages_hit  # memory + disk hits = hits, and some were read from disk
    page_tokens = PageLayout(**r.layout).page_tokens
    assert p.tokens_hit_disk == p.pages_hit_disk * page_tokens
    assert p.real_disk_token_hit_rate == p.tokens_hit_disk / r.input_tokens
    assert p.real_memory_token_hit_rate * r.input_tokens == pytest.approx(p.tokens_hit - p.tokens_hit_disk)
    assert p.mismatches == 0 and p.disk_keys_at_end and p.disk_used_bytes_at_end
    model = two_tier_hits(rows, 1_000_000, 4_000_000)
    assert (p.model_memory_token_hit_rate, p.model_disk_token_hit_rate, p.model_token_hit_rate) == \
        (model.memory_rate, model.disk_rate, model.hit_rate)
    assert p.min_token_hit_rate == model.optimal_rate
    assert p.lru_token_hit_rate == hit_rate_curve(rows, [1_000_000])[0][1]
    assert "of it" in captured.out and "1M" in captured.out and "4M" in captured.out
    assert not list(disks.iterdir())  # the tier's files went with the point's cluster
