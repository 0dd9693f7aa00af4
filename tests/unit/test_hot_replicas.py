"""A store that replicates hot keys (``--replicate-hot``): how many hits had a second memory replica, counted once
(:data:`kvtui.metrics.figures.HOT_PAGES_HIT`) and shown in the summary, ``--json``, Prometheus and the recordings only
when the store replicates (or a hit had one); the master's copies in the store scrape. The figure adds up: the
requests' counts to the total, a part of the hits (of memory's, with a disk tier), the Prometheus counter to the
summary's field."""

from __future__ import annotations

from kvtui.core.events import RequestResult
from kvtui.core.pages import PageState as S
from kvtui.metrics import figures as fig
from kvtui.metrics.aggregate import HOT_COUNTERS, Aggregator, span_summary, summary_from_frame

PT, PB = 16, 4096
HOT = fig.HOT_PAGES_HIT.key


def result(i: int, hit: int, replicated: int, *, disk: int = 0, miss: int = 2) -> RequestResult:
    """``hit`` pages reloaded (the last ``disk`` of them from disk), ``replicated`` of them with two memory
    replicas, then ``miss`` published."""
    states = bytes([S.HIT] * (hit - disk) + [S.HIT_DISK] * disk + [S.PUBLISHED] * miss)
    return RequestResult(req_id=i, scenario="s", n_tokens=(hit + miss) * PT, cacheable_tokens=(hit + miss) * PT,
                         page_tokens=PT, page_bytes=PB, pages_total=hit + miss, pages_hit=hit, states=states,
                         pages_published=miss, bytes_loaded=hit * PB, bytes_written=miss * PB, verified=hit,
                         probe_ms=0.5, read_ms=1.0 if hit else 0.0, put_ms=1.0, pages_hit_disk=disk,
                         disk_read_ms=2.0 if disk else 0.0, pages_replicated=replicated)


RESULTS = (result(0, 0, 0), result(1, 6, 0), result(2, 6, 6), result(3, 8, 5, disk=3), result(4, 4, 1))


def fed(*, replicated: bool = True, tiered: bool = False, results=RESULTS) -> Aggregator:
    agg = Aggregator(replicated=replicated, tiered=tiered)
    for r in results:
        agg.add(r)
    return agg


def test_the_hits_with_a_hot_replica_add_up_and_are_a_part_of_memorys_hits():
    """Σ of the requests' counts = the total, in the totals and the summary; never more than the hits; on a
    store with a disk tier never more than memory's (a disk-only page has no memory replica); each grid row
    keeps its own count."""
    agg = fed(tiered=True)
    frame = agg.frame()
    want = sum(r.pages_replicated for r in RESULTS)
    assert frame.totals[HOT] == want == 12
    s = summary_from_frame(frame)
    assert s["pages_hit_replicated"] == want <= s["tiers"]["memory"]["pages_hit"] <= s["pages_hit"]
    assert [row.pages_replicated for row in frame.rows] == [r.pages_replicated for r in RESULTS]
    assert sum(row.pages_replicated for row in frame.rows) == frame.totals[HOT]


def test_a_store_that_does_not_replicate_changes_nothing_until_a_hit_has_a_replica():
    """No --replicate-hot: no key in the totals or the summary; the first result with a replicated hit (a master
    that replicates on its own) turns it on, counted from that result."""
    agg = fed(replicated=False, results=RESULTS[:2])
    frame = agg.frame()
    assert HOT not in frame.totals and HOT not in summary_from_frame(frame) and not fig.replicated(frame.totals)
    agg.add(RESULTS[2])
    assert agg.totals()[HOT] == RESULTS[2].pages_replicated
    on = fed(results=RESULTS[:2]).frame()  # --replicate-hot: said even while it is 0
    assert on.totals[HOT] == 0 and summary_from_frame(on)["pages_hit_replicated"] == 0


def test_a_span_counts_the_hot_hits_from_its_start():
    agg = fed()
    first = agg.frame()
    agg.begin_span()
    agg.add(result(9, 5, 4))
    s = span_summary(agg.frame(), first)
    assert s["pages_hit_replicated"] == 4 and s["pages_hit"] == 5


def test_the_summary_says_the_hot_hits_and_the_masters_copies_only_with_replication():
    from kvtui.commands.output import format_summary, store_counts

    s = fed().summary()
    s["store_at_end"] = store_counts({"keys": 10, "used_bytes": 1 << 20, "capacity_bytes": 2 << 20,
                                      "copies_started": 48, "copies_done": 47, "put_rps": 3.0})
    assert s["store_at_end"]["copies_started"] == 48 and "put_rps" not in s["store_at_end"]
    text = format_summary(s)
    assert f"\n{' ' * 22}{fig.HOT_PAGES_HIT.name}: 12 (two memory replicas or more)\n" in text
    assert "\nhot copies (master)   48 started · 47 done" in text
    plain = fed(replicated=False, results=RESULTS[:2]).summary()
    plain["store_at_end"] = store_counts({"keys": 10})
    assert "hot" not in format_summary(plain)


