"""A real Prometheus server (Debian's `prometheus`, installed by scripts/setup.sh) scrapes kvtui's exporter
and the Mooncake master on loopback, and a counter reads back through its HTTP API (/api/v1/query)."""

from __future__ import annotations

import json
import shutil
import subprocess
import urllib.parse
import urllib.request

import pytest
from waits import wait_for

from kvtui.export.prometheus import PrometheusExporter
from kvtui.mooncake.net import free_port
from kvtui.testing.demo import DemoSource

pytestmark = pytest.mark.integration
PROMETHEUS = shutil.which("prometheus")


def _get(url: str):
    try:
        with urllib.request.urlopen(url, timeout=2) as resp:
            return resp.status, resp.read().decode()
    except OSError as exc:
        return 0, str(exc)


def _query(base: str, expr: str) -> list:
    status, body = _get(f"{base}/api/v1/query?query={urllib.parse.quote(expr)}")
    return json.loads(body)["data"]["result"] if status == 200 else []


@pytest.mark.skipif(PROMETHEUS is None, reason="the Debian package `prometheus` is not installed "
                    "(scripts/setup.sh installs it; KVTUI_SETUP_PROMETHEUS=0 skips it)")
def test_prometheus_scrapes_kvtui_and_the_master(cluster, tmp_path):
    src = DemoSource(11)
    for _ in range(30):
        frame = src.frame()
    exporter = PrometheusExporter("127.0.0.1", 0).start()
    exporter.attach(lambda: frame)
    master = cluster.endpoints.metrics_url.removeprefix("http://")
    port = free_port()
    (tmp_path / "prometheus.yml").write_text(
        "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
        "scrape_configs:\n"
        f"  - job_name: kvtui\n    static_configs: [{{targets: ['127.0.0.1:{exporter.port}']}}]\n"
        f"  - job_name: mooncake-master\n    static_configs: [{{targets: ['{master}']}}]\n")
    proc = subprocess.Popen([PROMETHEUS, f"--config.file={tmp_path / 'prometheus.yml'}",
                             f"--storage.tsdb.path={tmp_path / 'data'}", f"--web.listen-address=127.0.0.1:{port}"],
                            stdout=subprocess.DEVNULL, stderr=open(tmp_path / "prometheus.log", "w"))
    base = f"http://127.0.0.1:{port}"
    try:
        def scraped() -> tuple | None:
            assert proc.poll() is None, (tmp_path / "prometheus.log").read_text()[-2000:]
            kvtui = _query(base, 'kvtui_requests_total{job="kvtui",role="decode"}')
            master_keys = _query(base, 'master_key_count{job="mooncake-master"}')
            return (kvtui, master_keys) if kvtui and master_keys else None

        kvtui, _master_keys = wait_for(scraped, 30, "Prometheus's scrapes of both targets", interval_s=0.2)
        assert float(kvtui[0]["value"][1]) == frame.totals["requests"] > 0
        assert kvtui[0]["metric"]["worker"] == "0"
        rate = _query(base, "kvtui_reload_latency_seconds_count")
        assert float(rate[0]["value"][1]) == frame.latency["reload"].count
    finally:
        proc.terminate()
        proc.wait(10)
        exporter.stop()
