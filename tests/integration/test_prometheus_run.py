"""`kvtui run --prometheus` against the real store: the exporter's last scrape (served after the summary by
--prometheus-linger) agrees with the --json summary on every counter they share; the request log has one
row per request, adds up to the summary, and `kvtui report FILE --requests-log` writes the same rows."""

from __future__ import annotations

import csv
import json
import os
import re
import signal
import socket
import subprocess
import sys
import urllib.request
import uuid

import pytest
from prometheus_client.parser import text_string_to_metric_families
from waits import wait_for

from kvtui.cli import main
from kvtui.export.names import METRICS

pytestmark = pytest.mark.integration


def _attach(cluster):
    ep = cluster.endpoints
    return ["--master", ep.master, "--metadata", ep.metadata_url, "--metrics-url", ep.metrics_url]


def _scrape(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=5) as resp:
        text = resp.read().decode()
    out: dict = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out.setdefault(s.name, {})[tuple(sorted(s.labels.items()))] = s.value
    return out


def test_last_scrape_agrees_with_the_summary_and_the_log_with_report(cluster, tmp_path):
    out, log, rec = tmp_path / "s.json", tmp_path / "r.csv", tmp_path / "s.kvtui"
    cmd = [sys.executable, "-m", "kvtui.cli", "run", "--scenario", "shared-system-prompt", "--overlap", "50",
           "--pool", "3", "--requests", "60", "--layout", "tiny", "--quiet", "--json", str(out),
           "--requests-log", str(log), "--record", str(rec), "--prometheus", "127.0.0.1:0",
           "--prometheus-linger", "60", "--model", f"prom-{uuid.uuid4().hex[:8]}", *_attach(cluster)]
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                         env={**os.environ, "KVTUI_ISOLATE": "off"})
    try:
        url = None
        for line in p.stderr:  # the exporter's URL comes first, before the workload starts
            m = re.search(r"Prometheus metrics on (http://\S+)", line)
            if m:
                url = m.group(1)
                break
        assert url, "no exporter URL on stderr"
        early = _scrape(url)  # served while the run goes on (or before it started: counters 0 … N)
        assert early.get("kvtui_requests_total", {}).get((("role", "decode"), ("worker", "0")), 0) <= 60
        wait_for(lambda: out.exists(), 60, "the --json summary")
        summary = json.loads(out.read_text())
        got = _scrape(url)  # lingering: the final figures
        assert p.poll() is None, "the exporter did not linger"
        assert summary["requests"] == 60
        compared = 0
        for m in METRICS:
            if not m.summary or m.when != "workload" or m.source.startswith("tiers."):
                continue  # (the tier series: only on a store with a disk tier; test_prometheus_exporter.py)
            if m.kind == "counter" and m.source == "errors":
                assert {dict(k)["code"]: v for k, v in got.get(m.name, {}).items()} == \
                    {k: float(v) for k, v in summary["errors"].items()}
            elif m.kind == "counter" and m.source in ("misses", "miss_tokens"):  # one series per reason
                field = "pages" if m.source == "misses" else "tokens"
                assert {dict(k)["reason"]: v for k, v in got[m.name].items()} == \
                    {r: float(v[field]) for r, v in summary["misses"].items()}, m.name
            elif m.kind == "counter":
                value = got[m.name][(("role", m.role), ("worker", "0"))]
                assert value == pytest.approx(summary[m.summary] * m.scale, rel=1e-9), m.name
            else:
                value = got[m.name + "_count"][(("role", m.role), ("worker", "0"))]
                assert value == summary[m.summary]["count"], m.name
            compared += 1
        assert compared >= 20
        assert got["kvtui_pages_hit_total"][(("role", "decode"), ("worker", "0"))] > 0
        p.send_signal(signal.SIGTERM)  # ends the wait; the run's outputs are complete already
        assert p.wait(10) == 143
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    rows = list(csv.DictReader(log.open()))
    assert len(rows) == summary["requests"] and [int(r["id"]) for r in rows] == list(range(60))
    for col, field in (("pages_hit", "pages_hit"), ("pages_published", "pages_published"), ("pages", "pages_total"),
                       ("tokens", "tokens_input"), ("bytes_loaded", "bytes_loaded"),
                       ("pages_already_present", "pages_already_present"), ("verified", "verified_pages")):
        assert sum(int(r[col]) for r in rows) == summary[field], col
    for reason, m in summary["misses"].items():
        assert sum(int(r[f"misses_{reason}"]) for r in rows) == m["pages"], reason
    reloads = [float(r["reload_ms"]) for r in rows if int(r["pages_hit"])]
    assert len(reloads) == summary["reload_ms"]["count"]
    assert all(r["group"].startswith("sys ") and float(r["finish_s"]) >= float(r["start_s"]) for r in rows)
    again = tmp_path / "again.csv"
    assert main(["report", str(rec), "--requests-log", str(again)]) == 0
    assert again.read_text() == log.read_text()  # the session kept every row, value for value


def test_watch_serves_metrics_and_logs_requests_while_it_runs(cluster, tmp_path):
    from kvtui.mooncake.net import free_port

    port, log = free_port(), tmp_path / "w.csv"
    cmd = [sys.executable, "-m", "kvtui.cli", "watch", "--headless", "--duration", "4", "--layout", "tiny",
           "--rate", "50", "--prometheus", f"127.0.0.1:{port}", "--requests-log", str(log),
           "--model", f"promw-{uuid.uuid4().hex[:8]}", *_attach(cluster)]
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                         env={**os.environ, "KVTUI_ISOLATE": "off"})
    try:
        key = (("role", "decode"), ("worker", "0"))

        def requests_served():
            try:
                return _scrape(f"http://127.0.0.1:{port}/metrics").get("kvtui_requests_total", {}).get(key, 0) >= 5
            except OSError:
                return False

        wait_for(requests_served, 30, "the monitor's exporter to count requests")
        assert p.wait(30) == 0, p.stderr.read()[-2000:]
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    rows = list(csv.DictReader(log.open()))
    assert len(rows) >= 5 and all(r["scenario"] == "shared-system-prompt" for r in rows)
    with pytest.raises(ConnectionRefusedError):  # the exporter is gone with the monitor
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
