"""The exporter over real frames (a DemoSource's aggregator): every scrape over HTTP parses as Prometheus
text, counters and histogram counts equal the frame's figures, pinning freezes them, bad addresses fail."""

from __future__ import annotations

import dataclasses
import socket
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from kvtui.export.names import BY_NAME, METRICS
from kvtui.export.prometheus import ExporterError, PrometheusExporter, histogram_buckets, parse_listen
from kvtui.metrics.aggregate import summary_from_frame
from kvtui.testing.demo import DemoSource


def scrape(url: str) -> dict[str, dict]:
    """``{sample name: {labels tuple: value}}`` of one scrape."""
    with urllib.request.urlopen(url, timeout=5) as resp:
        assert resp.status == 200
        text = resp.read().decode()
    out: dict[str, dict] = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out.setdefault(s.name, {})[tuple(sorted(s.labels.items()))] = s.value
    return out


@pytest.fixture
def exporter():
    e = PrometheusExporter("127.0.0.1", 0).start()
    yield e
    e.stop()


def test_scrape_equals_the_frame_and_its_summary(exporter):
    src = DemoSource(3, replicate_hot=True)  # (a store that replicates hot keys: its hot hits are a counter too)
    for _ in range(40):
        src.frame()
    frame = src.frame()
    exporter.attach(lambda: frame)
    got = scrape(exporter.url)
    summary = summary_from_frame(frame)
    worker = lambda role: (("role", role), ("worker", "0"))  # noqa: E731
    for m in METRICS:
        if m.kind == "counter" and m.role and m.source not in ("errors", "misses", "miss_tokens"):
            assert got[m.name][worker(m.role)] == pytest.approx(summary[m.summary] * m.scale), m.name
        if m.kind == "histogram" and m.role:
            count = got[m.name + "_count"][worker(m.role)]
            assert count == summary[m.summary]["count"] > 0, m.name
            buckets = [v for k, v in sorted(got[m.name + "_bucket"].items(), key=lambda kv: float(dict(kv[0])["le"]))]
            assert buckets == sorted(buckets) and buckets[-1] == count  # cumulative, +Inf = count
    for name, field in (("kvtui_misses_total", "pages"), ("kvtui_missed_tokens_total", "tokens")):
        by_reason = {dict(k)["reason"]: v for k, v in got[name].items()}
        assert by_reason == {r: float(m[field]) for r, m in summary["misses"].items()}
    assert sum(by_reason.values()) == frame.totals["tokens_cacheable"] - frame.totals["tokens_hit"] > 0
    errors = {dict(k)["code"]: v for k, v in got["kvtui_store_errors_total"].items()}
    assert errors == {k: float(v) for k, v in summary["errors"].items()} and errors
    assert got["kvtui_workload_overlap_ratio"][()] == frame.workload["overlap"]
    fill = frame.store["used_bytes"] / frame.store["capacity_bytes"]
    assert got["kvtui_store_fill_ratio"][()] == pytest.approx(fill)
    assert "kvtui_trace_rows" not in got  # a synthetic workload has no trace gauges
    assert got["kvtui_failovers_total"][()] == 0 and "kvtui_failover_last_serving_seconds" not in got
    assert not [name for name in got if "tier" in name or "disk" in name]  # one tier: no tier series
    assert got["kvtui_pages_hit_replicated_total"][worker("decode")] == summary["pages_hit_replicated"] > 0


def test_a_disk_tier_is_exported_per_tier_and_the_tiers_add_up(exporter):
    """A store with a disk tier: each tier counter and the reload histogram have a memory and a disk series that
    equal the summary's ``tiers``; the counters add up to the whole's; the disk's fill ratio is a gauge."""
    from kvtui.testing.demo import DEMO_DISK_BYTES

    src = DemoSource(3, disk_bytes=DEMO_DISK_BYTES)
    for _ in range(150):  # (long enough for DRAM to offload pages)
        frame = src.frame()
    exporter.attach(lambda: frame)
    got = scrape(exporter.url)
    summary = summary_from_frame(frame)
    tiers = summary["tiers"]
    for m in METRICS:
        if not m.source.startswith("tiers."):
            continue
        field = m.summary.removeprefix("tiers.TIER.")
        sample = m.name + ("_count" if m.kind == "histogram" else "")
        by_tier = {dict(k)["tier"]: v for k, v in got[sample].items()}
        want = {t: (d[field]["count"] if m.kind == "histogram" else d[field] * m.scale) for t, d in tiers.items()}
        assert by_tier == pytest.approx(want) and by_tier["disk"] > 0, m.name
    whole = {"kvtui_tier_pages_hit_total": "kvtui_pages_hit_total",
             "kvtui_tier_tokens_hit_total": "kvtui_tokens_hit_total",
             "kvtui_tier_reload_bytes_total": "kvtui_reload_bytes_total",
             "kvtui_tier_read_seconds_total": "kvtui_read_seconds_total"}
    for part, total in whole.items():
        assert sum(got[part].values()) == pytest.approx(got[total][(("role", "decode"), ("worker", "0"))]), part
    fill = frame.store["disk_used_bytes"] / frame.store["disk_capacity_bytes"]
    assert got["kvtui_store_disk_fill_ratio"][()] == pytest.approx(fill) and fill > 0
    assert "kvtui_pages_hit_replicated_total" not in got  # no hot-key replication: no series


