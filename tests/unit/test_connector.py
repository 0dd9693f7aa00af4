"""Connector logic against a fault-injecting store double that returns the real Mooncake codes."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

from kvtui.core.codes import (
    CLIENT_CLOSED,
    CONTENT_MISMATCH,
    INVALID_PARAMS,
    OBJECT_ALREADY_EXISTS,
    SIZE_MISMATCH,
)
from kvtui.core.layout import PageLayout
from kvtui.core.pages import PageState
from kvtui.engine.connector import PagedKVConnector, RoleError
from kvtui.engine.keys import PageKeyer
from kvtui.mooncake.client import ClientConfig, StoreClient

LAYOUT = PageLayout(1, 1, 4, 4, 2)  # 64-byte pages, 4 tokens/page


class FakeStore:
    """Put-if-absent object store with Mooncake's return values; ``script`` overrides codes per key."""

    def __init__(self):
        self.objects: dict[str, bytes] = {}
        self.probed: list[str] = []
        self.read_codes: dict[str, int] = {}
        self.put_codes: dict[str, int] = {}
        self.puts = 0

    def new_buffer(self, nbytes):
        """As :meth:`StoreClient.new_buffer` of a real client: plain memory."""
        return np.empty(int(nbytes), dtype=np.uint8)

    def batch_is_exist(self, keys):
        self.probed.extend(keys)
        return [1 if k in self.objects else 0 for k in keys]

    def batch_get_into(self, keys, ptrs, sizes):
        out = []
        for k, p, n in zip(keys, ptrs, sizes):
            if k in self.read_codes:
                out.append(self.read_codes[k])
            elif k not in self.objects:
                out.append(-704)
            elif len(self.objects[k]) > n:
                out.append(-600)
            else:
                data = self.objects[k]
                ctypes.memmove(p, data, len(data))
                out.append(len(data))
        return out

    def batch_put_if_absent(self, keys, ptrs, sizes):
        """As :meth:`StoreClient.batch_put_if_absent`: 0 stored, -705 already there (not overwritten)."""
        out = []
        for k, p, n in zip(keys, ptrs, sizes):
            self.puts += 1
            if k in self.put_codes:
                out.append(self.put_codes[k])
            elif k in self.objects:
                out.append(OBJECT_ALREADY_EXISTS)
            else:
                self.objects[k] = ctypes.string_at(p, n)
                out.append(0)
        return out


class MasterDown(FakeStore):
    """Every probe fails with RPC_FAIL (-900), as with a dead master; probed keys are still recorded."""

    def batch_is_exist(self, keys):
        self.probed.extend(keys)
        return [-900] * len(keys)


def _conn(store, role="mixed", **kw):
    return PagedKVConnector(store, LAYOUT, PageKeyer("m", LAYOUT.page_tokens), role, **kw)


def toks(n, base=0):
    return np.arange(n, dtype=np.uint32) + base


def test_publish_then_reload_verifies():
    s = FakeStore()
    c = _conn(s)
    pub = c.store_computed_prefix(toks(4 * 6 + 2))
    assert pub.stored == 6 and pub.already_present == 0 and pub.failed == 0
    res, pages = c.load_cached_prefix(toks(4 * 6 + 2))
    assert res.pages_hit == 6 and res.verified == 6 and pages.shape == (6, LAYOUT.page_bytes)


def test_probe_stops_at_first_absent_page_in_growing_chunks():
    s = FakeStore()
    c = _conn(s, first_probe_pages=2)
    c.store_computed_prefix(toks(4 * 3))
    s.probed.clear()
    res, _ = c.load_cached_prefix(toks(4 * 40))
    assert res.pages_hit == 3
    # chunks of 2 then 4: pages 0-5 probed, nothing beyond the chunk holding the first absent page
    assert len(s.probed) == 6 and res.pages_probed == 6


