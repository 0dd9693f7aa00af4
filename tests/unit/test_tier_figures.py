"""A store with a disk tier: where each hit came from, counted once and shown everywhere (kvtui.metrics.tiers,
kvtui.metrics.figures.TIER). The tiers' figures add up to the whole's (hits, tokens, bytes, read time, hit rate,
TTFT saved); a store without a disk tier changes nothing; the summary, the request log, the recordings (old ones
too), the store scrape and the miss reasons all say the same."""

from __future__ import annotations

import pytest

from kvtui.core.events import RequestResult
from kvtui.core.misses import MissReason, MissTracker, classify
from kvtui.core.pages import TIERS, PageState as S
from kvtui.metrics import figures as fig
from kvtui.metrics.aggregate import TIER_COUNTERS, TIER_KINDS, Aggregator, span_summary, summary_from_frame
from kvtui.metrics.tiers import recompute_by_tier, reload_by_tier
from kvtui.metrics.ttft import GPUS, PrefillModel, TtftEstimator

PT, PB = 16, 4096


def result(i: int, memory: int, disk: int, *, miss: int = 2, probe_ms: float = 0.5, mem_read_ms: float = 1.0,
           disk_read_ms: float = 4.0, disk_first: bool = False) -> RequestResult:
    """``memory`` pages from memory and ``disk`` from disk (the disk ones last, or first), then ``miss`` published."""
    hit = memory + disk
    run = [S.HIT_DISK] * disk + [S.HIT] * memory if disk_first else [S.HIT] * memory + [S.HIT_DISK] * disk
    states = bytes(run + [S.PUBLISHED] * miss)
    read = (mem_read_ms if memory else 0.0) + (disk_read_ms if disk else 0.0)
    return RequestResult(req_id=i, scenario="s", n_tokens=(hit + miss) * PT, cacheable_tokens=(hit + miss) * PT,
                         page_tokens=PT, page_bytes=PB, pages_total=hit + miss, pages_hit=hit, states=states,
                         pages_published=miss, bytes_loaded=hit * PB, bytes_written=miss * PB, verified=hit,
                         probe_ms=probe_ms, read_ms=read if hit else 0.0, put_ms=1.0, pages_hit_disk=disk,
                         disk_read_ms=disk_read_ms if disk else 0.0)


RESULTS = (result(0, 0, 0), result(1, 6, 0), result(2, 4, 3), result(3, 0, 5), result(4, 2, 6, disk_read_ms=9.0))


def tiered_aggregator(estimator=None) -> Aggregator:
    agg = Aggregator(tiered=True, estimator=estimator)
    for r in RESULTS:
        agg.add(r)
    return agg


def test_a_reload_time_goes_to_the_tiers_its_pages_came_from():
    """The disk tier's part is its reads of disk pages, memory's the rest; a reload from one tier is all its."""
    assert reload_by_tier(result(0, 0, 0)) == {}
    assert reload_by_tier(result(1, 6, 0)) == {"memory": 1.5}  # probe + read
    assert reload_by_tier(result(2, 4, 3)) == {"memory": 1.5, "disk": 4.0}
    assert reload_by_tier(result(3, 0, 5)) == {"disk": 4.5}  # disk only: its probe too
    for r in RESULTS:
        assert sum(reload_by_tier(r).values()) == pytest.approx(r.reload_ms if r.pages_hit else 0.0)


def test_a_tiers_recompute_share_is_its_pages_by_their_position_in_the_prompt():
    """FLOPs grow with a token's position: the same number of pages costs more at the end of the prefix than at
    its start; the shares add up to the whole recompute; a measured prefill rate splits by tokens alone."""
    model = TtftEstimator(GPUS["h100"], model=PrefillModel("m", 7_000_000_000, 28, 3584))
    last, first = result(1, 4, 4), result(2, 4, 4, disk_first=True)
    for r in (last, first):
        parts = recompute_by_tier(r, model)
        assert sum(parts.values()) == pytest.approx(model.recompute_ms(r.tokens_hit))
    assert recompute_by_tier(last, model)["disk"] > recompute_by_tier(first, model)["disk"]
    rate = TtftEstimator(GPUS["h100"], tokens_per_s=1000.0)
    assert recompute_by_tier(last, rate) == pytest.approx({"memory": 64.0, "disk": 64.0})  # 64 tokens each at 1/ms
    assert recompute_by_tier(result(3, 0, 5), rate) == {"disk": rate.recompute_ms(80)}


