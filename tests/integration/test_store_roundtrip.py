"""Publish → reload → verify across the prefill and decode worker processes, on a real master."""

from __future__ import annotations

import os
import threading
import uuid

import numpy as np
import pytest

from kvtui.core.codes import SIZE_MISMATCH
from kvtui.core.layout import PageLayout
from kvtui.core.pages import PageState
from kvtui.engine.keys import PageKeyer
from kvtui.engine.options import EngineOptions
from kvtui.engine.protocol import Keys, Publish, Reload, SetReadStreams
from kvtui.engine.worker import WorkerSpec
from kvtui.engine.workers import WorkerError, WorkerHandle

pytestmark = pytest.mark.integration
LAYOUT = PageLayout(2, 2, 16, 16, 2)  # 4 KiB pages, 16 tokens/page


def _tokens(n, base=0):
    return (np.arange(n, dtype=np.uint32) + base)


def test_publish_then_reload_across_processes(attached_engine):
    model = f"m-{uuid.uuid4().hex[:8]}"
    e = attached_engine(LAYOUT, model=model)
    prompt = _tokens(8 * 16 + 5, 100)  # 8 full pages + a partial tail
    first = e.process(_req(0, prompt))
    assert first.pages_total == 8 and first.pages_hit == 0
    assert first.pages_published == 8 and first.pages_failed == 0
    assert first.states == bytes([PageState.PUBLISHED] * 8 + [PageState.PARTIAL])
    second_tokens = prompt.copy()
    second_tokens[6 * 16 + 3] += 7  # diverges inside page 6
    second = e.process(_req(1, second_tokens))
    assert second.pages_hit == 6 and second.tokens_hit == 96
    assert second.verified == 6 and second.mismatches == 0
    assert second.bytes_loaded == 6 * LAYOUT.page_bytes
    assert second.pages_published == 2  # pages 6 and 7 of the divergent request
    assert list(second.states[:6]) == [PageState.HIT] * 6


def test_decode_role_refuses_to_publish(cluster):
    spec = WorkerSpec("decode", EngineOptions(layout=LAYOUT, model="role-test"), cluster.endpoints.as_dict())
    h = WorkerHandle(spec)
    try:
        h.wait_ready()
        with pytest.raises(WorkerError, match="decode worker may not publish"):
            h.call(Publish(_tokens(32)))
        # the worker stays usable after refusing
        assert h.call(Reload(_tokens(32))).pages_hit == 0
    finally:
        h.stop()


def test_racing_publishers_do_not_clobber_or_fail(cluster):
    model = f"race-{uuid.uuid4().hex[:8]}"
    specs = [WorkerSpec("prefill", EngineOptions(layout=LAYOUT, model=model), cluster.endpoints.as_dict())
             for _ in range(2)]
    handles = [WorkerHandle(s) for s in specs]
    try:
        for h in handles:
            h.wait_ready()
        prompt = _tokens(64 * 16, 5000)
        results = [None, None]

        def go(i):
            results[i] = handles[i].call(Publish(prompt))

        threads = [threading.Thread(target=go, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for r in results:
            assert r.failed == 0 and not r.codes
            assert r.stored + r.already_present == 64
        reload = handles[0].call(Reload(prompt))
        assert reload.pages_hit == 64 and reload.verified == 64 and reload.mismatches == 0
    finally:
        for h in handles:
            h.stop()


def test_page_removed_from_middle_truncates_reload(attached_engine, cluster):
    from kvtui.mooncake.client import open_client

    model = f"hole-{uuid.uuid4().hex[:8]}"
    e = attached_engine(LAYOUT, model=model)
    prompt = _tokens(10 * 16, 900)
    e.process(_req(0, prompt))
    keys = PageKeyer(model, LAYOUT.page_tokens).keys(prompt)
    client = open_client(cluster.endpoints.as_dict())
    try:
        assert client.remove(keys[4], True) == 0
    finally:
        client.close()
    r = e.process(_req(1, prompt))
    assert r.pages_hit == 4 and r.verified == 4
    assert r.pages_published == 1  # only the missing page is recomputed and republished
    assert r.pages_already_present == 5


def test_object_of_another_layout_is_a_visible_miss(attached_engine):
    model = f"lay-{uuid.uuid4().hex[:8]}"
    small = PageLayout(1, 2, 16, 16, 2)  # same page tokens, half the bytes
    writer = attached_engine(small, model=model)
    prompt = _tokens(4 * 16, 77)
    writer.process(_req(0, prompt))
    reader = attached_engine(LAYOUT, model=model)
    r = reader.decode.call(Reload(prompt))
    assert r.pages_hit == 0 and r.mismatches == 1
    assert r.stop_state == PageState.MISMATCH and r.codes == {SIZE_MISMATCH: 1}  # shown in the errors panel


def _req(i, tokens):
    from workload import Request

    return Request(req_id=i, tokens=tokens, arrival_s=None, cacheable_tokens=len(tokens), scenario="test")


def test_real_client_used_after_close_does_not_crash(cluster):
    import json
    import subprocess
    import sys

    code = ("import json, sys\nfrom kvtui.mooncake.client import open_client\n"
            "c = open_client(json.loads(sys.argv[1]))\nc.close()\nc.close()\n"
            "print(c.batch_is_exist(['k']), c.batch_get_into(['k'], [0], [8]), c.health())\n")
    r = subprocess.run([sys.executable, "-c", code, json.dumps(cluster.endpoints.as_dict())],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr[-500:]  # a native call after close() would be exit 139
    assert r.stdout.strip() == "[-10003] [-10003] 1"


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="pinning needs at least 2 CPUs")
def test_workers_share_one_cpu_one_request_at_a_time(attached_engine):
    """At concurrency 1 both workers' calling threads run on the same single CPU (they take turns); at
    concurrency 2, or with several read streams, on every CPU again."""
    e = attached_engine(LAYOUT, model=f"pin-{uuid.uuid4().hex[:6]}")
    allowed = os.sched_getaffinity(0)

    def cpus() -> list[set[int]]:
        for h in (e.prefill, e.decode):  # Begin has no answer; a command answered after it shows it was taken
            h.call(Keys(_tokens(16)))
        return [os.sched_getaffinity(e.prefill.pid), os.sched_getaffinity(e.decode.pid)]

    assert cpus() == [{max(allowed)}] * 2
    for n in range(3):  # store calls first: threads the client makes on first use must not be pinned
        e.process(_req(n, _tokens(16 * 3, n)))
    for pid in (e.prefill.pid, e.decode.pid):
        pinned = [int(t) for t in os.listdir(f"/proc/{pid}/task")
                  if os.sched_getaffinity(int(t)) != allowed]
        assert pinned == [pid], "only the thread that calls the store is pinned"
    e.begin_run(2)
    assert cpus() == [allowed] * 2
    e.begin_run(1)
    assert cpus() == [{max(allowed)}] * 2
    e.decode.call(SetReadStreams(2))
    assert cpus() == [{max(allowed)}, allowed]
