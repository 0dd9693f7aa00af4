"""Model configs: the config.json reader (presets and user files alike), `kvtui layout`, errors that name the
field and the file, and model presets in the monitor's layout switch (no store: a fake engine)."""

from __future__ import annotations

import json

import pytest
from waits import wait_for

from kvtui.cli import main
from kvtui.core.layout import MODEL_PRESETS, PRESETS, model_layout, preset_summaries
from kvtui.core.model_presets import MODEL_CONFIGS
from kvtui.core.models import MHA_RULE, MLA_RULE, ModelConfigError, name_from_path, parse_model_config

# Qwen3-32B's shape: head_dim 128 is given and is NOT hidden_size / num_attention_heads (5120 / 64 = 80).
WITH_HEAD_DIM = {"num_hidden_layers": 64, "num_attention_heads": 64, "num_key_value_heads": 8, "hidden_size": 5120,
                 "head_dim": 128, "torch_dtype": "bfloat16"}
# No head_dim, no num_key_value_heads: head_dim = 2048 / 16 = 128, 16 KV heads (plain MHA).
WITHOUT_HEAD_DIM = {"num_hidden_layers": 24, "num_attention_heads": 16, "hidden_size": 2048, "torch_dtype": "float16"}
MLA = {"num_hidden_layers": 27, "num_attention_heads": 16, "num_key_value_heads": 16, "hidden_size": 2048,
       "kv_lora_rank": 512, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128, "q_lora_rank": None,
       "torch_dtype": "bfloat16"}  # DeepSeek-V2-Lite's attention


