import pytest

from kvtui.core.events import RequestResult
from kvtui.core.layout import PageLayout
from kvtui.core.pages import PageState
from kvtui.engine.engine import result_from
from kvtui.metrics.aggregate import Aggregator
from kvtui.metrics.latency import LatencyRecorder
from kvtui.mooncake.net import parse_metrics
from kvtui.mooncake.samplers import StoreSampler


class Clock:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t


def _result(i, hit, total, published, tokens=None, page_tokens=16, page_bytes=4096, reload_ms=2.0, codes=None):
    states = bytes([PageState.HIT] * hit + [PageState.PUBLISHED] * published
                   + [PageState.PRESENT] * (total - hit - published))
    return RequestResult(req_id=i, scenario="s", n_tokens=tokens or total * page_tokens,
                         cacheable_tokens=total * page_tokens, page_tokens=page_tokens, page_bytes=page_bytes,
                         pages_total=total, pages_hit=hit, states=states,
                         pages_published=published, pages_already_present=total - hit - published,
                         bytes_loaded=hit * page_bytes, bytes_written=published * page_bytes, verified=hit,
                         probe_ms=0.5, read_ms=reload_ms - 0.5 if hit else 0.0, put_ms=3.0, codes=codes or {})


def test_totals_and_summary_are_computed_from_results():
    clock = Clock()
    agg = Aggregator(clock=clock)
    agg.add(_result(0, 0, 8, 8))
    agg.add(_result(1, 6, 8, 2, tokens=8 * 16 + 5, codes={-704: 1}))
    agg.add(_result(2, 7, 8, 0))
    clock.t += 10
    t = agg.totals()
    assert t["requests"] == 3
    assert t["pages_total"] == 24 and t["pages_hit"] == 13
    assert t["tokens_input"] == 8 * 16 * 3 + 5
    assert t["tokens_hit"] == 13 * 16
    assert t["pages_published"] == 10 and t["pages_already_present"] == 1
    assert t["page_hit_rate"] == pytest.approx(13 / 24)
    assert t["token_hit_rate"] == pytest.approx(13 * 16 / (8 * 16 * 3 + 5))
    s = agg.summary()
    assert s["errors"] == {"OBJECT_NOT_FOUND": 1}
    assert s["elapsed_s"] == pytest.approx(10)
    assert s["throughput"]["requests_per_s"] == pytest.approx(0.3)
    assert s["reload_ms"]["count"] == 2  # the request that found nothing records no reload latency
    assert s["reloads_probe_only"] == 1 and s["probe_ms"]["count"] == 3
    assert s["publish_ms"]["count"] == 2  # the request that published nothing records no publish latency
    assert s["throughput"]["reuse_read_MBps"] == pytest.approx(13 * 4096 / (2 * 1.5e-3) / 1e6)


def test_frame_rates_over_window_and_bounded_rows():
    clock = Clock()
    agg = Aggregator(rows=4, clock=clock)
    agg.frame()
    for i in range(10):
        agg.add(_result(i, 4, 8, 4))
    clock.t += 1.0
    f = agg.frame()
    assert f.rates["rps"] == pytest.approx(10.0)
    assert f.rates["reuse_MBps"] == pytest.approx(10 * 4 * 4096 / 1e6)
    assert f.rates["hit_rate"] == pytest.approx(0.5)
    assert len(f.rows) == 4 and f.rows[-1].req_id == 9
    clock.t += 5.0
    f = agg.frame()
    assert f.rates["rps"] == 0.0  # nothing in the last 2 s
    assert f.t == pytest.approx(6.0)


def test_latency_percentiles_match_hdrhistogram():
    r = LatencyRecorder()
    for v in range(1, 101):
        r.record(float(v))
    s = r.snapshot()
    assert s.count == 100
    assert s.p50 == pytest.approx(r.hist.get_value_at_percentile(50) / 1000)
    assert s.p99 == pytest.approx(r.hist.get_value_at_percentile(99) / 1000)
    assert s.max == pytest.approx(100, rel=1e-3)
    assert sum(n for _, n in s.buckets) == 100
    uppers = [u for u, _ in s.buckets]
    assert uppers == sorted(uppers) and all(b / a == 2 for a, b in zip(uppers, uppers[1:]))


