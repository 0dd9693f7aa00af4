"""The shipped Grafana dashboard asks only for metrics that exist: every name in every panel's query is
exported by kvtui (a real scrape of its exporter, in each mode) or by the Mooncake master (a live scrape of
the session cluster's master, not a list)."""

from __future__ import annotations

import dataclasses
import json
import re
import urllib.request
from importlib import resources

import pytest
from prometheus_client.parser import text_string_to_metric_families

from kvtui.export.prometheus import PrometheusExporter
from kvtui.testing.demo import DemoSource

pytestmark = pytest.mark.integration

PROMQL_WORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "and", "or", "unless", "offset",
                "bool", "le", "inf", "nan"}


def dashboard() -> dict:
    return json.loads(resources.files("kvtui").joinpath("data/grafana/kvtui.json").read_text())


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression reads (functions, keywords, labels, ranges and numbers dropped)."""
    e = re.sub(r'"[^"]*"', "", expr)
    e = re.sub(r"\{[^}]*\}", "", e)
    e = re.sub(r"\[[^\]]*\]", "", e)
    e = re.sub(r"\b(by|without|on|ignoring)\s*\([^)]*\)", "", e)
    names = set()
    for m in re.finditer(r"[A-Za-z_:][A-Za-z0-9_:]*", e):
        word, rest = m.group(0), e[m.end():].lstrip()
        if rest.startswith("(") or word.lower() in PROMQL_WORDS:
            continue
        names.add(word)
    return names


def scrape_names(url: str) -> set[str]:
    """The sample names of one scrape, as written (what Prometheus stores: a parser would add ``_total`` to
    the master's counters that lack it, such as ``master_evicted_key_count``)."""
    with urllib.request.urlopen(url, timeout=5) as resp:
        text = resp.read().decode()
    list(text_string_to_metric_families(text))  # (valid exposition text, or this raises)
    return {line.split("{", 1)[0].split(" ", 1)[0] for line in text.splitlines() if line and line[0] != "#"}


def kvtui_names() -> set[str]:
    """Every sample name a real exporter serves: a synthetic run, a trace replay and observe mode."""
    src = DemoSource()
    for _ in range(60):
        frame = src.frame()
    assert frame.errors  # (an error counter has a sample only once a call failed)
    frames = [frame,
              dataclasses.replace(frame, workload={"kind": "trace", "name": "t", "done": 1, "total": 2},
                                  status={**frame.status, "outage": True}),
              dataclasses.replace(frame, workload={"kind": "observe", "name": "m"},
                                  store={**frame.store, "up": True, "evict_kps": 1.0, "evict_fail_ps": 0.0,
                                         "alloc_fail_ps": 0.0, "get_hit_ratio": 1.0})]
    names: set[str] = set()
    exporter = PrometheusExporter("127.0.0.1", 0).start()
    try:
        for f in frames:
            exporter.attach(lambda f=f: f)
            names |= scrape_names(exporter.url)
    finally:
        exporter.stop()
    return names


def test_metric_names_of_promql():
    assert metric_names('histogram_quantile(0.5, sum by (le) (rate(kvtui_reload_latency_seconds_bucket[1m])))') == \
        {"kvtui_reload_latency_seconds_bucket"}
    assert metric_names('sum by (code) (rate(x_total{code="RPC_FAIL"}[$__rate_interval])) / y') == {"x_total", "y"}


def test_every_panel_query_names_an_exported_metric(cluster):
    master = scrape_names(cluster.endpoints.metrics_url + "/metrics")
    assert "master_key_count" in master and len(master) > 100  # a real master's scrape
    known = master | kvtui_names()
    d = dashboard()
    panels = [p for p in d["panels"] if p["type"] != "row"]
    assert len({p["id"] for p in d["panels"]}) == len(d["panels"])
    used = set()
    for p in panels:
        assert p["targets"], p["title"]
        assert p["datasource"]["uid"] == "${DS_PROMETHEUS}"
        for t in p["targets"]:
            names = metric_names(t["expr"])
            assert names, (p["title"], t["expr"])
            missing = names - known
            assert not missing, f"panel {p['title']!r}: {sorted(missing)} exported by neither kvtui nor the master"
            used |= names
    assert {"kvtui_pages_hit_total", "kvtui_reload_bytes_total", "kvtui_reload_latency_seconds_bucket",
            "master_allocated_bytes", "master_evicted_key_count", "master_put_start_alloc_failures_total"} <= used
    titles = {p["title"] for p in panels}
    assert {"Page hit rate", "Reuse throughput", "Reload latency", "Store fill", "Evictions",
            "Allocation failures"} <= titles
    assert d["__inputs"][0]["name"] == "DS_PROMETHEUS" and d["__inputs"][0]["pluginId"] == "prometheus"