def test_prometheus_exports_the_hot_hits_only_when_the_store_replicates():
    from kvtui.export.names import BY_NAME
    from kvtui.export.prometheus import families

    name = "kvtui_pages_hit_replicated"
    frame = fed().frame()
    fam = {f.name: f for f in families(frame)}[name]
    assert [s.value for s in fam.samples if s.name.endswith("_total")] == [summary_from_frame(frame)[HOT]]
    assert BY_NAME[name + "_total"].summary == HOT
    assert name not in {f.name for f in families(fed(replicated=False, results=RESULTS[:2]).frame())}


def test_the_store_scrape_has_the_masters_copies_with_replication(monkeypatch):
    """With --replicate-hot the copies are read, 0 included; without, only once the master says it copied a key
    (an attached master that replicates on its own)."""
    from kvtui.mooncake import samplers
    from kvtui.mooncake.samplers import StoreSampler

    copies = {"start": 0, "end": 0}

    def fake_get(url, timeout_s):
        return 200, "\n".join(["master_key_count 10", f"master_copy_start_requests_total {copies['start']}",
                               f"master_copy_end_requests_total {copies['end']}"])

    monkeypatch.setattr(samplers, "http_get", fake_get)
    panel = StoreSampler("http://m", replicated=True).sample()
    assert (panel["copies_started"], panel["copies_done"]) == (0, 0)
    assert not {f.key for f in fig.STORE_HOT} & set(StoreSampler("http://m").sample())
    copies.update(start=3, end=2)
    panel = StoreSampler("http://m").sample()
    assert (panel["copies_started"], panel["copies_done"]) == (3, 2)


def test_recordings_keep_each_rows_hot_hits_and_older_ones_decode():
    import json
    import zlib

    from kvtui.session.codec import FrameDecoder, FrameEncoder, decode_record
    from kvtui.testing.demo import DemoSource

    src = DemoSource(5, replicate_hot=True)
    enc, dec = FrameEncoder(), FrameDecoder()
    for _ in range(60):
        frame = src.frame()
        back = dec.apply(decode_record(enc.encode(frame)))
    assert back.rows == frame.rows and any(r.pages_replicated for r in back.rows)
    assert back.totals[HOT] == frame.totals[HOT] > 0 and back.store["copies_done"] == frame.store["copies_done"] > 0
    old = json.loads(zlib.decompress(FrameEncoder().encode(frame)))
    for r in old["rows"]:
        if len(r) > 5:
            r[5].pop("pages_replicated", None)
    for k in HOT_COUNTERS:
        old["totals"].pop(k, None)
    older = FrameDecoder().apply(old)
    assert all(r.pages_replicated == 0 for r in older.rows) and HOT not in summary_from_frame(older)


def test_the_demo_without_replication_is_unchanged():
    """The hot-key demo draws the same traffic: only the replicas and the copies differ."""
    from kvtui.testing.demo import fixture_frame

    hot, plain = fixture_frame(ticks=40, replicate_hot=True), fixture_frame(ticks=40)
    assert hot.totals["pages_hit"] == plain.totals["pages_hit"] and HOT not in plain.totals
    assert 0 < hot.totals[HOT] <= hot.totals["pages_hit"]
    assert "copies_started" not in plain.store


def test_the_hot_figures_are_named_once_and_in_the_table():
    names = [f.name for f in fig.FIGURES]
    assert len(names) == len(set(names)) and {fig.HOT_PAGES_HIT, *fig.STORE_HOT} <= set(fig.FIGURES)
    assert fig.show(fig.STORE_COPIES_DONE, 1234) == "1,234 copies"
    assert f"| {fig.HOT_PAGES_HIT.name} |" in fig.markdown_table() and fig.replicated({HOT: 0})


def test_row_details_say_how_many_hit_pages_had_a_hot_replica():
    """A row with hot hits says how many (the Store panel: tests/tui/test_tier_views.py); one without, nothing."""
    import dataclasses

    from kvtui.metrics.frame import PageRow
    from kvtui.tui.screens.row_detail import detail_lines

    row = PageRow(3, "x", 4 * PT, 3, bytes([S.HIT] * 3 + [S.PUBLISHED]), page_tokens=PT, reload_ms=1.0)
    hot = dataclasses.replace(row, pages_replicated=2)
    assert any("hot replicas: 2 of its 3 hit pages" in str(x) for x in detail_lines(hot))
    assert not any("hot replicas" in str(x) for x in detail_lines(row))
