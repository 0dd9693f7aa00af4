"""Workers as dummy clients of the wheel's standalone real client (``--worker-client dummy``, the default of an
embedded store on one host): pages move through shared memory, the outcomes equal the TCP path's request by
request, a publish still says who wrote each page, and a store restart gives new workers that serve again."""

from __future__ import annotations

import os
import signal
import time
import uuid

import pytest

from kvtui.core.codes import INVALID_PARAMS, OBJECT_ALREADY_EXISTS
from kvtui.core.layout import PageLayout
from kvtui.engine.driver import Driver
from kvtui.engine.engine import EngineOptions, Lost
from kvtui.launch import start_stack
from kvtui.mooncake.client import open_client
from kvtui.mooncake.cluster import ClusterOptions, EmbeddedCluster
from workload import SyntheticWorkload, WorkloadSpec

pytestmark = pytest.mark.integration
TINY = PageLayout(4, 2, 16, 8, 2)


def _workload(seed=0):
    return SyntheticWorkload(WorkloadSpec(scenario="shared-system-prompt", pool=4, prompt_tokens=64,
                                          page_tokens=8, seed=seed))


@pytest.fixture
def dummy_cluster(tmp_path):
    c = EmbeddedCluster(ClusterOptions(store_bytes=64 << 20, worker_client="dummy",
                                       log_dir=str(tmp_path / "cluster-logs")))
    c.start()
    yield c
    c.stop()


def test_the_store_node_is_mooncake_client_and_the_endpoints_name_it(dummy_cluster):
    store = dummy_cluster.process("store")
    assert store is not None and store.alive()
    assert os.path.basename(store.popen.args[0]) == "mooncake_client"
    assert dummy_cluster.endpoints.real_client.startswith("127.0.0.1:")
    assert dummy_cluster.endpoints.as_dict()["real_client"] == dummy_cluster.endpoints.real_client
    assert dummy_cluster.capacity_bytes() >= 64 << 20


def test_dummy_workers_replay_exactly_as_real_ones(tmp_path):
    """The same 40 requests through real clients over TCP and through dummy clients: equal hits,
    publishes and already-present pages, request by request, every loaded page verified."""
    outcomes = {}
    model = f"dummy-{uuid.uuid4().hex[:6]}"
    for client in ("real", "dummy"):
        opts = EngineOptions(layout=TINY, model=model, store_bytes=64 << 20)
        results = []
        with start_stack(opts, ClusterOptions(worker_client=client, log_dir=str(tmp_path / client))) as stack:
            e = stack.engine
            assert bool(e.endpoints.real_client) == (client == "dummy")
            Driver(e, _workload(seed=3), results.append, concurrency=1, max_requests=40).run()
        assert all(r.mismatches == 0 and r.verified == r.pages_hit for r in results)
        outcomes[client] = [(r.req_id, r.pages_hit, r.pages_published, r.pages_already_present) for r in results]
    assert outcomes["dummy"] == outcomes["real"]
    assert sum(o[1] for o in outcomes["dummy"]) > 0  # (prefix hits happened)


def test_a_dummy_clients_publish_says_who_wrote_each_page(dummy_cluster):
    """Its put sessions answer INVALID_PARAMS, so ``batch_put_if_absent`` keeps the keys this client is storing
    for the call storing them: a key repeated in a batch, or held by another thread's call, answers -705;
    and it does not pretend to report a peer's pages (``reports_existing``). Buffers come from the real
    client's pool: memory of the process's own is refused."""
    client = open_client(dummy_cluster.endpoints.as_dict(), dummy=True)
    try:
        assert not client.reports_existing
        n = 64 << 10
        buf = client.new_buffer(4 * n)
        buf[:] = 7
        own = bytearray(n)  # memory of its own, not the real client's pool: refused
        import ctypes

        addr = ctypes.addressof((ctypes.c_char * n).from_buffer(own))
        assert client.batch_put_from(["dummy/own"], [addr], [n]) == [INVALID_PARAMS]
        prefix = f"dummy/{uuid.uuid4().hex[:6]}"
        assert client.batch_put_if_absent([f"{prefix}/a", f"{prefix}/a"], [buf.ctypes.data] * 2, [n, n]) == \
            [0, OBJECT_ALREADY_EXISTS]
        assert client.batch_is_exist([f"{prefix}/a", f"{prefix}/b"]) == [1, 0]
        client._reserving.add(f"{prefix}/b")  # as while another thread of this client is storing it
        assert client.batch_put_if_absent([f"{prefix}/b"], [buf.ctypes.data], [n]) == [OBJECT_ALREADY_EXISTS]
        client._reserving.discard(f"{prefix}/b")
        assert client.batch_put_if_absent([f"{prefix}/b"], [buf.ctypes.data], [n]) == [0]
        out = client.new_buffer(n)
        assert client.batch_get_into([f"{prefix}/a"], [out.ctypes.data], [n]) == [n] and int(out.min()) == 7
    finally:
        client.close()


def test_a_store_restart_gives_new_dummy_workers_that_serve_again(tmp_path):
    """A dummy client never comes back to a new real client (its calls answer RPC_FAIL): after the store
    node is killed and started again, the engine rebuilds its workers; requests then flow, verified."""
    opts = EngineOptions(layout=TINY, model=f"restart-{uuid.uuid4().hex[:6]}", store_bytes=64 << 20,
                         replace_dead_workers=True)
    copts = ClusterOptions(worker_client="dummy", client_ttl_s=3, log_dir=str(tmp_path / "logs"))
    with start_stack(opts, copts) as stack:
        e, cluster = stack.engine, stack.cluster
        assert e.process(next(iter(_workload()))).mismatches == 0
        before = e.worker_pids()
        cluster.signal("store", signal.SIGKILL)
        assert cluster.restart_store()  # (dummy clients must be started again)
        e.restart_workers()
        assert cluster.process("store").alive()
        done, deadline = [], time.monotonic() + 60
        e.begin_run(1)
        for _, req in zip(range(6), _workload(seed=5)):
            e.submit(req)
        while len(done) < 6 and time.monotonic() < deadline:
            r = e.next_result(timeout_s=1.0)
            if r is not None:
                done.append(r)
        assert len(done) == 6  # each accounted for: lost with the killed workers, or served by the new ones
        assert all(isinstance(r, Lost) or r.mismatches == 0 for r in done)
        after = e.worker_pids()
        assert e.replacements and all(after[w] != before[w] for w in ("prefill", "decode"))
        # the new workers' store calls succeed, verified, once the master has dropped the dead segment (its
        # pages and puts into it answer TRANSFER_FAIL until client_ttl, 3 s here, passes)
        for req in _workload(seed=9):
            r = e.process(req)
            assert r.mismatches == 0
            if not r.codes or time.monotonic() > deadline:
                break
        assert r.codes == {} and r.pages_published + r.pages_hit + r.pages_already_present == r.pages_total
