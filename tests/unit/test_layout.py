import argparse

import numpy as np
import pytest

from kvtui.config.layout import add_layout_arguments, layout_from_args
from kvtui.core.errors import KvtuiError
from kvtui.core.layout import PRESETS, PageLayout
from kvtui.core.units import parse_bytes
from kvtui.engine.contents import PageContent


def test_page_bytes_formula_and_presets():
    assert PRESETS["seed"].page_bytes == 2 * 28 * 4 * 128 * 256 * 2 == 14 * (1 << 20)
    assert PRESETS["tiny"].page_bytes == 2 * 4 * 2 * 16 * 8 * 2 == 4096
    assert PageLayout(1, 1, 1, 512, 1).page_bytes == 1024
    assert PRESETS["seed"].bytes_per_token == 14 * (1 << 20) // 256
    # the demo presets are what they were (pages, contents and keys of old sessions stay valid)
    assert PRESETS["seed"] == PageLayout(28, 4, 128, 256, 2) and PRESETS["tiny"] == PageLayout(4, 2, 16, 8, 2)
    assert PRESETS["seed"].describe() == "28×4×128, 256 tok/page, 2 B/elem → 14.0 MiB/page"


# Hand-computed KV bytes per token of every model preset (the published config.json figures).
BYTES_PER_TOKEN = {
    "qwen2.5-7b": 2 * 28 * 4 * 128 * 2,  # 57,344: K and V × 28 layers × 4 KV heads × 128 × bf16
    "llama-3.1-8b": 2 * 32 * 8 * 128 * 2,  # 131,072
    "llama-3.1-70b": 2 * 80 * 8 * 128 * 2,  # 327,680
    "mistral-7b": 2 * 32 * 8 * 128 * 2,  # 131,072
    "deepseek-v3": 61 * (512 + 64) * 2,  # 70,272: one MLA latent per layer, no separate K and V
}


def test_every_model_preset_has_its_hand_computed_bytes_per_token():
    from kvtui.core.layout import MODEL_PAGE_TOKENS, MODEL_PRESETS

    assert BYTES_PER_TOKEN == {"qwen2.5-7b": 57344, "llama-3.1-8b": 131072, "llama-3.1-70b": 327680,
                               "mistral-7b": 131072, "deepseek-v3": 70272}
    assert set(MODEL_PRESETS) == set(BYTES_PER_TOKEN)
    for name, per_token in BYTES_PER_TOKEN.items():
        assert MODEL_PRESETS[name].bytes_per_token() == per_token, name
        assert PRESETS[name].bytes_per_token == per_token, name
        assert PRESETS[name].page_bytes == per_token * MODEL_PAGE_TOKENS == per_token * 256, name
    assert PRESETS["qwen2.5-7b"] == PRESETS["seed"]  # seed is Qwen2.5-7B's shape


def test_mla_layout_is_one_latent_per_layer():
    from kvtui.core.layout import MODEL_PRESETS, model_layout
    from kvtui.core.models import MLA_RULE

    ds = MODEL_PRESETS["deepseek-v3"]
    lay = model_layout(ds, 16)
    assert (ds.attention, ds.rule, lay.attention) == ("MLA", MLA_RULE, "MLA")
    assert lay == PageLayout(61, 1, 576, 16, 2, kv_factor=1) and lay.page_bytes == 61 * 576 * 16 * 2
    assert PageLayout(**lay.as_dict()) == lay  # what workers and recordings rebuild it from
    assert lay.describe() == "61×576 MLA latent, 16 tok/page, 2 B/elem → 1.1 MiB/page"
    assert PageLayout(**{k: v for k, v in PRESETS["tiny"].as_dict().items() if k != "kv_factor"}) == PRESETS["tiny"]
    for bad in (0, 3, True):
        with pytest.raises(ValueError, match="kv-factor"):
            PageLayout(1, 1, 1, 1, 1, kv_factor=bad)


def test_fp8_kv_dtype_halves_the_bytes():
    from kvtui.core.layout import MODEL_PRESETS, model_layout

    assert MODEL_PRESETS["llama-3.1-8b"].bytes_per_token("fp8") == 32 * 8 * 128 * 2 * 1 == 65536
    assert model_layout(MODEL_PRESETS["deepseek-v3"], 256, "fp8").bytes_per_token == 61 * 576 == 35136
    assert model_layout(MODEL_PRESETS["qwen2.5-7b"], 256, "fp32").bytes_per_token == 2 * 28 * 4 * 128 * 4


