"""`kvtui run --verify sampled` against a real store: the pages reloaded pass the sampled check, and the
summary, its JSON and the recording's report say which mode ran."""

from __future__ import annotations

import json
import uuid

import pytest

from kvtui.cli import main
from kvtui.core.verify import sampled_is_full

pytestmark = pytest.mark.integration
# 64 KiB pages (8,192 words): larger than the sample, so sampled mode checks a sample, not the whole page
PAGES = ["--layers", "2", "--kv-heads", "2", "--head-dim", "64", "--elem-bytes", "2", "--page-tokens", "64"]


def test_a_sampled_run_reports_its_mode_and_no_mismatch(cluster, tmp_path, capsys):
    assert not sampled_is_full(2 * 2 * 64 * 2 * 2 * 64)
    ep = cluster.endpoints
    out, rec = tmp_path / "run.json", tmp_path / "run.kvtui"
    rc = main(["run", "--verify", "sampled", "--scenario", "shared-system-prompt", "--overlap", "75", "--pool", "2",
               "--requests", "20", "--prompt-tokens", "512", *PAGES, "--json", str(out), "--record", str(rec),
               "--model", f"vs-{uuid.uuid4().hex[:8]}", "--master", ep.master, "--metadata", ep.metadata_url,
               "--metrics-url", ep.metrics_url])
    assert rc == 0
    s = json.loads(out.read_text())
    assert s["setup"]["verify"] == "sampled"
    # 2 pool prompts, 75 % of 8 pages shared: after each prompt's first use every request reloads 6 pages
    assert s["pages_hit"] == 6 * (20 - 2) and s["verified_pages"] == s["pages_hit"] and s["mismatches"] == 0
    summary = capsys.readouterr().out
    assert f"{s['verified_pages']:,} pages, by sample (--verify sampled); mismatches 0" in summary
    report = tmp_path / "report.json"
    assert main(["report", str(rec), "--json", str(report)]) == 0
    assert json.loads(report.read_text())["setup"]["verify"] == "sampled"
    assert "by sample (--verify sampled)" in capsys.readouterr().out
