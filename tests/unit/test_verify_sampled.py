"""``--verify sampled``: every chunk header and SAMPLE_WORDS random words per page (kvtui.core.verify) catch
a page of another key, a zeroed or unwritten chunk and a shifted buffer every time, and catch a single
flipped byte with the probability the docs state."""

from __future__ import annotations

import math

import numpy as np
import pytest

from kvtui.core.layout import PageLayout
from kvtui.core.pages import PageState
from kvtui.core.verify import CHUNK_WORDS, SAMPLE_WORDS, catch_probability, describe, sampled_is_full
from kvtui.engine.contents import PageContent
from kvtui.engine.keys import PageKeyer

CHUNK = CHUNK_WORDS * 8  # bytes
KEYS = [f"mc/ollama/m/{i:x}" for i in range(6)]
SIZES = [5 * CHUNK, 3 * CHUNK + 8 * 100 + 5, 64 << 10, (64 << 10) + 3]  # multi-chunk, tail, one chunk, tail


def filled(page_bytes: int, keys=KEYS) -> tuple[PageContent, np.ndarray]:
    pc = PageContent(page_bytes)
    pages = np.empty((len(keys), page_bytes), dtype=np.uint8)
    pc.fill_many(keys, pages)
    return pc, pages


@pytest.mark.parametrize("page_bytes", SIZES)
def test_intact_pages_pass(page_bytes):
    pc, pages = filled(page_bytes)
    rng = np.random.default_rng(1)
    assert not sampled_is_full(page_bytes)
    for _ in range(20):  # (a new sample each time)
        assert pc.leading_sampled(KEYS, pages, rng) == len(KEYS)
    assert pc.leading_sampled(KEYS[:3], pages, rng) == 3 and pc.leading_sampled([], pages, rng) == 0


@pytest.mark.parametrize("page_bytes", SIZES)
def test_a_page_of_another_key_is_caught(page_bytes):
    pc, pages = filled(page_bytes)
    rng = np.random.default_rng(2)
    other = np.empty(page_bytes, dtype=np.uint8)
    pc.fill("mc/ollama/m/stale", other)
    pages[3] = other
    assert pc.leading_sampled(KEYS, pages, rng) == 3
    assert pc.leading_sampled(KEYS[1:] + KEYS[:1], filled(page_bytes)[1], rng) == 0  # pages in the wrong order


@pytest.mark.parametrize("chunk", [0, 2, 4])
def test_a_zeroed_or_unwritten_chunk_is_caught_every_time(chunk):
    """A page torn at chunk granularity: one chunk zeroed, or every chunk from one on left as another page's
    (a write that stopped there): its header is wrong, and every header is checked."""
    pb = 5 * CHUNK
    pc, pages = filled(pb)
    stale = PageContent(pb)
    other = np.empty(pb, dtype=np.uint8)
    stale.fill("mc/ollama/m/old", other)
    rng = np.random.default_rng(3)
    for _ in range(50):
        zeroed = pages.copy()
        zeroed[2, chunk * CHUNK:(chunk + 1) * CHUNK] = 0
        assert pc.leading_sampled(KEYS, zeroed, rng) == 2
        torn = pages.copy()
        torn[1, chunk * CHUNK:] = other[chunk * CHUNK:]
        assert pc.leading_sampled(KEYS, torn, rng) == 1


@pytest.mark.parametrize("words", [1, 3, 512, CHUNK_WORDS, CHUNK_WORDS + 7])
@pytest.mark.parametrize("page_bytes", [5 * CHUNK, 64 << 10])
def test_a_shifted_buffer_is_caught_every_time(words, page_bytes):
    """A copy that landed ``words`` words early or late: every word differs, headers included."""
    if words * 8 >= page_bytes:
        pytest.skip("a shift by the page or more is another page")
    pc, pages = filled(page_bytes)
    rng = np.random.default_rng(4)
    for _ in range(20):
        early, late = pages.copy(), pages.copy()
        early[4, : page_bytes - words * 8] = pages[4, words * 8:]
        late[4, words * 8:] = pages[4, : page_bytes - words * 8]
        assert pc.leading_sampled(KEYS, early, rng) == 4
        assert pc.leading_sampled(KEYS, late, rng) == 4