@pytest.mark.parametrize("field", ["layers", "kv_heads", "head_dim", "page_tokens", "elem_bytes"])
@pytest.mark.parametrize("bad", [0, -3, 1.5, True])
def test_every_field_must_be_positive_int(field, bad):
    kw = dict(layers=1, kv_heads=1, head_dim=1, page_tokens=1, elem_bytes=1)
    kw[field] = bad
    with pytest.raises(ValueError, match=field.replace("_", "-")):
        PageLayout(**kw)


def test_cli_overrides():
    ap = argparse.ArgumentParser()
    add_layout_arguments(ap)
    args = ap.parse_args(["--layers", "1", "--kv-heads", "1", "--head-dim", "1", "--elem-bytes", "1",
                          "--page-tokens", "512"])
    assert layout_from_args(args).layout.page_bytes == 1024
    assert layout_from_args(ap.parse_args(["--layout", "tiny"])).layout == PRESETS["tiny"]
    with pytest.raises(KvtuiError, match="^--layers must"):
        layout_from_args(ap.parse_args(["--layers", "0"]))


def test_model_config_flag_sets_the_layout_and_the_model_name_in_the_keys():
    from kvtui.core.defaults import DEFAULT_MODEL

    ap = argparse.ArgumentParser()
    add_layout_arguments(ap)
    plan = layout_from_args(ap.parse_args(["--model-config", "llama-3.1-8b", "--page-tokens", "16"]))
    lay = plan.layout
    assert lay == PageLayout(32, 8, 128, 16, 2) and lay.page_bytes == 131072 * 16
    assert plan.model == "llama-3.1-8b" and plan.model_spec.name == "llama-3.1-8b"
    assert plan.name == "llama-3.1-8b"
    plan = layout_from_args(ap.parse_args(["--model-config", "llama-3.1-8b", "--model", "mine", "--kv-dtype", "fp8"]))
    lay = plan.layout
    assert (plan.model, lay.page_tokens, lay.elem_bytes) == ("mine", 256, 1)  # --model wins; 256 tokens/page
    assert plan.name == "llama-3.1-8b"
    assert layout_from_args(ap.parse_args(["--model-config", "deepseek-v3", "--layers", "2"])).name == "custom"
    plan = layout_from_args(ap.parse_args([]))
    assert plan.layout == PRESETS["seed"] and plan.model == DEFAULT_MODEL and plan.model_spec is None
    assert plan.name == "seed"
    fp32 = layout_from_args(ap.parse_args(["--layout", "tiny", "--kv-dtype", "fp32"]))
    assert fp32.layout == PageLayout(4, 2, 16, 8, 4)
    with pytest.raises(KvtuiError, match="--kv-dtype and --elem-bytes"):
        layout_from_args(ap.parse_args(["--model-config", "seed", "--kv-dtype", "fp8", "--elem-bytes", "1"]))
    with pytest.raises(KvtuiError, match="layout preset: --layout tiny"):
        layout_from_args(ap.parse_args(["--model-config", "tiny"]))
    with pytest.raises(SystemExit):  # one or the other
        ap.parse_args(["--layout", "tiny", "--model-config", "llama-3.1-8b"])


def test_parse_bytes():
    assert parse_bytes("1GiB") == 1 << 30
    assert parse_bytes("512MB") == 512 * 1000**2
    assert parse_bytes("64m") == 64 << 20
    assert parse_bytes("4096") == 4096
    for bad in ("", "abc", "-1G", "0", "12XB"):
        with pytest.raises(ValueError):
            parse_bytes(bad)


