"""Miss reasons (kvtui.core.misses): the pure rule, the run's key history, and the identity they must keep:
hits + evicted + never stored + after a break = the unbounded ideal's hits, at concurrency 1."""

from __future__ import annotations

import random
from collections import OrderedDict

import pytest

from kvtui.core.misses import (
    COMPUTED,
    NAMES,
    REASONS,
    STORED,
    UNSEEN,
    MissReason as R,
    MissTracker,
    classify,
    counts,
)
from kvtui.core.pages import PageState as S


@pytest.mark.parametrize("state,history,flight,reason", [
    (S.HIT, STORED, False, R.NONE),
    (S.HIT, UNSEEN, True, R.NONE),  # a hit is never a miss, whatever else is known
    (S.PUBLISHED, UNSEEN, False, R.FIRST_USE),
    (S.PUBLISHED, STORED, False, R.EVICTED),
    (S.PUBLISHED, COMPUTED, False, R.NEVER_STORED),
    (S.FAILED, UNSEEN, False, R.FIRST_USE),
    (S.COMPUTED, COMPUTED, False, R.NEVER_STORED),
    (S.EVICTED, STORED, False, R.EVICTED),
    (S.MISMATCH, STORED, False, R.EVICTED),
    (S.PRESENT, STORED, False, R.AFTER_BREAK),
    (S.PRESENT, UNSEEN, False, R.AFTER_BREAK),  # present though this run never had it: a store not cleared
    (S.PRESENT, STORED, True, R.IN_FLIGHT),
    (S.PUBLISHED, STORED, True, R.IN_FLIGHT),
])
def test_the_rule_gives_one_reason_per_page(state, history, flight, reason):
    assert classify(bytes([state]), [history], [flight]) == bytes([reason])


def test_classify_wants_one_entry_per_page():
    with pytest.raises(ValueError, match="one state"):
        classify(bytes([S.HIT, S.PUBLISHED]), [UNSEEN], [False, False])


def test_counts_name_every_reason():
    got = counts(bytes([R.NONE, R.FIRST_USE, R.FIRST_USE, R.IN_FLIGHT]))
    assert got == {"first_use": 2, "evicted": 0, "never_stored": 0, "after_break": 0, "in_flight": 1}
    assert list(got) == [NAMES[r] for r in REASONS]


def _run(t: MissTracker, seq: int, keys: list[str], states: list[int]) -> list[R]:
    t.begin(seq, keys)
    return [R(b) for b in t.finish(seq, bytes(states))]


def test_history_one_request_at_a_time():
    t = MissTracker()
    assert _run(t, 0, ["a", "b", "c"], [S.PUBLISHED] * 3) == [R.FIRST_USE] * 3
    assert _run(t, 1, ["a", "b", "d"], [S.HIT, S.HIT, S.PUBLISHED]) == [R.NONE, R.NONE, R.FIRST_USE]
    # a was evicted: the request reloads nothing, finds b and c present after the break
    assert _run(t, 2, ["a", "b", "c"], [S.PUBLISHED, S.PRESENT, S.PRESENT]) == [
        R.EVICTED, R.AFTER_BREAK, R.AFTER_BREAK]
    # x's put failed (store full): the next request to need it misses it as never stored
    assert _run(t, 3, ["x"], [S.FAILED]) == [R.FIRST_USE]
    assert _run(t, 4, ["x"], [S.PUBLISHED]) == [R.NEVER_STORED]
    assert _run(t, 5, ["x"], [S.PUBLISHED]) == [R.EVICTED]  # stored by request 4, gone again
    assert len(t) == 5
    t.reset()
    assert len(t) == 0 and _run(t, 6, ["a"], [S.PUBLISHED]) == [R.FIRST_USE]


def test_partial_tail_is_not_classified():
    t = MissTracker()
    t.begin(0, ["a", "b"])
    assert t.finish(0, bytes([S.PUBLISHED, S.PUBLISHED, S.PARTIAL])) == bytes([R.FIRST_USE] * 2)
    t.begin(1, ["a", "b", "c"])
    with pytest.raises(ValueError, match="3 full pages but 2"):
        t.finish(1, bytes([S.HIT, S.HIT]))


def test_a_request_never_begun_gets_no_reasons():
    t = MissTracker()
    assert t.finish(7, bytes([S.PUBLISHED])) == b""
    t.begin(8, ["a"])
    t.forget(8)
    assert t.finish(8, bytes([S.PUBLISHED])) == b""


