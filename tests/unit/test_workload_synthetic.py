"""Synthetic shared-prefix scenarios: determinism, exact page-granular overlap, knobs, arrivals."""

from __future__ import annotations

import itertools
from collections import Counter

import numpy as np
import pytest

from workload.request import Request
from workload.synthetic import (
    SCENARIOS,
    SyntheticWorkload,
    WorkloadSpec,
    shared_prefix_tokens,
)


def take(w: SyntheticWorkload, n: int) -> list[Request]:
    return list(itertools.islice(w, n))


def common_prefix(a: np.ndarray, b: np.ndarray) -> int:
    m = min(len(a), len(b))
    diff = np.nonzero(a[:m] != b[:m])[0]
    return int(diff[0]) if len(diff) else m


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_same_seed_same_tokens_different_seed_different(scenario):
    spec = WorkloadSpec(scenario=scenario, seed=7, length_spread=0.3, rate=5.0)
    a = take(SyntheticWorkload(spec), 20)
    b = take(SyntheticWorkload(spec), 20)
    c = take(SyntheticWorkload(WorkloadSpec(scenario=scenario, seed=8, length_spread=0.3, rate=5.0)), 20)
    for x, y in zip(a, b):
        assert np.array_equal(x.tokens, y.tokens)
        assert x.arrival_s == y.arrival_s and x.labels == y.labels
    assert any(not np.array_equal(x.tokens, z.tokens) for x, z in zip(a, c))
    assert [r.req_id for r in a] == list(range(20))


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_tokens_are_uint32_below_2_31_and_fully_cacheable(scenario):
    for r in take(SyntheticWorkload(WorkloadSpec(scenario=scenario, length_spread=0.5)), 30):
        assert r.tokens.dtype == np.uint32 and r.tokens.ndim == 1
        assert int(r.tokens.max()) < 2**31
        assert r.cacheable_tokens == len(r.tokens) >= 1
        assert r.scenario == scenario
        assert not r.tokens.flags.writeable


@pytest.mark.parametrize("scenario", ["shared-system-prompt", "few-shot"])
def test_exact_overlap_at_page_granularity(scenario):
    w = SyntheticWorkload(WorkloadSpec(scenario=scenario, overlap=0.75, prompt_tokens=1024, page_tokens=16, pool=2))
    reqs = take(w, 40)
    by_entry: dict[str, list[Request]] = {}
    for r in reqs:
        assert r.label("shared_tokens") == "768"
        by_entry.setdefault(r.label("pool"), []).append(r)
    pairs = [v for v in by_entry.values() if len(v) >= 2]
    assert pairs, "expected two requests from the same pool entry"
    for same in pairs:
        a, b = same[0], same[1]
        assert np.array_equal(a.tokens[:768], b.tokens[:768])
        assert common_prefix(a.tokens, b.tokens) == 768  # the 769th token already differs
        assert np.all(a.tokens[768:] != b.tokens[768:])
    if len(by_entry) == 2:  # different entries share nothing
        (x, *_), (y, *_) = by_entry.values()
        assert common_prefix(x.tokens, y.tokens) == 0


def test_overlap_rounds_down_to_pages_and_entry_is_a_fixed_prefix():
    assert shared_prefix_tokens(1024, 0.75, 16) == 768
    assert shared_prefix_tokens(1000, 0.75, 16) == 736  # 750 -> 46 pages
    assert shared_prefix_tokens(160, 0.7, 16) == 112  # exactly 7 pages despite binary rounding
    assert shared_prefix_tokens(100, 1.0, 16) == 96
    assert shared_prefix_tokens(100, 0.0, 16) == 0
    # one entry, different lengths: the shorter shared part is a prefix of the longer one
    w = SyntheticWorkload(WorkloadSpec(pool=1, overlap=0.5, prompt_tokens=1000, length_spread=0.5, page_tokens=16))
    reqs = take(w, 20)
    shared = [int(r.label("shared_tokens")) for r in reqs]
    assert len(set(shared)) > 1
    for a, b in itertools.combinations(reqs, 2):
        assert common_prefix(a.tokens, b.tokens) == min(int(a.label("shared_tokens")), int(b.label("shared_tokens")))


