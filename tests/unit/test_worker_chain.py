"""The request chain's decisions inside one worker (kvtui.engine.worker._Chain) over the store double:
when decode waits for prefill's ack, and when it holds its queue; the typed messages it exchanges."""

from __future__ import annotations

import pickle

import pytest
from test_connector import LAYOUT, FakeStore, MasterDown, _conn, toks

from kvtui.core.layout import PageLayout
from kvtui.engine.connector import ReloadResult
from kvtui.engine.protocol import (
    ANSWERED,
    CHAIN,
    Ack,
    Begin,
    Drain,
    Failed,
    Hold,
    Ok,
    Publish,
    PublishRest,
    RemoveAll,
    RequestDone,
    RequestDropped,
    RequestFailed,
    SetLayout,
    Submit,
)
from kvtui.engine.worker import _Chain, _Commands


class Pipe:
    def __init__(self):
        self.sent = []

    def send(self, msg):
        self.sent.append(msg)


def _decode(store):
    conn = _conn(store, role="decode")
    return _Chain(conn, [Pipe()], None), conn


def test_decode_waits_for_the_ack_only_when_prefill_will_call_the_store():
    store = FakeStore()
    writer = _conn(store)
    chain, conn = _decode(store)
    keys = conn.keys_for(toks(4 * 4))
    writer.store_computed_prefix(None, keys=keys[:2])
    chain.submit(0, keys)  # pages 2-3 absent: prefill must put them
    chain.submit(1, keys[:2])  # fully cached: nothing for prefill to store
    assert chain.can_reload()
    chain.reload_next()
    msg = chain.peers[0].sent[-1]
    assert isinstance(msg, PublishRest) and (msg.seq, msg.rest_keys, msg.needs_ack) == (0, keys[2:], True)
    assert msg.reload.pages_hit == 2 and msg.known == [0, 0] and msg.reload.rest_probe == []  # sent once
    assert not chain.can_reload()  # limit 1: request 1 waits for the ack of request 0
    chain.on_peer(Ack(False), chain.peers[0])
    chain.reload_next()
    assert chain.peers[0].sent[-1].needs_ack is False and chain.in_flight == 0  # no store call left: no ack awaited


def test_decode_holds_its_queue_when_the_master_is_down():
    chain, conn = _decode(MasterDown())
    keys = conn.keys_for(toks(8))
    chain.submit(0, keys)
    chain.submit(1, keys)
    chain.reload_next()
    assert chain.held and not chain.can_reload()  # request 1 is not sent to a dead master
    assert chain.peers[0].sent[-1].needs_ack is False  # prefill makes no store call for failed probes either
    chain.held = False  # the parent's Hold(False) once the master answers
    assert chain.can_reload()


def test_prefill_publishes_with_the_known_answers_then_acks_and_reports():
    store = FakeStore()
    prefill = _conn(store, role="prefill")
    results = Pipe()
    chain = _Chain(prefill, [Pipe()], results)
    keys = prefill.keys_for(toks(4 * 3))
    reload = ReloadResult(pages_total=3)
    chain.on_peer(PublishRest(7, keys, [0, 0, 0], reload, 1.0, True), chain.peers[0])
    assert store.probed == [] and len(store.objects) == 3
    assert chain.peers[0].sent == [Ack(False)]
    done = results.sent[-1]
    assert isinstance(done, RequestDone) and (done.seq, done.publish.stored, done.t_start) == (7, 3, 1.0)
    assert done.t_end >= done.t_start and done.reload is reload


def test_with_a_publish_still_running_prefill_probes_again():
    store = FakeStore()
    chain, conn = _decode(store)
    chain.limit = 2  # concurrency 2
    keys = conn.keys_for(toks(4 * 3))
    chain.submit(0, keys)
    chain.submit(1, keys)
    chain.reload_next()
    assert chain.peers[0].sent[-1].known == [0, 0, 0]  # alone: prefill may trust these answers
    chain.reload_next()  # request 0's pages may be stored meanwhile: no answers handed over, wait for the ack
    msg = chain.peers[0].sent[-1]
    assert msg.known == [] and msg.needs_ack and chain.in_flight == 2