def test_a_flipped_byte_is_caught_with_the_documented_probability():
    """A single flipped byte at a random place in a 64 KiB page (8,192 words, one chunk): caught when it lies
    in the header or the sample lands on its word, 11.8 % of the time (catch_probability). Seeded: 3,000
    trials, the rate within 4 standard deviations of it."""
    pb, trials = 64 << 10, 3000
    pc, pages = filled(pb, KEYS[:1])
    p = catch_probability(pb)
    words = pb // 8
    assert p == pytest.approx(1 / words + (1 - 1 / words) * (1 - (1 - 1 / words) ** SAMPLE_WORDS))
    rng, where = np.random.default_rng(5), np.random.default_rng(6)
    caught = 0
    for at in where.integers(0, pb, size=trials):
        pages[0, at] ^= 0x40
        caught += pc.leading_sampled(KEYS[:1], pages, rng) == 0
        pages[0, at] ^= 0x40
    assert pc.leading_sampled(KEYS[:1], pages, rng) == 1
    sigma = math.sqrt(p * (1 - p) / trials)
    assert abs(caught / trials - p) < 4 * sigma, (caught, trials, p)


def test_the_probability_for_the_seed_layouts_pages_and_small_pages():
    """The seed layout's 14 MiB pages: one corrupted word is caught 0.06 % of the time (the docs' figure);
    a page of at most SAMPLE_WORDS words is checked whole, so a flipped byte there is always caught."""
    seed = PageLayout(layers=28, kv_heads=4, head_dim=128, page_tokens=256, elem_bytes=2).page_bytes
    assert seed == 14 << 20 and f"{catch_probability(seed):.2%}" == "0.06%"
    assert "0.06%" in describe("sampled", seed) and describe("full") == "every byte of every loaded page"
    small = SAMPLE_WORDS * 8
    assert sampled_is_full(small) and catch_probability(small) == 1.0
    pc, pages = filled(small)
    rng = np.random.default_rng(7)
    for at in range(0, small, 997):
        pages[2, at] ^= 1
        assert pc.leading_sampled(KEYS, pages, rng) == 2
        pages[2, at] ^= 1


def test_the_connector_checks_by_sample_when_asked():
    from kvtui.engine.connector import PagedKVConnector
    from tests.unit.test_connector import FakeStore, toks

    layout = PageLayout(layers=4, kv_heads=8, head_dim=128, page_tokens=16, elem_bytes=2)  # 256 KiB pages: a chunk
    s = FakeStore()
    c = PagedKVConnector(s, layout, PageKeyer("m", layout.page_tokens), verify="sampled", sample_seed=3)
    assert c.verify == "sampled" and not sampled_is_full(layout.page_bytes)
    c.store_computed_prefix(toks(16 * 4))
    res, pages = c.load_cached_prefix(toks(16 * 4))
    assert res.pages_hit == res.verified == 4 and res.mismatches == 0
    k2 = c.keys_for(toks(16 * 4))[2]
    s.objects[k2] = bytes(layout.page_bytes)  # a zeroed page
    res, _ = c.load_cached_prefix(toks(16 * 4))
    assert res.pages_hit == 2 and res.mismatches == 1 and res.stop_state == PageState.MISMATCH
    assert c.with_layout(layout).verify == "sampled"
    c.set_verify("full")
    assert c.verify == "full"
    with pytest.raises(ValueError, match="verify must be one of full, sampled"):
        c.set_verify("none")


def test_the_flag_reaches_the_engine_every_worker_and_the_setup(monkeypatch):
    """``--verify`` is a field of the run's plan, carried by EngineOptions into the spec of every local worker
    and of a remote one, and stated in the summary's setup; ``full`` when not given."""
    from kvtui.cli import build_parser
    from kvtui.config.plan import plan_from_args
    from kvtui.engine import engine as engine_mod
    from kvtui.engine.remote_slots import remote_spec
    from kvtui.mooncake.client import ClusterEndpoints

    def plan(*flags):
        return plan_from_args(build_parser().parse_args(["run", "--layout", "tiny", "--store-size", "256MiB", *flags]))

    assert plan().setup()["verify"] == "full" and plan().engine_options().verify == "full"
    p = plan("--verify", "sampled", "--decode-workers", "2")
    assert p.cluster.verify == "sampled" and p.setup()["verify"] == "sampled"
    options = p.engine_options()
    assert options.verify == "sampled" and remote_spec(options, {}, 0, "decode").options is options
    specs = []

    def capture(prefills, decodes, **_kw):
        specs.extend(prefills + decodes)
        raise RuntimeError("captured")  # (no process started)

    monkeypatch.setattr(engine_mod, "start_mesh", capture)
    engine = engine_mod.Engine(options, ClusterEndpoints(
        master="127.0.0.1:1", metadata_url="http://127.0.0.1:1", metrics_url=""))
    with pytest.raises(RuntimeError, match="captured"):
        engine._start_chain()
    assert [s.options for s in specs] == [options] * 3  # (one options object, unchanged, in every spec)
