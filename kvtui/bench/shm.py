"""The same-host shared-memory path, measured beside the engine's TCP path (a step of ``kvtui bench``).

Mooncake's standalone deployments run one "real client" per host (the wheel's ``mooncake_client``, owning
the segment) and let each inference process be a "dummy client" of it
(``MooncakeDistributedStore.setup_dummy(mem_pool_size, local_buffer_size, "HOST:PORT")``) whose buffers
(``alloc_from_mem_pool`` then ``register_buffer``) are shared memory with the real client, so a get is a
copy between mappings instead of a TCP transfer. This step starts a real client beside a fresh embedded
master, publishes ``pages`` pages of kvtui's page contents (:class:`~kvtui.engine.contents.PageContent`)
from one process with ``batch_put_from``, and reloads them ``iterations`` times from another process with
``batch_get_into``, verifying every byte of every reload.

The engine does not use this path yet: in a dummy client the put-session calls that make kvtui's publish
accounting exact (``batch_put_session_start`` …) answer ``INVALID_PARAMS`` (-600) with the wheel measured
in the README, so a publish there could not tell "stored by this call" from "already there".
"""

from __future__ import annotations

import ctypes
import multiprocessing as mp
import time

import numpy as np

from kvtui.core.units import median


def _dummy(address: str, nbytes: int, env: dict, log_path: str):
    """A dummy client of the real client at ``address`` and a registered shared buffer of ``nbytes``; the
    native library's messages go to ``log_path``."""
    import os

    from kvtui.engine.store import redirect_native_stderr

    redirect_native_stderr(log_path)
    os.environ.update(env)
    from mooncake.store import MooncakeDistributedStore

    store = MooncakeDistributedStore()
    rc = store.setup_dummy(nbytes + (64 << 20), nbytes + (16 << 20), address)
    if rc != 0:
        raise RuntimeError(f"setup_dummy() failed with code {rc}")
    ptr = int(store.alloc_from_mem_pool(nbytes))
    if not ptr or store.register_buffer(ptr, nbytes) != 0:
        raise RuntimeError("could not allocate and register a shared buffer")
    return store, ptr, np.frombuffer((ctypes.c_uint8 * nbytes).from_address(ptr), dtype=np.uint8)


def _publisher(conn, address: str, page_bytes: int, keys: list[str], env: dict, log_path: str) -> None:
    from kvtui.engine.contents import PageContent

    try:
        n = len(keys)
        store, ptr, buf = _dummy(address, n * page_bytes, env, log_path)
        pages = buf.reshape(n, page_bytes)
        PageContent(page_bytes).fill_many(keys, pages)
        t0 = time.perf_counter()
        rcs = [int(r) for r in store.batch_put_from(keys, [ptr + i * page_bytes for i in range(n)], [page_bytes] * n)]
        put_ms = (time.perf_counter() - t0) * 1e3
        sessions = [int(r) for r in store.batch_put_session_start([keys[0] + "/session"], [page_bytes])]
        conn.send({"put_rcs": rcs, "put_ms": put_ms, "put_session_start": sessions[0] if sessions else None})
    except Exception as exc:  # reported to the parent as one line
        conn.send({"error": f"{type(exc).__name__}: {exc}"})


def _reloader(conn, address: str, page_bytes: int, keys: list[str], iterations: int, env: dict,
              log_path: str) -> None:
    from kvtui.engine.contents import PageContent

    try:
        n = len(keys)
        store, ptr, buf = _dummy(address, n * page_bytes, env, log_path)
        pages = buf.reshape(n, page_bytes)
        pages[:, ::4096] = 0  # first touch, untimed
        content = PageContent(page_bytes)
        ptrs, sizes = [ptr + i * page_bytes for i in range(n)], [page_bytes] * n
        read_ms, verify_ms, ok = [], [], True
        for _ in range(iterations):
            t0 = time.perf_counter()
            rcs = store.batch_get_into(keys, ptrs, sizes)
            t1 = time.perf_counter()
            good = content.leading_matches(keys, pages) == n
            t2 = time.perf_counter()
            ok = ok and good and all(int(r) == page_bytes for r in rcs)
            read_ms.append((t1 - t0) * 1e3)
            verify_ms.append((t2 - t1) * 1e3)
        conn.send({"read_ms": read_ms, "verify_ms": verify_ms, "verified": ok})
    except Exception as exc:
        conn.send({"error": f"{type(exc).__name__}: {exc}"})


def _run(target, args: tuple, timeout_s: float = 120.0) -> dict:
    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=target, args=(child, *args), daemon=True)
    proc.start()
    try:
        if not parent.poll(timeout_s):
            raise RuntimeError(f"{target.__name__.strip('_')} gave no answer within {timeout_s:.0f} s")
        out = parent.recv()
    finally:
        proc.join(5)
        if proc.is_alive():
            proc.kill()
            proc.join()
    if "error" in out:
        raise RuntimeError(out["error"])
    return out


def measure_shm(page_bytes: int, pages: int, iterations: int) -> dict:
    """Publish ``pages`` pages of ``page_bytes`` bytes through a dummy client and reload them ``iterations``
    times from another one (see the module docstring). Returns ``reload_ms`` (p50 of ``batch_get_into``,
    ms), ``reload_MBps_p50`` (10^6 B/s), ``verify_ms_p50``, ``publish_MBps``, ``verified``,
    ``put_session_start`` (the code a dummy client's put session answered) and ``bytes``; ``RuntimeError``
    or :class:`~kvtui.engine.cluster.ClusterError` (one line) if the path cannot be set up here."""
    from kvtui.engine.cluster import ClusterOptions, EmbeddedCluster

    nbytes = pages * page_bytes
    cluster = EmbeddedCluster(ClusterOptions(store_bytes=2 * nbytes, segment_on="prefill"))  # no store node
    cluster.start()
    try:
        address = cluster.start_real_client(2 * nbytes + (64 << 20))
        env = dict(cluster.endpoints.client_env)
        keys = [f"kvtui-bench/shm/{time.monotonic_ns()}/{i}" for i in range(pages)]
        logs = cluster.endpoints.log_dir
        pub = _run(_publisher, (address, page_bytes, keys, env, f"{logs}/dummy-publisher.log"))
        if any(r != 0 for r in pub["put_rcs"]):
            raise RuntimeError(f"a dummy client's batch_put_from answered {pub['put_rcs']}")
        got = _run(_reloader, (address, page_bytes, keys, iterations, env, f"{logs}/dummy-reloader.log"))
    finally:
        cluster.stop()
    read = median(got["read_ms"])
    return {"bytes": nbytes, "reload_ms_p50": read, "reload_MBps_p50": nbytes / (read / 1e3) / 1e6,
            "verify_ms_p50": median(got["verify_ms"]), "verified": got["verified"],
            "publish_MBps": nbytes / (pub["put_ms"] / 1e3) / 1e6 if pub["put_ms"] > 0 else 0.0,
            "put_session_start": pub["put_session_start"]}