def test_random_scenario_shares_no_page():
    reqs = take(SyntheticWorkload(WorkloadSpec(scenario="random", prompt_tokens=256)), 50)
    pages = Counter(r.tokens[i : i + 16].tobytes() for r in reqs for i in range(0, 256, 16))
    assert max(pages.values()) == 1
    assert all(common_prefix(a.tokens, b.tokens) == 0 for a, b in itertools.combinations(reqs, 2))


def test_knob_changes_apply_from_next_request():
    w = SyntheticWorkload(WorkloadSpec(overlap=0.75, pool=1, prompt_tokens=1024))
    first = w.next_request()
    new = w.update(overlap=0.5, prompt_tokens=512, rate=10.0)
    assert new == w.spec and new.overlap == 0.5
    assert first.arrival_s is None and len(first.tokens) == 1024
    second = w.next_request()
    assert len(second.tokens) == 512 and second.label("shared_tokens") == "256"
    assert second.arrival_s is not None and second.arrival_s > 0
    assert common_prefix(first.tokens, second.tokens) == 256
    w.update(scenario="random", rate=0)
    third = w.next_request()
    assert third.scenario == "random" and third.arrival_s is None and third.req_id == 2


def test_bad_knobs_raise_value_error_and_keep_old_spec():
    w = SyntheticWorkload(WorkloadSpec())
    for bad in [
        {"scenario": "nope"},
        {"overlap": 1.5},
        {"overlap": float("nan")},
        {"pool": 0},
        {"pool": True},
        {"rate": -1},
        {"prompt_tokens": 0},
        {"page_tokens": 0},
        {"length_spread": 2},
        {"zipf_s": -1},
        {"seed": -3},
        {"output_tokens": 0},
        {"output_tokens": 2.5},
        {"colour": "red"},
    ]:
        with pytest.raises(ValueError) as exc:
            w.update(**bad)
        assert "\n" not in str(exc.value)
    with pytest.raises(ValueError, match="shared-system-prompt, few-shot, multi-turn, random"):
        WorkloadSpec(scenario="bogus").validate()
    with pytest.raises(ValueError):
        SyntheticWorkload(WorkloadSpec(overlap=-0.1))
    assert w.spec == WorkloadSpec()


def test_zipf_popularity_skew():
    w = SyntheticWorkload(WorkloadSpec(pool=8, zipf_s=1.1, prompt_tokens=32))
    counts = Counter(int(r.label("pool")) for r in take(w, 4000))
    expected = np.arange(1, 9, dtype=float) ** -1.1
    expected /= expected.sum()
    assert counts[0] > counts[1] > counts[3] > counts[7]
    assert counts[0] / 4000 == pytest.approx(expected[0], abs=0.03)
    assert counts[7] / 4000 == pytest.approx(expected[7], abs=0.02)
    # zipf_s = 0 is uniform
    w0 = SyntheticWorkload(WorkloadSpec(pool=4, zipf_s=0.0, prompt_tokens=32))
    c0 = Counter(int(r.label("pool")) for r in take(w0, 4000))
    assert all(850 < c0[k] < 1150 for k in range(4))


def test_poisson_mean_rate_and_rate_change():
    w = SyntheticWorkload(WorkloadSpec(rate=50.0, prompt_tokens=16, scenario="random"))
    arrivals = [r.arrival_s for r in take(w, 2000)]
    assert all(b > a for a, b in zip(arrivals, arrivals[1:]))
    assert 2000 / arrivals[-1] == pytest.approx(50.0, rel=0.1)
    w.update(rate=500.0)
    more = [r.arrival_s for r in take(w, 2000)]
    assert more[0] > arrivals[-1]
    assert 2000 / (more[-1] - arrivals[-1]) == pytest.approx(500.0, rel=0.1)
    gaps = np.diff([arrivals[-1], *more])
    assert np.std(gaps) == pytest.approx(np.mean(gaps), rel=0.15)  # exponential: std == mean