def test_failovers_are_exported_from_the_frames_status(exporter):
    """The failover figures come from the status keys a live session sets (kvtui.core.failover.failover_status)."""
    from kvtui.core.failover import FailoverReport, failover_status

    reports = [FailoverReport(1, "leader-kill", 3.0, leader_s=4.1, serving_s=9.2, reload_s=9.9, publish_s=10.0,
                              pages_checked=50, pages_lost=0),
               FailoverReport(2, "etcd-outage", 40.0, leader_s=5.0, serving_s=11.5, reload_s=None, publish_s=12.25,
                              pages_checked=60, pages_lost=7)]
    frame = dataclasses.replace(DemoSource(3).frame(), status=failover_status(reports))
    exporter.attach(lambda: frame)
    got = scrape(exporter.url)
    assert got["kvtui_failovers_total"][()] == 2 and got["kvtui_failover_pages_lost_total"][()] == 7
    assert got["kvtui_failover_last_serving_seconds"][()] == 11.5
    assert got["kvtui_failover_last_publish_seconds"][()] == 12.25
    assert "kvtui_failover_last_reload_seconds" not in got  # (the last failover had no reload: no sample)


def test_pin_freezes_the_scrape_at_the_final_frame(exporter):
    src = DemoSource(5)
    exporter.attach(src.frame)
    first = scrape(exporter.url)["kvtui_requests_total"]
    final = src.frame()
    exporter.pin(final)
    for _ in range(3):
        src.frame()  # the source goes on; the exporter must not
        assert scrape(exporter.url)["kvtui_requests_total"][(("role", "decode"), ("worker", "0"))] == \
            final.totals["requests"] > 0
    assert first != scrape(exporter.url)["kvtui_requests_total"]


def test_no_metric_before_a_source_and_a_failing_source_keeps_serving(exporter):
    assert scrape(exporter.url) == {}
    exporter.attach(lambda: 1 / 0)
    assert scrape(exporter.url) == {} and "ZeroDivisionError" in exporter.last_error
    exporter.attach(DemoSource().frame)
    assert "kvtui_requests_total" in scrape(exporter.url)


def test_observe_frames_export_only_the_store_figures(exporter):
    frame = DemoSource().frame()
    store = {"up": True, "keys": 10, "used_bytes": 50, "capacity_bytes": 100, "put_rps": 3.0, "get_rps": 4.0,
             "evict_kps": 1.5, "evict_fail_ps": 0.0, "alloc_fail_ps": 2.0, "get_hit_ratio": 0.75}
    frame = dataclasses.replace(frame, store=store, workload={"kind": "observe", "name": "m:1"}, status={})
    exporter.attach(lambda: frame)
    got = scrape(exporter.url)
    assert not any(BY_NAME[n.removesuffix("_count").removesuffix("_bucket").removesuffix("_sum")].when == "workload"
                   for n in got if n.removesuffix("_count").removesuffix("_bucket").removesuffix("_sum") in BY_NAME)
    assert got["kvtui_store_evictions_per_second"][()] == 1.5
    assert got["kvtui_store_get_hit_ratio"][()] == 0.75 and got["kvtui_store_fill_ratio"][()] == 0.5
    assert got["kvtui_master_outage"][()] == 0.0 and "kvtui_requests_total" not in got  # 0 until an outage


def test_histogram_buckets_of_a_snapshot():
    from kvtui.metrics.latency import LatencyRecorder

    rec = LatencyRecorder()
    for ms in (0.05, 0.5, 5.0, 5.0, 50.0, 100_000.0):
        rec.record(ms)
    buckets, total = histogram_buckets(rec.snapshot())
    le = {k: v for k, v in buckets}
    assert le["+Inf"] == 6 and le["6.25e-05"] == 1 and le["0.0005"] == 2 and le["0.008"] == 4 and le["0.064"] == 5
    assert le["65.536"] == 5  # 100 s is above the top bound: only in +Inf
    assert total == pytest.approx(sum((0.05, 0.5, 5.0, 5.0, 50.0, 100_000.0)) / 1000, rel=0.01)
    assert histogram_buckets(None) == ([(k, 0.0) for k, _ in buckets[:-1]] + [("+Inf", 0.0)], 0.0)


def test_listen_addresses():
    assert parse_listen("9400") == ("127.0.0.1", 9400)
    assert parse_listen("0.0.0.0:9400") == ("0.0.0.0", 9400)
    assert parse_listen("[::1]:9400") == ("::1", 9400)
    assert parse_listen(":0") == ("127.0.0.1", 0)
    for bad in ("abc", "127.0.0.1:x", "70000", "-1"):
        with pytest.raises(ValueError):
            parse_listen(bad)


def test_a_busy_port_is_one_line():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        with pytest.raises(ExporterError, match=f"cannot listen on 127.0.0.1:{port}"):
            PrometheusExporter("127.0.0.1", port).start()