def test_the_tiers_add_up_to_the_whole():
    """Hits, tokens, bytes, read time and the hit rate of memory + disk = the whole's; the latency parts are
    recorded for each reload that loaded a page from the tier."""
    agg = tiered_aggregator()
    t = agg.totals()
    for key in ("pages_hit", "tokens_hit", "bytes_loaded", "read_ms_total", "page_hit_rate"):
        parts = [t[fig.TIER_TOTALS[key].format(tier=tier)] for tier in TIERS]
        assert sum(parts) == pytest.approx(t[key]) and all(p > 0 for p in parts), key
    assert t["pages_hit_disk"] == 14 and t["tokens_hit_disk"] == 14 * PT and t["read_ms_disk_total"] == 17.0
    frame = agg.frame()
    memory, disk = (frame.latency[fig.TIER_LATENCY_KEYS[tier]] for tier in TIERS)
    assert memory.count == 3 and disk.count == 3  # (reload 2 and 4 in both, 1 memory only, 3 disk only)
    assert frame.latency[fig.RELOAD_LATENCY.key].count == 4
    assert disk.max == pytest.approx(9.0, rel=1e-3) and memory.max == pytest.approx(1.5, rel=1e-3)
    s = summary_from_frame(frame)
    tiers = s["tiers"]
    assert list(tiers) == list(TIERS) and not any("disk" in k or "memory" in k for k in s if k != "tiers")
    for f in fig.TIER:  # every tier figure is in each tier's object
        assert all(fig.tier_field(f) in tiers[tier] for tier in TIERS), f.name
    assert tiers["memory"]["pages_hit"] + tiers["disk"]["pages_hit"] == s["pages_hit"]
    assert tiers["memory"]["tokens_hit"] + tiers["disk"]["tokens_hit"] == s["tokens_hit"]
    assert tiers["disk"]["reload_ms"]["count"] == 3 and tiers["disk"]["ttft_saved_ms"] is None  # (no estimator)


def test_the_window_counts_the_disk_hits_too():
    frame = tiered_aggregator().frame()
    wt = frame.window_totals
    assert wt["pages_hit_disk"] == 14 and wt["page_hit_rate_disk"] + wt["page_hit_rate_memory"] == pytest.approx(
        wt["page_hit_rate"])


def test_without_a_disk_tier_nothing_changes():
    """One tier: no tier key in the totals, the latencies or the summary; the first disk hit turns them on."""
    agg = Aggregator()
    agg.add(result(1, 6, 0))
    frame = agg.frame()
    assert not fig.tiered(frame.totals) and set(frame.latency) == {f.key for f in fig.LATENCY}
    assert "tiers" not in summary_from_frame(frame) and "pages_hit_disk" not in frame.window_totals
    agg.add(result(2, 4, 3))  # (a source that did not say: the result does)
    frame = agg.frame()
    assert fig.tiered(frame.totals) and set(TIER_KINDS) <= set(frame.latency)
    assert frame.totals["pages_hit_disk"] == 3 and frame.latency["reload_disk"].count == 1


def test_ttft_saved_per_tier_nets_each_tiers_reload_and_marks_a_slow_disk():
    """Each tier's TTFT saved is its recompute share − its reload part; they add up to the whole; a disk read
    slower than recomputing its tokens counts as slower, in the session and in the window."""
    est = TtftEstimator(GPUS["h100"], tokens_per_s=20_000.0)  # 16 tokens = 0.8 ms: the 4 ms disk reads are slower
    agg = tiered_aggregator(est)
    frame = agg.frame()
    for stats in (frame.ttft["session"], frame.ttft["window"]):
        tiers = stats["tiers"]
        for key in ("total_ms", "reload_ms", "gpu_s", "tokens"):
            assert tiers["memory"][key] + tiers["disk"][key] == pytest.approx(stats[key]), key
        assert tiers["memory"]["count"] == 3 and tiers["disk"]["count"] == 3
        assert tiers["disk"]["slower"] == 3 and tiers["disk"]["ratio"] > 1
        assert tiers["disk"]["p50_ms"] < 0 < tiers["memory"]["p50_ms"]
    want_disk = sum(est.recompute_ms(r.pages_hit_disk * PT) - reload_by_tier(r)["disk"] for r in RESULTS
                    if r.pages_hit_disk)
    assert frame.ttft["session"]["tiers"]["disk"]["total_ms"] == pytest.approx(want_disk)
    s = summary_from_frame(frame)
    disk = s["tiers"]["disk"]
    assert disk["reloads_slower_than_recompute"] == 3 and disk["reload_vs_recompute"] > 1
    assert disk["ttft_saved_ms"]["count"] == 3 and disk["ttft_saved_ms"]["total"] == pytest.approx(want_disk)
    assert s["tiers"]["memory"]["ttft_saved_ms"]["total"] + disk["ttft_saved_ms"]["total"] == pytest.approx(
        s["ttft_saved_ms"]["total"])
    assert disk["prefill_gpu_s_saved"] + s["tiers"]["memory"]["prefill_gpu_s_saved"] == pytest.approx(
        s["prefill_gpu_s_saved"])


