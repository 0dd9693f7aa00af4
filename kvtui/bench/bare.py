"""The bench's baseline for trace replay: a bare loop issuing the same store calls as the engine, in one
process, without kvtui's engine (no worker processes, no pipes, no page verification, zero-filled pages).

Per request: page keys (the same hash chain), ``batch_is_exist`` of the pages, ``batch_get_into`` of the
leading present run, ``batch_put_from`` of the absent pages after it. Both sides of the bench build the
trace's requests (token ids) before their clock starts. Used only by ``kvtui bench --trace``, which also
counts the CPU seconds the loop's process spent in the timed loop (``time.process_time``).
"""

from __future__ import annotations

import multiprocessing as mp
import signal
import time

from kvtui.engine.procs import start_shielded


def _bare_main(conn, endpoints: dict, layout: dict, model: str, trace: str, block_tokens: int) -> None:
    from kvtui.core.layout import PageLayout
    from kvtui.engine.keys import PageKeyer
    from kvtui.engine.procs import parent_death_signal
    from kvtui.engine.store import open_client
    from workload import TraceWorkload, read_trace

    parent_death_signal()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C reaches the whole process group: the parent stops
    signal.signal(signal.SIGHUP, signal.SIG_IGN)  # us (bare_replay's terminate) and reports it in one line
    if endpoints.get("log_dir"):
        from kvtui.engine.store import redirect_native_stderr

        redirect_native_stderr(f"{endpoints['log_dir']}/bare-loop.log")
    lay = PageLayout(**layout)
    rows, _ = read_trace(trace, block_tokens=block_tokens)
    requests = list(TraceWorkload(rows, block_tokens=block_tokens, speed=None))
    client = open_client(endpoints, dummy=True)  # as the engine's workers: dummy clients where it has a real client
    keyer = PageKeyer(model, lay.page_tokens)
    pb = lay.page_bytes
    buf = client.new_buffer(pb * 512)
    hits = 0
    try:
        t0, cpu0 = time.perf_counter(), time.process_time()
        for req in requests:
            keys = keyer.keys(req.tokens[: req.cacheable_tokens])
            if len(keys) * pb > buf.size:
                buf = client.new_buffer(len(keys) * pb)
            present = client.batch_is_exist(keys)
            run = next((i for i, p in enumerate(present) if p != 1), len(keys))
            if run:
                rcs = client.batch_get_into(keys[:run], [buf.ctypes.data + i * pb for i in range(run)], [pb] * run)
                run = next((i for i, r in enumerate(rcs) if r != pb), run)
            hits += run
            absent = [i for i in range(run, len(keys)) if present[i] != 1]
            if absent:
                client.batch_put_from([keys[i] for i in absent], [buf.ctypes.data + i * pb for i in absent], [pb] * len(absent))
        conn.send((len(requests), time.perf_counter() - t0, hits, time.process_time() - cpu0))
    finally:
        client.close()


def bare_replay(endpoints: dict, layout: dict, model: str, trace: str,
                block_tokens: int = 512) -> tuple[int, float, int, float]:
    """Replay ``trace`` with the bare loop in a fresh process: ``(requests, seconds, page hits, CPU seconds of
    the loop's process during the loop)``."""
    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=_bare_main, args=(child, endpoints, layout, model, trace, block_tokens), daemon=True)
    start_shielded(proc)  # a Ctrl-C while it starts (before _bare_main ignores it): no traceback from it
    child.close()
    try:
        return parent.recv()
    finally:
        proc.join(10)
        if proc.is_alive():
            proc.terminate()