def test_probe_all_hands_its_answers_to_the_publish():
    s = FakeStore()
    c = _conn(s, first_probe_pages=2)
    keys = c.keys_for(toks(4 * 8))
    c.store_computed_prefix(None, keys=keys[:3])
    s.objects[keys[5]] = c.buffer(1)[0].tobytes()  # a peer stored page 5 (contents irrelevant here)
    s.probed.clear()
    res, rest = c.reload_and_rest(toks(4 * 8), probe_all=True)
    assert res.pages_hit == 3 and len(s.probed) == 8  # one call for every page
    assert rest == keys[3:] and res.rest_probe == [0, 0, 1, 0, 0]
    s.probed.clear()
    pub = c.store_computed_prefix(None, keys=rest, known=res.rest_probe)
    assert s.probed == []  # nothing probed twice
    assert pub.states == [PageState.PUBLISHED, PageState.PUBLISHED, PageState.PRESENT, PageState.PUBLISHED,
                          PageState.PUBLISHED]
    # chunked (the default): the answers of the chunk that held the first absent page
    s2 = FakeStore()
    c2 = _conn(s2, first_probe_pages=2)
    c2.store_computed_prefix(None, keys=keys[:3])
    res, rest = c2.reload_and_rest(toks(4 * 8))
    assert res.pages_hit == 3 and res.pages_probed == 6 and res.rest_probe == [0, 0, 0]
    s2.probed.clear()
    c2.store_computed_prefix(None, keys=rest, known=res.rest_probe)
    assert s2.probed == keys[6:]  # only the pages the reload did not probe


def test_known_probe_failures_are_failed_and_counted_once_each():
    s = FakeStore()
    c = _conn(s)
    keys = c.keys_for(toks(4 * 3))
    pub = c.store_computed_prefix(None, keys=keys, known=[-900, -900])
    # the first known answer ended the reload's run and was counted there; the second is counted here
    assert pub.states == [PageState.FAILED, PageState.FAILED, PageState.PUBLISHED] and pub.codes == {-900: 1}
    assert s.probed == keys[2:]


def test_rest_probe_is_dropped_when_the_run_ended_on_a_failed_read():
    s = FakeStore()
    c = _conn(s)
    keys = c.keys_for(toks(4 * 5))
    c.store_computed_prefix(toks(4 * 5))
    s.read_codes[keys[2]] = -704
    res, rest = c.reload_and_rest(toks(4 * 5), probe_all=True)
    assert res.pages_hit == 2 and res.stop_state == PageState.EVICTED and res.rest_probe == []
    assert rest == keys[2:]


def test_read_failure_truncates_the_run():
    s = FakeStore()
    c = _conn(s)
    keys = c.keys_for(toks(4 * 5))
    c.store_computed_prefix(toks(4 * 5))
    s.read_codes[keys[2]] = -800
    res, _ = c.load_cached_prefix(toks(4 * 5))
    assert res.pages_hit == 2 and res.stop_state == PageState.FAILED and res.codes == {-800: 1}
    s.read_codes[keys[2]] = -704  # probe said present, read said gone
    res, _ = c.load_cached_prefix(toks(4 * 5))
    assert res.stop_state == PageState.EVICTED
    s.read_codes[keys[2]] = -707  # lease expired: a retryable miss, not a hit
    res, _ = c.load_cached_prefix(toks(4 * 5))
    assert res.pages_hit == 2 and res.codes == {-707: 1}


def test_object_of_another_size_is_a_visible_miss():
    s = FakeStore()
    c = _conn(s)
    keys = c.keys_for(toks(8))
    s.objects[keys[0]] = b"x" * 32  # smaller object under the same key
    s.objects[keys[1]] = b"y" * 128
    res, _ = c.load_cached_prefix(toks(8))
    assert res.pages_hit == 0 and res.stop_state == PageState.MISMATCH and res.mismatches == 1


