import argparse

import numpy as np
import pytest

from kvtui.commands.common import add_layout_arguments, layout_from_args
from kvtui.core.layout import PRESETS, PageLayout
from kvtui.core.units import parse_bytes
from kvtui.engine.contents import PageContent


def test_page_bytes_formula_and_presets():
    assert PRESETS["seed"].page_bytes == 2 * 28 * 4 * 128 * 256 * 2 == 14 * (1 << 20)
    assert PRESETS["tiny"].page_bytes == 2 * 4 * 2 * 16 * 8 * 2 == 4096
    assert PageLayout(1, 1, 1, 512, 1).page_bytes == 1024
    assert PRESETS["seed"].bytes_per_token == 14 * (1 << 20) // 256


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
    args = ap.parse_args(["--layers", "1", "--kv-heads", "1", "--head-dim", "1", "--elem-bytes", "1", "--page-tokens", "512"])
    assert layout_from_args(args).page_bytes == 1024
    assert layout_from_args(ap.parse_args(["--layout", "tiny"])) == PRESETS["tiny"]
    with pytest.raises(ValueError):
        layout_from_args(ap.parse_args(["--layers", "0"]))


def test_parse_bytes():
    assert parse_bytes("1GiB") == 1 << 30
    assert parse_bytes("512MB") == 512 * 1000**2
    assert parse_bytes("64m") == 64 << 20
    assert parse_bytes("4096") == 4096
    for bad in ("", "abc", "-1G", "0", "12XB"):
        with pytest.raises(ValueError):
            parse_bytes(bad)


@pytest.mark.parametrize("page_bytes", [4096, 1024, 6, 40, 14 * (1 << 20)])
def test_page_content_roundtrip_and_detects_corruption(page_bytes):
    pc = PageContent(page_bytes)
    page = np.empty(page_bytes, dtype=np.uint8)
    pc.fill("mc/ollama/m/abc", page)
    assert pc.matches("mc/ollama/m/abc", page)
    assert not pc.matches("mc/ollama/m/abd", page)
    page[page_bytes // 2] ^= 1
    assert not pc.matches("mc/ollama/m/abc", page)
    assert not pc.matches("mc/ollama/m/abc", page[:-1])


def test_page_content_detects_shifted_copy():
    pc = PageContent(4096)
    page = np.empty(4096 + 32, dtype=np.uint8)
    pc.fill("k", page[:4096])
    page[4096:] = page[:32]
    assert not pc.matches("k", page[32:])


@pytest.mark.parametrize("page_bytes", [32, 1024, 40, 6, 3 << 20])
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
