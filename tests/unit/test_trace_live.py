"""A trace replay as the monitor shows it: the ideal hit rate of the rows so far (the same rule as
``trace-stats``, row by row), a speed changed mid-run, the trace's position and ETA, and the per-row detail and
windowed counters the monitor reads from frames (also through a recording)."""

from __future__ import annotations

import math

import pytest
from waits import wait_for

from kvtui.core.controls import SetTraceSpeed
from kvtui.core.knobs import TRACE_SPEEDS, next_trace_speed, trace_speed_text
from kvtui.core.layout import PageLayout
from kvtui.core.traces import resolve_trace
from kvtui.metrics import figures as fig
from kvtui.metrics.aggregate import Aggregator, prefix_group
from kvtui.session.codec import FrameDecoder, FrameEncoder, decode_record
from kvtui.testing.fake_engine import FakeCluster, FakeEngine
from workload.stats import IdealPrefixCache, trace_stats
from workload.trace import TraceRow, TraceWorkload, read_trace


@pytest.mark.parametrize("name", ["synthetic", "conversation-head"])
def test_the_ideal_so_far_is_trace_stats_ideal(name):
    """Row by row (IdealPrefixCache, and the labels a replay gives its requests) the ideal adds up to
    trace_stats' ideal exactly, at every prefix of the trace too."""
    rows, _ = read_trace(resolve_trace(name))
    stats = trace_stats(rows)
    cache = IdealPrefixCache()
    for i, row in enumerate(rows):
        cache.add(row)
        if i in (0, len(rows) // 3):
            part = trace_stats(rows[: i + 1])
            assert (cache.hit_blocks, cache.hit_rate) == (part.ideal_block_hits, part.ideal_token_hit_rate)
    assert cache.hit_tokens == stats.ideal_hit_tokens and cache.hit_rate == stats.ideal_token_hit_rate
    labelled = sum(int(r.label("ideal_hit_tokens")) for r in TraceWorkload(rows, speed=None, tokens=False))
    assert labelled == stats.ideal_hit_tokens


def _rows(n: int, gap_ms: int = 1000) -> list[TraceRow]:
    return [TraceRow(i + 1, i * gap_ms, 1024, 8, (0, 100 + i)) for i in range(n)]


def test_speed_changes_mid_run():
    """Rows after a change keep the trace's spacing from the newest row drawn, at the new speed; from as fast
    as possible the replay carries on from now."""
    wl = TraceWorkload(_rows(8), speed=1.0, tokens=False)
    it = iter(wl)
    assert [next(it).arrival_s for _ in range(3)] == [0.0, 1.0, 2.0]
    wl.set_speed(4.0, now_s=2.0)
    assert [next(it).arrival_s for _ in range(2)] == [2.25, 2.5]
    wl.set_speed(None)
    assert next(it).arrival_s is None
    wl.set_speed(2.0, now_s=10.0)  # from max: from now, the trace time since the newest row halved
    assert [next(it).arrival_s for _ in range(2)] == [10.5, 11.0]
    assert wl.progress() == {"issued": 8, "total": 8, "position_s": 7.0, "length_s": 7.0, "speed": 2.0}
    with pytest.raises(ValueError):
        wl.set_speed(0)


def test_a_change_while_waiting_counts_from_now():
    """A change made long after the newest row's arrival (a gap in the trace) counts from now, with the trace
    clock moved on at the old speed."""
    wl = TraceWorkload(_rows(3, gap_ms=10_000), speed=1.0, tokens=False)
    it = iter(wl)
    assert next(it).arrival_s == 0.0
    wl.set_speed(2.0, now_s=4.0)  # 4 s of trace time gone at ×1, 6 s left to the next row: 3 s at ×2
    assert next(it).arrival_s == pytest.approx(7.0)


def test_trace_labels_and_groups():
    rows, _ = read_trace(resolve_trace("conversation-head"))
    wl = TraceWorkload(rows[:50], speed=None, tokens=False)
    assert wl.group_depth == 1  # every row starts with one system-prompt block: groups from the second
    reqs = list(wl)
    assert reqs[0].label("prefix") == str(rows[0].hash_ids[1])
    assert prefix_group("trace:x", reqs[0].labels) == f"pfx {rows[0].hash_ids[1]}"
    assert prefix_group("few-shot", (("pool", "3"),)) == "shot 3" and prefix_group("random", ()) == ""
    assert prefix_group("multi-turn", (("conversation", "7"), ("pool", "0"))) == "conv 7"


def test_trace_speed_steps():
    assert TRACE_SPEEDS[0] == 0.5 and TRACE_SPEEDS[-1] == 64
    assert next_trace_speed(1.0, True) == 2.0 and next_trace_speed(64.0, True) is None
    assert next_trace_speed(None, True) is None and next_trace_speed(None, False) == 64.0
    assert next_trace_speed(0.5, False) == 0.5 and next_trace_speed(3.0, False) == 2.0
    assert trace_speed_text(None) == "max" and trace_speed_text(0.5) == "×0.5"


def test_trace_eta():
    w = {"kind": "trace", "done": 100, "total": 400, "position_s": 60.0, "length_s": 300.0, "speed": 4.0}
    assert fig.trace_eta(w, 0.0) == (60.0, "trace time")
    assert fig.trace_eta({**w, "speed": None}, 50.0) == (6.0, "at 50 req/s")
    assert fig.trace_eta({**w, "speed": None}, 0.0) == (None, "no rate yet")
    assert fig.trace_eta({**w, "complete": True}, 0.0) == (0.0, "done")


def _result(req_id, hits, pages=4, ideal=None, t_labels=()):
    from kvtui.core.events import RequestResult

    labels = tuple(t_labels) + ((("ideal_hit_tokens", str(ideal * 512)),) if ideal is not None else ())
    return RequestResult(req_id=req_id, scenario="trace:x", n_tokens=pages * 512 + 10, cacheable_tokens=pages * 512,
                         page_tokens=512, page_bytes=1024, pages_total=pages, pages_hit=hits,
                         states=bytes([0] * hits + [1] * (pages - hits) + [3]), pages_published=pages - hits,
                         bytes_loaded=hits * 1024, bytes_written=(pages - hits) * 1024, verified=hits,
                         probe_ms=0.2, read_ms=1.0 if hits else 0.0, labels=labels, keys=("k/first", "k/last"))


def test_aggregator_counts_the_ideal_and_the_latency_window():
    t = [0.0]
    agg = Aggregator(window_s=30.0, clock=lambda: t[0])
    agg.add(_result(0, 0, ideal=0, t_labels=(("prefix", "5"),)))
    t[0] = 20.0
    agg.add(_result(1, 2, ideal=3))
    t[0] = 40.0  # the first request has left the 30-s window
    agg.add(_result(2, 4, ideal=4))
    f = agg.frame()
    assert f.totals["ideal_tokens_hit"] == 7 * 512 and f.totals["ideal_pages_hit"] == 7
    assert f.totals[fig.IDEAL_SO_FAR.key] == 7 * 512 / f.totals["tokens_input"]
    wt = f.window_totals
    assert wt["requests"] == 2 and wt["pages_hit"] == 6 and wt["pages_total"] == 8 and wt["ideal_pages_hit"] == 7
    assert wt[fig.HIT_RATE_RECENT.key] == 6 / 8 and f.totals["page_hit_rate"] == 6 / 12
    assert wt[fig.PROBE_ONLY.key] == 0 and f.totals[fig.PROBE_ONLY.key] == 1
    row = f.rows[0]
    assert (row.group, row.keys, row.ideal_pages, row.page_tokens) == ("pfx 5", ("k/first", "k/last"), 0, 512)
    assert "ideal_tokens_hit" not in Aggregator().frame().totals  # a synthetic workload has no ideal


def test_recordings_keep_row_details_and_the_window():
    agg = Aggregator()
    agg.add(_result(0, 1, ideal=2, t_labels=(("pool", "3"),)))
    frame = agg.frame()
    enc, dec = FrameEncoder(), FrameDecoder()
    back = dec.apply(decode_record(enc.encode(frame)))
    assert back.rows == frame.rows and back.window_totals == frame.window_totals
    old = {"t": 1.0, "totals": {}, "rates": {}, "errors": {}, "lat": {}, "latw": {}, "events": [], "series": {},
           "store": {}, "procs": [], "workload": {}, "status": {}, "rows": [[1, "x", 10, 0, "0103"]]}
    assert FrameDecoder().apply(old).rows[0].group == ""  # a file from before the row details
    assert FrameDecoder().apply(old).rows[0].reasons == b""  # ... and before the per-page miss reasons


def test_recordings_keep_each_page_miss_reason():
    """The grid draws a row's per-page reasons, so a recording keeps them (hex, like the states)."""
    import dataclasses

    agg = Aggregator()
    agg.add(dataclasses.replace(_result(0, 1), reasons=bytes([0, 2, 4, 1])))
    frame = agg.frame()
    assert frame.rows[0].reasons == bytes([0, 2, 4, 1])
    back = FrameDecoder().apply(decode_record(FrameEncoder().encode(frame)))
    assert back.rows[0].reasons == bytes([0, 2, 4, 1]) and back.rows == frame.rows


def test_live_session_changes_a_trace_speed():
    from kvtui.live import LiveSession

    wl = TraceWorkload(_rows(400, gap_ms=50), speed=1.0)
    engine = FakeEngine(PageLayout(1, 1, 1, 512, 1))  # every request answered at once
    session = LiveSession(engine, wl, {"kind": "trace", "name": "t", "done": 0, "total": 400, "complete": False},
                          cluster=FakeCluster())
    session.want("test", 50)  # the frames the test reads
    session.start()
    try:
        session.send(SetTraceSpeed(8.0))
        wait_for(lambda: wl.speed == 8.0, 10, "trace speed x8 applied", interval_s=0.01)
        d = session.description
        assert d["speed"] == 8.0 and d["length_s"] == pytest.approx(19.95) and 0 <= d["position_s"] <= 19.95
        wait_for(lambda: any(e.text == "trace speed → ×8" for e in session.frame().events), 10,
                 "the event 'trace speed → ×8'", interval_s=0.01)
        session.send(SetTraceSpeed(None))
        wait_for(lambda: session.driver.completed >= 400, 10, "all 400 requests finished", interval_s=0.02,
                 detail=lambda: session.driver.completed)
        assert session.driver.completed == 400  # as fast as possible: the rest at once
        final = session.final_frame()  # (the frame a summary is made from: every request in it)
        assert math.isclose(final.totals["ideal_token_hit_rate"], trace_stats(wl._rows).ideal_token_hit_rate)
    finally:
        session.stop()


def test_the_live_aiperf_hit_rate_is_trace_stats_over_the_rows_replayed():
    """Replaying the first N rows of the shipped synthetic trace, the header's aiperf figure (the mean of the
    per-request shares the rows carry) equals trace-stats' aiperf hit rate over those N rows."""
    from kvtui.live import LiveSession

    rows, _ = read_trace(resolve_trace("synthetic"))
    n = 300
    wl = TraceWorkload(rows[:n], speed=None)
    engine = FakeEngine(PageLayout(1, 1, 1, 512, 1))  # every request answered at once
    session = LiveSession(engine, wl, {"kind": "trace", "name": "synthetic", "done": 0, "total": n,
                                       "complete": False}, cluster=FakeCluster())
    session.start()
    try:
        wait_for(lambda: session.driver.completed >= n, 30, f"all {n} requests finished", interval_s=0.02,
                 detail=lambda: session.driver.completed)
        totals = session.final_frame().totals
        expected = trace_stats(rows[:n]).aiperf_hit_rate
        assert totals["aiperf_requests"] == n and 0.01 < expected < 0.99  # (not a trivial 0 or 1)
        assert math.isclose(totals[fig.AIPERF_SO_FAR.key], expected, rel_tol=1e-12)  # (summed in finish order)
    finally:
        session.stop()