@pytest.mark.parametrize("page_bytes", [4096, 1024, 6, 40, 14 * (1 << 20), (2 << 18) + 29])
def test_page_content_roundtrip_and_detects_corruption(page_bytes):
    pc = PageContent(page_bytes)
    page = np.empty(page_bytes, dtype=np.uint8)
    pc.fill("mc/ollama/m/abc", page)
    assert pc.matches("mc/ollama/m/abc", page)
    assert not pc.matches("mc/ollama/m/abd", page)
    page[page_bytes // 2] ^= 1
    assert not pc.matches("mc/ollama/m/abc", page)
    assert not pc.matches("mc/ollama/m/abc", page[:-1])


@pytest.mark.parametrize("shift", [8, 32, 4096, 1 << 18, 3 << 18])
def test_page_content_detects_shifted_copy(shift):
    """Shifts within a chunk and by whole chunks (256 KiB: every chunk body is alike, the headers differ)."""
    pc = PageContent(1 << 20)
    page = np.empty((1 << 20) + shift, dtype=np.uint8)
    pc.fill("k", page[: 1 << 20])
    page[1 << 20:] = page[:shift]
    assert pc.matches("k", page[: 1 << 20])
    assert not pc.matches("k", page[shift:])


def test_page_content_detects_swapped_and_repeated_chunks():
    pc, chunk = PageContent(1 << 20), 1 << 18
    page = np.empty(1 << 20, dtype=np.uint8)
    pc.fill("k", page)
    swapped = page.copy()
    swapped[:chunk], swapped[chunk:2 * chunk] = page[chunk:2 * chunk], page[:chunk]
    assert not pc.matches("k", swapped)
    repeated = page.copy()
    repeated[3 * chunk:] = page[2 * chunk:3 * chunk]
    assert not pc.matches("k", repeated)
    assert pc.leading_matches(["k", "k"], np.stack([page, repeated])) == 1


@pytest.mark.parametrize("page_bytes", [4096, (1 << 19) + 8 * 3 + 5, 1 << 18])
def test_page_content_is_the_documented_formula(page_bytes):
    """Word j of chunk c (2^15 words a chunk) is h + j·K (mod 2^64) for j ≥ 1 and h + c·K2 for j = 0, h = the
    first 8 bytes of SHA256(key) little-endian, K = 0x9E3779B97F4A7C15, K2 = 0xD6E8FEB86659FD93; the tail bytes
    are the digest's first bytes (kvtui.engine.contents)."""
    import hashlib

    key = "mc/ollama/m/0123"
    digest = hashlib.sha256(key.encode()).digest()
    h = int.from_bytes(digest[:8], "little")
    words = page_bytes // 8
    c_words = 1 << 15

    def word(i):
        j, c = i % c_words, i // c_words
        return (h + (j * 0x9E3779B97F4A7C15 if j else c * 0xD6E8FEB86659FD93)) % 2**64

    expected = b"".join(word(i).to_bytes(8, "little") for i in range(words))
    expected += digest[: page_bytes - words * 8]
    page = np.empty(page_bytes, dtype=np.uint8)
    PageContent(page_bytes).fill(key, page)
    assert page.tobytes() == expected


@pytest.mark.parametrize("page_bytes", [32, 1024, 40, 6, 3 << 20, 1 << 18, 8 * 100])
def test_batched_fill_and_verify_equal_the_per_page_ones(page_bytes):
    pc = PageContent(page_bytes)
    keys = [f"mc/ollama/m/{i:x}" for i in range(7)]
    pages = np.empty((7, page_bytes), dtype=np.uint8)
    pc.fill_many(keys, pages)
    one = np.empty(page_bytes, dtype=np.uint8)
    for key, page in zip(keys, pages):
        pc.fill(key, one)
        assert np.array_equal(page, one) and pc.matches(key, page)
    assert pc.leading_matches(keys, pages) == 7
    pages[4, page_bytes - 1] ^= 0x10  # the last byte of page 4
    assert pc.leading_matches(keys, pages) == 4
    assert pc.leading_matches(keys[:4], pages) == 4
    assert pc.leading_matches(keys[1:], pages[1:]) == 3
    assert pc.leading_matches([keys[1]] + keys[1:], pages) == 0  # page 0 checked against another key


def test_page_content_digest_cache_is_bounded_and_changes_no_answer(monkeypatch):
    """The SHA256 of each key is kept (a prefix hit verifies the same pages again and again), at most
    DIGEST_CACHE_KEYS of them; a page filled, then verified after the cache was emptied, still matches, and
    another key's page still does not."""
    import kvtui.engine.contents as contents

    monkeypatch.setattr(contents, "DIGEST_CACHE_KEYS", 5)
    pc = PageContent(1024)
    keys = [f"mc/ollama/m/{i:x}" for i in range(12)]
    pages = np.empty((12, 1024), dtype=np.uint8)
    pc.fill_many(keys, pages)
    assert len(pc._digests) <= 5
    fresh = PageContent(1024)  # (no cache yet)
    assert pc.leading_matches(keys, pages) == fresh.leading_matches(keys, pages) == 12
    assert len(pc._digests) <= 5
    assert pc.leading_matches(keys[1:] + keys[:1], pages) == 0
    assert all(pc.matches(k, p) for k, p in zip(keys, pages)) and not pc.matches(keys[0], pages[1])
