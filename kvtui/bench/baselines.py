"""Same-machine, same-run baselines for ``kvtui bench``: one loopback TCP stream, an in-process memcpy, and how
much of the memory bus one copy takes."""

from __future__ import annotations

import multiprocessing as mp
import socket
import threading
import time
from typing import TypedDict

import numpy as np

from kvtui.core.units import median


class MemoryBus(TypedDict):
    """:func:`memory_bus`'s figures: ``one_MBps`` (p50 of one copy), ``two_MBps`` (p50 of two at once),
    ``two_vs_one`` (their ratio)."""

    one_MBps: float
    two_MBps: float
    two_vs_one: float


class ContentFigures(TypedDict):
    """:func:`content_vs_memcpy`'s figures: p50 MB/s of memcpy, page fill and page verify of the same bytes and
    the ratios ``fill_vs_memcpy`` and ``verify_vs_memcpy``."""

    memcpy_MBps: float
    fill_MBps: float
    verify_MBps: float
    fill_vs_memcpy: float
    verify_vs_memcpy: float


class Memcpy:
    """``np.copyto`` of ``nbytes`` between two buffers of this process, both touched once when made:
    :meth:`once` times one copy (seconds), so a bench can interleave copies with what it compares to them."""

    def __init__(self, nbytes: int) -> None:
        self.nbytes = int(nbytes)
        self.src = np.ones(self.nbytes, dtype=np.uint8)
        self.dst = np.empty_like(self.src)
        np.copyto(self.dst, self.src)

    def once(self) -> float:
        t0 = time.perf_counter()
        np.copyto(self.dst, self.src)
        return time.perf_counter() - t0


def memory_bus(nbytes: int, iterations: int = 10) -> MemoryBus:
    """One memcpy of ``nbytes`` against two at once (two threads, each its own pair of buffers; ``np.copyto``
    releases the GIL for the copy), interleaved rounds so a slow spell hits both. Returns ``one_MBps``: p50
    MB/s of one copy; ``two_MBps``: p50 of 2·``nbytes`` ÷ the time both took together; ``two_vs_one``: their
    ratio. Near 1, one copy already takes the whole memory bus, so passes over memory add up however they
    are spread across threads or processes; near 2, a second core copies for free (on one CPU, about 1 by
    construction)."""
    copies = [Memcpy(nbytes), Memcpy(nbytes)]
    one, two = [], []
    for _ in range(iterations):
        one.append(copies[0].once())
        threads = [threading.Thread(target=c.once) for c in copies]
        t0 = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        two.append(time.perf_counter() - t0)
    one_mbps, two_mbps = nbytes / median(one) / 1e6, 2 * nbytes / median(two) / 1e6
    return {"one_MBps": one_mbps, "two_MBps": two_mbps, "two_vs_one": two_mbps / one_mbps}


def _sender(port: int, nbytes: int, iterations: int) -> None:
    buf = np.ones(nbytes, dtype=np.uint8)
    with socket.create_connection(("127.0.0.1", port)) as s:
        for _ in range(iterations):
            if s.recv(1) != b"g":  # receiver asks for each transfer, so every one is timed alone
                return
            s.sendall(buf.data)


def loopback_tcp_mbps(nbytes: int, iterations: int = 20) -> float:
    """p50 MB/s of one TCP stream over 127.0.0.1 carrying ``nbytes`` from another process into a buffer."""
    ctx = mp.get_context("spawn")
    with socket.socket() as srv:
        srv.bind(("127.0.0.1", 0))
        srv.listen(1)
        proc = ctx.Process(target=_sender, args=(srv.getsockname()[1], nbytes, iterations + 1), daemon=True)
        proc.start()
        conn, _ = srv.accept()
        dst = np.empty(nbytes, dtype=np.uint8)
        view = dst.data
        times = []
        with conn:
            for i in range(iterations + 1):
                t0 = time.perf_counter()
                conn.sendall(b"g")
                got = 0
                while got < nbytes:
                    n = conn.recv_into(view[got:], nbytes - got)
                    if n == 0:
                        raise RuntimeError("loopback sender closed early")
                    got += n
                if i:  # the first transfer warms the socket buffers
                    times.append(time.perf_counter() - t0)
        proc.join(5)
    return nbytes / median(times) / 1e6


def content_vs_memcpy(page_bytes: int, pages: int, iterations: int = 20) -> ContentFigures:
    """Page-content fill and verify (:class:`~kvtui.engine.contents.PageContent`) against memcpy of the same
    ``pages × page_bytes`` bytes, in this process, interleaved (memcpy, fill, verify per round) so a slow
    spell of the machine hits all three. Returns p50 MB/s of each and the ratios ``fill_vs_memcpy`` and
    ``verify_vs_memcpy`` (medians over rounds of each side)."""
    from kvtui.engine.contents import PageContent

    pc = PageContent(page_bytes)
    keys = [f"bench/content/{i}" for i in range(pages)]
    src = np.empty((pages, page_bytes), dtype=np.uint8)
    dst = np.empty_like(src)
    pc.fill_many(keys, src)
    np.copyto(dst, src)
    times: dict[str, list[float]] = {"memcpy": [], "fill": [], "verify": []}
    for _ in range(iterations):
        t0 = time.perf_counter()
        np.copyto(dst, src)
        t1 = time.perf_counter()
        pc.fill_many(keys, dst)
        t2 = time.perf_counter()
        ok = pc.leading_matches(keys, dst) == pages
        t3 = time.perf_counter()
        if not ok:
            raise RuntimeError("page contents did not verify after a fill")
        times["memcpy"].append(t1 - t0)
        times["fill"].append(t2 - t1)
        times["verify"].append(t3 - t2)
    nbytes = pages * page_bytes
    mbps = {k: nbytes / median(v) / 1e6 for k, v in times.items()}
    return {"memcpy_MBps": mbps["memcpy"], "fill_MBps": mbps["fill"], "verify_MBps": mbps["verify"],
            "fill_vs_memcpy": mbps["fill"] / mbps["memcpy"], "verify_vs_memcpy": mbps["verify"] / mbps["memcpy"]}