def test_a_span_counts_the_tiers_from_its_start():
    agg = tiered_aggregator(TtftEstimator(GPUS["h100"], tokens_per_s=20_000.0))
    first = agg.frame()
    agg.begin_span()
    agg.add(result(9, 1, 2))
    s = span_summary(agg.frame(), first)
    assert s["pages_hit"] == 3 and s["tiers"]["disk"]["pages_hit"] == 2 and s["tiers"]["memory"]["pages_hit"] == 1
    assert s["tiers"]["disk"]["reload_ms"]["count"] == 1 and s["tiers"]["disk"]["ttft_saved_ms"]["count"] == 1


def test_the_summary_text_splits_hits_tokens_latency_and_ttft_by_tier():
    from kvtui.commands.output import format_summary

    est = TtftEstimator(GPUS["h100"], tokens_per_s=20_000.0)
    s = tiered_aggregator(est).summary()
    s["store_at_end"] = {"keys": 10, "evicted_keys": 4, "alloc_failures": 0, "used_bytes": 1 << 20,
                         "capacity_bytes": 2 << 20, "disk_used_bytes": 3 << 20, "disk_capacity_bytes": 8 << 20,
                         "offloaded_keys": 4, "disk_evicted_keys": 1, "promoted_keys": 0}
    text = format_summary(s)
    assert f"{fig.TIER_PAGES_HIT.name}: memory 12 (" in text and "· disk 14 (" in text
    assert f"{fig.TIER_TOKENS_HIT.name}: memory {12 * PT:,} · disk {14 * PT:,}" in text
    assert "\n└ memory " in text and "\n└ disk " in text
    assert "DISK READS SLOWER THAN RECOMPUTE (3 of 3 reloads)" in text
    assert "disk 3.0 MiB of 8.0 MiB · offloaded 4 · disk evicted 1 · promoted 0" in text
    one = Aggregator()
    one.add(result(1, 6, 0))
    assert "tier" not in format_summary(one.summary()) and "└" not in format_summary(one.summary())


def test_the_request_log_says_each_requests_disk_part():
    from kvtui.export.request_log import NAMES, request_row

    row = request_row(result(2, 4, 3))
    assert row["pages_hit"] == 7 and row["pages_hit_disk"] == 3 and row["tokens_hit_disk"] == 3 * PT
    assert row["disk_read_ms"] == 4.0 and row["read_ms"] == 5.0 and tuple(row) == NAMES
    assert NAMES.index("pages_hit_disk") == NAMES.index("pages_hit") + 1
    memory_only = request_row(result(1, 6, 0))
    assert memory_only["pages_hit_disk"] == 0 and memory_only["disk_read_ms"] == 0.0


def test_recordings_keep_the_tiers_and_older_ones_still_replay(tmp_path):
    """A tiered session's frames and rows go through the codec unchanged; a record as an older kvtui wrote it
    (no tier keys, rows without disk_read_ms) decodes, and its summary has no ``tiers``."""
    import json
    import zlib

    from kvtui.session.codec import FrameDecoder, FrameEncoder, decode_record
    from kvtui.testing.demo import DEMO_DISK_BYTES, DemoSource

    src = DemoSource(5, disk_bytes=DEMO_DISK_BYTES)
    enc, dec = FrameEncoder(), FrameDecoder()
    for _ in range(120):
        frame = src.frame()
        back = dec.apply(decode_record(enc.encode(frame)))
    assert back.totals == frame.totals and fig.tiered(back.totals)
    assert back.latency == frame.latency and set(TIER_KINDS) <= set(back.latency)
    assert back.rows == frame.rows and any(S.HIT_DISK in r.states for r in back.rows)
    assert any(r.disk_read_ms > 0 for r in back.rows) and back.store == frame.store
    assert summary_from_frame(back)["tiers"] == summary_from_frame(frame)["tiers"]

    old = json.loads(zlib.decompress(FrameEncoder().encode(DemoSource(5).frame())))  # a one-tier frame…
    for r in old["rows"]:
        if len(r) > 5:
            r[5].pop("disk_read_ms", None)
    for k in list(old["totals"]):
        assert k not in TIER_COUNTERS
    frame = FrameDecoder().apply(old)  # …as an older kvtui recorded it
    assert not fig.tiered(frame.totals) and "tiers" not in summary_from_frame(frame)
    assert all(r.disk_read_ms == 0.0 for r in frame.rows)


