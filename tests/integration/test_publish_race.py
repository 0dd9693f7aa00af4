"""Two processes with their own store clients publish the same pages at the same moment, on a real master.

Each page must be counted **published** by exactly one writer and **already present** by the other:
``published + already_present == pages attempted`` for each writer, the sum of ``published`` over both
writers equals the distinct pages stored, and ``bytes_written`` counts only the pages a writer stored.
"""

from __future__ import annotations

import multiprocessing as mp
import uuid

import numpy as np
import pytest

from kvtui.core.layout import PageLayout

pytestmark = pytest.mark.integration
LAYOUT = PageLayout(1, 2, 16, 8, 2)  # 512-byte pages, 8 tokens/page
PAGES = 8  # pages per prompt
ITERATIONS = 200  # fresh prompts (fresh keys), one barrier-synchronised publish each
WRITERS = 2


def prompt(i: int) -> np.ndarray:
    """The tokens of iteration ``i``: ``PAGES`` full pages, distinct from every other iteration's."""
    return np.arange(PAGES * LAYOUT.page_tokens, dtype=np.uint32) + np.uint32(i * 100_000)


def writer(endpoints: dict, model: str, barrier, out, log_path: str) -> None:
    """One publishing process: its own store client, ``ITERATIONS`` publishes, each right after ``barrier``.

    Even iterations hand the connector "absent" probe answers (as decode does after its own probe), so both
    writers reach the put for every page and only the put can tell them apart; odd iterations probe live.
    Puts one tuple per iteration on ``out``: ``(stored, already_present, failed, found_at_put, bytes_written,
    codes)``, or ``("error", text)``.
    """
    try:
        from kvtui.engine.connector import PagedKVConnector
        from kvtui.engine.keys import PageKeyer
        from kvtui.mooncake.client import open_client, redirect_native_stderr

        redirect_native_stderr(log_path)
        client = open_client(endpoints)
        conn = PagedKVConnector(client, LAYOUT, PageKeyer(model, LAYOUT.page_tokens), "prefill")
        rows = []
        try:
            for i in range(ITERATIONS):
                known = [0] * PAGES if i % 2 == 0 else []
                barrier.wait(timeout=60)
                r = conn.store_computed_prefix(prompt(i), known=known)
                rows.append((r.stored, r.already_present, r.failed, r.found_at_put, r.bytes_written, dict(r.codes)))
        finally:
            conn.close()
            client.close()
        out.put(rows)
    except BaseException as exc:  # report, never hang the sibling at the barrier
        barrier.abort()
        out.put(("error", f"{type(exc).__name__}: {exc}"))


def test_each_page_is_published_by_exactly_one_of_two_racing_processes(cluster, tmp_path):
    from kvtui.engine.connector import PagedKVConnector
    from kvtui.engine.keys import PageKeyer
    from kvtui.mooncake.client import open_client

    model = f"race-{uuid.uuid4().hex[:8]}"
    ctx = mp.get_context("spawn")
    barrier, out = ctx.Barrier(WRITERS), ctx.Queue()
    procs = [ctx.Process(target=writer, args=(cluster.endpoints.as_dict(), model, barrier, out,
                                              str(tmp_path / f"writer{w}.log")), daemon=True)
             for w in range(WRITERS)]
    for p in procs:
        p.start()
    try:
        results = [out.get(timeout=90) for _ in procs]
    finally:
        for p in procs:
            p.join(timeout=30)
            if p.is_alive():
                p.kill()
    errors = [r[1] for r in results if isinstance(r, tuple)]
    assert not errors, errors

    attempted = ITERATIONS * PAGES
    pb = LAYOUT.page_bytes
    for rows in results:
        stored, present, failed, at_put, written = (sum(row[k] for row in rows) for k in range(5))
        assert failed == 0 and all(not row[5] for row in rows), [row[5] for row in rows if row[5]]
        assert stored + present == attempted  # every page attempted is published or already present
        assert written == stored * pb  # bytes of the pages this writer stored, never a peer's
        assert at_put <= present
    for i in range(ITERATIONS):  # each page of each prompt: published once, present once
        assert sum(rows[i][0] for rows in results) == PAGES, i
        assert sum(rows[i][1] for rows in results) == PAGES, i
    # even iterations: nobody probed, so every page's loser learned it from its put
    assert sum(rows[i][3] for rows in results for i in range(0, ITERATIONS, 2)) == (ITERATIONS // 2) * PAGES

    # the distinct pages stored: every page of every prompt is there, with the bytes its key says
    client = open_client(cluster.endpoints.as_dict())
    reader = PagedKVConnector(client, LAYOUT, PageKeyer(model, LAYOUT.page_tokens), "decode")
    try:
        stored_pages = 0
        for i in range(ITERATIONS):
            res, _ = reader.load_cached_prefix(prompt(i))
            assert res.verified == res.pages_hit and res.mismatches == 0, i
            stored_pages += res.pages_hit
    finally:
        reader.close()
        client.close()
    assert stored_pages == attempted
    assert sum(row[0] for rows in results for row in rows) == stored_pages