def test_corrupted_bytes_are_a_mismatch_not_a_hit():
    s = FakeStore()
    c = _conn(s)
    c.store_computed_prefix(toks(8))
    k1 = c.keys_for(toks(8))[1]
    s.objects[k1] = bytes(LAYOUT.page_bytes)
    res, _ = c.load_cached_prefix(toks(8))
    assert res.pages_hit == 1 and res.verified == 1 and res.mismatches == 1


def test_duplicate_key_in_batch_and_peer_stored_page_count_as_present():
    s = FakeStore()
    c = _conn(s)
    keys = c.keys_for(toks(12))
    s.objects[keys[1]] = b"p" * LAYOUT.page_bytes  # a peer stored page 1
    pub = c.store_computed_prefix(None, keys=[keys[0], keys[0], keys[1], keys[2]])
    assert pub.stored == 2 and pub.already_present == 2 and pub.failed == 0
    assert pub.states == [PageState.PUBLISHED, PageState.PRESENT, PageState.PRESENT, PageState.PUBLISHED]


def test_a_page_a_peer_stores_between_probe_and_put_is_present_not_published():
    s = FakeStore()
    c = _conn(s)
    keys = c.keys_for(toks(4 * 3))
    peer = bytes(c.buffer(1)[0])  # whatever the peer wrote stays: put-if-absent
    s.objects[keys[1]] = peer  # after decode's probe said absent
    pub = c.store_computed_prefix(None, keys=keys, known=[0, 0, 0])
    assert pub.states == [PageState.PUBLISHED, PageState.PRESENT, PageState.PUBLISHED]
    assert pub.stored == 2 and pub.already_present == 1 and pub.found_at_put == 1 and not pub.codes
    assert pub.bytes_written == 2 * LAYOUT.page_bytes  # the peer's page is not this writer's bytes
    assert s.objects[keys[1]] == peer


def test_failed_puts_are_counted_and_never_retried():
    s = FakeStore()
    c = _conn(s)
    keys = c.keys_for(toks(12))
    s.put_codes[keys[1]] = -200
    pub = c.store_computed_prefix(toks(12))
    assert pub.failed == 1 and pub.codes == {-200: 1} and s.puts == 3


def test_probe_errors_are_never_taken_as_present():
    c = _conn(MasterDown())
    res, _ = c.load_cached_prefix(toks(8))
    assert res.pages_hit == 0 and res.codes == {-900: 1}
    pub = c.store_computed_prefix(toks(8))
    assert pub.stored == 0 and pub.failed == 2 and pub.codes == {-900: 2}


def test_decode_role_may_not_publish():
    with pytest.raises(RoleError):
        _conn(FakeStore(), role="decode").store_computed_prefix(toks(8))
    with pytest.raises(ValueError):
        _conn(FakeStore(), role="nope")


def test_bounded_batches_and_streams():
    s = FakeStore()
    calls = []
    orig = s.batch_get_into
    s.batch_get_into = lambda k, p, n: (calls.append(len(k)), orig(k, p, n))[1]
    c = _conn(s, max_batch_bytes=3 * LAYOUT.page_bytes)
    c.store_computed_prefix(toks(4 * 10))
    res, _ = c.load_cached_prefix(toks(4 * 10))
    assert res.pages_hit == 10 and max(calls) <= 3 and sum(calls) == 10


def test_closed_client_refuses_calls_without_touching_native_object():
    client = StoreClient(ClientConfig(master="127.0.0.1:1", metadata_url="http://127.0.0.1:1/metadata"))

    class Native:
        def __getattr__(self, name):
            raise AssertionError(f"native {name} called after close")

        def close(self):
            Native.closed_calls = getattr(Native, "closed_calls", 0) + 1

    client._store = Native()
    client.close()
    client.close()
    assert Native.closed_calls == 1
    assert client.batch_is_exist(["a", "b"]) == [CLIENT_CLOSED] * 2
    assert client.batch_get_into(["a"], [0], [1]) == [CLIENT_CLOSED]
    assert client.remove("a") == CLIENT_CLOSED and client.health() == 1


