"""A short real `kvtui run` with the TTFT estimate: its JSON names the inputs, its totals are the sums over
the requests that reloaded (each one the same 96-token prefix, so the GPU time saved is count × one
recompute), the measured reloads are what is subtracted, and `kvtui report` of its recording agrees."""

from __future__ import annotations

import json
import uuid

import pytest

from kvtui.cli import main
from kvtui.core.layout import MODEL_PRESETS
from kvtui.metrics.ttft import FORMULA, make_estimator

pytestmark = pytest.mark.integration


def test_run_json_ttft_totals_are_the_sums_over_its_requests(fresh_cluster, tmp_path):
    ep = fresh_cluster.endpoints  # an empty store: exactly the first request of each of the 2 prompts misses
    out, rec, rep = tmp_path / "run.json", tmp_path / "run.kvtui", tmp_path / "report.json"
    rc = main(["run", "--model-config", "llama-3.1-8b", "--page-tokens", "16", "--requests", "21",
               "--scenario", "shared-system-prompt", "--overlap", "75", "--pool", "2", "--quiet",
               "--gpu", "h100", "--mfu", "0.5", "--model", f"ttft-{uuid.uuid4().hex[:8]}",
               "--json", str(out), "--record", str(rec),
               "--master", ep.master, "--metadata", ep.metadata_url, "--metrics-url", ep.metrics_url])
    assert rc == 0
    s = json.loads(out.read_text())
    est = s["ttft_estimate"]
    assert est["model"] == "llama-3.1-8b" and est["gpu"] == "h100" and est["mfu"] == 0.5
    assert est["formula"] == FORMULA and est["peak_tflops_bf16_dense"] == 989.0 and "datasheet" in est["peak_source"]
    hits = s["reload_ms"]["count"]  # requests that loaded at least one page: 6 of 8 pages, 16 tokens each
    assert hits == 21 - 2 and s["pages_hit"] == 6 * hits
    recompute = make_estimator("llama-3.1-8b", MODEL_PRESETS["llama-3.1-8b"], "h100", 0.5).recompute_ms(96)
    t = s["ttft_saved_ms"]
    assert t["count"] == hits
    assert s["prefill_gpu_s_saved"] == pytest.approx(hits * recompute / 1e3, rel=1e-9)
    # TTFT saved = recompute − measured reload, request by request: the median is the recompute less the
    # median reload (19 requests: the same one), within HdrHistogram's 3 significant digits
    assert t["p50"] == pytest.approx(recompute - s["reload_ms"]["p50"], rel=5e-3, abs=0.05)
    assert t["total"] == pytest.approx(hits * recompute * (1 - s["reload_vs_recompute"]), rel=1e-9)
    assert s["reloads_slower_than_recompute"] in range(hits + 1)
    assert main(["report", str(rec), "--json", str(rep)]) == 0
    r = json.loads(rep.read_text())
    assert r["ttft_saved_ms"]["count"] == hits and r["ttft_saved_ms"]["total"] == pytest.approx(t["total"])
    assert r["ttft_estimate"]["model"] == "llama-3.1-8b" and r["ttft_estimate"]["mfu"] == 0.5
