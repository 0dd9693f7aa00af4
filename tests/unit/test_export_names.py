"""The exported Prometheus names are an interface: pinned here (renaming one breaks every dashboard and alert
that uses it), documented in README from the one table, and each counter names a real summary field."""

from __future__ import annotations

import re
from pathlib import Path

from kvtui.export.names import LATENCY_BUCKETS_S, METRICS, markdown_table, sample_names

REFERENCE = Path(__file__).resolve().parents[2] / "docs" / "reference" / "prometheus.md"

PINNED = {
    "kvtui_requests_total": "counter", "kvtui_pages_total": "counter", "kvtui_pages_hit_total": "counter",
    "kvtui_tokens_input_total": "counter", "kvtui_tokens_cacheable_total": "counter",
    "kvtui_tokens_hit_total": "counter", "kvtui_reload_bytes_total": "counter",
    "kvtui_verified_pages_total": "counter", "kvtui_mismatches_total": "counter",
    "kvtui_reloads_probe_only_total": "counter", "kvtui_reloads_unusable_total": "counter",
    "kvtui_read_seconds_total": "counter", "kvtui_pages_published_total": "counter",
    "kvtui_pages_already_present_total": "counter", "kvtui_pages_failed_total": "counter",
    "kvtui_publish_bytes_total": "counter", "kvtui_put_seconds_total": "counter",
    "kvtui_store_errors_total": "counter", "kvtui_misses_total": "counter", "kvtui_missed_tokens_total": "counter",
    "kvtui_reload_latency_seconds": "histogram", "kvtui_publish_latency_seconds": "histogram",
    "kvtui_probe_latency_seconds": "histogram",
    "kvtui_tier_pages_hit_total": "counter", "kvtui_tier_tokens_hit_total": "counter",
    "kvtui_tier_reload_bytes_total": "counter", "kvtui_tier_read_seconds_total": "counter",
    "kvtui_tier_reload_latency_seconds": "histogram", "kvtui_store_disk_fill_ratio": "gauge",
    "kvtui_pages_hit_replicated_total": "counter",
    "kvtui_store_up": "gauge", "kvtui_store_fill_ratio": "gauge", "kvtui_store_puts_per_second": "gauge",
    "kvtui_store_gets_per_second": "gauge", "kvtui_store_evictions_per_second": "gauge",
    "kvtui_store_eviction_failures_per_second": "gauge", "kvtui_store_alloc_failures_per_second": "gauge",
    "kvtui_store_get_hit_ratio": "gauge", "kvtui_master_outage": "gauge", "kvtui_workload_paused": "gauge",
    "kvtui_failovers_total": "counter", "kvtui_failover_pages_lost_total": "counter",
    "kvtui_failover_last_leader_seconds": "gauge", "kvtui_failover_last_serving_seconds": "gauge",
    "kvtui_failover_last_reload_seconds": "gauge", "kvtui_failover_last_publish_seconds": "gauge",
    "kvtui_workload_overlap_ratio": "gauge", "kvtui_workload_pool_prompts": "gauge",
    "kvtui_workload_rate_requests_per_second": "gauge", "kvtui_workload_prompt_tokens": "gauge",
    "kvtui_trace_rows": "gauge", "kvtui_trace_rows_done": "gauge",
}


def test_names_and_types_are_pinned():
    assert {m.name: m.kind for m in METRICS} == PINNED


def test_names_follow_the_prometheus_conventions():
    for m in METRICS:
        assert re.fullmatch(r"kvtui_[a-z0-9_]+", m.name), m.name
        assert m.name.endswith("_total") == (m.kind == "counter"), m.name
        if m.kind == "histogram":
            assert m.name.endswith("_seconds") and m.unit == "seconds"
        assert m.help and "\n" not in m.help
    assert len({m.name for m in METRICS}) == len(METRICS)
    assert list(LATENCY_BUCKETS_S) == sorted(LATENCY_BUCKETS_S) and LATENCY_BUCKETS_S[0] == 0.0625e-3


def test_worker_labels_say_which_role_does_the_work():
    roles = {m.name: m.role for m in METRICS if m.role}
    assert roles["kvtui_pages_hit_total"] == roles["kvtui_reload_latency_seconds"] == "decode"
    assert roles["kvtui_pages_published_total"] == roles["kvtui_publish_latency_seconds"] == "prefill"
    for m in METRICS:
        by_source = {"errors": ("code",), "misses": ("reason",), "miss_tokens": ("reason",)}
        tier = ("tier",) if m.source.startswith("tiers.") else ()  # (one series per tier of a disk-tiered store)
        assert m.labels == (("role", "worker") if m.role else by_source.get(m.source, tier))


def test_every_counter_is_a_summary_field():
    from kvtui.metrics.aggregate import Aggregator, summary_from_frame

    summary = summary_from_frame(Aggregator(tiered=True, replicated=True).frame())  # (a disk tier: the summary has
    # `tiers`; hot-key replication: its hits)
    for m in METRICS:
        if m.summary and m.summary.startswith("tiers.TIER."):
            for tier in ("memory", "disk"):
                assert m.summary.removeprefix("tiers.TIER.") in summary["tiers"][tier], m.name
        elif m.summary:
            assert m.summary.split(".")[0] in summary, m.name
    assert "kvtui_reload_latency_seconds_bucket" in sample_names() and "kvtui_requests_total" in sample_names()


def test_the_docs_table_is_the_generated_one():
    assert markdown_table() in REFERENCE.read_text(), "docs/reference/prometheus.md differs: make docs"
