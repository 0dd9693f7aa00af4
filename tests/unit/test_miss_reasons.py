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
    """Request ``seq`` submitted, run (from ``seq`` s to ``seq + 0.5`` s) and finished before the next one."""
    t.begin(seq, keys, float(seq))
    return [R(b) for b in t.finish(seq, bytes(states), float(seq), seq + 0.5)]


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


def test_in_flight_needs_a_request_running_at_the_same_time():
    t = MissTracker()
    t.reset(concurrency=2)
    t.begin(0, ["a", "b"], 0.0)
    t.begin(1, ["a", "c"], 0.0)  # both run from 1 s: 0 is computing a while 1 misses it
    assert [R(x) for x in t.finish(0, bytes([S.PUBLISHED, S.PUBLISHED]), 1.0, 2.0)] == [R.FIRST_USE, R.FIRST_USE]
    assert [R(x) for x in t.finish(1, bytes([S.PRESENT, S.PUBLISHED]), 1.0, 3.0)] == [R.IN_FLIGHT, R.FIRST_USE]
    # the later request finishes first, and stored p before the earlier one published it: the earlier one's
    # PRESENT p is in flight too (a request running at the same time stored it)
    t.reset()
    t.begin(2, ["p", "q"], 4.0)
    t.begin(3, ["p", "r"], 4.0)
    assert [R(x) for x in t.finish(3, bytes([S.PUBLISHED, S.PUBLISHED]), 5.0, 6.0)] == [R.IN_FLIGHT, R.FIRST_USE]
    assert [R(x) for x in t.finish(2, bytes([S.PRESENT, S.PUBLISHED]), 5.0, 7.0)] == [R.IN_FLIGHT, R.FIRST_USE]
    # one after the other: the history decides, not the earlier request
    t.reset()
    assert _run(t, 4, ["p"], [S.PUBLISHED]) == [R.FIRST_USE]
    assert _run(t, 5, ["p"], [S.PRESENT]) == [R.AFTER_BREAK]


def test_a_request_queued_behind_another_is_not_under_way():
    """The driver submits requests ahead of their turn: one that has not begun is not computing anything. At
    concurrency 1 a refused page missed by the next request is never stored, and a page present after a break
    is after a break, however many requests were submitted meanwhile (these were "in flight" when a request
    counted as under way from its submission)."""
    t = MissTracker()
    t.reset(concurrency=1)
    for seq in range(4):  # four submitted at once, run one after the other
        t.begin(seq, ["a", "b"] if seq < 3 else ["a", "z"], 0.0)
    assert [R(x) for x in t.finish(0, bytes([S.PUBLISHED, S.FAILED]), 1.0, 2.0)] == [R.FIRST_USE, R.FIRST_USE]
    # 0's put of b was refused; 1 runs after 0 published: b is never stored, not in flight
    assert [R(x) for x in t.finish(1, bytes([S.HIT, S.PUBLISHED]), 2.5, 3.0)] == [R.NONE, R.NEVER_STORED]
    # a evicted, b still there: a is evicted, b after a break
    assert [R(x) for x in t.finish(2, bytes([S.PUBLISHED, S.PRESENT]), 3.5, 4.0)] == [R.EVICTED, R.AFTER_BREAK]
    assert [R(x) for x in t.finish(3, bytes([S.HIT, S.PUBLISHED]), 4.5, 5.0)] == [R.NONE, R.FIRST_USE]


def test_an_unfinished_request_counts_only_when_it_may_have_run():
    """A request whose result has not come: same decode worker, submitted earlier: ran meanwhile only above
    concurrency 1; another decode worker's: only among its first ``concurrency`` unfinished ones, and only if
    submitted before this one ended."""
    def reasons(concurrency, others, states=(S.PUBLISHED,)):
        t = MissTracker()
        t.reset(concurrency=concurrency)
        for seq, lane, submitted, keys in others:
            t.begin(seq, keys, submitted, lane)
        return [R(x) for x in t.finish(5, bytes(states), 1.0, 2.0)]

    me = (5, 0, 0.0, ["k"])
    assert reasons(1, [(1, 0, 0.0, ["k"]), me]) == [R.FIRST_USE]  # at 1 it ended before 5 began
    assert reasons(2, [(1, 0, 0.0, ["k"]), me]) == [R.IN_FLIGHT]
    assert reasons(1, [(1, 1, 0.0, ["k"]), me]) == [R.IN_FLIGHT]  # another worker's first one
    assert reasons(1, [(1, 1, 0.0, ["x"]), (2, 1, 0.0, ["k"]), me]) == [R.FIRST_USE]  # queued behind 1
    assert reasons(2, [(1, 1, 0.0, ["x"]), (2, 1, 0.0, ["k"]), me]) == [R.IN_FLIGHT]
    assert reasons(1, [me, (7, 1, 2.5, ["k"])], [S.PRESENT]) == [R.AFTER_BREAK]  # submitted after 5 ended
    assert reasons(1, [me, (7, 1, 1.5, ["k"])], [S.PRESENT]) == [R.IN_FLIGHT]  # may have stored k first
    assert reasons(1, [me, (7, 0, 0.0, ["k"])], [S.PRESENT]) == [R.AFTER_BREAK]  # starts after 5 at 1
    assert reasons(2, [me, (7, 0, 0.0, ["k"])], [S.PRESENT]) == [R.IN_FLIGHT]