def test_in_flight_needs_a_request_under_way_at_the_same_time():
    t = MissTracker()
    t.begin(0, ["a", "b"])
    t.begin(1, ["a", "c"])  # submitted while 0 is under way: 0 is computing a
    assert [R(x) for x in t.finish(0, bytes([S.PUBLISHED, S.PUBLISHED]))] == [R.FIRST_USE, R.FIRST_USE]
    assert [R(x) for x in t.finish(1, bytes([S.PRESENT, S.PUBLISHED]))] == [R.IN_FLIGHT, R.FIRST_USE]
    # the later request finishes first, and stored a before the earlier one published it: the earlier one's
    # PRESENT a is in flight too (a request under way at the same time stored it)
    t.reset()
    t.begin(2, ["p", "q"])
    t.begin(3, ["p", "r"])
    assert [R(x) for x in t.finish(3, bytes([S.PUBLISHED, S.PUBLISHED]))] == [R.IN_FLIGHT, R.FIRST_USE]
    assert [R(x) for x in t.finish(2, bytes([S.PRESENT, S.PUBLISHED]))] == [R.IN_FLIGHT, R.FIRST_USE]
    # one after the other: the history decides, not the earlier request
    t.reset()
    assert _run(t, 4, ["p"], [S.PUBLISHED]) == [R.FIRST_USE]
    assert _run(t, 5, ["p"], [S.PRESENT]) == [R.AFTER_BREAK]


def test_a_later_request_absent_page_is_not_in_flight():
    """A request submitted after this one that computed the same key did not cause this one's miss, unless it
    stored the key first (the page is PRESENT here)."""
    t = MissTracker()
    t.begin(0, ["a"])
    t.begin(1, ["a"])
    assert [R(x) for x in t.finish(1, bytes([S.PRESENT]))] == [R.IN_FLIGHT]  # 0 was ahead of it
    t.reset()
    t.begin(2, ["b"])
    t.begin(3, ["b"])
    t.finish(3, bytes([S.FAILED]))
    assert [R(x) for x in t.finish(2, bytes([S.PUBLISHED]))] == [R.FIRST_USE]


def test_finished_requests_are_kept_only_while_an_overlapping_one_is_under_way():
    t = MissTracker()
    t.begin(0, ["a"])
    t.begin(1, ["b"])
    t.finish(0, bytes([S.PUBLISHED]))
    assert len(t._recent) == 1  # request 1 began before 0 finished
    t.finish(1, bytes([S.PUBLISHED]))
    assert not t._recent and not t._open


def _replay(rows: list[list[int]], capacity: int, fail: float, rng: random.Random):
    """A concurrency-1 replay of prefix-chain ``rows`` through an LRU store of ``capacity`` pages whose puts
    fail with probability ``fail``, with the connector's rule (reload the leading run of present keys,
    put-if-absent the rest), as a :class:`MissTracker` sees it; also the unbounded ideal's hits
    (workload.stats' rule). Returns (hits, reasons of every page, ideal hits)."""
    store: OrderedDict[str, None] = OrderedDict()
    tracker, seen = MissTracker(), set()
    hits = ideal = 0
    reasons: list[int] = []
    for seq, ids in enumerate(rows):
        keys = ["/".join(map(str, ids[: i + 1])) for i in range(len(ids))]  # a hash chain: the whole prefix
        run = 0
        while run < len(keys) and keys[run] in store:
            store.move_to_end(keys[run])
            run += 1
        states = [S.HIT] * run
        for k in keys[run:]:
            if k in store:
                states.append(S.PRESENT)
                store.move_to_end(k)
            elif rng.random() < fail:
                states.append(S.FAILED)
            else:
                states.append(S.PUBLISHED)
                store[k] = None
                if len(store) > capacity:
                    store.popitem(last=False)
        lead = 0
        while lead < len(keys) and keys[lead] in seen:
            lead += 1
        seen.update(keys)
        tracker.begin(seq, keys)
        got = tracker.finish(seq, bytes(states))
        assert sum(1 for b in got if b) == len(keys) - run  # every miss has one reason, no hit has one
        hits, ideal, reasons = hits + run, ideal + lead, reasons + list(got)
    return hits, reasons, ideal


@pytest.mark.parametrize("capacity,fail", [(10_000, 0.0), (40, 0.0), (25, 0.2), (3, 0.5)])
def test_reasons_add_up_to_the_unbounded_ideal(capacity, fail):
    rng = random.Random(capacity)
    rows = []
    for _ in range(300):  # rows that share prefixes of earlier rows, then go their own way
        base = rng.choice(rows) if rows and rng.random() < 0.8 else []
        keep = rng.randint(0, len(base))
        rows.append(base[:keep] + [rng.randint(0, 10**9) for _ in range(rng.randint(0, 6))])
    hits, reasons, ideal = _replay(rows, capacity, fail, rng)
    c = counts(bytes(reasons))
    assert hits + c["evicted"] + c["never_stored"] + c["after_break"] == ideal
    assert c["in_flight"] == 0  # one request at a time
    assert sum(c.values()) == sum(len(r) for r in rows) - hits
    if capacity < 50:  # a small store evicts: the split is not all first use
        assert c["evicted"] > 0
    if fail:
        assert c["never_stored"] > 0


