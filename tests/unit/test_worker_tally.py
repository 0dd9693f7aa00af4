"""Per-worker figures (kvtui.metrics.workers) add up to the run's totals, and carry each worker's process."""

from __future__ import annotations

from kvtui.core.events import RequestResult
from kvtui.metrics.aggregate import Aggregator, summary_from_frame


def _result(i: int, decode: int, prefill: int, hit: int, codes=None) -> RequestResult:
    return RequestResult(req_id=i, scenario="s", n_tokens=64, cacheable_tokens=64, page_tokens=8, page_bytes=100,
                         pages_total=8, pages_hit=hit, states=bytes(8), pages_published=8 - hit,
                         bytes_loaded=100 * hit, bytes_written=100 * (8 - hit), verified=hit, read_ms=2.0 * hit,
                         put_ms=1.0 * (8 - hit), codes=codes or {}, decode_worker=decode, prefill_worker=prefill)


def test_worker_rows_sum_to_the_totals_and_derive_their_figures():
    agg = Aggregator()
    agg.set_worker_counts(2, 3)
    results = [_result(i, i % 3, i % 2, hit=i % 9) for i in range(30)] + [_result(30, 2, 0, 0, {-800: 2})]
    for r in results:
        agg.add(r)
    frame = agg.frame()
    decode = [w for w in frame.workers if w["role"] == "decode"]
    prefill = [w for w in frame.workers if w["role"] == "prefill"]
    assert [w["name"] for w in decode] == ["decode-0", "decode-1", "decode-2"]
    assert [w["name"] for w in prefill] == ["prefill-0", "prefill-1"]
    for key in ("requests", "pages_total", "pages_hit", "bytes_loaded", "verified_pages"):
        assert sum(w[key] for w in decode) == frame.totals[key]
    for key in ("requests", "pages_published", "bytes_written"):
        assert sum(w[key] for w in prefill) == frame.totals[key]
    d2 = decode[2]
    mine = [r for r in results if r.decode_worker == 2]
    assert d2["requests"] == len(mine) and d2["errors"] == 2
    assert abs(d2["page_hit_rate"] - sum(r.pages_hit for r in mine) / sum(r.pages_total for r in mine)) < 1e-9
    read_s = sum(r.read_ms for r in mine) / 1e3
    assert abs(d2["reuse_read_MBps"] - sum(r.bytes_loaded for r in mine) / read_s / 1e6) < 1e-9
    assert abs(sum(w["share"] for w in decode) - 1.0) < 1e-9  # fractions, as the summary's rates
    assert d2["local_share"] is None  # no decode worker owns a segment here: undefined, not 0
    p0 = prefill[0]
    pub = [r for r in results if r.prefill_worker == 0]
    put_s = sum(r.put_ms for r in pub) / 1e3
    assert abs(p0["publish_write_MBps"] - sum(r.bytes_written for r in pub) / put_s / 1e6) < 1e-9


def test_an_idle_worker_has_a_row_and_the_summary_names_each_process():
    agg = Aggregator()
    agg.set_worker_counts(1, 2)
    agg.add(_result(0, 0, 0, 4))
    frame = agg.frame(procs=({"name": "decode-0", "pid": 11, "host": "10.77.0.13"}, {"name": "prefill", "pid": 10}))
    rows = {w["name"]: w for w in summary_from_frame(frame)["workers"]}
    assert set(rows) == {"decode-0", "decode-1", "prefill"}
    assert rows["decode-1"]["requests"] == 0 and rows["decode-1"]["page_hit_rate"] == 0.0
    assert (rows["decode-0"]["pid"], rows["decode-0"]["host"]) == (11, "10.77.0.13")
    assert (rows["prefill"]["pid"], rows["prefill"]["host"], rows["decode-1"]["pid"]) == (10, None, None)


def test_local_share_is_the_fraction_of_reloaded_bytes_from_the_readers_own_segment():
    agg = Aggregator()
    agg.set_worker_counts(1, 2, local_segments=True)
    for i, local in enumerate((400, 0, 200)):
        r = _result(i, i % 2, 0, hit=4)
        agg.add(RequestResult(**{**r.__dict__, "bytes_local": local}))
    rows = {w["name"]: w for w in agg.frame().workers}
    assert rows["decode-0"]["local_share"] == 600 / 800 and rows["decode-1"]["local_share"] == 0.0