def test_a_later_request_absent_page_is_not_in_flight():
    """A request submitted after this one that computed the same key did not cause this one's miss, unless it
    stored the key first (the page is PRESENT here)."""
    t = MissTracker()
    t.reset(concurrency=2)
    t.begin(0, ["a"], 0.0)
    t.begin(1, ["a"], 0.0)
    assert [R(x) for x in t.finish(1, bytes([S.PRESENT]), 1.0, 2.0)] == [R.IN_FLIGHT]  # 0 was ahead of it
    t.reset()
    t.begin(2, ["b"], 3.0)
    t.begin(3, ["b"], 3.0)
    t.finish(3, bytes([S.FAILED]), 4.0, 5.0)
    assert [R(x) for x in t.finish(2, bytes([S.PUBLISHED]), 4.0, 6.0)] == [R.FIRST_USE]


def test_finished_requests_are_kept_only_while_one_not_finished_may_have_run_beside_them():
    t = MissTracker()
    t.begin(0, ["a"], 0.0)
    t.begin(1, ["b"], 0.0)
    t.finish(0, bytes([S.PUBLISHED]), 1.0, 2.0)
    assert len(t._recent) == 1  # request 1 was submitted before 0 ended
    t.begin(2, ["c"], 2.5)
    t.finish(1, bytes([S.PUBLISHED]), 2.0, 3.0)
    assert [d.seq for d in t._recent] == [1]  # 2 was submitted after 0 ended: 0 is dropped
    t.finish(2, bytes([S.PUBLISHED]), 3.0, 4.0)
    assert not t._recent and not t._open


def _replay(rows: list[list[int]], capacity: int, fail: float, rng: random.Random, ahead: int = 0):
    """A concurrency-1 replay of prefix-chain ``rows`` through an LRU store of ``capacity`` pages whose puts
    fail with probability ``fail``, with the connector's rule (reload the leading run of present keys,
    put-if-absent the rest), as a :class:`MissTracker` sees it; each row is submitted ``ahead`` rows before
    its turn (the driver's look-ahead) and runs after the previous one ended. Also the unbounded ideal's hits
    (workload.stats' rule). Returns (hits, reasons of every page, ideal hits)."""
    store: OrderedDict[str, None] = OrderedDict()
    tracker, seen = MissTracker(), set()
    tracker.reset(concurrency=1)
    hits = ideal = 0
    reasons: list[int] = []
    chains = [["/".join(map(str, ids[: i + 1])) for i in range(len(ids))] for ids in rows]  # hash chains
    submitted = 0
    for seq, keys in enumerate(chains):
        while submitted < len(chains) and submitted <= seq + ahead:
            tracker.begin(submitted, chains[submitted], float(seq))
            submitted += 1
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
        got = tracker.finish(seq, bytes(states), seq + 0.25, seq + 0.75)
        assert sum(1 for b in got if b) == len(keys) - run  # every miss has one reason, no hit has one
        hits, ideal, reasons = hits + run, ideal + lead, reasons + list(got)
    return hits, reasons, ideal


@pytest.mark.parametrize("ahead", [0, 8])
@pytest.mark.parametrize("capacity,fail", [(10_000, 0.0), (40, 0.0), (25, 0.2), (3, 0.5)])
def test_reasons_add_up_to_the_unbounded_ideal(capacity, fail, ahead):
    """At concurrency 1, with or without requests submitted ahead of their turn (8: the driver's look-ahead),
    a refused put's page missing later is never stored and nothing is in flight: the add-up is exact."""
    rng = random.Random(capacity)
    rows = []
    for _ in range(300):  # rows that share prefixes of earlier rows, then go their own way
        base = rng.choice(rows) if rows and rng.random() < 0.8 else []
        keep = rng.randint(0, len(base))
        rows.append(base[:keep] + [rng.randint(0, 10**9) for _ in range(rng.randint(0, 6))])
    hits, reasons, ideal = _replay(rows, capacity, fail, rng, ahead)
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
    t.reset(concurrency=4)
    keys = {seq: [f"k{rng.randint(0, 30)}" for _ in range(rng.randint(0, 5))] for seq in range(400)}
    under_way: dict[int, float] = {}  # seq → when it started
    for seq in range(400):
        t.begin(seq, keys[seq], float(seq), lane=seq % 2)
        under_way[seq] = seq + rng.random()
        while under_way and (len(under_way) > 4 or rng.random() < 0.4):
            done = rng.choice(list(under_way))
            start = under_way.pop(done)
            states = bytes(rng.choice([S.HIT, S.PUBLISHED, S.PRESENT, S.FAILED]) for _ in keys[done])
            got = t.finish(done, states + bytes([S.PARTIAL]), start, seq + 1.0)
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
        t.begin(seq, keys, float(seq))
        cells = bytes(states) + (bytes([S.PARTIAL]) if tail else b"")
        agg.add(RequestResult(seq, "s", len(keys) * pt + tail, len(keys) * pt, pt, 64, len(keys),
                              states.count(S.HIT), cells, reasons=t.finish(seq, cells, float(seq), seq + 0.5)))
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