def test_multi_turn_prefix_grows_and_conversations_restart():
    spec = WorkloadSpec(scenario="multi-turn", pool=3, prompt_tokens=256, overlap=0.5, page_tokens=16)
    reqs = take(SyntheticWorkload(spec), 60)
    by_conv: dict[str, list[Request]] = {}
    for r in reqs:
        by_conv.setdefault(r.label("conversation"), []).append(r)
        assert len(r.tokens) <= 4 * 256
    assert len(by_conv) > 3  # conversations restarted with new ids
    for turns in by_conv.values():
        assert [int(t.label("turn")) for t in turns] == list(range(1, len(turns) + 1))
        assert turns[0].label("shared_tokens") == "128"
        for prev, cur in zip(turns, turns[1:]):
            assert len(cur.tokens) > len(prev.tokens)
            assert np.array_equal(cur.tokens[: len(prev.tokens)], prev.tokens)  # whole previous prompt reused
            assert int(cur.label("shared_tokens")) == len(prev.tokens) // 16 * 16
    # round robin: consecutive requests go to different slots
    assert [r.label("slot") for r in reqs[:6]] == ["0", "1", "2", "0", "1", "2"]
    # first turns of different conversations share the page-aligned system prompt only
    firsts = [t[0] for t in by_conv.values()]
    assert common_prefix(firsts[0].tokens, firsts[1].tokens) == 128


def test_multi_turn_pool_shrink_drops_conversations():
    w = SyntheticWorkload(WorkloadSpec(scenario="multi-turn", pool=4, prompt_tokens=64))
    take(w, 8)
    w.update(pool=1)
    reqs = take(w, 3)
    assert {r.label("slot") for r in reqs} == {"0"}
    assert [int(r.label("turn")) for r in reqs] == [3, 4, 5]


def test_a_rate_change_counts_its_arrivals_from_now():
    """After a closed-loop stretch (no arrival clock) or a stretch the driver lagged behind, a rate change
    given the arrival clock's time now (``now_s``) draws the next arrival from then: nothing to catch up.
    Without ``now_s`` arrivals count on from the last one, and other knobs never move the clock."""
    w = SyntheticWorkload(WorkloadSpec(rate=0.0, prompt_tokens=16, scenario="random"))
    assert all(r.arrival_s is None for r in take(w, 50))
    w.update(rate=5.0, now_s=40.0)  # 40 s of closed loop on the driver's clock
    arrivals = [r.arrival_s for r in take(w, 200)]
    assert arrivals[0] > 40.0 and all(b > a for a, b in zip(arrivals, arrivals[1:]))
    assert 200 / (arrivals[-1] - 40.0) == pytest.approx(5.0, rel=0.2)
    w.update(overlap=0.5, now_s=arrivals[-1] + 100.0)  # not a rate change: the clock stays
    assert w.next_request().arrival_s < arrivals[-1] + 100.0
    last = w.next_request().arrival_s
    w.update(rate=10.0, now_s=last - 1.0)  # a row drawn ahead of the clock keeps its time: count on from it
    assert w.next_request().arrival_s > last
    same = SyntheticWorkload(WorkloadSpec(rate=0.0, prompt_tokens=16, scenario="random"))
    take(same, 50)
    same.update(rate=5.0)  # no clock given: from the last arrival (none: 0 s), as before
    assert same.next_request().arrival_s < 40.0


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_every_request_says_how_many_tokens_it_would_generate(scenario):
    """A synthetic request carries an output length (a saved trace's output_length, which aiperf sends as
    max_tokens; it was 0, which serving engines refuse); prompts do not depend on it."""
    spec = WorkloadSpec(scenario=scenario)
    assert spec.output_tokens > 0
    reqs = take(SyntheticWorkload(spec), 5)
    assert [r.output_tokens for r in reqs] == [spec.output_tokens] * 5
    other = take(SyntheticWorkload(WorkloadSpec(scenario=scenario, output_tokens=7)), 5)
    assert [r.output_tokens for r in other] == [7] * 5
    assert all(np.array_equal(a.tokens, b.tokens) for a, b in zip(reqs, other))