def test_drain_runs_the_queue_even_when_the_master_is_down():
    chain, conn = _decode(MasterDown())
    keys = conn.keys_for(toks(8))
    for seq in range(3):
        chain.submit(seq, keys)
    chain.draining = True  # Drain(): the run ended or stopped
    while chain.can_reload():
        chain.reload_next()
    assert not chain.queue and not chain.held and len(chain.peers[0].sent) == 3


def test_decode_backs_off_after_the_store_was_full():
    store = FakeStore()
    chain, conn = _decode(store)
    keys = conn.keys_for(toks(8))
    chain.submit(0, keys)
    chain.submit(1, keys)
    chain.reload_next()
    chain.on_peer(Ack(True), chain.peers[0])  # prefill: NO_AVAILABLE_HANDLE
    assert not chain.can_reload() and 0 < chain.wait_s() <= 0.05
    chain.resume_at = 0.0  # the 50 ms have passed
    assert chain.can_reload()
    chain.reload_next()
    chain.on_peer(Ack(True), chain.peers[0])
    assert chain.backoff_s == 0.1  # doubled


def test_drain_while_held_drops_the_queue_unrun():
    store = MasterDown()
    chain, conn = _decode(store)
    keys = conn.keys_for(toks(8))
    for seq in range(3):
        chain.submit(seq, keys)
    chain.reload_next()  # fails: decode holds the other two
    store.probed.clear()
    chain.drain()  # the run ended during the outage
    assert chain.peers[0].sent[1:] == [RequestDropped(1), RequestDropped(2)]
    assert not chain.queue and store.probed == [] and not chain.held


def test_chain_commands_dispatch_on_their_type(monkeypatch):
    monkeypatch.setenv("KVTUI_PIN", "0")  # Begin pins the calling thread: not the test's
    chain, conn = _decode(FakeStore())
    chain.on_command(Submit(0, conn.keys_for(toks(8))))
    chain.on_command(Hold(True))
    assert len(chain.queue) == 1 and not chain.can_reload()
    chain.on_command(Drain())  # held: the queue is dropped, and a later hold is ignored
    chain.on_command(Hold(True))
    assert chain.peers[0].sent == [RequestDropped(0)] and not chain.held and chain.draining
    chain.on_command(Begin(3))  # a new run clears the drain
    assert (chain.limit, chain.held, chain.draining) == (3, False, False)


def test_prefill_relays_decode_failures_and_drops_to_the_parent():
    results = Pipe()
    chain = _Chain(_conn(FakeStore(), role="prefill"), [Pipe()], results)
    chain.on_peer(RequestFailed(4, "decode worker: boom"), chain.peers[0])
    chain.on_peer(RequestDropped(5), chain.peers[0])
    assert results.sent == [RequestFailed(4, "decode worker: boom"), RequestDropped(5)]
    with pytest.raises(TypeError):
        chain.on_peer(("ack", True), chain.peers[0])  # the old tagged tuples are no messages


def test_every_answered_command_has_a_handler_and_set_layout_waits_for_an_idle_chain():
    assert set(_Commands._HANDLERS) == set(ANSWERED) and not set(ANSWERED) & set(CHAIN)
    store = FakeStore()
    chain, conn = _decode(store)
    commands = _Commands(chain, store)
    chain.submit(0, conn.keys_for(toks(8)))
    refused = commands.answer(SetLayout(PageLayout(1, 1, 4, 8, 2)))
    assert isinstance(refused, Failed) and "1 requests under way" in refused.message
    chain.queue.clear()
    assert commands.answer(SetLayout(PageLayout(1, 1, 4, 8, 2))) == Ok(128)
    assert chain.connector.keyer.page_tokens == 8  # the keys follow the new layout
    assert isinstance(commands.answer(Publish(toks(8))), Failed)  # decode may not publish: refused, not fatal