def _layout_json(capsys, *argv) -> dict:
    capsys.readouterr()
    assert main(["layout", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def _write(tmp_path, name, data) -> str:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return str(path)


def test_a_config_with_head_dim_uses_it(tmp_path, capsys):
    d = _layout_json(capsys, _write(tmp_path, "qwen3-32b.json", WITH_HEAD_DIM), "--page-tokens", "16")
    assert (d["layers"], d["kv_heads"], d["head_dim"], d["attention"], d["rule"]) == (64, 8, 128, "MHA/GQA", MHA_RULE)
    assert d["bytes_per_token"] == 2 * 64 * 8 * 128 * 2 == 262144
    assert d["page_bytes"] == 262144 * 16 and d["name"] == "qwen3-32b"


def test_a_config_without_head_dim_derives_it_and_kv_heads(tmp_path, capsys):
    d = _layout_json(capsys, _write(tmp_path, "config.json", WITHOUT_HEAD_DIM), "--prompt-tokens", "1000")
    assert (d["kv_heads"], d["head_dim"], d["kv_dtype"], d["elem_bytes"]) == (16, 128, "fp16", 2)
    assert d["bytes_per_token"] == 2 * 24 * 16 * 128 * 2 == 196608
    assert (d["page_tokens"], d["prompt_tokens"], d["pages"], d["tail_tokens"]) == (256, 1000, 3, 1000 - 768)
    assert d["bytes"] == 3 * 196608 * 256 and d["layout"]["kv_factor"] == 2


def test_an_mla_config_stores_one_latent(tmp_path, capsys):
    d = _layout_json(capsys, _write(tmp_path, "v2-lite.json", MLA), "--kv-dtype", "fp8")
    assert (d["attention"], d["rule"], d["kv_heads"], d["kv_lora_rank"], d["qk_rope_head_dim"]) == \
        ("MLA", MLA_RULE, None, 512, 64)
    assert d["bytes_per_token"] == 27 * 576 * 1 and d["kv_dtype"] == "fp8"
    assert d["head_dim"] == 192  # the width queries and keys are dotted over (qk_nope + qk_rope)


def test_fp8_override(capsys):
    assert _layout_json(capsys, "llama-3.1-8b", "--kv-dtype", "fp8")["bytes_per_token"] == 65536
    assert _layout_json(capsys, "deepseek-v3", "--kv-dtype", "fp8")["bytes_per_token"] == 35136
    assert _layout_json(capsys, "llama-3.1-8b")["bytes_per_token"] == 131072


@pytest.mark.parametrize("name", list(PRESETS))
def test_kvtui_layout_answers_for_every_preset(capsys, name):
    d = _layout_json(capsys, name)
    assert d["bytes_per_token"] == PRESETS[name].bytes_per_token and d["page_bytes"] == PRESETS[name].page_bytes
    assert d["pages"] == 8 and d["bytes"] == 8 * d["page_bytes"]  # 8 pages by default, as `kvtui run`


def test_kvtui_layout_text(capsys):
    assert main(["layout", "deepseek-v3", "--page-tokens", "16", "--prompt-tokens", "100"]) == 0
    out = capsys.readouterr().out
    assert "deepseek-ai/DeepSeek-V3 config.json" in out and MLA_RULE in out
    assert "70,272 B = 61 × 576 × 2" in out
    assert "16 tokens → 1,124,352 B (1.1 MiB)" in out
    assert "100 tokens → 6 full pages, 6,746,112 B (6.4 MiB) (+4 tokens short of a full page" in out
    assert main(["layout", "tiny", "--prompt-tokens", "3"]) == 0  # no bracket that repeats "0 B"
    assert "3 tokens → 0 full pages, 0 B (+3 tokens short of a full page" in capsys.readouterr().out
    assert main(["layout", "tiny", "--prompt-tokens", "8"]) == 0
    assert "8 tokens → 1 full page, 4,096 B (4.0 KiB)" in capsys.readouterr().out
    assert main(["layout", "llama-3.1-8b"]) == 0
    out = capsys.readouterr().out
    assert "131,072 B = 2 × 32 × 8 × 128 × 2" in out and "KV heads         8 (32 attention heads)" in out


@pytest.mark.parametrize("data,message", [
    ({"num_attention_heads": 8, "hidden_size": 64, "torch_dtype": "float16"}, "{f}: missing num_hidden_layers"),
    ({"num_hidden_layers": 2, "hidden_size": 64, "torch_dtype": "float16"}, "{f}: missing num_attention_heads"),
    ({"num_hidden_layers": 2, "num_attention_heads": 8, "torch_dtype": "float16"},
     "{f}: missing head_dim (or hidden_size to derive it)"),
    ({"num_hidden_layers": 2, "num_attention_heads": 8, "hidden_size": 64},
     "{f}: missing torch_dtype (or give --kv-dtype)"),
    ({"num_hidden_layers": 0, "num_attention_heads": 8, "hidden_size": 64, "torch_dtype": "float16"},
     "{f}: num_hidden_layers must be a positive integer, got 0"),
    ({"num_hidden_layers": 2, "num_attention_heads": 8, "num_key_value_heads": -1, "hidden_size": 64,
      "torch_dtype": "float16"}, "{f}: num_key_value_heads must be a positive integer, got -1"),
    ({"num_hidden_layers": 2, "num_attention_heads": 32, "num_key_value_heads": 7, "hidden_size": 64,
      "torch_dtype": "float16"}, "{f}: num_key_value_heads 7 does not divide num_attention_heads 32 (each KV head "
     "serves an equal group of attention heads)"),
    ({"num_hidden_layers": 2, "num_attention_heads": 32, "num_key_value_heads": 64, "hidden_size": 64,
      "torch_dtype": "float16"}, "{f}: num_key_value_heads 64 does not divide num_attention_heads 32 (each KV head "
     "serves an equal group of attention heads)"),
    ({"num_hidden_layers": 2, "num_attention_heads": 7, "hidden_size": 64, "torch_dtype": "float16"},
     "{f}: hidden_size 64 is not a multiple of num_attention_heads 7; the config needs head_dim"),
    ({"num_hidden_layers": 2, "num_attention_heads": 8, "hidden_size": 64, "torch_dtype": "int4"},
     "{f}: torch_dtype 'int4' is not one of float16, bfloat16, float32, float8_* (give --kv-dtype)"),
    ({**MLA, "qk_rope_head_dim": None}, "{f}: missing qk_rope_head_dim"),
    ([1, 2], "{f}: not a config.json object (the top level is a JSON list)"),
    ("{not json", "{f} is not JSON (Expecting property name enclosed in double quotes at line 1 column 2)"),
    ("", "{f} is not JSON (Expecting value at line 1 column 1)"),
])
def test_a_broken_config_is_one_line_naming_the_field_and_the_file(tmp_path, capsys, data, message):
    path = _write(tmp_path, "broken.json", data)
    for argv, prefix in ((["layout", path], ""), (["run", "--model-config", path], "--model-config: ")):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err == f"kvtui: error: {prefix}{message.format(f=path)}\n", argv


def test_an_unknown_name_or_a_missing_file_is_one_line(capsys):
    assert main(["layout", "llama-9"]) == 2
    assert capsys.readouterr().err.startswith("kvtui: error: llama-9 is neither a preset (seed, tiny, qwen2.5-7b")
    assert main(["run", "--model-config", "/nonexistent/config.json"]) == 2
    assert capsys.readouterr().err.startswith("kvtui: error: --model-config: /nonexistent/config.json is neither "
                                              "a model preset (qwen2.5-7b")
    assert main(["layout", "tiny", "--page-tokens", "0"]) == 2
    assert "--page-tokens must be a positive number of tokens, got 0" in capsys.readouterr().err
    assert main(["layout", "tiny", "--kv-dtype", "int8"]) == 2
    assert "--kv-dtype: invalid choice" in capsys.readouterr().err


def test_missing_torch_dtype_is_fine_with_kv_dtype(tmp_path, capsys):
    path = _write(tmp_path, "m.json", {k: v for k, v in WITHOUT_HEAD_DIM.items() if k != "torch_dtype"})
    assert _layout_json(capsys, path, "--kv-dtype", "bf16")["bytes_per_token"] == 196608


def test_the_presets_are_parsed_by_the_user_file_reader(tmp_path, capsys):
    """A shipped preset written out as a config.json gives the same layout as the preset."""
    for name, (repo, cfg) in MODEL_CONFIGS.items():
        d = _layout_json(capsys, _write(tmp_path, f"{name}.json", cfg))
        assert d["bytes_per_token"] == MODEL_PRESETS[name].bytes_per_token(), name
        assert "huggingface.co/" + repo in MODEL_PRESETS[name].source


def test_text_config_and_dtype_spellings():
    nested = {"torch_dtype": "bfloat16", "text_config": {k: v for k, v in WITH_HEAD_DIM.items() if k != "torch_dtype"}}
    assert parse_model_config(nested, "vl", "vl.json").bytes_per_token() == 262144
    assert parse_model_config({**WITHOUT_HEAD_DIM, "torch_dtype": "torch.float32"}, "m", "m").dtype == "fp32"
    newer = {k: v for k, v in WITHOUT_HEAD_DIM.items() if k != "torch_dtype"} | {"dtype": "bfloat16"}
    assert parse_model_config(newer, "m", "m").dtype == "bf16"  # transformers ≥ 4.56 writes "dtype"
    with pytest.raises(ModelConfigError, match="missing num_hidden_layers"):
        parse_model_config({"text_config": "x"}, "m", "m.json")


def test_name_from_path():
    assert name_from_path("/x/llama.json") == "llama"
    assert name_from_path("/models/Qwen2.5-7B/config.json") == "Qwen2.5-7B"
    assert name_from_path("/h/.cache/huggingface/hub/models--meta-llama--Llama-3.1-8B/snapshots/0e9e39f/config.json") \
        == "meta-llama/Llama-3.1-8B"


def test_flops_figures_are_kept_on_the_model():
    """What a prefill FLOPs estimate needs: layers, attention heads × head dim, non-embedding parameters, checked
    against the published totals (Qwen2.5-7B model card: 6.53 B non-embedding; Llama-3.1-8B 8.03 B and -70B
    70.6 B with embeddings; Mistral-7B v0.3 7.25 B; DeepSeek-V3 37 B activated per token)."""
    def total(name):
        m = MODEL_PRESETS[name]
        c = m.config
        return m.non_embedding_params() + 2 * c["vocab_size"] * c["hidden_size"]  # untied embedding + LM head

    assert MODEL_PRESETS["qwen2.5-7b"].non_embedding_params() == pytest.approx(6.53e9, rel=0.005)
    assert total("llama-3.1-8b") == pytest.approx(8.03e9, rel=0.005)
    assert total("llama-3.1-70b") == pytest.approx(70.6e9, rel=0.005)
    assert total("mistral-7b") == pytest.approx(7.25e9, rel=0.005)
    assert total("deepseek-v3") == pytest.approx(37e9, rel=0.03)
    assert MODEL_PRESETS["llama-3.1-8b"].attn_dim == 32 * 128 and MODEL_PRESETS["deepseek-v3"].attn_dim == 128 * 192
    assert parse_model_config({**WITH_HEAD_DIM}, "m", "m").non_embedding_params() is None  # no intermediate_size


def test_the_palette_offers_every_layout_preset_with_its_source():
    summaries = preset_summaries()
    assert list(summaries) == list(PRESETS)
    assert summaries["llama-3.1-8b"] == "meta-llama/Llama-3.1-8B-Instruct: " + PRESETS["llama-3.1-8b"].describe()
    assert summaries["tiny"] == PRESETS["tiny"].describe()


def test_model_presets_in_the_layout_switch():
    """tiny → deepseek-v3: the MLA layout reaches the engine; → seed (256 tokens per page like deepseek-v3,
    other bytes) refused: its pages would take the stored pages' keys; → tiny, then → llama-3.1-8b refused too
    (256 tokens like deepseek-v3 earlier in the session), → deepseek-v3 again is fine."""
    from test_controls import _events_after, _n_events, _session

    from kvtui.core.controls import SetLayout

    session, engine = _session(prompt_pages=8)
    ds = model_layout(MODEL_PRESETS["deepseek-v3"])
    try:
        steps = [("deepseek-v3", f"layout → deepseek-v3 ({ds.describe()})"),
                 ("seed", "control refused: layout seed has 256 tokens per page like the current one but other "
                          "page bytes: its pages would take the stored pages' keys"),
                 ("tiny", f"layout → tiny ({PRESETS['tiny'].describe()})"),
                 ("llama-3.1-8b", "control refused: layout llama-3.1-8b has 256 tokens per page like a layout "
                                  "used earlier but other page bytes: its pages would take the stored pages' keys"),
                 ("deepseek-v3", f"layout → deepseek-v3 ({ds.describe()})")]
        for name, text in steps:
            n = _n_events(session)
            session.send(SetLayout(name))
            assert _events_after(session, n) == [text], name
        assert engine.layouts_set == [ds, PRESETS["tiny"], ds] and ds.kv_factor == 1
    finally:
        session.stop()


def test_a_model_preset_with_the_current_layout_is_a_rename():
    from test_controls import _events_after, _n_events, _session

    from kvtui.core.controls import SetLayout

    session, engine = _session(prompt_pages=8)
    try:
        n = _n_events(session)
        session.send(SetLayout("seed"))
        assert len(_events_after(session, n)) == 1
        session.send(SetLayout("qwen2.5-7b"))  # the same page layout: nothing to switch, a new name
        wait_for(lambda: session.description["layout"] == "qwen2.5-7b", 5, "the layout named qwen2.5-7b",
                 interval_s=0.01, detail=lambda: session.description["layout"])
        assert engine.layouts_set == [PRESETS["seed"]]
    finally:
        session.stop()


def test_a_model_folder_is_read_through_its_config_json(tmp_path, capsys, monkeypatch):
    """`kvtui layout m/Qwen3-8B` (a downloaded model's folder) was refused as neither a preset nor a file."""
    folder = tmp_path / "Qwen3-8B"
    folder.mkdir()
    _write(folder, "config.json", WITH_HEAD_DIM)
    assert main(["layout", str(folder), "--json"]) == 0
    via_folder = capsys.readouterr().out
    assert main(["layout", str(folder / "config.json"), "--json"]) == 0
    assert capsys.readouterr().out == via_folder and '"name": "Qwen3-8B"' in via_folder
    monkeypatch.chdir(folder)  # from inside the folder: still named after it, not "model"
    for here in (".", "config.json"):
        assert main(["layout", here, "--json"]) == 0
        assert '"name": "Qwen3-8B"' in capsys.readouterr().out
    (tmp_path / "empty").mkdir()
    for argv, prefix in ((["layout", str(tmp_path / "empty")], ""),
                         (["run", "--model-config", str(tmp_path / "empty")], "--model-config: ")):
        assert main(argv) == 2
        assert capsys.readouterr().err == (f"kvtui: error: {prefix}{tmp_path / 'empty'} is a folder without a "
                                           "config.json; give a model's config.json\n")


def test_a_hugging_face_snapshot_whose_config_links_into_blobs_keeps_its_name(tmp_path, capsys):
    """A snapshot's config.json is a symbolic link into the cache's blobs/: the name comes from the path given,
    not the link's target (whose stem is a hash)."""
    repo = tmp_path / "hub" / "models--meta-llama--Mini"
    (repo / "blobs").mkdir(parents=True)
    (repo / "snapshots" / "abc123").mkdir(parents=True)
    _write(repo / "blobs", "0f3e9a", WITH_HEAD_DIM)
    (repo / "snapshots" / "abc123" / "config.json").symlink_to(repo / "blobs" / "0f3e9a")
    for source in (repo / "snapshots" / "abc123", repo / "snapshots" / "abc123" / "config.json"):
        assert main(["layout", str(source), "--json"]) == 0
        assert '"name": "meta-llama/Mini"' in capsys.readouterr().out
