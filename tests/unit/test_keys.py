import hashlib
import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from kvtui.cli import main
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
    with pytest.raises(ValueError, match="int32"):
        page_keys([2**31, 2, 3, 4], model="m", page_tokens=4)
    with pytest.raises(ValueError, match="int32"):
        page_keys([-(2**31) - 1, 2, 3, 4], model="m", page_tokens=4)
    with pytest.raises(ValueError, match="int32"):
        page_keys([2**32 - 1] * 4, model="m", page_tokens=4)  # a uint32 id the Go code's int32 cannot hold
    with pytest.raises(ValueError, match="int32"):
        page_keys([2**70, 2, 3, 4], model="m", page_tokens=4)  # beyond int64 too
    with pytest.raises(ValueError, match="integers"):
        page_keys([1.5, 2, 3, 4], model="m", page_tokens=4)
    assert page_keys([2**31 - 1, -(2**31), 0, -1], model="m", page_tokens=4)
    with pytest.raises(ValueError):
        PageKeyer("m", 0)
    with pytest.raises(ValueError):
        PageKeyer("m", 4, scheme="nope")


# --- the whole Go input domain: int32 token ids, any model string ---------------------------------------


def _go_chain_key(namespace: str, domain: bytes, model: str, pages: list[bytes]) -> list[str]:
    """The documented chain, written out with hashlib: seed = SHA256(domain || model), h[i] = SHA256(h[i-1] ||
    page bytes), key = namespace/model/hex(h[i][:16])."""
    h = hashlib.sha256(domain + model.encode("utf-8")).digest()
    out = []
    for page in pages:
        h = hashlib.sha256(h + page).digest()
        out.append(f"{namespace}/{model}/{h[:16].hex()}")
    return out


def test_negative_id_is_hashed_as_its_twos_complement_uint32():
    # -1 is 0xffffffff, -2**31 is 0x80000000: the bytes a Go int32 → uint32 conversion writes big-endian
    expect = _go_chain_key("mc/ollama", b"mooncake-ollama-kv\x00", "m",
                           [b"\xff\xff\xff\xff" * 4,
                            b"\x80\x00\x00\x00" + b"\x7f\xff\xff\xff" + bytes(4) + b"\x00\x00\x00\x07"])
    keys = page_keys([-1, -1, -1, -1, -(2**31), 2**31 - 1, 0, 7], model="m", page_tokens=4)
    assert keys == expect
    assert PageKeyer("m", 4).keys(np.array([-1] * 4, dtype=np.int32)) == expect[:1]
    assert PageKeyer("m", 4).keys(np.array([-1] * 4, dtype=np.int64)) == expect[:1]
    pk = _go_chain_key("mc/pagedkv", b"mooncake-paged-kv\x00", "m", [b"\xff\xff\xff\xff" * 4])
    assert page_keys([-1] * 4, model="m", page_tokens=4, scheme="pagedkv") == pk


def test_empty_model_gives_an_empty_key_segment():
    expect = _go_chain_key("mc/ollama", b"mooncake-ollama-kv\x00", "", [struct.pack(">4I", 1, 2, 3, 4)])
    keys = page_keys([1, 2, 3, 4], model="", page_tokens=4)
    assert keys == expect and keys[0].startswith("mc/ollama//")
    assert keys != page_keys([1, 2, 3, 4], model="m", page_tokens=4)


def _keys_cli(capsys, *args: str) -> tuple[int, str, str]:
    rc = main(["keys", *args])
    out, err = capsys.readouterr()
    return rc, out, err


def test_keys_command_accepts_negative_ids_and_an_empty_model(capsys):
    expect = _go_chain_key("mc/ollama", b"mooncake-ollama-kv\x00", "",
                           [b"\xff\xff\xff\xff" * 2, struct.pack(">2i", 5, -7)])
    for tokens in (["--tokens", "-1,-1,5,-7"], ["--tokens=-1,-1,5,-7"], ["--tokens", "-1 -1 5 -7"]):
        rc, out, err = _keys_cli(capsys, "--model", "", "--page-tokens", "2", *tokens)
        assert (rc, err) == (0, "") and out.split() == expect, tokens


@pytest.mark.parametrize("source, text, needle", [
    ("--tokens", "1,2147483648", "--tokens: token id 2147483648 is outside int32"),
    ("--tokens", "-2147483649", "--tokens: token id -2147483649 is outside int32"),
    ("--tokens", "4294967295", "--tokens: token id 4294967295 is outside int32"),
    ("file", "1 2\n3 4294967295\n", "line 2: token id 4294967295 is outside int32"),
    ("file", "[1, -2147483649]", "token id -2147483649 (item 1) is outside int32"),
    ("--tokens", "1,x", "--tokens: 'x' is not an integer token id"),
    ("--tokens", "1,,2", "--tokens: an empty item between commas (a token id is missing)"),
])
def test_keys_command_out_of_range_is_one_line_exit_2(capsys, tmp_path, source, text, needle):
    if source == "file":
        path = tmp_path / "tokens.txt"
        path.write_text(text)
        args = ["--tokens-file", str(path)]
    else:
        args = [f"--tokens={text}"]
    rc, out, err = _keys_cli(capsys, "--model", "m", "--page-tokens", "2", *args)
    assert rc == 2 and out == ""
    assert err.startswith("kvtui: error: ") and err.count("\n") == 1 and needle in err, err
    if source == "file":
        assert f"--tokens-file {path}" in err


def test_numpy_and_list_inputs_agree():
    toks = list(range(100, 164))
    assert page_keys(toks, model="m", page_tokens=16) == PageKeyer("m", 16).keys(np.array(toks, dtype=np.uint32))


def test_keys_identical_across_processes_and_hash_seeds():
    code = "from kvtui.engine.keys import page_keys; print(page_keys(range(64), model='m', page_tokens=16))"
    outs = set()
    for seed in ("0", "1", "12345"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
        outs.add(run.stdout)
    assert len(outs) == 1