def test_messages_survive_pickling():
    res, _ = _conn(FakeStore()).load_cached_prefix(toks(8))
    msgs = [PublishRest(1, ["k"], [0], res, 1.5, True), Ack(True), RequestDone(1, res, None, 1.0, 2.0),
            RequestDropped(2), RequestFailed(None, "x"), Submit(3, ["a", "b"]), SetLayout(LAYOUT), RemoveAll()]
    assert [pickle.loads(pickle.dumps(m)) for m in msgs] == msgs


def test_decode_hands_each_request_to_the_prefill_worker_the_parent_chose():
    store = FakeStore()
    conn = _conn(store, role="decode")
    chain = _Chain(conn, [Pipe(), Pipe()], None)
    keys = conn.keys_for(toks(4 * 2))
    chain.on_command(Submit(0, keys, 1))
    chain.on_command(Submit(1, keys, 0))
    chain.reload_next()
    assert [m.seq for m in chain.peers[1].sent] == [0] and chain.peers[0].sent == []
    chain.on_peer(Ack(False), chain.peers[1])
    chain.reload_next()
    assert [m.seq for m in chain.peers[0].sent] == [1]


def test_with_other_decode_workers_prefill_never_trusts_a_reloads_probe():
    store = FakeStore()
    conn = _conn(store, role="decode")
    chain = _Chain(conn, [Pipe()], None, shared=True)
    chain.submit(0, conn.keys_for(toks(4 * 3)))
    chain.reload_next()  # alone in this worker, but another decode worker's publish may run meanwhile
    msg = chain.peers[0].sent[-1]
    assert msg.known == [] and msg.needs_ack


def test_prefill_acks_the_decode_worker_whose_request_it_published():
    store = FakeStore()
    prefill = _conn(store, role="prefill")
    results, a, b = Pipe(), Pipe(), Pipe()
    chain = _Chain(prefill, [a, b], results)
    keys = prefill.keys_for(toks(4 * 2))
    chain.on_peer(PublishRest(3, keys, [], ReloadResult(pages_total=2), 1.0, True), b)
    assert b.sent == [Ack(False)] and a.sent == []
    assert results.sent[-1].seq == 3


class PlacingStore(FakeStore):
    """Records the segment each put asked for, and says where each key lives (its first put's segment)."""

    def __init__(self):
        super().__init__()
        self.placed = {}

    def batch_put_if_absent(self, keys, ptrs, sizes, segment=""):
        for k in keys:
            self.placed.setdefault(k, segment)
        return super().batch_put_if_absent(keys, ptrs, sizes)

    def replica_segments(self, keys, prefer=""):
        return [self.placed.get(k, "") for k in keys]


def test_pages_go_to_the_readers_segment_and_its_local_bytes_are_counted():
    store = PlacingStore()
    prefill = _Chain(_conn(store, role="prefill"), [Pipe()], Pipe(), segment="prefill-seg")
    keys = prefill.connector.keys_for(toks(4 * 4))
    prefill.on_peer(PublishRest(0, keys[:2], [], ReloadResult(pages_total=2), 1.0, True, "decode-seg"),
                    prefill.peers[0])
    prefill.on_peer(PublishRest(1, keys[2:], [], ReloadResult(pages_total=2), 1.0, True, ""), prefill.peers[0])
    assert [store.placed[k] for k in keys] == ["decode-seg"] * 2 + ["prefill-seg"] * 2  # else its own segment
    decode = _Chain(_conn(store, role="decode"), [Pipe()], None, shared=True, segment="decode-seg")
    decode.submit(0, keys)
    decode.reload_next()
    sent = decode.peers[0].sent[-1]
    assert sent.segment == "decode-seg" and sent.reload.pages_hit == 4
    assert sent.reload.bytes_local == 2 * decode.connector.page_bytes  # two of its four pages were in its segment
    alone = _Chain(_conn(store, role="decode"), [Pipe()], None, shared=False, segment="decode-seg")
    alone.submit(0, keys)
    alone.reload_next()
    assert alone.peers[0].sent[-1].reload.bytes_local == alone.peers[0].sent[-1].reload.bytes_loaded  # the only segment