def test_result_from_marks_states():
    from dataclasses import replace

    import numpy as np

    from kvtui.engine.connector import PublishResult, ReloadResult
    from workload import Request

    lay = PageLayout(1, 1, 1, 16, 2)
    req = Request(req_id=3, tokens=np.zeros(16 * 5 + 3, np.uint32), arrival_s=None, cacheable_tokens=16 * 5,
                  scenario="x")
    reload = ReloadResult(pages_total=5, pages_hit=2, stop_state=PageState.EVICTED, stop_code=-704, codes={-704: 1},
                          bytes_loaded=64, verified=2, probe_ms=1, read_ms=1)
    publish = PublishResult(start_page=2, pages_total=5,
                            states=[int(PageState.PUBLISHED)] * 2 + [int(PageState.FAILED)], stored=2, failed=1,
                            bytes_written=64, put_ms=1, codes={-200: 1})
    r = result_from(req, reload, publish, lay, 0.0, 1.0)
    # the page where the reload stopped shows why (evicted), though prefill then republished it
    assert list(r.states) == [PageState.HIT] * 2 + [PageState.EVICTED, PageState.PUBLISHED, PageState.FAILED,
                                                    PageState.PARTIAL]
    assert r.pages_published == 2
    assert r.codes == {-704: 1, -200: 1}
    assert r.tokens_hit == 32
    computed = result_from(req, replace(reload, stop_state=None), None, lay, 0.0, 1.0)  # nothing published
    assert list(computed.states) == [PageState.HIT] * 2 + [PageState.COMPUTED] * 3 + [PageState.PARTIAL]


def test_metrics_keep_labels_apart_and_never_read_a_timestamp_as_the_value():
    text = ("# HELP x\nmaster_key_count 5\nsegment_allocated_bytes{segment=\"a\"} 3\n"
            "segment_allocated_bytes{segment=\"b\"} 4 1700000000000\nbad line\n"
            "# TYPE master_evicted_key_count counter\nmaster_evicted_key_count 9\n")
    m = parse_metrics(text)
    assert m.value("master_key_count") == 5 and m.value("segment_allocated_bytes") is None
    assert m.value("segment_allocated_bytes", segment="b") == 4  # (not the sample's timestamp)
    assert m.by_label("segment_allocated_bytes", "segment") == {"a": 3, "b": 4}
    assert m.total("segment_allocated_bytes") == 7
    assert m.value("master_evicted_key_count") == 9  # a counter declared without _total keeps its name


def test_store_sampler_reports_down_when_nothing_answers():
    s = StoreSampler("http://127.0.0.1:1")
    assert s.sample()["up"] is False


def test_latency_reset_matches_hdrhistogram_reset():
    a, b = LatencyRecorder(), LatencyRecorder()
    for r in (a, b):
        for v in (0.5, 3.0, 70.0):
            r.record(v)
    a.reset()
    b.hist.reset()
    assert a.count == b.count == 0 and a.snapshot() == b.snapshot()
    a.record(2.0)
    b.record(2.0)
    assert a.snapshot() == b.snapshot()


def test_session_random_access_equals_sequential_decoding(tmp_path):
    from kvtui.session.codec import FrameDecoder, decode_record
    from kvtui.session.reader import CHECKPOINT_EVERY, SessionReader
    from kvtui.session.writer import SessionWriter

    clock = Clock()
    agg = Aggregator(rows=8, clock=clock)
    w = SessionWriter(tmp_path / "s.kvtui", {})
    n = 2 * CHECKPOINT_EVERY + 7
    for i in range(n):
        agg.add(_result(i, i % 5, 8, 8 - i % 5))
        clock.t += 0.1
        w.write(agg.frame())
    w.close()
    r = SessionReader(tmp_path / "s.kvtui")
    dec = FrameDecoder()
    expected = [dec.apply(decode_record(b)) for b in r.records]
    for i in (n - 1, 0, CHECKPOINT_EVERY, CHECKPOINT_EVERY - 1, 2 * CHECKPOINT_EVERY, 5, CHECKPOINT_EVERY + 3):
        f = r.frame_at(i)
        assert f.totals == expected[i].totals and f.rows == expected[i].rows, i


