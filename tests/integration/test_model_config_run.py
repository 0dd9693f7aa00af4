"""`kvtui run --model-config` against the real store: a model's pages (GQA and MLA) are published, reloaded
and verified byte-exact, and the model's name is hashed into the page keys unless --model is given."""

from __future__ import annotations

import json
import uuid

import pytest

from kvtui.cli import main

pytestmark = pytest.mark.integration
SCENARIO = ["--scenario", "shared-system-prompt", "--overlap", "75", "--pool", "2", "--quiet"]


def test_llama_model_config_run_embedded(tmp_path):
    """The brief's run: Llama-3.1-8B's layout at 16 tokens/page (2 MiB pages), embedded 256 MiB store."""
    from kvtui.session.reader import SessionReader

    out, rec = tmp_path / "run.json", tmp_path / "run.kvtui"
    rc = main(["run", "--model-config", "llama-3.1-8b", "--page-tokens", "16", "--requests", "20",
               "--store-size", "256MiB", *SCENARIO, "--json", str(out), "--record", str(rec)])
    assert rc == 0
    s = json.loads(out.read_text())
    assert s["layout"] == {"layers": 32, "kv_heads": 8, "head_dim": 128, "page_tokens": 16, "elem_bytes": 2,
                           "kv_factor": 2}
    assert s["page_bytes"] == 32 * 8 * 128 * 2 * 2 * 16 == 2 << 20
    assert s["requests"] == 20 and s["pages_hit"] == 6 * (20 - 2)  # 75 % of 8 pages shared, 2 prompts
    assert s["verified_pages"] == s["pages_hit"] and s["mismatches"] == 0 and s["errors"] == {}
    header = SessionReader(rec).header
    assert header["model"] == "llama-3.1-8b"  # the model's name is in the keys
    assert header["layout_text"] == "32×8×128, 16 tok/page, 2 B/elem → 2.0 MiB/page"


def test_deepseek_mla_model_config_run(cluster, tmp_path):
    """An MLA layout (one 576-element latent per layer and token) through the store; --model names the keys."""
    from kvtui.session.reader import SessionReader

    ep = cluster.endpoints
    model = f"mla-{uuid.uuid4().hex[:8]}"
    out, rec = tmp_path / "mla.json", tmp_path / "mla.kvtui"
    rc = main(["run", "--model-config", "deepseek-v3", "--page-tokens", "16", "--requests", "10", *SCENARIO,
               "--model", model, "--json", str(out), "--record", str(rec),
               "--master", ep.master, "--metadata", ep.metadata_url, "--metrics-url", ep.metrics_url])
    assert rc == 0
    s = json.loads(out.read_text())
    assert s["layout"] == {"layers": 61, "kv_heads": 1, "head_dim": 576, "page_tokens": 16, "elem_bytes": 2,
                           "kv_factor": 1}
    assert s["page_bytes"] == 61 * 576 * 2 * 16
    assert s["pages_hit"] == 6 * (10 - 2) and s["verified_pages"] == s["pages_hit"] and s["mismatches"] == 0
    assert SessionReader(rec).header["model"] == model
