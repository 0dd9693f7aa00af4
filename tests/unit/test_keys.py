import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from kvtui.engine.keys import PageKeyer, page_keys

VECTORS = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "key_vectors_ollama.json"


def _cases():
    if not VECTORS.exists():
        pytest.skip("../shared/data/key_vectors_ollama.json is not present")
    return json.loads(VECTORS.read_text())["cases"]


def test_keys_match_go_connector_vectors():
    cases = _cases()
    assert len(cases) >= 7
    for case in cases:
        keys = page_keys(
            case["tokens"],
            model=case["model"],
            page_tokens=case["page_tokens"],
            scheme=case["scheme"],
            namespace=case["key_prefix"] or None,
        )
        assert keys == case["keys"], case["model"]


def test_partial_trailing_page_has_no_key():
    k = PageKeyer("demo-model", 8)
    assert len(k.keys(list(range(31)))) == 3
    assert k.keys(list(range(31))) == k.keys(list(range(32)))[:3]
    assert k.keys([]) == []
    assert k.keys(list(range(7))) == []


def test_divergence_changes_every_later_key():
    k = PageKeyer("demo-model", 4)
    a = k.keys(list(range(16)))
    b = list(range(16))
    b[5] = 999
    b = k.keys(b)
    assert a[0] == b[0]
    assert all(x != y for x, y in zip(a[1:], b[1:]))


def test_model_scheme_and_namespace_isolate_keys():
    toks = list(range(8))
    a = page_keys(toks, model="m1", page_tokens=4)
    b = page_keys(toks, model="m2", page_tokens=4)
    c = page_keys(toks, model="m1", page_tokens=4, scheme="pagedkv")
    d = page_keys(toks, model="m1", page_tokens=4, namespace="team/x")
    assert a[0].startswith("mc/ollama/m1/") and c[0].startswith("mc/pagedkv/m1/")
    assert d[0].startswith("team/x/m1/")
    assert len({a[0].rsplit("/", 1)[1], b[0].rsplit("/", 1)[1], c[0].rsplit("/", 1)[1]}) == 3
    # the namespace only changes the prefix, not the hash chain
    assert a[0].rsplit("/", 1)[1] == d[0].rsplit("/", 1)[1]


def test_token_range_checked():
    with pytest.raises(ValueError):
        page_keys([-1, 2, 3, 4], model="m", page_tokens=4)
    with pytest.raises(ValueError):
        page_keys([2**32, 2, 3, 4], model="m", page_tokens=4)
    assert page_keys([2**32 - 1] * 4, model="m", page_tokens=4)
    with pytest.raises(ValueError):
        PageKeyer("m", 0)
    with pytest.raises(ValueError):
        PageKeyer("m", 4, scheme="nope")


def test_numpy_and_list_inputs_agree():
    toks = list(range(100, 164))
    assert page_keys(toks, model="m", page_tokens=16) == PageKeyer("m", 16).keys(np.array(toks, dtype=np.uint32))


def test_keys_identical_across_processes_and_hash_seeds():
    code = "from kvtui.engine.keys import page_keys; print(page_keys(range(64), model='m', page_tokens=16))"
    outs = set()
    for seed in ("0", "1", "12345"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        outs.add(subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout)
    assert len(outs) == 1