def test_reload_latency_counts_only_reloads_that_loaded_a_page():
    """A random workload (no shared prefixes) once showed `reload p50 0.63 ms` with 0 hits: the probe's time.
    Reloads that loaded nothing are counted apart, by why."""
    from dataclasses import replace

    agg = Aggregator(clock=Clock())
    for i in range(6):  # the probe finds nothing: no read
        agg.add(_result(i, 0, 8, 8))
    agg.add(replace(_result(6, 0, 8, 8), read_ms=4.0, codes={-704: 1}))  # read issued, first page evicted
    agg.add(_result(7, 4, 8, 4, reload_ms=20.0))
    agg.add(_result(8, 8, 8, 0, reload_ms=30.0))
    f = agg.frame()
    s = agg.summary()
    assert s["reload_ms"]["count"] == f.latency_window["reload"].count == 2
    assert s["reload_ms"]["min"] == pytest.approx(20.0, rel=1e-2)  # never a probe-only 0.5 ms
    assert s["reloads_probe_only"] == 6 and s["reloads_unusable"] == 1
    assert s["probe_ms"]["count"] == s["requests"] == 9
    assert s["requests"] == s["reload_ms"]["count"] + s["reloads_probe_only"] + s["reloads_unusable"]


def test_span_summary_covers_only_what_followed_the_start_of_the_span(tmp_path):
    """A recording started at t = 30 s reports what happened from then: counters, errors, latencies, time."""
    from kvtui.metrics.aggregate import span_summary, summary_from_frame
    from kvtui.session.reader import SessionReader
    from kvtui.session.writer import SessionWriter

    clock = Clock()
    agg = Aggregator(clock=clock)
    for i in range(10):  # before the recording: slow reloads, one error
        agg.add(_result(i, 4, 8, 4, reload_ms=50.0, codes={-704: 1} if i == 0 else None))
    clock.t += 30
    agg.begin_span()
    w = SessionWriter(tmp_path / "span.kvtui", {})
    for i in range(10, 14):  # recorded: fast reloads, another error
        agg.add(_result(i, 2, 8, 6, reload_ms=5.0, codes={-800: 1} if i == 10 else None))
        clock.t += 1
        w.write(agg.frame())
    w.close()
    r = SessionReader(tmp_path / "span.kvtui")
    s = span_summary(r.final_frame(), r.frame_at(0))
    assert s["requests"] == 4 and s["pages_hit"] == 8 and s["bytes_loaded"] == 8 * 4096
    assert s["page_hit_rate"] == pytest.approx(8 / 32)
    assert s["errors"] == {"TRANSFER_FAIL": 1}
    assert s["elapsed_s"] == pytest.approx(4.0)
    assert s["reload_ms"]["count"] == 4 and s["reload_ms"]["max"] == pytest.approx(5.0, rel=1e-2)
    assert s["throughput"]["requests_per_s"] == pytest.approx(1.0)
    assert s["span"] == {"from_s": pytest.approx(30.0), "to_s": pytest.approx(34.0), "latency_covers": "span"}
    whole = summary_from_frame(r.final_frame())  # what `kvtui run` would say: the whole session
    assert whole["requests"] == 14 and whole["reload_ms"]["count"] == 14
    agg.begin_span()  # a second recording starts afresh
    assert span_summary(agg.frame(), agg.frame())["requests"] == 0


def test_a_series_ring_keeps_the_newest_points_oldest_first():
    from kvtui.metrics.aggregate import SeriesRing

    ring = SeriesRing(3)
    assert ring.values() == () and len(ring) == 0
    for v in (1.0, 2.5):
        ring.append(v)
    assert ring.values() == (1.0, 2.5)
    for v in (3.0, 4.0, 5.0):
        ring.append(v)
    assert ring.values() == (3.0, 4.0, 5.0) and len(ring) == 3
    assert all(type(v) is float for v in ring.values())


def test_errors_without_a_frame_are_the_frames_errors():
    agg = Aggregator()
    for i, codes in enumerate(({-800: 2}, {}, {-704: 1, -800: 1})):
        agg.add(RequestResult(i, "random", 16, 16, 8, 4096, 2, 0, bytes(2), codes=codes))
    assert agg.errors() == agg.frame().errors and sum(agg.errors().values()) == 4 and len(agg.errors()) == 2