def _request(tokens):
    from workload import Request

    return Request(req_id=0, tokens=tokens, arrival_s=None, cacheable_tokens=len(tokens), scenario="t")


@pytest.mark.parametrize("fault", ["smaller", "larger", "bytes"])
def test_a_mismatch_stop_code_reaches_the_request_codes_once(fault):
    from kvtui.engine.engine import result_from

    s = FakeStore()
    c = _conn(s)
    prompt = toks(4 * 3)
    c.store_computed_prefix(prompt)
    k1 = c.keys_for(prompt)[1]
    s.objects[k1] = {"smaller": b"x" * 32, "larger": b"y" * 128, "bytes": bytes(LAYOUT.page_bytes)}[fault]
    res, _ = c.load_cached_prefix(prompt)
    expected = {"smaller": {SIZE_MISMATCH: 1}, "larger": {SIZE_MISMATCH: 1, INVALID_PARAMS: 1},
                "bytes": {CONTENT_MISMATCH: 1}}[fault]
    assert res.pages_hit == 1 and res.stop_code in expected
    r = result_from(_request(prompt), res, None, LAYOUT, 0.0, 0.0)
    assert r.codes == expected  # what the errors panel counts


class SessionMaster:
    """The master's side of put sessions: objects, and keys reserved by an unfinished put start."""

    def __init__(self):
        self.objects: dict[str, bytes] = {}
        self.reserved: set[str] = set()


class SessionNative:
    """A ``MooncakeDistributedStore`` double with the put-session calls and the codes measured on the real
    wheel: start answers -705 for a stored or reserved key and -600 while this client still holds a session
    on it; ranged put, end and revoke answer -600 without a session. ``*_codes`` inject failures per key."""

    def __init__(self, master: SessionMaster):
        self.m = master
        self.local: dict[str, bytearray] = {}
        self.calls: list[str] = []
        self.write_codes: dict[str, int] = {}
        self.end_codes: dict[str, int] = {}
        self.revoke_codes: dict[str, int] = {}

    def batch_put_session_start(self, keys, sizes):
        self.calls.append("start")
        out = []
        for k, n in zip(keys, sizes):
            if k in self.local:
                out.append(INVALID_PARAMS)
            elif k in self.m.objects or k in self.m.reserved:
                out.append(OBJECT_ALREADY_EXISTS)
            else:
                self.m.reserved.add(k)
                self.local[k] = bytearray(n)
                out.append(0)
        return out

    def batch_put_from_multi_buffer_ranges(self, keys, ptrs, sizes, offsets):
        self.calls.append("write")
        out = []
        for k, (p,), (n,), (o,) in zip(keys, ptrs, sizes, offsets):
            if k not in self.local:
                out.append(INVALID_PARAMS)
            elif k in self.write_codes:
                out.append(self.write_codes[k])
            else:
                self.local[k][o:o + n] = ctypes.string_at(p, n)
                out.append(n)
        return out

    def batch_put_session_end(self, keys):
        self.calls.append("end")
        out = []
        for k in keys:
            if k in self.end_codes:
                out.append(self.end_codes[k])  # the session stays (measured after a master restart: -704)
            elif k not in self.local:
                out.append(INVALID_PARAMS)
            else:
                self.m.objects[k] = bytes(self.local.pop(k))
                self.m.reserved.discard(k)
                out.append(0)
        return out

    def batch_put_session_revoke(self, keys):
        self.calls.append("revoke")
        out = []
        for k in keys:
            if k in self.revoke_codes:
                out.append(self.revoke_codes.pop(k))  # fails once (master down), then works
            elif k not in self.local:
                out.append(INVALID_PARAMS)
            else:
                del self.local[k]
                self.m.reserved.discard(k)
                out.append(0)
        return out

    def batch_put_from(self, keys, ptrs, sizes):
        raise AssertionError("batch_put_from cannot tell who wrote; not used when put sessions exist")


