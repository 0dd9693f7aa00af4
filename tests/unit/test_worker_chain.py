"""The request chain's decisions inside one worker (kvtui.engine.worker._Chain) over the store double:
when decode waits for prefill's ack, and when it holds its queue."""

from __future__ import annotations

from test_connector import FakeStore, MasterDown, _conn, toks

from kvtui.engine.worker import _Chain


class Pipe:
    def __init__(self):
        self.sent = []

    def send(self, msg):
        self.sent.append(msg)


def _decode(store):
    conn = _conn(store, role="decode")
    return _Chain(conn, Pipe(), None), conn


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
    kind, seq, rest, reload, _t, needs_ack = chain.peer.sent[-1]
    assert (kind, seq, rest, needs_ack) == ("publish", 0, keys[2:], True) and reload["pages_hit"] == 2
    assert not chain.can_reload()  # limit 1: request 1 waits for the ack of request 0
    chain.on_peer(("ack", False))
    chain.reload_next()
    assert chain.peer.sent[-1][5] is False and chain.in_flight == 0  # no store call left: no ack awaited


def test_decode_holds_its_queue_when_the_master_is_down():
    chain, conn = _decode(MasterDown())
    keys = conn.keys_for(toks(8))
    chain.submit(0, keys)
    chain.submit(1, keys)
    chain.reload_next()
    assert chain.held and not chain.can_reload()  # request 1 is not sent to a dead master
    assert chain.peer.sent[-1][5] is False  # prefill makes no store call for failed probes either
    chain.held = False  # the parent's ("hold", False) once the master answers
    assert chain.can_reload()


def test_prefill_publishes_with_the_known_answers_then_acks_and_reports():
    store = FakeStore()
    prefill = _conn(store, role="prefill")
    results = Pipe()
    chain = _Chain(prefill, Pipe(), results)
    keys = prefill.keys_for(toks(4 * 3))
    chain.on_peer(("publish", 7, keys, {"rest_probe": [0, 0, 0], "pages_hit": 0}, 1.0, True))
    assert store.probed == [] and len(store.objects) == 3
    assert chain.peer.sent == [("ack", False)]
    kind, seq, reload, pub, t_start, t_end = results.sent[-1]
    assert (kind, seq, pub["stored"], t_start) == ("result", 7, 3, 1.0) and t_end >= t_start
    assert "rest_probe" not in reload


def test_with_a_publish_still_running_prefill_probes_again():
    store = FakeStore()
    chain, conn = _decode(store)
    chain.limit = 2  # concurrency 2
    keys = conn.keys_for(toks(4 * 3))
    chain.submit(0, keys)
    chain.submit(1, keys)
    chain.reload_next()
    assert chain.peer.sent[-1][3]["rest_probe"] == [0, 0, 0]  # alone: prefill may trust these answers
    chain.reload_next()  # request 0's pages may be stored meanwhile: no answers handed over, wait for the ack
    _kind, _seq, _rest, reload, _t, needs_ack = chain.peer.sent[-1]
    assert reload["rest_probe"] == [] and needs_ack and chain.in_flight == 2


def test_drain_runs_the_queue_even_when_the_master_is_down():
    chain, conn = _decode(MasterDown())
    keys = conn.keys_for(toks(8))
    for seq in range(3):
        chain.submit(seq, keys)
    chain.draining = True  # ("drain",): the run ended or stopped
    while chain.can_reload():
        chain.reload_next()
    assert not chain.queue and not chain.held and len(chain.peer.sent) == 3


def test_decode_backs_off_after_the_store_was_full():
    store = FakeStore()
    chain, conn = _decode(store)
    keys = conn.keys_for(toks(8))
    chain.submit(0, keys)
    chain.submit(1, keys)
    chain.reload_next()
    chain.on_peer(("ack", True))  # prefill: NO_AVAILABLE_HANDLE
    assert not chain.can_reload() and 0 < chain.wait_s() <= 0.05
    chain.resume_at = 0.0  # the 50 ms have passed
    assert chain.can_reload()
    chain.reload_next()
    chain.on_peer(("ack", True))
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
    assert [m[:2] for m in chain.peer.sent[1:]] == [("dropped", 1), ("dropped", 2)]
    assert not chain.queue and store.probed == [] and not chain.held