def test_a_final_refresh_takes_the_stores_gauges_and_keeps_the_intervals_rates():
    """PanelThread.refresh_store: the keys and bytes as the store holds them now, the put/get rates of the last
    full scrape interval (over the fraction of a second since, they would be noise)."""
    from kvtui.live.panels import PanelThread
    from kvtui.runtime.processes import ProcessSampler

    scrapes = iter([{"up": True, "keys": 10, "put_rps": 5.0, "get_rps": 7.0},
                    {"up": True, "keys": 12, "put_rps": 90.0, "get_rps": 0.0}])
    panels = PanelThread(lambda: next(scrapes), ProcessSampler({}))
    panels.store = panels.sample_store()  # (what the periodic thread does)
    assert panels.refresh_store() == {"up": True, "keys": 12, "put_rps": 5.0, "get_rps": 7.0}
    assert panels.store["keys"] == 12


def test_the_summary_type_names_the_counters_and_figures_the_aggregator_keeps():
    """:class:`~kvtui.metrics.summary.RunTotals` names the totals (COUNTERS, BUSY_MS, the derived rates, a trace's
    ideal and aiperf figures), ``Throughput`` the figures of ``fig.RUN``, the summary the fields of ``fig.LATENCY``."""
    from kvtui.metrics import aggregate as a, figures as fig
    from kvtui.metrics.summary import RunSummary, RunTotals, Throughput

    assert RunTotals.__required_keys__ == {*a.COUNTERS, *a.BUSY_MS, "page_hit_rate", "token_hit_rate"}
    assert RunTotals.__optional_keys__ == {*a.IDEAL, *a.AIPERF, fig.IDEAL_SO_FAR.key, fig.AIPERF_SO_FAR.key,
                                           *a.HOT_COUNTERS}
    assert Throughput.__required_keys__ == {f.key for f in fig.RUN}
    assert {f.field for f in fig.LATENCY} <= RunSummary.__required_keys__


def test_a_summary_and_a_span_summary_have_the_shape_their_type_declares(tmp_path):
    """Every key of a summary of trace rows with miss reasons and a TTFT estimate (the most a summary holds) is
    declared by :class:`~kvtui.metrics.summary.RunSummary`, with its type; a recorded span's too."""
    from dataclasses import replace

    from kvtui.core.misses import MissReason
    from kvtui.metrics.aggregate import span_summary
    from kvtui.metrics.summary import RunSummary
    from kvtui.metrics.ttft import make_estimator
    from kvtui.session.reader import SessionReader
    from kvtui.session.writer import SessionWriter
    from kvtui.testing.shapes import shape_errors

    clock = Clock()
    agg = Aggregator(clock=clock, estimator=make_estimator("tiny", tokens_per_s=1000.0))
    labels = (("ideal_hit_tokens", "64"), ("aiperf_share", "0.5"), ("prefix", "3"))
    agg.add(replace(_result(0, 0, 8, 8), labels=labels, reasons=bytes([MissReason.FIRST_USE] * 8), keys_forgotten=2))
    agg.begin_span()
    w = SessionWriter(tmp_path / "span.kvtui", {})
    for i in range(1, 4):
        agg.add(replace(_result(i, 4, 8, 4, codes={-704: 1}), labels=labels,
                        reasons=bytes([MissReason.EVICTED] * 4)))
        clock.t += 1
        w.write(agg.frame())
    w.close()
    s = agg.summary()
    assert s["misses_keys_forgotten"] == 2 and s["ideal_token_hit_rate"] > 0 and s["ttft_saved_ms"] is not None
    assert shape_errors(s, RunSummary) == []
    r = SessionReader(tmp_path / "span.kvtui")
    assert shape_errors(span_summary(r.final_frame(), r.frame_at(0)), RunSummary) == []
    assert shape_errors(Aggregator().summary(), RunSummary) == []  # no request, no estimate
    assert shape_errors({**s, "requests": "3"}, RunSummary) == ["$.requests: str, not int"]
    assert shape_errors({**s, "extra": 1}, RunSummary) == ["$: RunSummary has no key 'extra'"]