def _client(native) -> StoreClient:
    client = StoreClient(ClientConfig(master="127.0.0.1:1", metadata_url="http://127.0.0.1:1/metadata"))
    client._store = native
    return client


def _pages(n, fill=1):
    buf = np.full((n, 64), fill, dtype=np.uint8)
    return buf, [buf.ctypes.data + i * 64 for i in range(n)], [64] * n


def test_put_if_absent_tells_the_writer_from_the_peer():
    master = SessionMaster()
    a, b = _client(SessionNative(master)), _client(SessionNative(master))
    buf, ptrs, sizes = _pages(3)
    assert a.reports_existing
    assert a.batch_put_if_absent(["k0", "k1"], ptrs[:2], sizes[:2]) == [0, 0]
    assert b.batch_put_if_absent(["k1", "k2"], ptrs[1:], sizes[1:]) == [OBJECT_ALREADY_EXISTS, 0]
    assert master.objects == {k: bytes(64 * [1]) for k in ("k0", "k1", "k2")} and not master.reserved
    # a key another writer has reserved (its put not ended yet) is -705 too, and nothing is written
    master.reserved.add("k3")
    assert a.batch_put_if_absent(["k3"], ptrs[:1], sizes[:1]) == [OBJECT_ALREADY_EXISTS]
    assert "k3" not in master.objects
    # a key repeated within one call: its first copy is put, the others are -705
    assert a.batch_put_if_absent(["k4", "k4"], ptrs[:2], sizes[:2]) == [0, OBJECT_ALREADY_EXISTS]


def test_put_if_absent_revokes_what_it_could_not_finish():
    master = SessionMaster()
    native = SessionNative(master)
    c = _client(native)
    buf, ptrs, sizes = _pages(3)
    native.write_codes["w"] = -800
    native.end_codes["e"] = -704
    native.write_codes["s"] = 32  # a short write is never ended
    assert c.batch_put_if_absent(["w", "e", "s"], ptrs, sizes) == [-800, -704, SIZE_MISMATCH]
    assert native.calls == ["start", "write", "end", "revoke"]
    assert master.objects == {} and not master.reserved and native.local == {}
    # the keys are free again: a later put stores them
    native.write_codes.clear()
    native.end_codes.clear()
    assert c.batch_put_if_absent(["w", "e", "s"], ptrs, sizes) == [0, 0, 0]


def test_a_failed_revoke_is_retried_before_the_key_is_put_again():
    master = SessionMaster()
    native = SessionNative(master)
    c = _client(native)
    buf, ptrs, sizes = _pages(1)
    native.write_codes["k"] = -900
    native.revoke_codes["k"] = -900  # master down: the local session stays
    assert c.batch_put_if_absent(["k"], ptrs, sizes) == [-900]
    assert "k" in native.local
    del native.write_codes["k"]
    native.calls.clear()
    assert c.batch_put_if_absent(["k"], ptrs, sizes) == [0]  # not INVALID_PARAMS from the leftover session
    assert native.calls == ["revoke", "start", "write", "end"]


def test_a_key_another_thread_of_this_client_is_storing_is_already_present():
    import threading

    master = SessionMaster()
    native = SessionNative(master)
    c = _client(native)
    buf, ptrs, sizes = _pages(1)
    inside, release = threading.Event(), threading.Event()
    write = native.batch_put_from_multi_buffer_ranges

    def slow_write(*args):
        inside.set()
        release.wait(5)
        return write(*args)

    native.batch_put_from_multi_buffer_ranges = slow_write
    first = []
    t = threading.Thread(target=lambda: first.append(c.batch_put_if_absent(["k"], ptrs, sizes)))
    t.start()
    assert inside.wait(5)
    # the same client may not open a second session on the key (the real client answers -600)
    assert c.batch_put_if_absent(["k"], ptrs, sizes) == [OBJECT_ALREADY_EXISTS]
    release.set()
    t.join(5)
    assert first == [[0]] and native.calls.count("start") == 1