def test_a_page_on_disk_is_a_hit_and_evicted_means_it_left_both_tiers():
    """The miss rule: a page that left DRAM for the disk tier reloads as HIT_DISK, no miss; a page that was stored
    and the store no longer gives, from any tier, is evicted."""
    from kvtui.core.misses import STORED

    assert classify([S.HIT_DISK], [STORED], [False]) == bytes([MissReason.NONE])
    assert classify([S.PUBLISHED], [STORED], [False]) == bytes([MissReason.EVICTED])
    tracker = MissTracker()
    keys = ["a", "b", "c"]
    tracker.begin(1, keys)
    assert tracker.finish(1, [S.PUBLISHED] * 3) == bytes([MissReason.FIRST_USE] * 3)
    tracker.begin(2, keys)  # DRAM offloaded b and c: they come from disk
    assert tracker.finish(2, [S.HIT, S.HIT_DISK, S.HIT_DISK]) == bytes(3)
    tracker.begin(3, keys)  # the disk tier dropped c too: gone from both
    assert tracker.finish(3, [S.HIT, S.HIT_DISK, S.PUBLISHED]) == bytes([0, 0, MissReason.EVICTED])


def test_the_store_scrape_has_the_disk_tier_with_the_capacity_kvtui_set(monkeypatch):
    """The master's tier metrics fill the panel only on a tiered store; an embedded store's capacity is kvtui's
    --disk-size; an attached one's is the master's, unless it says 2 TiB (it knows no cap)."""
    from kvtui.mooncake import samplers
    from kvtui.mooncake.samplers import NO_DISK_CAP, StoreSampler

    body = {"cap": NO_DISK_CAP}

    def fake_get(url, timeout_s):
        return 200, "\n".join([
            "master_key_count 10", "master_allocated_bytes 100", "master_total_capacity_bytes 200",
            "master_evicted_key_count 7", "master_allocated_file_size_bytes 3000",
            f"master_total_file_capacity_bytes {body['cap']}", "master_evicted_key_count_mem 7",
            "master_evict_disk_replica_requests_total 2", "master_promotion_completed_total 1",
            "mem_cache_hit_nums_ 40", "file_cache_hit_nums_ 12"])

    monkeypatch.setattr(samplers, "http_get", fake_get)
    panel = StoreSampler("http://m", tiered=True, disk_bytes=64 << 20).sample()
    assert panel["disk_used_bytes"] == 3000 and panel["disk_capacity_bytes"] == 64 << 20
    assert (panel["offloaded_keys"], panel["disk_evicted_keys"], panel["promoted_keys"]) == (7, 2, 1)
    assert (panel["mem_cache_hits"], panel["disk_cache_hits"]) == (40, 12)
    assert "disk_capacity_bytes" not in StoreSampler("http://m", tiered=True).sample()  # 2 TiB: unknown
    body["cap"] = 1 << 30
    assert StoreSampler("http://m", tiered=True).sample()["disk_capacity_bytes"] == 1 << 30
    one = StoreSampler("http://m").sample()
    assert not [k for k in one if k in {f.key for f in fig.STORE_DISK}] and one["evicted_keys"] == 7


def test_tier_figures_are_named_once_and_each_says_where_it_is():
    names = [f.name for f in fig.FIGURES]
    assert len(names) == len(set(names)) and set(fig.TIER + fig.STORE_DISK) <= set(fig.FIGURES)
    assert set(fig.TIER_TOTALS) <= {f.key for f in fig.TIER}  # every per-tier total is a figure of its own
    assert len({fig.tier_field(f) for f in fig.TIER}) == len(fig.TIER)  # one summary key each
    assert fig.show(fig.TIER_HIT_RATE, 0.25) == "25.00%" and fig.show(fig.TIER_VS_RECOMPUTE, 1.5) == "1.50×"