def test_many_requests_under_way_still_give_one_reason_per_miss():
    rng = random.Random(7)
    t = MissTracker()
    keys = {seq: [f"k{rng.randint(0, 30)}" for _ in range(rng.randint(0, 5))] for seq in range(400)}
    under_way: list[int] = []
    for seq in range(400):
        t.begin(seq, keys[seq])
        under_way.append(seq)
        while under_way and (len(under_way) > 4 or rng.random() < 0.4):
            done = under_way.pop(rng.randrange(len(under_way)))
            states = bytes(rng.choice([S.HIT, S.PUBLISHED, S.PRESENT, S.FAILED]) for _ in keys[done])
            got = t.finish(done, states + bytes([S.PARTIAL]))
            assert len(got) == len(keys[done])
            assert [bool(r) for r in got] == [s != S.HIT for s in states]
    for seq in under_way:
        t.forget(seq)
    assert not t._open and not t._recent  # nothing is kept once no request is under way


def test_the_summary_counts_every_miss_once_and_the_shares_fill_the_prompt():
    from kvtui.commands.output import format_summary
    from kvtui.core.events import RequestResult
    from kvtui.metrics.aggregate import Aggregator

    t, agg, pt = MissTracker(), Aggregator(), 16
    rows = [(["a", "b", "c"], [S.PUBLISHED] * 3, 5), (["a", "b", "d"], [S.HIT, S.HIT, S.PUBLISHED], 0),
            (["a", "b", "c"], [S.PUBLISHED, S.PRESENT, S.PRESENT], 9), (["x"], [S.FAILED], 1),
            (["x"], [S.PUBLISHED], 0)]
    for seq, (keys, states, tail) in enumerate(rows):
        t.begin(seq, keys)
        cells = bytes(states) + (bytes([S.PARTIAL]) if tail else b"")
        agg.add(RequestResult(seq, "s", len(keys) * pt + tail, len(keys) * pt, pt, 64, len(keys),
                              states.count(S.HIT), cells, reasons=t.finish(seq, cells)))
    s = agg.summary()
    m = s["misses"]
    assert {k: v["pages"] for k, v in m.items()} == {
        "first_use": 5, "evicted": 1, "never_stored": 1, "after_break": 2, "in_flight": 0}
    assert sum(v["pages"] for v in m.values()) == s["pages_total"] - s["pages_hit"]
    assert all(v["tokens"] == v["pages"] * pt for v in m.values())
    partial = (s["tokens_input"] - s["tokens_cacheable"]) / s["tokens_input"]
    assert s["token_hit_rate"] + sum(v["share"] for v in m.values()) + partial == pytest.approx(1.0)
    assert not any(k.startswith(("misses_", "miss_tokens_", "miss_share_")) for k in s)  # gathered in "misses"
    assert "misses                9 full pages: first use 5 (" in format_summary(s)
    row = agg.frame().rows[2]
    assert row.misses == (("evicted", 1), ("after_break", 2))


def test_a_source_without_reasons_has_no_misses_object():
    from kvtui.core.events import RequestResult
    from kvtui.metrics.aggregate import Aggregator

    agg = Aggregator()
    agg.add(RequestResult(0, "s", 32, 32, 16, 64, 2, 0, bytes([S.PUBLISHED] * 2)))
    assert agg.summary()["misses"] is None


def test_the_request_log_has_each_request_reasons():
    from kvtui.core.events import RequestResult
    from kvtui.export.request_log import NAMES as COLUMNS, request_row

    cells = bytes([S.HIT, S.PUBLISHED, S.PRESENT, S.PARTIAL])
    r = RequestResult(0, "s", 56, 48, 16, 64, 3, 1, cells, reasons=bytes([R.NONE, R.EVICTED, R.AFTER_BREAK]))
    row = request_row(r)
    assert tuple(row) == COLUMNS
    assert [row[f"misses_{NAMES[x]}"] for x in REASONS] == [0, 1, 0, 1, 0]
    unclassified = request_row(RequestResult(1, "s", 16, 16, 16, 64, 1, 0, bytes([S.PUBLISHED])))
    assert all(unclassified[f"misses_{NAMES[x]}"] is None for x in REASONS)


def test_the_history_keeps_at_most_max_keys_and_counts_what_it_forgot():
    """Bounded memory: beyond ``max_keys`` the least recently touched keys go (counted in ``forgotten``, handed
    out once by ``take_forgotten``); a later miss of a forgotten key counts as a first use, while a key touched
    since stays known."""
    from kvtui.core.misses import MissReason, MissTracker
    from kvtui.core.pages import PageState as PS

    t = MissTracker(max_keys=4)
    for seq, keys in enumerate((["a", "b"], ["c", "d"], ["a", "e"])):  # a is touched again: b goes first
        t.begin(seq, keys)
        t.finish(seq, bytes([PS.PUBLISHED] * 2))
    assert len(t) == 4 and t.forgotten == 1 and t.take_forgotten() == 1 and t.take_forgotten() == 0
    t.begin(9, ["a", "b"])
    assert list(t.finish(9, bytes([PS.PUBLISHED] * 2))) == [MissReason.EVICTED, MissReason.FIRST_USE]
    t.reset()
    assert len(t) == 0 and t.forgotten == 0