def test_put_if_absent_without_put_sessions_falls_back_and_says_so():
    class OldWheel:
        def batch_put_from(self, keys, ptrs, sizes):
            return [0] * len(keys)

    c = _client(OldWheel())
    assert not c.reports_existing
    assert c.batch_put_if_absent(["a", "b"], [1, 2], [8, 8]) == [0, 0]
    assert c.batch_put_if_absent(["a"], [1, 2], [8]) == [INVALID_PARAMS]


class TieredStore(FakeStore):
    """A store with a disk tier: ``disk`` keys are held only on disk (``replica_tiers`` says DISK); the reads of
    each call are recorded, to check that memory and disk pages are read apart, disk ones in bounded batches."""

    def __init__(self, disk_read_bytes: int = 0):
        super().__init__()
        self.disk: set[str] = set()
        self.hot: set[str] = set()  # keys held in two memory replicas
        self.calls: list[list[str]] = []
        self.config = ClientConfig(master="x:1", metadata_url="http://x:1", tiers=True,
                                   disk_read_bytes=disk_read_bytes)

    def replica_tiers(self, keys):
        from kvtui.mooncake.client import DISK, MEMORY

        return [(DISK, 0) if k in self.disk else (MEMORY, 2 if k in self.hot else 1) if k in self.objects else (0, 0)
                for k in keys]

    def batch_get_into(self, keys, ptrs, sizes):
        self.calls.append(list(keys))
        return super().batch_get_into(keys, ptrs, sizes)


def test_a_reload_says_which_pages_came_from_the_disk_tier():
    """Pages only the disk tier holds are read after the memory ones, in batches within an owner's staging
    buffer, into their own rows (the run verifies whole); the result marks them HIT_DISK and times them."""
    from kvtui.engine.results import result_from
    from workload import Request

    s = TieredStore(disk_read_bytes=2 * LAYOUT.page_bytes)
    c = _conn(s)
    keys = c.keys_for(toks(4 * 8))
    c.store_computed_prefix(toks(4 * 8))
    s.disk = {keys[1], keys[4], keys[5], keys[6]}
    s.hot = {keys[0], keys[7]}
    res, pages = c.load_cached_prefix(toks(4 * 8))
    assert res.pages_hit == 8 and res.verified == 8 and res.mismatches == 0
    assert res.disk_pages == [1, 4, 5, 6] and res.read_ms_disk >= 0
    memory, *disk = s.calls
    assert memory == [keys[i] for i in (0, 2, 3, 7)] and disk == [[keys[1], keys[4]], [keys[5], keys[6]]]
    req = Request(req_id=1, tokens=toks(4 * 8), arrival_s=None, cacheable_tokens=4 * 8, scenario="t")
    r = result_from(req, res, None, LAYOUT, 0.0, 1.0)
    assert r.pages_hit == 8 and r.pages_hit_disk == 4 and r.pages_replicated == 2
    assert [i for i, st in enumerate(r.states) if st == PageState.HIT_DISK] == [1, 4, 5, 6]


def test_a_disk_page_that_does_not_read_ends_the_run_and_is_no_disk_hit():
    s = TieredStore()
    c = _conn(s)
    keys = c.keys_for(toks(4 * 6))
    c.store_computed_prefix(toks(4 * 6))
    s.disk = {keys[2], keys[4]}
    s.read_codes[keys[4]] = -800  # (TRANSFER_FAIL: the owner's disk read failed)
    res, _ = c.load_cached_prefix(toks(4 * 6))
    assert res.pages_hit == 4 and res.disk_pages == [2] and res.stop_state == PageState.FAILED