class AtomicPipe(Pipe):
    """A report end: takes a message when it fits one pipe write (``fits``), as ``Wire.send_atomic``."""

    def __init__(self, fits: bool = True):
        super().__init__()
        self.fits = fits

    def send_atomic(self, msg) -> bool:
        if self.fits:
            self.sent.append(msg)
        return self.fits


def test_decode_reports_a_request_prefill_has_nothing_to_do_for_itself():
    """At concurrency 1 with a report end, a request whose pages after the reloaded run all answered
    present goes straight to the parent (a RequestDone equal to what prefill would send, bar its timing);
    one with a page to put still goes to prefill, and decode waits for its Ack."""
    store = FakeStore()
    writer = _conn(store)
    conn = _conn(store, role="decode")
    report = AtomicPipe()
    chain = _Chain(conn, [Pipe()], None, reports=[report])
    keys = conn.keys_for(toks(4 * 4))
    writer.store_computed_prefix(None, keys=keys[:2])
    chain.submit(0, keys[:2])  # fully cached: nothing to put
    chain.submit(1, keys)  # pages 2-3 absent: prefill puts them
    chain.reload_next()
    assert chain.peers[0].sent == [] and chain.in_flight == 0
    done = report.sent[-1]
    assert isinstance(done, RequestDone) and done.seq == 0 and done.reload.pages_hit == 2
    assert (done.publish.pages_total, done.publish.stored, done.publish.states) == (0, 0, [])
    chain.reload_next()
    assert [m.seq for m in chain.peers[0].sent] == [1] and chain.in_flight == 1 and len(report.sent) == 1


def test_a_report_goes_through_prefill_when_it_cannot_go_straight():
    """No direct report while a publish of this worker runs (concurrency above 1), nor when the message would
    not fit one atomic pipe write: prefill relays it, as before."""
    store = FakeStore()
    writer = _conn(store)
    conn = _conn(store, role="decode")
    keys = conn.keys_for(toks(4 * 4))
    writer.store_computed_prefix(None, keys=keys[:2])
    too_big = AtomicPipe(fits=False)
    chain = _Chain(conn, [Pipe()], None, reports=[too_big])
    chain.submit(0, keys[:2])
    chain.reload_next()
    assert too_big.sent == [] and [m.seq for m in chain.peers[0].sent] == [0]
    report = AtomicPipe()
    chain = _Chain(conn, [Pipe()], None, reports=[report])
    chain.limit = 2
    chain.submit(0, keys)  # a publish under way ...
    chain.submit(1, keys[:2])  # ... so the next request is relayed, to keep the parent's order
    chain.reload_next()
    chain.reload_next()
    assert report.sent == [] and [m.seq for m in chain.peers[0].sent] == [0, 1]


def test_a_decode_report_settles_the_rest_as_prefill_would():
    """``settle_known`` (decode, no store call) gives what prefill's ``store_computed_prefix`` gives for the
    same known answers: present pages, a repeated key, failed probes (the first page's code left to the
    reload)."""
    store = FakeStore()
    prefill, decode = _conn(store, role="prefill"), _conn(store, role="decode")
    keys = prefill.keys_for(toks(4 * 4))
    cases = [(keys, [1, 1, 1, 1]), (keys[:1] + keys[:1] + keys[1:2], [1, 1, 1]), (keys[:3], [-900, -900, 1]),
             ([], [])]
    for rest, known in cases:
        got = decode.settle_known(rest, known)
        want = prefill.store_computed_prefix(None, 0, keys=rest, known=known)
        got.probe_ms = want.probe_ms = 0.0
        assert got == want
        assert store.probed == []  # neither called the store
    assert decode.settle_known(keys, [1, 0, 1, 1]) is None and decode.settle_known(keys, [1, 1]) is None
